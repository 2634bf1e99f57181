"""The due rule: pure functions, table-driven, and the SQL held to the same rule."""

from __future__ import annotations

import random
import sqlite3

import pytest

from monitor_tick import store
from monitor_tick.core import clock, schedule
from tests.conftest import add

DAY_MIN = 1_440
MINUTE = 29_934_720  # 2026-12-01T00:00Z, a day boundary: DAY_MIN divides it
assert MINUTE % DAY_MIN == 0


@pytest.mark.parametrize(
    ("minute", "monitor_id", "period_min", "aligned", "due"),
    [
        (MINUTE, 7, 1, False, True),  # every minute is due for a 1-minute monitor
        (MINUTE + 1, 7, 1, True, True),
        (MINUTE, 7, 5, True, True),  # aligned: on the boundary
        (MINUTE + 1, 7, 5, True, False),
        (MINUTE + 2, 7, 5, False, True),  # spread: phase 7 % 5 = 2
        (MINUTE, 7, 5, False, False),
        (MINUTE, 3, 60, True, True),  # hourly aligned at :00
        (MINUTE + 3, 3, 60, False, True),  # hourly spread at :03
        (MINUTE, 10, DAY_MIN, True, True),  # daily aligned at 00:00 UTC
        (MINUTE + 10, 10, DAY_MIN, False, True),
        (MINUTE + 10 + DAY_MIN, 10, DAY_MIN, False, True),
        (MINUTE + 11, 10, DAY_MIN, False, False),
    ],
)
def test_due_rule(minute: int, monitor_id: int, period_min: int, aligned: bool, due: bool) -> None:
    assert schedule.is_due(minute, monitor_id, period_min, aligned) is due


@pytest.mark.parametrize(
    ("interval_sec", "floor_sec", "period_min"),
    [(60, 60, 1), (300, 60, 5), (60, 300, 5), (600, 300, 10), (3600, 3600, 60)],
)
def test_effective_interval_is_raised_to_the_plan_floor(interval_sec: int, floor_sec: int, period_min: int) -> None:
    assert schedule.effective_interval_min(interval_sec, floor_sec) == period_min


@pytest.mark.parametrize(
    ("plan_floor", "expires_at_ms", "now_ms", "floor"),
    [
        (600, None, 1_000, 600),  # no expiry
        (600, 2_000, 1_999, 600),  # before expiry
        (600, 2_000, 2_000, 60),  # expired at the instant
        (600, 2_000, 2_001, 60),
        (None, None, 1_000, 60),  # no plan: default
    ],
)
def test_plan_floor_falls_back_to_the_default_plan_when_expired(
    plan_floor: int | None, expires_at_ms: int | None, now_ms: int, floor: int
) -> None:
    assert schedule.plan_floor_sec(plan_floor, expires_at_ms, 60, now_ms) == floor


def test_a_plan_expiry_stored_in_ms_is_not_compared_with_seconds() -> None:
    # The trap: a tick whose time came from seconds (1.79e9) compared with an expiry in ms
    # (1.79e12) would treat every plan as never expiring. The tick's time is always ms.
    expires_at_ms = clock.minute_start_ms(MINUTE)
    tick_ms = clock.minute_start_ms(MINUTE + 1)
    assert schedule.plan_floor_sec(600, expires_at_ms, 60, tick_ms) == 60
    tick_s = tick_ms // 1000
    assert schedule.plan_floor_sec(600, expires_at_ms, 60, tick_s) == 600  # what the bug would do


def test_spread_monitors_created_together_fill_the_interval_evenly() -> None:
    monitors = [(monitor_id, 5, False) for monitor_id in range(1, 101)]
    shape = schedule.load_shape(monitors, MINUTE, 5)
    assert shape.busiest == 20 and shape.mean == 20


def test_aligned_monitors_fire_together() -> None:
    monitors = [(monitor_id, 5, True) for monitor_id in range(1, 101)]
    assert schedule.load_shape(monitors, MINUTE, 5).busiest == 100


@pytest.mark.parametrize(("minute", "yes"), [(MINUTE + schedule.HOUSEKEEPING_MINUTE_OF_DAY, True), (MINUTE, False)])
def test_housekeeping_runs_in_one_fixed_minute_of_the_day(minute: int, yes: bool) -> None:
    assert schedule.is_housekeeping_minute(minute) is yes


# --- The SQL, held to the pure rule ---------------------------------------------------------


def _expected_due(conn: sqlite3.Connection, minute: int) -> set[int]:
    now_ms = clock.minute_start_ms(minute)
    default_floor = conn.execute("SELECT min_interval_sec FROM plans WHERE id = 1").fetchone()[0]
    due = set()
    rows = conn.execute(
        "SELECT m.id, m.interval_sec, m.aligned, m.enabled, m.auto_paused, m.owner_id, p.min_interval_sec, "
        "o.plan_expires_at_ms, m.first_check_minute FROM monitors m LEFT JOIN owners o ON o.id = m.owner_id "
        "LEFT JOIN plans p ON p.id = o.plan_id"
    ).fetchall()
    windows = conn.execute("SELECT monitor_id, owner_id, starts_at_ms, ends_at_ms FROM maintenance_windows").fetchall()
    recurring = conn.execute(
        "SELECT monitor_id, owner_id, start_minute, duration_min, days_mask FROM maintenance_schedules"
    ).fetchall()
    for monitor_id, interval_sec, aligned, enabled, auto_paused, owner, plan_floor, expires, first_check in rows:
        if not enabled or auto_paused:
            continue
        if any(
            (w_monitor == monitor_id or (owner is not None and w_owner == owner))
            and schedule.in_window(now_ms, starts, ends)
            for w_monitor, w_owner, starts, ends in windows
        ):
            continue
        if any(
            (s_monitor == monitor_id or (owner is not None and s_owner == owner))
            and schedule.in_scheduled_window(minute, start, length, days)
            for s_monitor, s_owner, start, length, days in recurring
        ):
            continue
        floor = schedule.plan_floor_sec(plan_floor, expires, default_floor, now_ms)
        period = schedule.effective_interval_min(interval_sec, floor)
        if schedule.is_due(minute, monitor_id, period, bool(aligned), first_check):
            due.add(monitor_id)
    return due


def _random_world(conn: sqlite3.Connection, rng: random.Random, monitors: int) -> None:
    base_ms = clock.minute_start_ms(MINUTE)
    store.add_plan(conn, "free", 300)
    store.add_plan(conn, "slow", 1800)
    store.add_owner(conn, "alice", "free", None)
    store.add_owner(conn, "bob", "slow", base_ms + 90 * 60_000)  # plan expires 90 minutes in
    store.add_owner(conn, "carol", "default", None)
    intervals = [60, 120, 300, 600, 900, 1800, 3600, 7200, 86400, 420]
    for n in range(monitors):
        owner = rng.choice([None, "alice", "bob", "carol"])
        add(conn, f"http://127.0.0.1/{n}", every_s=rng.choice(intervals), owner=owner, aligned=rng.random() < 0.3)
    # first checks spread over the day (a window and a plan expiry included), some on paused rows
    conn.execute("UPDATE monitors SET first_check_minute = ? + (id * 7) % 1440 WHERE id % 3 = 0", (MINUTE,))
    conn.execute("UPDATE monitors SET enabled = 0 WHERE id % 17 = 0")
    conn.execute("UPDATE monitors SET auto_paused = 1 WHERE id % 19 = 0")
    store.add_maintenance(
        conn, monitor_ref="5", owner_name=None, starts_at_ms=base_ms + 30 * 60_000, ends_at_ms=base_ms + 95 * 60_000
    )
    store.add_maintenance(
        conn,
        monitor_ref=None,
        owner_name="carol",
        starts_at_ms=base_ms + 100 * 60_000,
        ends_at_ms=base_ms + 160 * 60_000,
    )
    # recurring: daily for one monitor, across midnight on some weekdays for an owner
    minute_of_day = MINUTE % 1440
    store.add_maintenance_schedule(
        conn,
        monitor_ref="7",
        owner_name=None,
        start_minute=(minute_of_day + 200) % 1440,
        duration_min=45,
        days_mask=127,
    )
    store.add_maintenance_schedule(
        conn,
        monitor_ref=None,
        owner_name="alice",
        start_minute=(minute_of_day + 1400) % 1440,
        duration_min=90,
        days_mask=1 << schedule.weekday(MINUTE),
    )


@pytest.mark.parametrize("default_floor_sec", [60, 600, 1800])  # none; walked by interval; through owners
def test_the_due_query_selects_exactly_what_the_rule_says_over_a_day(
    conn: sqlite3.Connection, default_floor_sec: int
) -> None:
    _random_world(conn, random.Random(1), 400)
    conn.execute("UPDATE plans SET min_interval_sec = ? WHERE id = 1", (default_floor_sec,))
    total = 0
    for minute in range(MINUTE, MINUTE + DAY_MIN):
        got = {row["id"] for row in store.select_due(conn, minute, clock.minute_start_ms(minute))}
        assert got == _expected_due(conn, minute), minute
        total += len(got)
    assert total > 10_000  # the world is not trivially empty


def test_a_downgraded_owner_is_checked_at_the_default_floor_without_rewriting_intervals(
    conn: sqlite3.Connection,
) -> None:
    base_ms = clock.minute_start_ms(MINUTE)
    store.add_plan(conn, "free", 600)
    store.add_owner(conn, "dana", "free", base_ms + 60 * 60_000)
    monitor = add(conn, "http://127.0.0.1/x", every_s=60, owner="dana")
    before = [m for m in range(MINUTE, MINUTE + 60) if store.select_due(conn, m, clock.minute_start_ms(m))]
    after = [m for m in range(MINUTE + 60, MINUTE + 120) if store.select_due(conn, m, clock.minute_start_ms(m))]
    assert len(before) == 6 and all(m % 10 == monitor % 10 for m in before)
    assert len(after) == 60
    assert conn.execute("SELECT interval_sec FROM monitors").fetchone()[0] == 60


def test_a_maintenance_window_in_ms_hides_the_monitor_only_inside_it(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x", every_s=60)
    start_ms = clock.minute_start_ms(MINUTE + 10)
    store.add_maintenance(
        conn, monitor_ref=str(monitor), owner_name=None, starts_at_ms=start_ms, ends_at_ms=start_ms + 5 * 60_000
    )
    due = [m - MINUTE for m in range(MINUTE, MINUTE + 20) if store.select_due(conn, m, clock.minute_start_ms(m))]
    assert due == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 18, 19]


def test_the_due_query_reads_candidates_through_indexes(conn: sqlite3.Connection) -> None:
    plan = conn.execute(  # the statement the tick runs: SELECT_DUE inside DUE_IDS
        "EXPLAIN QUERY PLAN " + store.DUE_IDS, {"minute": MINUTE, "now_ms": clock.minute_start_ms(MINUTE)}
    ).fetchall()
    details = [row[3] for row in plan]
    text = "\n".join(details)
    # the plain half and the rest's short intervals, each walked interval by interval
    assert details.count("SEARCH monitors USING INDEX monitors_due (interval_sec=? AND <expr>=?)") == 2, text
    assert "SEARCH m USING INDEX monitors_owner (owner_id=? AND interval_sec<?)" in text, text
    # floors up to 15 minutes: the monitors below the largest, one range of the index
    assert "SEARCH m USING INDEX monitors_due (interval_sec>? AND interval_sec<?)" in text, text
    assert "SEARCH monitors USING INDEX monitors_first_check (first_check_minute=?)" in text, text
    # who is in maintenance now: the windows that have not ended, read once for the whole query
    assert details.count("SEARCH maintenance_windows USING INDEX maintenance_by_end (ends_at_ms>?)") == 2, text
    # Full scans only of the small things: CTEs, plans, owners (to find floors above 15 minutes;
    # skipped at run time when no plan has one), recurring maintenance schedules (a few rows of
    # settings), and the partial index of rows with an unusable interval (empty on a healthy
    # database).
    assert "SCAN monitors USING INDEX monitors_bad_interval" in details, text
    details.remove("SCAN monitors USING INDEX monitors_bad_interval")
    scanned = {d.split()[1] for d in details if d.startswith("SCAN ")}
    assert scanned <= {
        "intervals",
        "top",
        "df",
        "small",
        "plans",
        "o",
        "r",
        "c",
        "s",
        "plain",
        "short",
        "due",
        "held_monitors",
        "held_owners",
        "CONSTANT",
    }, text


def test_most_due_monitors_are_selected_from_the_index_alone(conn: sqlite3.Connection) -> None:
    """A monitor whose interval is at least every plan's floor is selected from monitors_due's
    entries without its row being read (the index holds the owner, for owners' maintenance)."""
    index_columns = [row[2] for row in conn.execute("PRAGMA index_xinfo(monitors_due)") if row[5]]
    assert index_columns[0] == "interval_sec" and "owner_id" in index_columns
    plain = store.SELECT_DUE.split("plain(id, effective_interval_sec) AS NOT MATERIALIZED (")[1].split("\n  ),")[0]
    used = {name for name in ("name", "url", "kind", "method", "timeout_s", "first_check_minute") if name in plain}
    assert used == set(), used


# 2026-11-30 is a Monday (weekday 0); minutes of the UTC day
MONDAY = clock.minute_of_ms(clock.parse_iso_ms("2026-11-30T00:00Z"))


@pytest.mark.parametrize(
    ("at", "start", "length", "days", "inside"),
    [
        (MONDAY + 180, 180, 30, 127, True),  # daily 03:00 for 30m, at 03:00
        (MONDAY + 209, 180, 30, 127, True),
        (MONDAY + 210, 180, 30, 127, False),  # half-open: 03:30 is out
        (MONDAY + 179, 180, 30, 127, False),
        (MONDAY + 1430, 1410, 60, 0b0000001, True),  # Monday 23:30 for 1h
        (MONDAY + 1440 + 29, 1410, 60, 0b0000001, True),  # ... runs into Tuesday 00:29
        (MONDAY + 1440 + 30, 1410, 60, 0b0000001, False),
        (MONDAY + 1440 + 1430, 1410, 60, 0b0000001, False),  # not on Tuesday evening
        (MONDAY + 5 * 1440 + 200, 180, 60, 0b1100000, True),  # sat,sun@03:00 on Saturday
        (MONDAY + 4 * 1440 + 200, 180, 60, 0b1100000, False),  # not on Friday
        (MONDAY + 1440, 0, 1440, 0b0000001, False),  # Monday all day: Tuesday 00:00 is out
    ],
)
def test_a_recurring_window_holds_its_minutes_on_its_days(
    at: int, start: int, length: int, days: int, inside: bool
) -> None:
    assert schedule.weekday(MONDAY) == 0
    assert schedule.in_scheduled_window(at, start, length, days) is inside


def test_the_next_recurring_window_is_the_next_of_its_days() -> None:
    assert schedule.next_scheduled_window(MONDAY + 100, 180, 127) == MONDAY + 180
    assert schedule.next_scheduled_window(MONDAY + 180, 180, 127) == MONDAY + 1440 + 180
    assert schedule.next_scheduled_window(MONDAY + 100, 180, 0b1000000) == MONDAY + 6 * 1440 + 180  # Sunday


@pytest.mark.parametrize(
    ("text", "start", "days"),
    [
        ("sat,sun@03:00", 180, 0b1100000),
        ("tue-thu@05:00", 300, 0b0001110),  # every day of a range
        ("sat-mon@23:30", 1410, 0b1100001),  # over the weekend
        ("fri-thu@00:00", 0, 0b1111111),
        ("mon-mon@00:00", 0, 0b0000001),  # a range of one day
        ("Wednesday,SUN - Mon@01:00", 60, 0b1000101),
    ],
)
def test_a_weekly_window_holds_each_day_named_or_in_a_range(text: str, start: int, days: int) -> None:
    assert schedule.parse_weekly(text) == (start, days)


@pytest.mark.parametrize(
    "text", ["wed-xyz@05:00", "wedx@05:00", "tues@05:00", "tue-@05:00", "mon-tue-wed@05:00", "@05:00"]
)
def test_an_unknown_day_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a day"):
        schedule.parse_weekly(text)


# --- The next check, held to the same rule ---------------------------------------------------


def test_the_next_check_is_the_first_minute_the_rule_says_due_over_a_day(conn: sqlite3.Connection) -> None:
    """What `list` and `show` say (store.next_checks, by schedule.next_check_minute: list_monitors'
    next_check_ms) at each minute of a day is the first later minute in which the due rule
    selects the monitor, maintenance, plan expiry and first checks included: the rule the due
    query is held to above."""
    _random_world(conn, random.Random(2), 160)
    base_ms = clock.minute_start_ms(MINUTE)
    hour = 60 * 60_000
    # windows back to back, one longer than the day, and a monitor held all day every day
    store.add_maintenance(
        conn, monitor_ref="5", owner_name=None, starts_at_ms=base_ms + 95 * 60_000, ends_at_ms=base_ms + 2 * hour
    )
    store.add_maintenance(
        conn, monitor_ref=None, owner_name="bob", starts_at_ms=base_ms + 10 * hour, ends_at_ms=base_ms + 35 * hour
    )
    store.add_maintenance_schedule(
        conn, monitor_ref="10", owner_name=None, start_minute=0, duration_min=DAY_MIN, days_mask=127
    )
    store.add_maintenance_schedule(
        conn,
        monitor_ref=None,
        owner_name="carol",
        start_minute=600,
        duration_min=300,
        days_mask=1 << schedule.weekday(MINUTE + DAY_MIN),
    )
    end = MINUTE + 3 * DAY_MIN  # the rule is asked up to two days past the last minute asked
    due = [_expected_due(conn, minute) for minute in range(MINUTE, end)]
    ids = [row[0] for row in conn.execute("SELECT id FROM monitors")]
    first_due = {monitor: [end] * (end - MINUTE + 1) for monitor in ids}  # from offset i on
    for monitor, firsts in first_due.items():
        for offset in range(end - MINUTE - 1, -1, -1):
            firsts[offset] = MINUTE + offset if monitor in due[offset] else firsts[offset + 1]
    # a monitor of at most 30 minutes (floors too) is due within 30 minutes but for maintenance
    short = {monitor for (monitor,) in conn.execute("SELECT id FROM monitors WHERE interval_sec <= 1800")}
    held_back = 0
    for minute in range(MINUTE - 1, MINUTE + DAY_MIN):
        upcoming = store.next_checks(conn, clock.minute_start_ms(minute) + 30_000)
        assert upcoming.keys() == first_due.keys() and upcoming[10] is None  # held all day, every day
        for monitor, got in upcoming.items():
            expected = first_due[monitor][minute + 1 - MINUTE]
            if expected < end:
                assert got == clock.minute_start_ms(expected), (minute, monitor)
            else:  # not due in the two days asked: never (paused, or held every time), or later than that
                assert got is None or got >= clock.minute_start_ms(end), (minute, monitor, got)
            held_back += monitor in short and 30 < expected - minute and expected < end
    assert held_back > 1_000  # the windows mattered


def test_the_next_check_skips_every_window_that_holds_a_due_minute() -> None:
    """schedule.next_check_minute against the rule asked minute by minute, over random windows:
    overlapping, back to back, across midnight, all day; with first checks and plan expiries."""
    rng = random.Random(3)
    periods = [1, 2, 5, 7, 60, 1440, 10080]  # each divides a week: the search ends within a week of the rest
    nones = 0
    for _ in range(300):
        after = MINUTE + rng.randrange(DAY_MIN)
        monitor_id, period, aligned = rng.randrange(1, 500), rng.choice(periods), rng.random() < 0.3
        first_check = rng.choice([None, after + rng.randrange(-3, 8)])
        later = rng.choice([None, (after + rng.randrange(1, 3000), rng.choice(periods))])
        windows = []
        for _ in range(rng.randrange(4)):
            starts = (
                clock.minute_start_ms(after) + rng.randrange(-DAY_MIN, 2 * DAY_MIN) * 60_000 + rng.choice([0, 20_000])
            )
            windows.append((starts, starts + rng.randrange(1, 3 * DAY_MIN) * 60_000 + rng.choice([0, 20_000])))
        recurring = [
            (rng.randrange(DAY_MIN), rng.choice([1, 30, 600, 1439, DAY_MIN]), rng.randrange(1, 128))
            for _ in range(rng.randrange(3))
        ]
        held = schedule.Maintenance(windows=tuple(windows), recurring=tuple(recurring))
        got = schedule.next_check_minute(after, monitor_id, period, aligned, first_check, maintenance=held, later=later)
        expected = None
        for minute in range(after + 1, after + 5 * DAY_MIN + 3000 + schedule.MINUTES_PER_WEEK):
            n = later[1] if later is not None and minute >= later[0] else period
            if not schedule.is_due(minute, monitor_id, n, aligned, first_check):
                continue
            if any(schedule.in_window(clock.minute_start_ms(minute), *w) for w in windows):
                continue
            if not any(schedule.in_scheduled_window(minute, *r) for r in recurring):
                expected = minute
                break
        assert got == expected, (after, monitor_id, period, aligned, first_check, later, windows, recurring)
        nones += got is None
    assert 0 < nones < 100
