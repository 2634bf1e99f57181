"""The quorum's rule (core/quorum.py), table-driven: which locations count, K, K shrinking only
on a closed minute, partial against down, and the places an alert names."""

from __future__ import annotations

import pytest

from monitor_tick.core import quorum
from monitor_tick.core.quorum import Check

UP, DOWN, CANNOT = Check(True), Check(False, "timeout"), Check(None, "cannot be probed here")
THREE = ["eu", "home", "us"]


@pytest.mark.parametrize(("n", "k"), [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3)])
def test_the_default_quorum_is_a_majority(n: int, k: int) -> None:
    assert quorum.quorum_of(n, None) == k


@pytest.mark.parametrize(
    ("checks", "closed", "verdict"),
    [
        ({"eu": DOWN}, False, None),  # the first location to write is never a quorum of one...
        ({"eu": DOWN}, True, quorum.DOWN),  # ...but once closed, the only one that counted is
        ({"eu": DOWN, "us": DOWN}, False, quorum.DOWN),  # K saw it: counted at once
        ({"eu": DOWN, "us": UP}, False, None),
        ({"eu": DOWN, "us": UP, "home": UP}, True, quorum.PARTIAL),
        ({"eu": DOWN, "us": UP}, True, quorum.PARTIAL),  # 1 of 2 counting, K = 2
        ({"eu": DOWN, "us": CANNOT, "home": CANNOT}, True, quorum.DOWN),  # cannot check: never hides it
        ({"eu": UP, "us": UP}, True, quorum.UP),
        ({"eu": CANNOT}, True, None),  # nobody could check it: missed, not down
        ({}, True, None),
        ({"mars": DOWN, "eu": UP}, True, quorum.UP),  # not one of its locations: does not count
    ],
)
def test_a_minute_is_decided_by_the_locations_that_count(
    checks: dict[str, Check], closed: bool, verdict: str | None
) -> None:
    assert quorum.decide(THREE, 2, checks, closed=closed).verdict == verdict


@pytest.mark.parametrize(
    ("default_quorum", "closed", "verdict"),
    [
        (True, True, quorum.DOWN),  # 2 of the 3 that checked: a majority of them
        (True, False, None),  # before the close, a majority of the 4 expected (3) is still needed
        (False, True, quorum.PARTIAL),  # an explicit --quorum 3 keeps its K: 3 checked
    ],
)
def test_a_closed_minute_s_default_quorum_is_a_majority_of_the_places_that_checked(
    default_quorum: bool, closed: bool, verdict: str | None
) -> None:
    four = ["a", "b", "c", "d"]  # d stays silent
    checks = {"a": DOWN, "b": DOWN, "c": UP}
    assert quorum.decide(four, 3, checks, closed=closed, default_quorum=default_quorum).verdict == verdict


def test_the_places_are_named_as_the_alert_says_them() -> None:
    two = quorum.decide(
        THREE, 2, {"eu": Check(False, "timeout"), "us": Check(False, "status 503"), "home": UP}, closed=False
    )
    assert two.text == "down from eu (timeout), us (status 503); home sees it up"
    alone = quorum.decide(THREE, 2, {"us": Check(False, "status 503"), "eu": CANNOT}, closed=True)
    assert alone.verdict == quorum.DOWN
    assert alone.text == "down from us (status 503); seen from 1 of 3 locations; eu and home did not check it"


@pytest.mark.parametrize(
    ("text", "stored"),
    [("us,eu", "eu,us"), ("eu, eu", "eu"), ("all", "all"), ("home-1", "home-1"), ("a" * 32, "a" * 32)],
)
def test_locations_are_stored_sorted_once_each(text: str, stored: str) -> None:
    assert quorum.parse_locations(text) == stored


@pytest.mark.parametrize("text", ["EU", "eu_west", "", "a" * 33, "eu,all", "eu,,us", "é"])
def test_a_bad_location_name_is_refused(text: str) -> None:
    with pytest.raises(quorum.LocationError):
        quorum.parse_locations(text)


@pytest.mark.parametrize(
    ("stored", "k", "pinged", "one_host", "refused"),
    [
        ("eu,us", 3, False, False, "--quorum 3 is more than the 2 locations named"),
        (None, 2, False, False, "--quorum needs --locations"),
        ("eu", None, True, False, "--locations: a heartbeat is pushed to us, not checked from a place"),
        ("eu,us", None, False, True, "--locations: a SQLite database has one host, so one location"),
        ("all", 5, False, False, None),  # 'all' is as many as tick: checked when deciding
        ("eu", None, False, True, None),
    ],
)
def test_place_settings_that_cannot_be_used_are_refused(
    stored: str | None, k: int | None, pinged: bool, one_host: bool, refused: str | None
) -> None:
    if refused is None:
        quorum.check_places(stored, k, pinged=pinged, one_host=one_host)
        return
    with pytest.raises(quorum.LocationError) as caught:
        quorum.check_places(stored, k, pinged=pinged, one_host=one_host)
    assert str(caught.value).startswith(refused)


@pytest.mark.parametrize(
    ("checks", "status"),
    [
        ({"eu": Check(False, "status 503", 503), "us": Check(False, "status 503", 503)}, 503),
        ({"eu": Check(False, "status 502", 502), "home": Check(False, "x", 503), "us": Check(False, "x", 503)}, 503),
        ({"eu": Check(False, "status 502", 502), "us": Check(False, "status 503", 503)}, 502),  # equals: eu's
        ({"eu": Check(False, "timeout"), "us": Check(False, "status 503", 503)}, 503),  # one without an answer
        ({"eu": Check(True, None, 200), "us": Check(False, "timeout")}, None),  # only down places count
        ({}, None),
    ],
)
def test_an_alert_gives_the_status_most_of_the_places_that_saw_it_down_got(
    checks: dict[str, Check], status: int | None
) -> None:
    assert quorum.status_of(checks) == status


@pytest.mark.parametrize(("stored", "refused"), [(None, True), ("eu", False), ("all", False)])
def test_notify_partial_needs_locations(stored: str | None, refused: bool) -> None:
    if not refused:
        quorum.check_places(stored, None, pinged=False, one_host=False, notify_partial=True)
        return
    with pytest.raises(quorum.LocationError, match="^--notify-partial needs --locations$"):
        quorum.check_places(stored, None, pinged=False, one_host=False, notify_partial=True)
