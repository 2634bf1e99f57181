"""The schedule, as pure functions. No clock, no I/O.

A monitor is due in minute ``m`` (minute of the epoch) when

    m % n == phase,   n = max(interval_sec, plan floor) // 60,
    phase = 0 for aligned monitors, else id % n,

or when m is its first-check minute (set a few minutes ahead when it is added, resumed or
edited, so that a daily monitor is not first checked a day later).

Aligned monitors fire on wall-clock boundaries (every hour at :00, daily at 00:00 UTC);
spread monitors of one interval created together land on different minutes. The plan floor
is the owner's plan's `min_interval_sec`, or the default plan's once the owner's plan has
expired.

The tick does not call the due rule below (plan_floor_sec, effective_interval_min, phase,
is_due, in_window, in_scheduled_window): store.SELECT_DUE is the same rule in SQL and decides.
These functions are its oracle, the rule written plainly: the tests hold the SQL to them minute by
minute over whole days (tests/test_schedule.py, tests/reliability/test_cron.py). The tick uses
is_housekeeping_minute; `add`, `edit`, `resume` and `apply` use first_check_minute; `list` and
`show` use next_check_minute (the same rule, maintenance included, searched forward: the tests
hold it to the SQL's choices too); the bench and the tests use load_shape.
"""

from __future__ import annotations

import math

from monitor_tick.core.clock import (
    MINUTES_PER_DAY,
    MS_PER_HOUR,
    MS_PER_MINUTE,
    S_PER_MINUTE,
    first_minute_from_ms,
    minute_start_ms,
)
from monitor_tick.core.records import NamedTuple

# Housekeeping (auto-pause, rollup retention) runs once a day in this minute of the UTC day:
# 03:17, away from the :00 boundaries where aligned monitors pile up.
HOUSEKEEPING_MINUTE_OF_DAY = 3 * 60 + 17
# A new, resumed or edited monitor is first checked within this many minutes, whatever its
# interval (first_check_minute).
FIRST_CHECK_SPREAD_MIN = 5


def plan_floor_sec(
    plan_min_interval_sec: int | None,
    plan_expires_at_ms: int | None,
    default_min_interval_sec: int,
    now_ms: int,
) -> int:
    """The floor in force at `now_ms`: the owner's plan's, or the default plan's when the
    owner has no plan (or none at all) or the plan expired at or before `now_ms`."""
    if plan_min_interval_sec is None:
        return default_min_interval_sec
    if plan_expires_at_ms is not None and plan_expires_at_ms <= now_ms:
        return default_min_interval_sec
    return plan_min_interval_sec


def effective_interval_min(interval_sec: int, floor_sec: int) -> int:
    """The period in whole minutes: the stored interval, raised to the plan floor."""
    return max(interval_sec, floor_sec) // S_PER_MINUTE


def phase(monitor_id: int, period_min: int, aligned: bool) -> int:
    """The minute offset within the period at which the monitor fires."""
    return 0 if aligned else monitor_id % period_min


def is_due(minute: int, monitor_id: int, period_min: int, aligned: bool, first_check_minute: int | None = None) -> bool:
    """True when a monitor with this period (minutes) fires in `minute`: on its schedule, or in
    its first-check minute."""
    return minute % period_min == phase(monitor_id, period_min, aligned) or minute == first_check_minute


def first_check_minute(minute: int, monitor_id: int) -> int:
    """The first-check minute of a monitor added, resumed or edited in `minute`: one to
    FIRST_CHECK_SPREAD_MIN minutes later, by id, so that a file of 300 monitors applied at once
    is spread over 5 minutes (the tick of `minute` itself may have run already)."""
    return minute + 1 + monitor_id % FIRST_CHECK_SPREAD_MIN


def next_due_minute(
    after_minute: int, monitor_id: int, period_min: int, aligned: bool, first_check: int | None = None
) -> int:
    """The first minute after `after_minute` in which the monitor is due (maintenance aside)."""
    scheduled = after_minute + 1 + (phase(monitor_id, period_min, aligned) - after_minute - 1) % period_min
    if first_check is not None and after_minute < first_check < scheduled:
        return first_check
    return scheduled


def in_window(now_ms: int, starts_at_ms: int, ends_at_ms: int) -> bool:
    """Maintenance windows are half-open: [starts_at_ms, ends_at_ms)."""
    return starts_at_ms <= now_ms < ends_at_ms


# 1970-01-01, day 0 of the epoch, was a Thursday: weekday 3 when Monday is 0
_EPOCH_WEEKDAY = 3
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
FULL_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
EVERY_DAY = 0b1111111


def weekday(minute: int) -> int:
    """The UTC weekday of a minute of the epoch: 0 Monday ... 6 Sunday."""
    return (minute // MINUTES_PER_DAY + _EPOCH_WEEKDAY) % 7


def in_scheduled_window(minute: int, start_minute: int, duration_min: int, days_mask: int) -> bool:
    """Whether `minute` is inside a recurring maintenance window: `duration_min` minutes from
    `start_minute` after 00:00 UTC on the weekdays of `days_mask` (bit 0 Monday); a window may
    run past midnight into the next day."""
    of_day = minute % MINUTES_PER_DAY
    today = _on_day(days_mask, minute) and start_minute <= of_day < start_minute + duration_min
    yesterday = _on_day(days_mask, minute - MINUTES_PER_DAY) and of_day + MINUTES_PER_DAY < start_minute + duration_min
    return today or yesterday


def _on_day(days_mask: int, minute: int) -> bool:
    """Whether the UTC weekday of `minute` is one of `days_mask`'s (bit 0 Monday)."""
    return bool(days_mask >> weekday(minute) & 1)


class Maintenance(NamedTuple):
    """The maintenance windows that cover one monitor (its own and its owner's): one-off ones as
    (starts_at_ms, ends_at_ms), recurring ones as (start_minute, duration_min, days_mask)."""

    windows: tuple[tuple[int, int], ...] = ()
    recurring: tuple[tuple[int, int, int], ...] = ()

    def held_until(self, minute: int) -> int | None:
        """The first minute after the windows that hold `minute` end (another window may hold
        that one); None when none holds it. A window holds a minute when it holds the minute's
        start, as the due query judges a window at the tick's time."""
        at_ms = minute_start_ms(minute)
        ends = [first_minute_from_ms(ends) for starts, ends in self.windows if in_window(at_ms, starts, ends)]
        day_start = minute - minute % MINUTES_PER_DAY
        for start, length, days in self.recurring:
            for begun in (day_start + start, day_start - MINUTES_PER_DAY + start):  # today's, yesterday's
                if _on_day(days, begun) and begun <= minute < begun + length:
                    ends.append(begun + length)
        return max(ends, default=None)

    def last_end_minute(self) -> int:
        """The first minute after every one-off window (0 when there is none)."""
        return max((first_minute_from_ms(ends) for _, ends in self.windows), default=0)


NO_MAINTENANCE = Maintenance()
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY


def next_check_minute(
    after_minute: int,
    monitor_id: int,
    period_min: int,
    aligned: bool,
    first_check: int | None = None,
    *,
    maintenance: Maintenance = NO_MAINTENANCE,
    later: tuple[int, int] | None = None,
) -> int | None:
    """The first minute after `after_minute` in which the monitor is due and no maintenance
    window holds it: the due rule with `period_min`, or from minute `later[0]` on with period
    `later[1]` (the owner's plan expires then). None when that minute never comes: every
    minute it is due falls in a recurring window.

    Each turn skips the windows that hold a due minute. Past the first check, the period's
    change and every one-off window, the due minutes and the recurring windows repeat together
    every lcm(period, week) minutes: a due minute not found by then never comes."""
    switch, final = later if later is not None else (after_minute + 1, period_min)

    def due_after(minute: int) -> int:
        due = next_due_minute(minute, monitor_id, period_min, aligned, first_check)
        if due < switch:
            return due
        return next_due_minute(max(minute, switch - 1), monitor_id, final, aligned, first_check)

    settled = max(after_minute, switch, first_check or 0, maintenance.last_end_minute())
    last = settled + math.lcm(final, MINUTES_PER_WEEK)
    minute = after_minute
    while True:
        due = due_after(minute)
        if due > last:
            return None
        free = maintenance.held_until(due)
        if free is None:
            return due
        minute = free - 1


def next_scheduled_window(after_minute: int, start_minute: int, days_mask: int) -> int:
    """The first minute after `after_minute` at which a recurring window starts."""
    day_start = after_minute - after_minute % MINUTES_PER_DAY
    for day in range(8):
        starts = day_start + day * MINUTES_PER_DAY + start_minute
        if starts > after_minute and _on_day(days_mask, starts):
            return starts
    raise ValueError(f"days_mask {days_mask} has no day")


def parse_time_of_day(text: str) -> int:
    """'03:00' -> minutes after 00:00 (UTC). Raises ValueError."""
    hours, sep, minutes = str(text).strip().partition(":")
    if not (sep and hours.isdigit() and minutes.isdigit() and int(hours) < 24 and int(minutes) < 60):
        raise ValueError(f"not a time of day HH:MM (UTC): {text!r}")
    return int(hours) * 60 + int(minutes)


_DAY_NAMES = {name: n for n, day in enumerate(DAYS) for name in (day, FULL_DAYS[n])}


def _day(text: str) -> int:
    """'tue' or 'Tuesday' -> 1. Raises ValueError for anything else."""
    found = _DAY_NAMES.get(text.strip().lower())
    if found is None:
        raise ValueError(f"not a day: {text.strip()!r} ({', '.join(DAYS)}, or a range such as tue-thu)")
    return found


def parse_weekly(text: str) -> tuple[int, int]:
    """'sat,sun@03:00' -> (start minute of the day, days mask). A day is a name ('tue',
    'tuesday') or a range of them, every day from the first to the last: 'tue-thu', and
    'sat-mon' (Saturday, Sunday, Monday) over the weekend. Raises ValueError."""
    days, sep, at = str(text).partition("@")
    if not sep:
        raise ValueError(f"give days and a time, e.g. sat,sun@03:00 (got {text!r})")
    mask = 0
    for item in days.split(","):
        first, dash, last = item.partition("-")
        start = _day(first)
        span = (_day(last) - start) % 7 if dash else 0
        for offset in range(span + 1):
            mask |= 1 << (start + offset) % 7
    return parse_time_of_day(at), mask


def describe_repeats(start_minute: int, days_mask: int) -> tuple[str, str]:
    """('daily', '03:00') or ('weekly', 'sat,sun@03:00'): how a recurring window is written."""
    at = f"{start_minute // 60:02d}:{start_minute % 60:02d}"
    if days_mask == EVERY_DAY:
        return "daily", at
    return "weekly", f"{','.join(d for n, d in enumerate(DAYS) if days_mask >> n & 1)}@{at}"


def is_housekeeping_minute(minute: int) -> bool:
    return minute % MINUTES_PER_DAY == HOUSEKEEPING_MINUTE_OF_DAY


def is_hourly_report_minute(minute: int, period_min: int) -> bool:
    """For a problem seen each time a monitor with this period is due: whether to say it in
    `minute`. Any `period_min` consecutive minutes hold exactly one due minute, so it is said
    once an hour (in every due minute when the period is an hour or longer)."""
    return minute % (MS_PER_HOUR // MS_PER_MINUTE) < period_min


class Spread(NamedTuple):
    """How evenly a set of monitors fills the minutes of a day (bench and tests)."""

    busiest: int
    mean: float


def load_shape(monitors: list[tuple[int, int, bool]], start_minute: int, minutes: int = MINUTES_PER_DAY) -> Spread:
    """Due counts per minute for (id, period_min, aligned) monitors over `minutes` minutes."""
    counts = [0] * minutes
    for monitor_id, period_min, aligned in monitors:
        first = (phase(monitor_id, period_min, aligned) - start_minute) % period_min
        for offset in range(first, minutes, period_min):
            counts[offset] += 1
    return Spread(busiest=max(counts), mean=sum(counts) / minutes)
