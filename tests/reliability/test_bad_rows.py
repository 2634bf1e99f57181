"""Rows that are wrong: the tick probes every good monitor, skips each bad one with one
warning line naming what is wrong, and never crashes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import LocalServer

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
MINUTE = 29_934_720  # minute % 60 == 0


def _loosen_schema(db_path: str) -> None:
    """Make the monitors table accept anything, as a hand-edited database might: drop STRICT
    (text where numbers belong) and switch CHECKs and foreign keys off for the edits."""
    raw = sqlite3.connect(db_path)
    raw.execute("PRAGMA writable_schema = ON")
    raw.execute("UPDATE sqlite_schema SET sql = replace(sql, ') STRICT', ')') WHERE name = 'monitors'")
    raw.commit()
    raw.close()


BAD_ROWS = [
    ("url = 'not a url'", "invalid monitor: url contains whitespace"),
    ("url = 'ftp://127.0.0.1/'", "invalid monitor: unsupported scheme 'ftp'"),
    ("url = 'http://'", "invalid monitor: url has no host"),
    ("timeout_s = 0", "invalid monitor: timeout must be more than 0s and at most 25s (got 0.0)"),
    ("timeout_s = -5", "invalid monitor: timeout must be more than 0s and at most 25s (got -5.0)"),
    ("timeout_s = 'soon'", "invalid monitor: timeout must be more than 0s and at most 25s (got 'soon')"),
    ("retries = 'twice'", "invalid monitor: retries must be 0 to 3 (got 'twice')"),
    ("expect_status = '2xx'", "invalid monitor: expected status is not a code or range: '2xx'"),
    (
        "method = 'BREW'",
        "invalid monitor: method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS (got 'BREW')",
    ),
    ("headers = 'Host: evil.test'", "invalid monitor: --header Host is set by monitor-tick itself"),
    ("insecure = 2", "invalid monitor: insecure must be 0 or 1 (got 2)"),
    ("owner_id = 999", "invalid monitor: owner 999 does not exist"),
]
BAD_INTERVALS = [
    (0, "invalid monitor: interval must be a whole number of minutes, at least 1m (got 0s)"),
    (90, "invalid monitor: interval must be a whole number of minutes, at least 1m (got 90s)"),
    (-60, "invalid monitor: interval must be a whole number of minutes, at least 1m (got -60s)"),
    ("hourly", "invalid monitor: interval is not a whole number of seconds: 'hourly'"),
    (b"\x00\x01", "invalid monitor: interval is not a whole number of seconds: b'\\x00\\x01'"),
    (float("inf"), "invalid monitor: interval is not a whole number of seconds: inf"),
]


def test_bad_rows_are_skipped_with_one_line_each_and_good_ones_are_probed(
    db_path: str, local_server: LocalServer
) -> None:
    _loosen_schema(db_path)
    conn = store.open_db(db_path)
    good = add(conn, local_server.url("/ok"), name="good")
    bad_ids = {}
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA ignore_check_constraints = ON")
    for n, (edit, cause) in enumerate(BAD_ROWS):
        monitor = add(conn, local_server.url(f"/ok?bad={n}"), name=f"bad{n}")
        conn.execute(f"UPDATE monitors SET {edit} WHERE id = ?", (monitor,))  # the test's own literal SQL
        bad_ids[monitor] = cause
    conn.close()

    run = subprocess.run(
        [MONITOR_TICK, "--db", db_path, "--minute", str(MINUTE)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0 and run.stdout == ""
    lines = run.stderr.splitlines()
    assert sorted(lines) == sorted(f"monitor-tick: monitor {m} skipped: {cause}" for m, cause in bad_ids.items())
    conn = store.open_db(db_path)
    assert rollup(conn, good) == (1, 0)
    assert all(rollup(conn, m) == (0, 0) for m in bad_ids)
    assert conn.execute("SELECT count(*) FROM incidents").fetchone()[0] == 0
    assert local_server.hits.total == 1


def test_rows_with_an_unusable_interval_are_reported_once_an_hour_not_every_minute(
    db_path: str, local_server: LocalServer
) -> None:
    _loosen_schema(db_path)
    conn = store.open_db(db_path)
    good = add(conn, local_server.url("/ok"), name="good")
    conn.execute("PRAGMA ignore_check_constraints = ON")
    causes = {}
    for n, (interval, cause) in enumerate(BAD_INTERVALS):
        monitor = add(conn, local_server.url(f"/ok?bad={n}"), name=f"bad{n}")
        conn.execute("UPDATE monitors SET interval_sec = ? WHERE id = ?", (interval, monitor))
        causes[monitor] = cause
    reports: dict[int, list[int]] = {m: [] for m in causes}
    for minute in range(MINUTE, MINUTE + 120):
        for monitor, cause in run_tick(TickOptions(db_path=db_path, minute=minute)).invalid:
            assert cause == causes[monitor]
            reports[monitor].append(minute)
    assert reports == {m: [MINUTE + m % 60, MINUTE + 60 + m % 60] for m in causes}
    assert rollup(conn, good) == (120, 0)
    assert all(rollup(conn, m) == (0, 0) for m in causes)
    conn.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "not a url"], "url contains whitespace"),
        (["add", "gopher://127.0.0.1/"], "unsupported scheme 'gopher'"),
        (["add", "http://127.0.0.1/", "--timeout", "-1s"], "not a duration"),
        (["add", "http://127.0.0.1/", "--timeout", "2m"], "timeout must be more than 0s and at most 25s"),
        (["add", "http://127.0.0.1/", "--every", "0"], "duration must be positive"),
        (["add", "http://127.0.0.1/", "--retries", "9"], "retries must be 0 to 3"),
        (["add", "http://127.0.0.1/", "--owner", "nobody"], "no owner named 'nobody'"),
        (["owner", "add", "x", "--plan", "gold"], "no plan named 'gold'"),
    ],
)
def test_the_cli_refuses_bad_values_at_add_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    run = subprocess.run(
        [MONITOR_TICK, *args, "--db", str(tmp_path / "m.db")], capture_output=True, text=True, timeout=60
    )
    assert run.returncode in (1, 2) and run.stdout == ""
    assert run.stderr.count("\n") == 1 and message in run.stderr, run.stderr
