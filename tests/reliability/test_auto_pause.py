"""Auto-pause is never silent: a monitor paused after 7 days down gets a line on stderr and a
notification."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import CheckResult
from tests.conftest import add
from tests.receivers import JsonReceiver
from tests.servers import refused_port

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
HOUSEKEEPING = 29_934_720 + 3 * 60 + 17  # 2026-12-01T03:17Z
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_an_auto_paused_monitor_is_said_on_stderr_and_notified(conn: sqlite3.Connection, db_path: str) -> None:
    gone = add(conn, f"http://127.0.0.1:{refused_port()}/", name="gone", retries=0)
    down_since_ms = clock.minute_start_ms(HOUSEKEEPING) - 8 * clock.MS_PER_DAY
    for offset_ms in (0, clock.MS_PER_MINUTE):  # confirmed eight days ago, before any channel
        at_ms = down_since_ms + offset_ms
        store.write_results(conn, [], at_ms, [CheckResult(gone, "down", None, None, "connect refused")], at_ms)
    with JsonReceiver() as rx:
        store.add_channel(conn, rx.apprise_url(), monitor_ref=None, owner_name=None, created_at_ms=0)
        done = subprocess.run(
            [MONITOR_TICK, "--db", db_path, "--minute", str(HOUSEKEEPING), "--retry-delay", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stdout) == (0, "")
        assert done.stderr == (
            f"monitor-tick: monitor {gone} (gone) auto-paused after 8d down (since 2026-11-23T03:17:00Z); "
            f"no longer probed until `monitor-tick resume {gone}`\n"
        )
        assert rx.titles() == ["PAUSED: gone"]
        assert rx.messages[0]["message"].startswith("gone was paused after 8d down: it is no longer probed.")
    assert conn.execute("SELECT id FROM monitors WHERE auto_paused = 1").fetchall() == [(gone,)]
    assert conn.execute("SELECT kind FROM incident_events ORDER BY id").fetchall() == [("down",), ("paused",)]


def test_the_upgrade_lets_a_version_1_file_record_a_pause_and_keeps_its_events(tmp_path: Path) -> None:
    path = str(tmp_path / "v1.db")
    shutil.copy(FIXTURES / "v1.db", path)
    raw = sqlite3.connect(path)
    events = raw.execute("SELECT * FROM incident_events ORDER BY id").fetchall()
    deliveries = raw.execute("SELECT * FROM deliveries ORDER BY event_id, channel_id").fetchall()
    raw.close()
    assert events and deliveries
    conn = store.open_db(path)  # upgrades
    try:
        assert conn.execute("SELECT * FROM incident_events ORDER BY id").fetchall() == events
        assert conn.execute("SELECT * FROM deliveries ORDER BY event_id, channel_id").fetchall() == deliveries
        conn.execute(
            "INSERT INTO incident_events (incident_id, kind, created_at_ms) VALUES (?, 'paused', 0)", (events[0][1],)
        )
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # deleting an incident still takes its events and their deliveries with it
        conn.execute("DELETE FROM incidents WHERE id = ?", (events[0][1],))
        left = conn.execute("SELECT count(*) FROM incident_events WHERE incident_id = ?", (events[0][1],))
        assert left.fetchone() == (0,)
    finally:
        conn.close()


def test_an_incident_never_confirmed_or_open_for_too_few_intervals_never_auto_pauses(
    conn: sqlite3.Connection, db_path: str
) -> None:
    """One down check eight days ago, then nothing (its ticks stopped, or it was in maintenance),
    is no week down; nor is a weekly monitor's confirmed outage of eight days (two checks): it
    must be open for AUTO_PAUSE_MIN_INTERVALS intervals too."""
    since_ms = clock.minute_start_ms(HOUSEKEEPING) - 8 * clock.MS_PER_DAY
    down = CheckResult(0, "down", None, None, "connect refused")
    suspected = add(conn, f"http://127.0.0.1:{refused_port()}/a", name="suspected", retries=0)
    weekly = add(conn, f"http://127.0.0.1:{refused_port()}/b", name="weekly", retries=0, every_s=7 * 86_400)
    store.write_results(conn, [], since_ms, [down._replace(monitor_id=suspected)], since_ms)
    for at_ms in (since_ms, since_ms + 7 * clock.MS_PER_DAY):
        store.write_results(conn, [], at_ms, [down._replace(monitor_id=weekly)], at_ms)
    assert conn.execute("SELECT monitor_id, state FROM incidents ORDER BY monitor_id").fetchall() == [
        (suspected, "suspected"),
        (weekly, "confirmed"),
    ]
    now_ms = clock.minute_start_ms(HOUSEKEEPING)
    paused, _ = store.housekeep(conn, now_ms, auto_pause_after_ms=store.AUTO_PAUSE_DEFAULT_MS, retention_ms=10**12)
    assert paused == []
    assert conn.execute("SELECT count(*) FROM monitors WHERE auto_paused = 1").fetchone() == (0,)
