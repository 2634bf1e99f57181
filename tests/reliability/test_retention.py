"""Retention: housekeeping prunes old history (rollups, the ledger, incident events and their
deliveries), except what an open outage still needs."""

from __future__ import annotations

import sqlite3

from monitor_tick import store
from monitor_tick.core import clock
from tests.conftest import add

DAY_START = 29_934_720  # 2026-12-01T00:00Z


def test_housekeeping_prunes_the_ledger_and_old_events_but_never_an_open_outages(conn: sqlite3.Connection) -> None:
    day = clock.MS_PER_DAY
    now_ms = clock.minute_start_ms(DAY_START) + 500 * day
    old, recent = now_ms - 401 * day, now_ms - 10 * day
    resolved = add(conn, "http://resolved.test/")
    still_down = add(conn, "http://down.test/")
    conn.execute("INSERT INTO channels (id, url, created_at_ms) VALUES (1, 'json://127.0.0.1:9/', 0)")
    conn.execute(
        "INSERT INTO incidents (id, monitor_id, started_at_ms, resolved_at_ms, cause, state) "
        "VALUES (1, ?, ?, ?, 'status 503', 'confirmed'), (2, ?, ?, NULL, 'timeout', 'confirmed')",
        (resolved, old, old + 60_000, still_down, old),
    )
    events = [(1, 1, "down", old), (2, 1, "up", old + 60_000), (3, 2, "down", old), (4, 2, "reminder", recent)]
    conn.executemany("INSERT INTO incident_events (id, incident_id, kind, created_at_ms) VALUES (?, ?, ?, ?)", events)
    conn.executemany(
        "INSERT INTO deliveries (event_id, channel_id, state, next_attempt_at_ms) VALUES (?, 1, 'sent', ?)",
        [(event, created) for event, _, _, created in events],
    )
    conn.executemany(
        "INSERT INTO ticks (minute, started_at_ms, finished_at_ms) VALUES (?, ?, ?)",
        [(clock.minute_of_ms(ms), ms, ms) for ms in (old, recent)],
    )
    store.housekeep(conn, now_ms, auto_pause_after_ms=1000 * day, retention_ms=400 * day)
    assert conn.execute("SELECT id FROM incident_events ORDER BY id").fetchall() == [(3,), (4,)]
    assert conn.execute("SELECT event_id FROM deliveries ORDER BY 1").fetchall() == [(3,), (4,)]
    assert conn.execute("SELECT started_at_ms FROM ticks").fetchall() == [(recent,)]
    assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (2,)  # outages themselves stay
