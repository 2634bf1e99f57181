"""History is never rewritten: a replay records nothing for monitors that did not exist yet and
cannot claim a minute that has not come; a forced rerun never counts a monitor-minute twice."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli import entry
from monitor_tick.cli.app import app
from monitor_tick.cli.options import parse_tick_args
from monitor_tick.core import clock
from monitor_tick.run.tick import TickOptions, run_tick
from tests.commands import ok_at
from tests.conftest import add, rollup
from tests.servers import LocalServer

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
DAY_START = 29_934_720  # 2026-12-01T00:00Z


def at(minute: int, second: int = 5) -> str:
    return clock.iso_from_ms(clock.minute_start_ms(minute) + second * 1000)


def state(conn: sqlite3.Connection) -> tuple[list[tuple[object, ...]], ...]:
    """Everything a check leaves behind: rollups, incidents and their events."""
    return (
        conn.execute("SELECT monitor_id, hour_start_ms, checks, failures FROM rollups ORDER BY 1, 2").fetchall(),
        conn.execute("SELECT monitor_id, state, down_checks, up_checks, resolved_at_ms FROM incidents").fetchall(),
        conn.execute("SELECT incident_id, kind FROM incident_events").fetchall(),
    )


# --- replays ---------------------------------------------------------------------------------


def test_a_replay_records_nothing_for_a_monitor_created_after_its_minute(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    created_ms = clock.minute_start_ms(DAY_START + 10) + 30_000
    old = add(conn, local_server.url("/ok?old"), created_at_ms=0)
    new = add(conn, local_server.url("/status/503?new"), created_at_ms=created_ms, retries=0)
    before = run_tick(TickOptions(db_path=db_path, minute=DAY_START + 10, retry_delay_s=0))
    assert [m.id for m in before.due] == [old]
    assert rollup(conn, old) == (1, 0) and rollup(conn, new) == (0, 0)
    assert local_server.hits["/status/503"] == 0
    # a minute after it was created is replayed as the live tick would have run it
    after = run_tick(TickOptions(db_path=db_path, minute=DAY_START + 11, retry_delay_s=0))
    assert [m.id for m in after.due] == [old, new]
    assert rollup(conn, new) == (1, 1)


def test_a_dry_run_replay_lists_only_the_monitors_that_existed(conn: sqlite3.Connection, db_path: str) -> None:
    add(conn, "http://old.test/", created_at_ms=0)
    add(conn, "http://new.test/", created_at_ms=clock.minute_start_ms(DAY_START + 1))
    listed = subprocess.run(
        [MONITOR_TICK, "--db", db_path, "--minute", str(DAY_START), "--dry-run"], capture_output=True, text=True
    )
    assert listed.returncode == 0
    assert "http://old.test/" in listed.stdout and "http://new.test/" not in listed.stdout


def test_a_minute_that_has_not_come_yet_cannot_be_replayed(conn: sqlite3.Connection, db_path: str) -> None:
    add(conn, "http://a.test/")
    conn.close()
    future = clock.minute_of_ms(clock.now_ms()) + 5
    refused = subprocess.run(
        [MONITOR_TICK, "--db", db_path, "--minute", str(future)], capture_output=True, text=True, timeout=60
    )
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr.startswith(f"monitor-tick: --minute {future} has not come yet")
    assert refused.stderr.count("\n") == 1
    raw = sqlite3.connect(db_path)
    assert raw.execute("SELECT count(*) FROM ticks").fetchone() == (0,)  # nothing claimed
    raw.close()
    looked_ahead = subprocess.run(
        [MONITOR_TICK, "--db", db_path, "--minute", str(future), "--dry-run"], capture_output=True, text=True
    )
    assert looked_ahead.returncode == 0 and f"minute {future} " in looked_ahead.stdout


def test_both_command_parsers_refuse_a_future_replay_alike(
    db_path: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["--db", db_path, "--minute", str(DAY_START + 1), "-v"]
    assert parse_tick_args(args, {}) is not None  # the fast path takes this line
    with freeze_time(at(DAY_START), real_asyncio=True):
        with pytest.raises(SystemExit) as exited:
            entry.main(args)
        fast = (exited.value.code, *capsys.readouterr())
        typer = CliRunner().invoke(app, args)
    message = (
        f"monitor-tick: --minute {DAY_START + 1} has not come yet (the clock reads minute {DAY_START}); "
        "only --dry-run can look ahead\n"
    )
    assert fast == (2, "", message)
    assert (typer.exit_code, typer.stdout, typer.stderr) == (2, "", message)


# --- --force ---------------------------------------------------------------------------------


def test_forcing_a_minute_three_times_counts_it_once(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    up = add(conn, local_server.url("/ok?up"))
    down = add(conn, local_server.url("/status/503?down"), retries=0)  # alert after 2 down checks
    slow = add(conn, local_server.url("/slow/1500?slow"), retries=0, timeout_s=3)
    minute = DAY_START + 3
    with freeze_time(at(minute), real_asyncio=True) as frozen:
        # a budget that the slow check outlasts by half a second, and the others' quick checks fit
        # in many times over, even on a loaded machine (0.2 s was cut close: CI once cut them all)
        first = run_tick(TickOptions(db_path=db_path, retry_delay_s=0, budget_s=1.0))
        assert [r.status for r in first.results] == ["up", "down", "unknown"]  # slow: cut off by the budget
        once = state(conn)
        assert once[1] == [(down, "suspected", 1, 0, None)]
        late = add(conn, local_server.url("/ok?late"), created_at_ms=clock.minute_start_ms(minute) + 10_000)
        for second in (20, 40, 50):
            frozen.move_to(at(minute, second))
            forced = run_tick(TickOptions(db_path=db_path, retry_delay_s=0, budget_s=5, force=True))
            assert forced.claimed  # it probes and reports every due monitor
            assert {r.monitor_id: r.status for r in forced.results} == {up: "up", down: "down", slow: "up", late: "up"}
            counts = forced.as_json()
            # --json's counts are what was recorded (said in --help): nothing after the first rerun
            assert (counts["down"], counts["up"]) == ((0, 2) if second == 20 else (0, 0))
    # what the first run recorded stays as it was; the cut-off and the new monitor are recorded once
    rollups, incidents, events = state(conn)
    assert (rollups, incidents, events) != once
    assert incidents == once[1] and events == []  # no confirmation by repetition, nobody told
    assert {row[0]: row[2:] for row in rollups} == {up: (1, 0), down: (1, 1), slow: (1, 0), late: (1, 0)}
    assert local_server.hits["/status/503"] == 4


def test_forcing_a_minute_whose_run_died_records_it_once(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    up = add(conn, local_server.url("/ok?up"))
    minute = DAY_START + 7
    store.claim_minute(conn, minute, clock.minute_start_ms(minute), force=False)  # a run that died mid-probe
    for second in (10, 20):
        with freeze_time(at(minute, second), real_asyncio=True):
            assert run_tick(TickOptions(db_path=db_path, retry_delay_s=0, force=True)).claimed
    assert rollup(conn, up) == (1, 0)


# --- a replay is not a live tick ------------------------------------------------------------


def test_a_replayed_old_minute_leaves_no_downtime_before_the_first_live_tick(
    any_db: str, tmp_path: Path, local_server: LocalServer
) -> None:
    """docs/commands.md's replay, 2.3 days back on a new database, then live ticks: the minutes
    between the replayed one and the first live tick are no missed ticks, in the tick's own
    count, `report`, the status page or the metrics. A gap after the first live tick still is."""
    live = DAY_START + 3_300  # 2.3 days after the replayed minute
    started_ms = clock.minute_start_ms(live) + 5_000
    ok_at(any_db, started_ms - 120_000, "add", local_server.url("/ok"), "--name", "site", "--every", "1m")
    ok_at(any_db, started_ms - 60_000, "--minute", str(DAY_START))
    metrics, page = tmp_path / "metrics.prom", tmp_path / "status"
    outputs = ("--metrics-file", str(metrics), "--status-page", str(page))
    first = json.loads(ok_at(any_db, started_ms, "--json", *outputs))
    assert (first["caught_up"], first["missed"]) == (0, 0)
    assert "monitor_tick_missed_ticks 0\n" in metrics.read_text()
    shown = (page / "index.html").read_text()
    assert "was not running for" not in shown and not re.search(r"no data for \d", shown)  # the note, a day's bar
    assert "not running" not in ok_at(any_db, started_ms + 30_000, "report")
    # ticks skipped after the first live one are still caught up, and older ones missed
    later_ms = started_ms + 20 * 60_000
    after = json.loads(ok_at(any_db, later_ms, "--json", "--catch-up", "15", *outputs))
    assert (after["caught_up"], after["missed"]) == (15, 4)
    assert "monitor_tick_missed_ticks 4\n" in metrics.read_text()
    assert "monitor-tick was not running for 4m" in ok_at(any_db, later_ms + 30_000, "report")
