"""The first check comes soon: a new, resumed or edited monitor is due in its first-check minute,
a few minutes ahead, whatever its interval; then it follows its schedule. Through the installed
command, against a real server on 127.0.0.1, under a clock moved by the test offset."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from monitor_tick import store
from monitor_tick.core import clock, schedule
from tests.commands import ok_at as ok
from tests.conftest import add
from tests.servers import LocalServer

T0_MS = clock.parse_iso_ms("2026-11-30T10:00:20Z")
M0 = clock.minute_of_ms(T0_MS)


def ticks(db: str, minutes: range) -> list[int]:
    """Run the tick of each minute (as cron would, at its start); the minutes that probed."""
    return [m for m in minutes if json.loads(ok(db, clock.minute_start_ms(m) + 1_000, "--json"))["due"]]


def test_a_daily_monitor_is_first_checked_within_minutes_then_on_its_schedule(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    assert ok(db, T0_MS, "add", local_server.url("/ok"), "--name", "daily", "--every", "1d") == "1\n"
    first = schedule.first_check_minute(M0, 1)
    assert M0 < first <= M0 + schedule.FIRST_CHECK_SPREAD_MIN
    (listed,) = json.loads(ok(db, T0_MS, "list", "--json"))
    assert listed["next_check_ms"] == clock.minute_start_ms(first)
    assert f"in {clock.format_duration_ms(clock.minute_start_ms(first) - T0_MS)} " in ok(db, T0_MS, "list")
    assert ticks(db, range(M0 + 1, M0 + 8)) == [first]
    assert local_server.hits["/ok"] == 1
    # a replay of that minute checks it again: the clock is the cursor, nothing was used up
    rerun = json.loads(ok(db, clock.minute_start_ms(first + 3), "--minute", str(first), "--dry-run", "--json"))
    assert [m["id"] for m in rerun["due"]] == [1]
    # after it, the schedule: next due at its phase (1 % 1440) of the next day
    after_ms = clock.minute_start_ms(first + 1)
    (listed,) = json.loads(ok(db, after_ms, "list", "--json"))
    assert listed["next_check_ms"] == clock.minute_start_ms(schedule.next_due_minute(first, 1, 1440, False))
    assert clock.minute_of_ms(listed["next_check_ms"]) % 1440 == 1


def test_resume_and_edit_bring_the_first_check_forward_again(tmp_path: Path, local_server: LocalServer) -> None:
    db = str(tmp_path / "m.db")
    ok(db, T0_MS, "add", local_server.url("/ok"), "--name", "daily", "--every", "1d")
    ok(db, T0_MS, "pause", "daily")
    assert json.loads(ok(db, T0_MS, "list", "--json"))[0]["next_check_ms"] is None
    later_ms = T0_MS + 3 * clock.MS_PER_HOUR
    ok(db, later_ms, "resume", "daily")
    later = clock.minute_of_ms(later_ms)
    assert ticks(db, range(later + 1, later + 7)) == [schedule.first_check_minute(later, 1)]
    edit_ms = later_ms + clock.MS_PER_HOUR
    ok(db, edit_ms, "edit", "daily", "--timeout", "5s")
    edited = clock.minute_of_ms(edit_ms)
    assert ticks(db, range(edited + 1, edited + 7)) == [schedule.first_check_minute(edited, 1)]
    assert local_server.hits["/ok"] == 2


def test_three_hundred_monitors_added_at_once_are_spread_over_five_minutes(conn: sqlite3.Connection) -> None:
    for n in range(300):
        add(conn, f"http://127.0.0.1/{n}", every_s=86_400, created_at_ms=T0_MS)
    counts = [len(store.select_due(conn, m, clock.minute_start_ms(m))) for m in range(M0 + 1, M0 + 7)]
    # each minute also holds the day's scheduled phases of some monitors (id % 1440 == minute % 1440)
    scheduled = [sum(1 for i in range(1, 301) if i % 1440 == m % 1440) for m in range(M0 + 1, M0 + 7)]
    first = [c - s for c, s in zip(counts, scheduled, strict=True)]
    assert first == [60, 60, 60, 60, 60, 0]
