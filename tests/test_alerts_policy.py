"""Alert policy as pure functions: incident steps, messages and storms, retries, our own outage,
and redaction of channel URLs. Table-driven."""

from __future__ import annotations

import pytest

from monitor_tick.alerts import policy
from monitor_tick.core import clock
from monitor_tick.core.incidents import CONFIRMED, SUSPECTED, Event, Open, Step, Transition, step
from monitor_tick.core.model import CheckResult
from monitor_tick.core.redact import redact_channel_url, scrub

UP, DOWN = True, False


# --- incident steps ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("incident", "is_up", "alert_after", "resolve_after", "expected"),
    [
        # healthy, nothing open: no step at all (no incident I/O)
        (None, UP, 2, 1, None),
        # the first down check opens a suspected incident ...
        (None, DOWN, 2, 1, Step(Transition.OPEN, SUSPECTED, 1, 0)),
        # ... or a confirmed one at once when one check is enough
        (None, DOWN, 1, 1, Step(Transition.OPEN, CONFIRMED, 1, 0, Event.DOWN)),
        # the second consecutive down check confirms it: people are told
        (Open(SUSPECTED, 1, 0), DOWN, 2, 1, Step(Transition.COUNT, CONFIRMED, 2, 0, Event.DOWN)),
        # not yet enough down checks: count, tell no one
        (Open(SUSPECTED, 1, 0), DOWN, 3, 1, Step(Transition.COUNT, SUSPECTED, 2, 0)),
        (Open(SUSPECTED, 2, 0), DOWN, 3, 1, Step(Transition.COUNT, CONFIRMED, 3, 0, Event.DOWN)),
        # an up check before confirmation ends it quietly (nobody was told it was down)
        (Open(SUSPECTED, 2, 0), UP, 3, 1, Step(Transition.RESOLVE, SUSPECTED, 2, 1)),
        (Open(SUSPECTED, 1, 0), UP, 2, 3, Step(Transition.RESOLVE, SUSPECTED, 1, 1)),
        # confirmed and still down: nothing to write
        (Open(CONFIRMED, 2, 0), DOWN, 2, 1, None),
        # confirmed, one up check is enough: resolved, people are told
        (Open(CONFIRMED, 2, 0), UP, 2, 1, Step(Transition.RESOLVE, CONFIRMED, 2, 1, Event.UP)),
        # confirmed, more up checks needed: count them
        (Open(CONFIRMED, 2, 0), UP, 2, 3, Step(Transition.COUNT, CONFIRMED, 2, 1)),
        (Open(CONFIRMED, 2, 1), UP, 2, 3, Step(Transition.COUNT, CONFIRMED, 2, 2)),
        (Open(CONFIRMED, 2, 2), UP, 2, 3, Step(Transition.RESOLVE, CONFIRMED, 2, 3, Event.UP)),
        # a down check in the middle of a run of up checks starts the run again
        (Open(CONFIRMED, 2, 2), DOWN, 2, 3, Step(Transition.COUNT, CONFIRMED, 2, 0)),
    ],
)
def test_each_check_steps_the_incident_as_the_confirmation_rules_say(
    incident: Open | None, is_up: bool, alert_after: int, resolve_after: int, expected: Step | None
) -> None:
    assert step(incident, is_up, alert_after=alert_after, resolve_after=resolve_after) == expected


def test_a_flapping_monitor_is_announced_once_per_confirmed_outage() -> None:
    checks = [DOWN, UP, DOWN, UP, DOWN, DOWN, DOWN, UP, DOWN, UP, UP]
    incident: Open | None = None
    told: list[Event] = []
    for is_up in checks:
        change = step(incident, is_up, alert_after=2, resolve_after=2)
        if change is None:
            continue
        if change.event is not None:
            told.append(change.event)
        incident = None if change.transition is Transition.RESOLVE else Open(*_counters(change))
    assert told == [Event.DOWN, Event.UP]


def _counters(change: Step) -> tuple[str, int, int]:
    return change.state, change.down_checks, change.up_checks


# --- messages and storms ----------------------------------------------------------------------

T0 = clock.parse_iso_ms("2026-12-01T00:00:05Z")


def event(event_id: int, kind: str = "down", name: str = "api", **overrides: object) -> policy.EventInfo:
    values: dict[str, object] = {
        "event_id": event_id,
        "kind": kind,
        "created_at_ms": T0 + 60_000,
        "monitor_name": name,
        "monitor_url": "https://user:pw@api.example.org/health?token=abc",
        "cause": "status 503",
        "http_status": 503,
        "started_at_ms": T0,
        "resolved_at_ms": T0 + 185_000 if kind == "up" else None,
    }
    values.update(overrides)
    return policy.EventInfo(**values)  # type: ignore[arg-type]


def test_a_down_message_names_the_monitor_url_cause_status_and_start_with_secrets_hidden() -> None:
    msg = policy.message(event(1))
    assert msg.title == "DOWN: api"
    assert msg.notify_type == "failure"
    assert msg.body.splitlines() == [
        "api is down.",
        "",
        "URL: https://***@api.example.org/health?token=***",
        "Cause: status 503",
        "HTTP status: 503",
        "Down since: 2026-12-01T00:00:05Z",
    ]


def test_an_up_message_says_how_long_it_was_down() -> None:
    msg = policy.message(event(2, "up", cause="connect refused", http_status=None))
    assert msg.title == "UP: api" and msg.notify_type == "success"
    assert msg.body.splitlines() == [
        "api is up again after 3m5s down.",
        "",
        "URL: https://***@api.example.org/health?token=***",
        "Cause: connect refused",
        "HTTP status: none (no answer)",
        "Down since: 2026-12-01T00:00:05Z",
        "Up since: 2026-12-01T00:03:10Z",
        "Down for: 3m5s",
    ]


def test_a_reminder_says_it_is_still_down_and_for_how_long() -> None:
    msg = policy.message(event(3, "reminder", created_at_ms=T0 + 3_600_000))
    assert msg.title == "STILL DOWN: api" and msg.notify_type == "warning"
    assert msg.body.splitlines()[0] == "api is still down, for 1h now."


@pytest.mark.parametrize(
    ("downs", "expected_titles"),
    [(5, ["DOWN: m1", "DOWN: m2", "DOWN: m3", "DOWN: m4", "DOWN: m5"]), (6, ["DOWN: 6 monitors"])],
)
def test_more_than_five_events_of_a_kind_for_one_channel_become_one_summary(
    downs: int, expected_titles: list[str]
) -> None:
    messages = policy.compose([event(i, name=f"m{i}") for i in range(1, downs + 1)])
    assert [m.title for m in messages] == expected_titles
    assert sorted(e for m in messages for e in m.event_ids) == list(range(1, downs + 1))


def test_a_summary_lists_every_monitor_and_keeps_the_channels_order_of_events() -> None:
    events = [event(1, "up", name="old")] + [event(i, name=f"m{i}") for i in range(2, 9)] + [event(9, "up", name="x")]
    messages = policy.compose(events)
    assert [m.title for m in messages] == ["UP: old", "DOWN: 7 monitors", "UP: x"]
    body = messages[1].body.splitlines()
    assert body[0] == "7 monitors are down:"
    assert body[1] == "- m2: status 503 since 2026-12-01T00:00:05Z (https://***@api.example.org/health?token=***)"
    assert len(body) == 8


# --- retries ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempts", "delay_ms"),
    [(1, 60_000), (2, 120_000), (3, 240_000), (5, 960_000), (6, 1_800_000), (40, 1_800_000)],
)
def test_failed_deliveries_back_off_doubling_up_to_half_an_hour(attempts: int, delay_ms: int) -> None:
    assert policy.retry_at_ms(attempts, T0) - T0 == delay_ms


@pytest.mark.parametrize(("age_ms", "given_up"), [(0, False), (6 * 3_600_000 - 1, False), (6 * 3_600_000, True)])
def test_a_delivery_is_given_up_once_its_event_is_six_hours_old(age_ms: int, given_up: bool) -> None:
    assert policy.gives_up(T0, T0 + age_ms) is given_up


# --- our own outage ---------------------------------------------------------------------------


def results(*causes: str | None) -> list[CheckResult]:
    return [CheckResult(i, "up" if c is None else "down", None, None, c) for i, c in enumerate(causes)]


@pytest.mark.parametrize(
    "checks",
    [
        results("dns", "dns", "tcp: dns", "connect error", "tls: connect error"),
        results(*["dns"] * 10),  # one home server, or the one domain's DNS, is down: a real outage
        results(*["connect refused"] * 5, "connection reset", "tcp: connect refused"),
    ],
)
def test_without_a_canary_no_tick_is_offline_however_its_checks_failed(checks: list[CheckResult]) -> None:
    assert policy.network_lost(checks) is False


@pytest.mark.parametrize(
    ("checks", "canary", "lost"),
    [
        (results("dns"), "dns", True),  # the canary decides, even for one check
        (results("dns"), "connect error", True),
        (results("docker: dns", "docker: connect error"), "dns", True),  # a tcp:// engine elsewhere
        # the canary got an answer (a 404, a 503, a refusal): our network works, whatever it said
        (results("dns"), "status 404", False),
        (results("dns", "connect error"), "status 503", False),
        (results("dns"), "connect refused", False),
        (results(*["dns"] * 10), None, False),  # the canary answered: the sites are down
        (results("status 503"), "dns", False),  # nothing failed at network level
        # refused or reset: the remote host answered, so our network works
        (results(*["connect refused"] * 5, "connection reset", "tcp: connect refused"), "dns", False),
    ],
)
def test_a_canary_decides_whether_the_network_was_lost(
    checks: list[CheckResult], canary: str | None, lost: bool
) -> None:
    """`canary`: the canary's cause when it was down, None when it was up."""
    assert policy.network_lost(checks, results(canary)[0]) is lost


@pytest.mark.parametrize(
    "kind", ["tcp", "tls", "smtp", "ssh", "ws", "postgresql", "mysql", "redis", "docker", "dns", "icmp"]
)
def test_a_connection_kinds_failure_to_reach_its_host_is_set_aside_when_the_network_is_lost(kind: str) -> None:
    checks = results(f"{kind}: dns", f"{kind}: connect error", f"{kind}: connect refused", f"{kind}: timeout")
    assert policy.network_lost(checks, results("dns")[0]) is True
    assert [r.status for r in policy.offline(checks)] == ["unknown", "unknown", "down", "down"]


def test_an_offline_tick_sets_aside_only_checks_that_never_reached_their_host() -> None:
    # a 503, a missing keyword or a refusal is an answer from the site: it stays down
    assert policy.offline(results("dns", None, "status 503", "tcp: connect error", "connect refused")) == [
        CheckResult(0, "unknown", None, None, "network lost (dns)"),
        CheckResult(1, "up", None, None, None),
        CheckResult(2, "down", None, None, "status 503"),
        CheckResult(3, "unknown", None, None, "network lost (tcp: connect error)"),
        CheckResult(4, "down", None, None, "connect refused"),
    ]


def test_an_offline_tick_never_sets_aside_a_check_of_this_host_itself() -> None:
    # monitor 1 is on a loopback address or a unix socket: its failure never crossed a network
    assert policy.offline(results("dns", "connect error", "tcp: connect error"), host_local={1, 2}) == [
        CheckResult(0, "unknown", None, None, "network lost (dns)"),
        CheckResult(1, "down", None, None, "connect error"),
        CheckResult(2, "down", None, None, "tcp: connect error"),
    ]


# --- channel URLs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("json://u:p@hooks.example.org:8080/a/b?token=x", "json://***@hooks.example.org:8080/***/***?token=***"),
        ("json://127.0.0.1:8080/hook/s3cret", "json://127.0.0.1:8080/***/***"),
        ("ntfys://user:pass@ntfy.sh/my-topic", "ntfys://***@ntfy.sh/***"),
        ("ntfy://my-topic", "ntfy://***"),  # a topic in the host position is a secret
        ("tgram://123456:ABCdef/99999", "tgram://***/***"),
        ("discord://1111/tokenxyz", "discord://***/***"),
        ("slack://T1/B2/C3/#alerts", "slack://***/***/***"),
        ("mailto://me:app-password@gmail.com", "mailto://***@gmail.com"),
        ("json://[::1]:80/x", "json://[::1]:80/***"),
        ("not a url at all", "***"),
    ],
)
def test_channel_urls_are_shown_with_every_token_hidden(url: str, shown: str) -> None:
    assert redact_channel_url(url) == shown


def test_errors_are_scrubbed_of_the_channels_secrets() -> None:
    url = "discord://1111/tokenxyz"
    assert scrub("POST to 1111/tokenxyz failed", url) == "POST to ***/*** failed"


def test_every_kind_that_connects_has_its_cause_prefix_read_by_the_canary_rule() -> None:
    """A kind added to probes.KINDS must join policy's list, or its failures to reach a host
    would never be set aside when our own network is lost (http's causes name no kind; a
    heartbeat connects to nothing)."""
    from monitor_tick import probes

    connecting = {kind.name for kind in probes.KINDS} - {"http", "heartbeat"}
    assert {prefix.removesuffix(": ") for prefix in policy._CONNECTION_KINDS} == connecting
