"""What an import plans, whatever it reads: the monitors to add, as `add` would make them, what
it cannot carry over and why, and the names they get.

Names are the key of a repeated import, so they depend on the source alone: a name the name
rules refuse, or one an earlier monitor of the same source already has, is renamed the same way
every time, and a monitor whose name the database already has is left as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from monitor_tick.core.clock import format_duration_s
from monitor_tick.core.model import MAX_INTERVAL_SEC, MAX_TIMEOUT_S, AlertSettings, line_breaker, normal_name


class ImportProblem(Exception):
    """The source cannot be read at all; str() is one line."""


@dataclass
class Planned:
    """One monitor to add: its settings as `add` takes them (`given`: options by Monitor field)."""

    source_name: str
    url: str
    interval_sec: int
    given: dict[str, Any] = field(default_factory=dict)
    alerts: AlertSettings = AlertSettings()  # noqa: RUF009 -- frozen
    enabled: bool = True
    group: str | None = None  # the status page's section (group_name)
    # a heartbeat's token as the source knows it (kept, so its jobs need no change)
    token: str | None = None
    # (what the source calls it, Apprise URL)
    channels: list[tuple[str, str]] = field(default_factory=list)
    # what was not carried over or was changed, one line each
    notes: list[str] = field(default_factory=list)
    name: str = ""
    renamed_because: str | None = None


@dataclass
class Plan:
    source: str
    monitors: list[Planned] = field(default_factory=list)
    # (name in the source, why it is not imported)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # about the source as a whole (notifications, settings of the tool itself)
    notes: list[str] = field(default_factory=list)


def whole_minutes(seconds: float, notes: list[str], what: str = "every") -> int:
    """An interval in seconds as whole minutes from 1m to 365d, with a note when it changed."""
    minutes = max(1, math.ceil(seconds / 60))
    interval = min(minutes * 60, MAX_INTERVAL_SEC)
    if interval != seconds:
        shown = format_duration_s(seconds) if seconds > 0 else f"{seconds:g}s"
        why = "under a minute" if seconds < 60 else "not whole minutes" if interval > seconds else "longer than 365d"
        notes.append(f"{what} {shown} is {why}: {what} {format_duration_s(interval)}")
    return interval


def timeout_s(seconds: float, notes: list[str]) -> float:
    """A timeout capped at monitor-tick's 25 s, with a note when it is."""
    if seconds > MAX_TIMEOUT_S:
        notes.append(f"timeout {seconds:g}s is above monitor-tick's {MAX_TIMEOUT_S:g}s: {MAX_TIMEOUT_S:g}s")
        return MAX_TIMEOUT_S
    return seconds


def confirm_checks(count: int, notes: list[str], what: str) -> int:
    """A count of consecutive checks as --alert-after/--resolve-after take it (1 to 10)."""
    if count > 10:
        notes.append(f"{what} {count} checks is above 10: 10")
    return min(max(count, 1), 10)


def _usable(raw: str | None, fallback: str) -> tuple[str, str | None]:
    """(a name the name rules take, why it differs from `raw`)."""
    if raw is None or not str(raw).strip():
        return fallback, "it had no name"
    name = normal_name(str(raw))  # as names are stored: one that prints the same is the same
    reason = None
    if line_breaker(name):
        reason = f"it held {line_breaker(name)}"
        name = " ".join("".join(" " if line_breaker(ch) else ch for ch in name).split())
        if not name:
            return fallback, reason
    if name != name.strip():
        name, reason = name.strip(), reason or "it had white space at either end"
    if name.isdigit():
        return f"monitor {name}", "an all-digit name reads as a monitor id"
    return name, reason


def assign_names(plan: Plan, fallback: str) -> None:
    """Give each planned monitor its name: usable, and unique within the plan (a later duplicate
    becomes 'NAME (2)', 'NAME (3)', ... in source order, never taking a name another has).
    `fallback` is formatted with the monitor's position (1-based) for one without a name."""
    usable = [_usable(p.source_name, fallback.format(i)) for i, p in enumerate(plan.monitors, 1)]
    wanted = {name for name, _ in usable}
    taken: set[str] = set()
    for planned, (name, reason) in zip(plan.monitors, usable, strict=True):
        if name in taken:
            n = 2
            while f"{name} ({n})" in taken or f"{name} ({n})" in wanted:
                n += 1
            name, reason = f"{name} ({n})", "an earlier monitor has its name"
        taken.add(name)
        planned.name, planned.renamed_because = name, reason
