"""The tick end to end on a real SQLite file and on a PostgreSQL database, with time frozen
(freezegun), against HTTP servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
from collections import Counter

import pytest
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes import PROBES, ProbeContext
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.hostile_origin import scripted
from tests.servers import LocalServer, reset_connection, send_response

MINUTE = 29_934_720  # 2026-12-01T00:00Z
NOON = "2026-12-01 00:00:20"  # 20 seconds into MINUTE


@pytest.fixture
def db_path(any_db: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return any_db


def options(db_path: str, **overrides: object) -> TickOptions:
    return TickOptions(db_path=db_path, retry_delay_s=0, **overrides)  # type: ignore[arg-type]


def received(server: LocalServer) -> Counter[str]:
    """How many requests `server` received, by target (path and query)."""
    return Counter(r.target for r in server.requests)


def test_a_tick_probes_exactly_the_monitors_due_this_minute(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    every_minute = add(conn, local_server.url("/ok?a"), every_s=60)
    hourly_aligned = add(conn, local_server.url("/ok?b"), every_s=3600, aligned=True)
    five_spread = add(conn, local_server.url("/ok?c"), every_s=300)  # id 3: phase 3, not due at :00
    with freeze_time(NOON, real_asyncio=True):
        report = run_tick(options(db_path))
    assert report.minute == MINUTE and report.claimed
    assert [m.id for m in report.due] == [every_minute, hourly_aligned]
    assert received(local_server) == {"/ok?a": 1, "/ok?b": 1}  # and none for c
    assert rollup(conn, every_minute) == (1, 0) and rollup(conn, five_spread) == (0, 0)
    with freeze_time("2026-12-01 00:03:01", real_asyncio=True):
        later = run_tick(options(db_path))
    assert [m.id for m in later.due] == [every_minute, five_spread]


def test_a_second_run_for_the_same_minute_probes_and_writes_nothing(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    monitor = add(conn, local_server.url("/ok"))
    route = local_server.hits
    with freeze_time(NOON, real_asyncio=True):
        first = run_tick(options(db_path))
        second = run_tick(options(db_path))
    assert first.claimed and not second.claimed
    assert route["/ok"] == 1
    assert rollup(conn, monitor) == (1, 0)
    with freeze_time(NOON, real_asyncio=True):
        forced = run_tick(options(db_path, force=True))
    # a forced rerun probes again, but the monitor-minute is counted once (tests/reliability/test_history.py)
    assert forced.claimed and route["/ok"] == 2 and rollup(conn, monitor) == (1, 0)
    # a forced run that comes first writes its minute whole (on PostgreSQL without bucket claims):
    # the live tick after it has nothing left to share
    with freeze_time("2026-12-01 00:01:20", real_asyncio=True):
        forced_first = run_tick(options(db_path, force=True))
        live = run_tick(options(db_path))
    assert forced_first.claimed and not live.claimed
    assert route["/ok"] == 3 and rollup(conn, monitor) == (2, 0)


def test_a_down_site_opens_one_incident_and_the_next_up_check_resolves_it(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    monitor = add(conn, local_server.url("/a"), retries=0)
    answered = scripted(local_server, "/a", 503, 503, 200)
    for second in ("2026-12-01 00:00:05", "2026-12-01 00:01:05", "2026-12-01 00:02:05", "2026-12-01 00:03:05"):
        with freeze_time(second, real_asyncio=True):
            run_tick(options(db_path))
    incidents = store.incidents_for(conn, monitor)
    assert len(incidents) == 1
    started_at_ms, resolved_at_ms, cause = incidents[0]
    assert cause == "status 503"
    assert started_at_ms == clock.parse_iso_ms("2026-12-01T00:00:05Z")
    assert resolved_at_ms == clock.parse_iso_ms("2026-12-01T00:02:05Z")
    assert rollup(conn, monitor) == (4, 2)
    assert answered == [503, 503, 200, 200]


def test_a_failed_probe_is_tried_again_within_the_tick_before_it_counts(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    flaky = add(conn, local_server.url("/flaky"), retries=1)
    no_retry = add(conn, local_server.url("/status/500"), retries=0)
    flaked = scripted(local_server, "/flaky", reset_connection, 200)  # 0: the reset
    with freeze_time(NOON, real_asyncio=True):
        run_tick(options(db_path))
    assert rollup(conn, flaky) == (1, 0) and flaked == [0, 200]
    assert rollup(conn, no_retry) == (1, 1) and local_server.hits["/status/500"] == 1


def test_maintenance_and_plan_expiry_use_the_replayed_minutes_time(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    in_window = add(conn, local_server.url("/ok?maint"))
    store.add_plan(conn, "slow", 600)
    store.add_owner(conn, "eve", "slow", clock.minute_start_ms(MINUTE + 5))
    floored = add(conn, local_server.url("/ok?floor"), owner="eve")  # id 2: phase 2 under the 10 m floor
    store.add_maintenance(
        conn,
        monitor_ref=str(in_window),
        owner_name=None,
        starts_at_ms=clock.minute_start_ms(MINUTE + 1),
        ends_at_ms=clock.minute_start_ms(MINUTE + 3),
    )
    # The wall clock says 2030; every replayed minute must still use its own time.
    with freeze_time("2030-01-01", real_asyncio=True):
        for minute in range(MINUTE, MINUTE + 8):
            run_tick(options(db_path, minute=minute))
    assert received(local_server) == {
        "/ok?maint": 6,  # not in MINUTE+1, MINUTE+2
        "/ok?floor": 1 + 3,  # MINUTE+2 under the floor; every minute from MINUTE+5
    }
    hours = conn.execute("SELECT DISTINCT hour_start_ms FROM rollups").fetchall()
    assert hours == [(clock.minute_start_ms(MINUTE),)]
    assert floored == 2


def test_a_bug_inside_one_probe_is_that_monitors_failure_not_the_ticks(
    conn: sqlite3.Connection,
    db_path: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    local_server: LocalServer,
) -> None:
    buggy = add(conn, f"tcp://127.0.0.1:{local_server.port}")
    fine = add(conn, local_server.url("/ok?fine"))

    async def broken(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
        raise ZeroDivisionError("a bug")

    monkeypatch.setitem(PROBES, "tcp", PROBES["tcp"]._replace(probe=broken))
    with freeze_time(NOON, real_asyncio=True):
        report = run_tick(options(db_path))
    assert report.summary is not None and report.summary.up == 1 and report.summary.down == 1
    assert store.incidents_for(conn, buggy)[0][2] == "probe error: ZeroDivisionError"
    assert rollup(conn, fine) == (1, 0) and received(local_server) == {"/ok?fine": 1}
    assert "ZeroDivisionError" in capsys.readouterr().err


def test_a_broken_row_is_skipped_with_its_cause_and_the_rest_are_probed(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    good = add(conn, local_server.url("/ok"))
    bad = add(conn, "http://bad.test/")
    conn.execute("UPDATE monitors SET url = 'ftp://bad.test/' WHERE id = ?", (bad,))
    with freeze_time(NOON, real_asyncio=True):
        report = run_tick(options(db_path))
    assert report.invalid == [(bad, "invalid monitor: unsupported scheme 'ftp'")]
    assert rollup(conn, good) == (1, 0) and local_server.hits == {"/ok": 1}
    # a broken row is our configuration, not the site's outage: no check, no incident
    assert rollup(conn, bad) == (0, 0) and store.incidents_for(conn, bad) == []


# --- through the command line ---------------------------------------------------------------

runner = CliRunner()


def test_a_healthy_tick_prints_nothing_and_exits_0(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    add(conn, local_server.url("/ok"))
    with freeze_time(NOON, real_asyncio=True):
        result = runner.invoke(app, ["--db", db_path])
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and result.stderr == ""
    assert local_server.hits == {"/ok": 1}


@pytest.mark.parametrize("collecting", [True, False], ids=["collector on", "collector off"])
def test_the_collector_runs_while_probes_run_and_is_left_as_the_tick_found_it(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, collecting: bool
) -> None:
    """The command keeps Python's garbage collector off while a tick starts (cli/entry.py);
    its probes run with it on, so that what they leave behind is collected, and a caller that
    goes on after the tick finds it as it was, with nothing frozen out of its walks."""
    seen: list[tuple[bool, int]] = []

    async def ok(reader: object, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        seen.append((gc.isenabled(), gc.get_freeze_count()))  # the server runs in this process
        await send_response(writer, 200, "ok", method=method)

    add(conn, local_server.url("/seen"))
    local_server.route("/seen", ok)
    was = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    try:
        with freeze_time(NOON, real_asyncio=True):
            report = run_tick(options(db_path))
        after = (gc.isenabled(), gc.get_freeze_count())
    finally:
        (gc.enable if was else gc.disable)()
    assert report.summary is not None and report.summary.up == 1
    assert len(seen) == 1 and seen[0][0] is True and seen[0][1] > 0
    assert after == (collecting, 0)


def test_a_tick_with_down_monitors_still_exits_0_and_json_reports_them(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    add(conn, local_server.url("/status/502"), retries=0)
    with freeze_time(NOON, real_asyncio=True):
        result = runner.invoke(app, ["--db", db_path, "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert {k: data[k] for k in ("minute", "due", "up", "down", "opened", "resolved")} == {
        "minute": MINUTE,
        "due": 1,
        "up": 0,
        "down": 1,
        "opened": 1,
        "resolved": 0,
    }
    assert isinstance(data["duration_ms"], int)
    assert local_server.hits == {"/status/502": 1}


def test_a_rerun_of_a_minute_says_so_only_with_verbose(conn: sqlite3.Connection, db_path: str) -> None:
    with freeze_time(NOON, real_asyncio=True):
        assert runner.invoke(app, ["--db", db_path]).exit_code == 0
        quiet = runner.invoke(app, ["--db", db_path])
        loud = runner.invoke(app, ["--db", db_path, "-v"])
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""
    assert loud.exit_code == 0 and "already run" in loud.stderr and loud.stdout == ""


def test_dry_run_lists_due_monitors_without_probing_or_writing(conn: sqlite3.Connection, db_path: str) -> None:
    add(conn, "https://user:secret@a.test/?token=abc", name="a")
    add(conn, "http://b.test/", every_s=300, name="b")
    result = runner.invoke(app, ["--db", db_path, "--minute", str(MINUTE), "--dry-run", "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "minute": MINUTE,
        "due": [
            {
                "id": 1,
                "name": "a",
                "url": "https://***@a.test/?token=***",
                "interval_sec": 60,
                "effective_interval_sec": 60,
            }
        ],
    }
    assert conn.execute("SELECT count(*) FROM ticks").fetchone()[0] == 0


def test_an_unusable_database_fails_the_tick_with_one_line_and_exit_1(tmp_path: object) -> None:
    result = runner.invoke(app, ["--db", "/nonexistent-dir/x.db"])
    assert result.exit_code == 1
    assert result.stderr == "monitor-tick: database directory does not exist: /nonexistent-dir\n"
