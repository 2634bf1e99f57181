"""A known 90-day history written straight into rollups, incidents and ticks, for the status
page, badge, metrics and report tests.

What the tick would have written, minute by minute, is summarised here per hour: writing
130,000 ticks through the tick itself would take minutes. Expected figures in tests are
computed from these tables with plain SQL of their own, never through the code under test.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from monitor_tick import store
from monitor_tick.core import clock
from tests.conftest import add

DAY = clock.MS_PER_DAY
HOUR = clock.MS_PER_HOUR
MINUTE = clock.MS_PER_MINUTE
# 2026-12-01 12:00:30 UTC: half a minute into the minute, half a day into the day
NOW_MS = clock.parse_iso_ms("2026-12-01T12:00:30Z")
TODAY_MS = NOW_MS - NOW_MS % DAY


@dataclass(frozen=True)
class History:
    api: int  # up throughout; one bad day (3 days ago) with 30 failed checks and an incident
    web: int  # hostile name; down now, with an open incident whose cause holds a URL with secrets
    fresh: int  # created 10 days ago, every 5 minutes, up
    paused: int  # paused, no checks
    no_data_day_ms: int  # 5 days ago: monitor-tick did not run at all that day
    gap_ms: tuple[int, int]  # 2 days ago, 03:00-06:00: monitor-tick did not run


HOSTILE_NAME = '<script>alert("x")</script> & web'
SECRET_CAUSE = "too many redirects to https://admin:hunter2@web.test/login?token=s3cret"


def seed(conn: sqlite3.Connection) -> History:
    api = add(conn, "http://api.test/", name="api", created_at_ms=NOW_MS - 100 * DAY)
    web = add(conn, "http://web.test/", name=HOSTILE_NAME, created_at_ms=NOW_MS - 100 * DAY)
    fresh = add(conn, "http://fresh.test/", name="fresh", every_s=300, created_at_ms=TODAY_MS - 10 * DAY + 6 * HOUR)
    paused = add(conn, "http://paused.test/", name="paused", created_at_ms=NOW_MS - 100 * DAY)
    conn.execute("UPDATE monitors SET enabled = 0 WHERE id = ?", (paused,))

    no_data_day = TODAY_MS - 5 * DAY
    gap = (TODAY_MS - 2 * DAY + 3 * HOUR, TODAY_MS - 2 * DAY + 6 * HOUR)
    start = TODAY_MS - 95 * DAY
    now_minute_ms = NOW_MS - NOW_MS % MINUTE

    def ran(minute_ms: int) -> bool:
        return not (no_data_day <= minute_ms < no_data_day + DAY or gap[0] <= minute_ms < gap[1])

    ticks = []
    for minute_ms in range(start, now_minute_ms + MINUTE, MINUTE):
        if ran(minute_ms):
            m = clock.minute_of_ms(minute_ms)
            ticks.append((m, minute_ms, minute_ms + 900))
    # a minute claimed too late to probe is no data too, like an unclaimed one
    late = clock.minute_of_ms(TODAY_MS + 2 * HOUR)

    rollups = []
    bad_day = TODAY_MS - 3 * DAY
    web_down_since = TODAY_MS + 10 * HOUR  # every check since today 10:00 failed
    for hour_ms in range(start, now_minute_ms + 1, HOUR):
        minutes = [
            m
            for m in range(hour_ms, min(hour_ms + HOUR, now_minute_ms + MINUTE), MINUTE)
            if ran(m) and m != late * MINUTE
        ]
        if not minutes:
            continue
        last = minutes[-1]
        # api: 30 failed checks between 10:00 and 10:30 on the bad day
        api_fail = sum(1 for m in minutes if bad_day + 10 * HOUR <= m < bad_day + 10 * HOUR + 30 * MINUTE)
        rollups.append(_row(api, hour_ms, len(minutes), api_fail, 120, last))
        web_fail = sum(1 for m in minutes if m >= web_down_since)
        rollups.append(_row(web, hour_ms, len(minutes), web_fail, 300, last))
        fresh_minutes = [m for m in minutes if m >= TODAY_MS - 10 * DAY + 6 * HOUR and (m // MINUTE) % 5 == fresh % 5]
        if fresh_minutes:
            rollups.append(_row(fresh, hour_ms, len(fresh_minutes), 0, 45, fresh_minutes[-1]))
    incidents = [
        (api, TODAY_MS - 120 * DAY, TODAY_MS - 120 * DAY + HOUR, "timeout", None),  # older than 90 days
        (api, bad_day + 10 * HOUR, bad_day + 10 * HOUR + 30 * MINUTE, "status 503", 503),
        (web, web_down_since, None, SECRET_CAUSE, None),
    ]
    with store.write_tx(conn):  # one transaction: autocommit would make each row its own
        conn.executemany("INSERT INTO ticks (minute, started_at_ms, finished_at_ms) VALUES (?, ?, ?)", ticks)
        conn.execute("UPDATE ticks SET missed = 1, finished_at_ms = started_at_ms WHERE minute = ?", (late,))
        conn.executemany(
            "INSERT INTO rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum, latency_ms_min,"
            " latency_ms_max, last_check_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rollups,
        )
        conn.executemany(
            "INSERT INTO incidents (monitor_id, started_at_ms, resolved_at_ms, cause, http_status)"
            " VALUES (?, ?, ?, ?, ?)",
            incidents,
        )
    return History(api, web, fresh, paused, no_data_day, gap)


def _row(monitor: int, hour_ms: int, checks: int, failures: int, latency_ms: int, last_ms: int) -> tuple:
    up = checks - failures
    return (
        monitor,
        hour_ms,
        checks,
        failures,
        up * latency_ms,
        latency_ms if up else None,
        latency_ms if up else None,
        last_ms,
    )
