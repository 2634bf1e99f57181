"""Incident state transitions, as a pure function.

An incident is one outage: opened by the first down check of a monitor with no open incident,
resolved by the next up check. Nothing else writes, so a healthy monitor costs no incident I/O.
"""

from __future__ import annotations

import enum


class Transition(enum.Enum):
    OPEN = "open"
    RESOLVE = "resolve"


def transition(has_open_incident: bool, is_up: bool) -> Transition | None:
    """What one decided check does to a monitor's incident state (None: nothing)."""
    if is_up:
        return Transition.RESOLVE if has_open_incident else None
    return None if has_open_incident else Transition.OPEN
