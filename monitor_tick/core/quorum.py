"""Locations and a quorum, as pure functions: which names are locations, how many locations
must see a monitor down (K), and what one minute's checks from its locations decide.

A location counts for a minute only with a decided check (up or down) of it. The minute is
**down** once K of the counting locations saw it down: counted at the first write that makes it
so, before the minute closes. Once it is **closed** (every location expected has written, or
time has run out), a location that could not check never hides an outage: K shrinks to the
number of counting locations (at least 1). Closed with fewer than K down but at least one:
**partial**; none down: **up**; no location counting: nothing (missed, not down).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from monitor_tick.core.records import NamedTuple

DEFAULT = "default"  # the location of hosts without --location
ALL = "all"  # a monitor's locations: every location a host ticked from in the last 7 days
ALL_WINDOW_MS = 7 * 86_400_000
_NAME = r"[a-z0-9-]{1,32}"  # compiled on first use (re's cache): only --location and --locations

DOWN, PARTIAL, UP = "down", "partial", "up"


class LocationError(ValueError):
    """A location name or a list of them that cannot be used (the message says why)."""


def check_name(name: str) -> str:
    """`name` when it is a location name: 1-32 characters of a-z, 0-9 and '-'."""
    if not re.fullmatch(_NAME, name):
        raise LocationError(f"location {name!r} is not 1-32 characters of a-z, 0-9 and '-'")
    return name


def parse_locations(text: str) -> str:
    """--locations LOC[,LOC...] or 'all' as stored: sorted, without repeats."""
    names = [part.strip() for part in text.split(",")]
    if names == [ALL]:
        return ALL
    if ALL in names:
        raise LocationError("--locations all names every location; it cannot be listed with others")
    return ",".join(sorted({check_name(name) for name in names}))


def names_of(stored: str, ticked: Collection[str]) -> list[str]:
    """A monitor's locations (as stored) by name; 'all' is every one of `ticked`."""
    return sorted(ticked) if stored == ALL else stored.split(",")


def majority(n: int) -> int:
    """The default quorum of n locations: 1 of 1, 2 of 2, 2 of 3, 3 of 4 or 5."""
    return n // 2 + 1


def quorum_of(n: int, quorum: int | None) -> int:
    """K for n locations: the monitor's own, else a majority (at most n, at least 1)."""
    return max(1, min(n, majority(n) if quorum is None else quorum))


def check_quorum(quorum: int | None, stored: str | None) -> None:
    """Refuse a quorum larger than the locations named (or one without locations)."""
    if quorum is None:
        return
    if stored is None:
        raise LocationError("--quorum needs --locations")
    if quorum < 1:
        raise LocationError("--quorum must be at least 1")
    if stored != ALL and quorum > len(stored.split(",")):
        raise LocationError(f"--quorum {quorum} is more than the {len(stored.split(','))} locations named")


class Check(NamedTuple):
    """One location's check of a minute: up, down, or None (it could not decide)."""

    up: bool | None
    cause: str | None = None
    http_status: int | None = None  # the answer's status, when it got one


def status_of(checks: Mapping[str, Check]) -> int | None:
    """The HTTP status an alert gives for a minute's `checks`: the one most of the locations that
    saw it down got (of equals, the first location's by name), None when none of them got one."""
    statuses = [c.http_status for _, c in sorted(checks.items()) if c.up is False and c.http_status is not None]
    return max(statuses, key=statuses.count, default=None)


class Decision(NamedTuple):
    verdict: str | None  # DOWN, PARTIAL, UP; None: nothing to count yet (or ever: nobody checked)
    text: str  # the places, as an incident and its alert say them


def decide(
    locations: list[str], k: int, checks: Mapping[str, Check], *, closed: bool, default_quorum: bool = False
) -> Decision:
    """What `checks` (location -> check, of `locations` or not) decide of a minute whose quorum is
    `k` of `locations`; `closed`: no more checks will come (K may shrink). Once closed, a default
    quorum (`default_quorum`) is a majority of the locations that checked: a location that stayed
    silent (its hosts died, or it ticked once by mistake) never raises the bar for the others. An
    explicit K only shrinks to the number that checked."""
    counting = {loc: c for loc, c in checks.items() if c.up is not None and loc in locations}
    downs = sorted(loc for loc, c in counting.items() if c.up is False)
    text = places(locations, counting)
    if len(downs) >= k:
        return Decision(DOWN, text)
    if not closed:
        return Decision(None, text)
    closed_k = majority(len(counting)) if default_quorum else max(1, min(k, len(counting)))
    if counting and len(downs) >= closed_k:
        return Decision(DOWN, text)
    if downs:
        return Decision(PARTIAL, text)
    return Decision(UP if counting else None, text)


def places(locations: list[str], counting: Mapping[str, Check]) -> str:
    """'down from eu (timeout), us (503); home sees it up', and when some did not check it,
    '; seen from 1 of 3 locations; eu and home did not check it'."""
    downs = [f"{loc} ({counting[loc].cause or 'down'})" for loc in sorted(counting) if counting[loc].up is False]
    ups = sorted(loc for loc, c in counting.items() if c.up)
    parts = []
    if downs:
        parts.append("down from " + ", ".join(downs))
    if ups:
        parts.append(f"{_and(ups)} {'sees' if len(ups) == 1 else 'see'} it up")
    missing = [loc for loc in locations if loc not in counting]
    if missing:
        parts.append(f"seen from {len(counting)} of {len(locations)} locations")
        parts.append(f"{_and(missing)} did not check it")
    return "; ".join(parts)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# A monitor's place settings: columns of `monitors` (step 17), file keys and `add` options
PLACE_COLUMNS: dict[str, object] = {"locations": None, "quorum": None, "notify_partial": 0}
PLACE_FLAGS = {"locations": "--locations", "quorum": "--quorum", "notify_partial": "--notify-partial"}


def check_places(
    stored: str | None, k: int | None, *, pinged: bool, one_host: bool, notify_partial: bool = False
) -> None:
    """Refuse place settings that cannot be used: locations for a heartbeat (pushed, not probed
    from anywhere), several locations on SQLite (`one_host`), a quorum or --notify-partial
    without locations (a monitor checked once is never partial), a quorum above the number
    named."""
    if notify_partial and stored is None:
        raise LocationError("--notify-partial needs --locations")
    if stored is not None and pinged:
        raise LocationError("--locations: a heartbeat is pushed to us, not checked from a place")
    if stored is not None and one_host and stored != ALL and "," in stored:
        raise LocationError("--locations: a SQLite database has one host, so one location; use PostgreSQL for several")
    check_quorum(k, stored)
