"""Heartbeat monitors: pings recorded by `ping`, judged by the tick when the monitor is due.

Ticks replay chosen minutes (--minute); pings are sent at frozen times."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.probes.heartbeat import new_token
from monitor_tick.run import tick
from monitor_tick.run.report import TickReport
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import refused_port


@pytest.fixture
def db_path(any_db: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return any_db


MINUTE = 29_934_720  # 2026-12-01T00:00Z
T0 = clock.minute_start_ms(MINUTE)
MIN_MS, HOUR_MS, DAY_MS = 60_000, 3_600_000, 86_400_000
runner = CliRunner()


def heartbeat(conn: sqlite3.Connection, name: str = "backups", *, added_ms: int = T0 - HOUR_MS) -> int:
    """A daily heartbeat with 1h grace, due at 00:00 UTC (aligned)."""
    return add(
        conn,
        "heartbeat",
        name=name,
        every_s=86_400,
        aligned=True,
        grace_sec=3_600,
        created_at_ms=added_ms,
        token_sha256=new_token()[1],
    )


def ping(db_path: str, at_ms: int, *flags: str, name: str = "backups") -> None:
    with freeze_time(clock.iso_from_ms(at_ms)):
        result = runner.invoke(app, ["ping", name, *flags, "--db", db_path])
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and result.stderr == ""


def tick_at(db_path: str, at_ms: int) -> TickReport:
    """Replay the minute of `at_ms`, with the clock there (a minute still to come is refused)."""
    with freeze_time(clock.iso_from_ms(at_ms), real_asyncio=True):
        return run_tick(TickOptions(db_path=db_path, minute=clock.minute_of_ms(at_ms), retry_delay_s=0))


def outcome(report: TickReport, monitor: int) -> tuple[str, str | None]:
    (result,) = [r for r in report.results_json() if r["id"] == monitor]
    return result["status"], result["cause"]


def test_a_heartbeat_pinged_in_time_is_up_and_silence_past_period_plus_grace_opens_an_incident(
    conn: sqlite3.Connection, db_path: str
) -> None:
    monitor = heartbeat(conn)
    ping(db_path, T0 - 30 * MIN_MS)
    assert outcome(tick_at(db_path, T0), monitor) == ("up", None)
    assert outcome(tick_at(db_path, T0 + DAY_MS), monitor) == ("up", None)  # 1d30m: within 1d + 1h
    silent = tick_at(db_path, T0 + 2 * DAY_MS)
    assert outcome(silent, monitor) == ("down", "heartbeat: no ping for 2d30m (grace 1h)")
    assert silent.as_json()["opened"] == 1
    ping(db_path, T0 + 2 * DAY_MS + 5 * HOUR_MS)
    assert outcome(tick_at(db_path, T0 + 3 * DAY_MS), monitor) == ("up", None)
    [(started, resolved, cause)] = store.incidents_for(conn, monitor)
    assert (started, resolved, cause) == (T0 + 2 * DAY_MS, T0 + 3 * DAY_MS, "heartbeat: no ping for 2d30m (grace 1h)")
    assert rollup(conn, monitor) == (4, 1)


def test_late_means_more_than_period_plus_grace_since_the_last_ping(conn: sqlite3.Connection, db_path: str) -> None:
    on_time = heartbeat(conn, "on-time")
    late = heartbeat(conn, "late")
    ping(db_path, T0 - HOUR_MS, name="on-time")  # exactly 1d + 1h before the check
    ping(db_path, T0 - HOUR_MS - MIN_MS, name="late")
    report = tick_at(db_path, T0 + DAY_MS)
    assert outcome(report, on_time) == ("up", None)
    assert outcome(report, late) == ("down", "heartbeat: no ping for 1d1h (grace 1h)")


def test_a_job_that_reports_failure_is_down_until_its_next_successful_ping(
    conn: sqlite3.Connection, db_path: str
) -> None:
    monitor = heartbeat(conn)
    ping(db_path, T0 - 10 * MIN_MS, "--fail")
    assert outcome(tick_at(db_path, T0), monitor) == ("down", "heartbeat: job reported failure")
    ping(db_path, T0 + 3 * HOUR_MS)
    assert outcome(tick_at(db_path, T0 + DAY_MS), monitor) == ("up", None)
    assert [r is not None for _, r, _ in store.incidents_for(conn, monitor)] == [True]


def test_a_heartbeat_never_pinged_is_late_counted_from_when_it_was_added(
    conn: sqlite3.Connection, db_path: str
) -> None:
    monitor = heartbeat(conn, added_ms=T0 - 2 * HOUR_MS)
    assert outcome(tick_at(db_path, T0), monitor) == ("up", None)
    assert outcome(tick_at(db_path, T0 + DAY_MS), monitor) == (
        "down",
        "heartbeat: no ping since it was added 1d2h ago (grace 1h)",
    )


def test_a_start_signal_measures_the_run_and_list_shows_it(conn: sqlite3.Connection, db_path: str) -> None:
    heartbeat(conn)
    ping(db_path, T0 + 2 * HOUR_MS, "--start")
    with freeze_time(clock.iso_from_ms(T0 + 2 * HOUR_MS + 5 * MIN_MS)):
        running = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)[0]
    assert running["note"] == "no ping yet; started 5m ago"
    ping(db_path, T0 + 2 * HOUR_MS + 12 * MIN_MS)
    with freeze_time(clock.iso_from_ms(T0 + 5 * HOUR_MS + 12 * MIN_MS)):
        listed = runner.invoke(app, ["list", "--db", db_path]).stdout
        row = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)[0]
    assert "heartbeat  last ping 3h ago (ran 12m)" in listed
    finished_ms = T0 + 2 * HOUR_MS + 12 * MIN_MS
    assert (row["kind"], row["last_ping_ms"], row["last_duration_ms"]) == ("heartbeat", finished_ms, 720_000)
    ping(db_path, T0 + 6 * HOUR_MS, "--fail")  # a ping without a start: its run's length is unknown
    with freeze_time(clock.iso_from_ms(T0 + 7 * HOUR_MS)):
        row = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)[0]
    assert (row["note"], row["last_ping_failed"], row["last_duration_ms"]) == ("last ping 1h ago: failure", True, None)


# SQLite only: it counts statements with SQLite's trace callback
@pytest.mark.parametrize("any_db", ["sqlite"], indirect=True)
def test_the_tick_reads_pings_in_one_query_only_when_heartbeats_are_due_and_never_writes_them(
    conn: sqlite3.Connection, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = heartbeat(conn, "first"), heartbeat(conn, "second")
    add(conn, f"tcp://127.0.0.1:{refused_port()}", name="port", retries=0)  # due every minute
    ping(db_path, T0 - HOUR_MS, name="first")
    loads: list[tuple[list[int], list[str]]] = []
    real_load = tick.KIND_READS["heartbeat"]

    def counting_load(c: sqlite3.Connection, ids: Sequence[int]) -> Mapping[int, Any]:
        statements: list[str] = []
        c.set_trace_callback(statements.append)
        try:
            return real_load(c, ids)
        finally:
            c.set_trace_callback(None)
            loads.append((sorted(ids), statements))

    monkeypatch.setitem(tick.KIND_READS, "heartbeat", counting_load)
    before = conn.execute("SELECT * FROM pings ORDER BY monitor_id").fetchall()

    tick_at(db_path, T0)  # both heartbeats due (00:00 UTC), and the port
    assert [(ids, len(statements)) for ids, statements in loads] == [([first, second], 1)]
    tick_at(db_path, T0 + MIN_MS)  # only the port is due
    assert len(loads) == 1
    assert conn.execute("SELECT * FROM pings ORDER BY monitor_id").fetchall() == before


def test_add_heartbeat_prints_a_token_that_is_stored_only_as_its_digest(db_path: str) -> None:
    added = runner.invoke(app, ["add", "heartbeat", "--name", "backups", "--every", "1d", "--db", db_path])
    assert added.exit_code == 0, added.output
    token = added.stdout.strip()
    assert len(token) == 43 and token.replace("-", "").replace("_", "").isalnum()
    conn = store.open_db(db_path)
    stored = conn.execute("SELECT token_sha256, grace_sec, retries FROM monitors").fetchone()
    conn.close()
    assert stored == (hashlib.sha256(token.encode()).digest(), 3_600, 0)
    files = [Path(db_path), Path(db_path + "-wal")]
    assert not any(token.encode() in path.read_bytes() for path in files if path.exists())
    again = runner.invoke(app, ["add", "heartbeat", "--name", "backups2", "--every", "1d", "--db", db_path])
    assert again.stdout.strip() != token


def test_ping_refuses_unknown_monitors_other_kinds_and_two_signals_at_once(
    conn: sqlite3.Connection, db_path: str
) -> None:
    add(conn, "http://127.0.0.1/x", name="site")
    heartbeat(conn)
    unknown = runner.invoke(app, ["ping", "nope", "--db", db_path])
    assert (unknown.exit_code, unknown.stderr) == (1, "monitor-tick: no monitor 'nope'\n")
    other = runner.invoke(app, ["ping", "site", "--db", db_path])
    assert other.exit_code == 1 and "monitor 'site' is not a heartbeat" in other.stderr
    both = runner.invoke(app, ["ping", "backups", "--fail", "--start", "--db", db_path])
    assert both.exit_code == 2 and "at most one of --fail and --start" in both.stderr
    assert conn.execute("SELECT count(*) FROM pings").fetchone()[0] == 0
