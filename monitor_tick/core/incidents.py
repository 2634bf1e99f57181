"""Incident state transitions, as a pure function.

An incident is one outage. A monitor's first down check opens it *suspected*; after
`alert_after` consecutive down checks it is *confirmed* (the moment people are told); once
confirmed, `resolve_after` consecutive up checks resolve it (people are told it is up). An up
check while it is still suspected resolves it quietly: nobody was told it was down. Its start
is always the first failed check.

A monitor that is up with no open incident gets no step at all, so a healthy monitor costs no
incident I/O. Counting lives on the open incident (`Open`), not on the monitor.
"""

from __future__ import annotations

import enum

from monitor_tick.core.records import NamedTuple

SUSPECTED = "suspected"
CONFIRMED = "confirmed"


class Transition(enum.Enum):
    OPEN = "open"  # insert an incident (state given by Step.state)
    COUNT = "count"  # update the open incident's state and counters
    RESOLVE = "resolve"  # close the open incident


class Event(enum.Enum):
    """What people are told about."""

    DOWN = "down"
    UP = "up"


class Open(NamedTuple):
    """The counters of a monitor's open incident."""

    state: str
    down_checks: int
    up_checks: int


class Step(NamedTuple):
    transition: Transition
    state: str  # the incident's state after this check (for RESOLVE: the state it ended in)
    down_checks: int
    up_checks: int
    event: Event | None = None

    @property
    def confirms(self) -> bool:
        return self.event is Event.DOWN


def step(incident: Open | None, is_up: bool, *, alert_after: int, resolve_after: int) -> Step | None:
    """What one decided check does to a monitor's incident (None: nothing to write).

    `alert_after` and `resolve_after` are at least 1.
    """
    if incident is None:
        if is_up:
            return None
        if alert_after <= 1:
            return Step(Transition.OPEN, CONFIRMED, 1, 0, Event.DOWN)
        return Step(Transition.OPEN, SUSPECTED, 1, 0)
    if incident.state == SUSPECTED:
        if is_up:  # the run of down checks broke before it was confirmed
            return Step(Transition.RESOLVE, SUSPECTED, incident.down_checks, 1)
        downs = incident.down_checks + 1
        if downs >= alert_after:
            return Step(Transition.COUNT, CONFIRMED, downs, 0, Event.DOWN)
        return Step(Transition.COUNT, SUSPECTED, downs, 0)
    if is_up:
        ups = incident.up_checks + 1
        if ups >= resolve_after:
            return Step(Transition.RESOLVE, CONFIRMED, incident.down_checks, ups, Event.UP)
        return Step(Transition.COUNT, CONFIRMED, incident.down_checks, ups)
    if incident.up_checks:  # still down: a partial run of up checks starts again
        return Step(Transition.COUNT, CONFIRMED, incident.down_checks, 0)
    return None
