"""The tick end to end on a real SQLite file and on a PostgreSQL database, with time frozen (freezegun) and HTTP mocked (respx)."""

from __future__ import annotations

import json
import sqlite3

import httpx
import pytest
import respx
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes import PROBES, ProbeContext
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, respx_transport, rollup

MINUTE = 29_934_720  # 2026-12-01T00:00Z
NOON = "2026-12-01 00:00:20"  # 20 seconds into MINUTE


@pytest.fixture
def db_path(any_db: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return any_db


def options(db_path: str, **overrides: object) -> TickOptions:
    return TickOptions(db_path=db_path, retry_delay_s=0, transport=respx_transport(), **overrides)  # type: ignore[arg-type]


@pytest.mark.respx(assert_all_called=False)
def test_a_tick_probes_exactly_the_monitors_due_this_minute(
    respx_mock: respx.MockRouter, conn: sqlite3.Connection, db_path: str
) -> None:
    every_minute = add(conn, "http://a.test/", every_s=60)
    hourly_aligned = add(conn, "http://b.test/", every_s=3600, aligned=True)
    five_spread = add(conn, "http://c.test/", every_s=300)  # id 3: phase 3, not due at :00
    routes = {
        m: respx_mock.get(url).mock(return_value=httpx.Response(200))
        for m, url in [
            (every_minute, "http://a.test/"),
            (hourly_aligned, "http://b.test/"),
            (five_spread, "http://c.test/"),
        ]
    }
    with freeze_time(NOON, real_asyncio=True):
        report = run_tick(options(db_path))
    assert report.minute == MINUTE and report.claimed
    assert [m.id for m in report.due] == [every_minute, hourly_aligned]
    assert routes[every_minute].call_count == 1 and routes[hourly_aligned].call_count == 1
    assert routes[five_spread].call_count == 0
    assert rollup(conn, every_minute) == (1, 0) and rollup(conn, five_spread) == (0, 0)
    with freeze_time("2026-12-01 00:03:01", real_asyncio=True):
        later = run_tick(options(db_path))
    assert [m.id for m in later.due] == [every_minute, five_spread]


def test_a_second_run_for_the_same_minute_probes_and_writes_nothing(
    respx_mock: respx.MockRouter, conn: sqlite3.Connection, db_path: str
) -> None:
    monitor = add(conn, "http://a.test/")
    route = respx_mock.get("http://a.test/").mock(return_value=httpx.Response(200))
    with freeze_time(NOON, real_asyncio=True):
        first = run_tick(options(db_path))
        second = run_tick(options(db_path))
    assert first.claimed and not second.claimed
    assert route.call_count == 1
    assert rollup(conn, monitor) == (1, 0)
    with freeze_time(NOON, real_asyncio=True):
        forced = run_tick(options(db_path, force=True))
    # a forced rerun probes again, but the monitor-minute is counted once (tests/reliability/test_history.py)
    assert forced.claimed and route.call_count == 2 and rollup(conn, monitor) == (1, 0)
    # a forced run that comes first writes its minute whole (on PostgreSQL without bucket claims):
    # the live tick after it has nothing left to share
    with freeze_time("2026-12-01 00:01:20", real_asyncio=True):
        forced_first = run_tick(options(db_path, force=True))
        live = run_tick(options(db_path))
    assert forced_first.claimed and not live.claimed
    assert route.call_count == 3 and rollup(conn, monitor) == (2, 0)


def test_a_down_site_opens_one_incident_and_the_next_up_check_resolves_it(
    respx_mock: respx.MockRouter, conn: sqlite3.Connection, db_path: str
) -> None:
    monitor = add(conn, "http://a.test/", retries=0)
    route = respx_mock.get("http://a.test/")
    route.side_effect = [httpx.Response(503), httpx.Response(503), httpx.Response(200), httpx.Response(200)]
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


def test_a_failed_probe_is_tried_again_within_the_tick_before_it_counts(
    respx_mock: respx.MockRouter, conn: sqlite3.Connection, db_path: str
) -> None:
    flaky = add(conn, "http://flaky.test/", retries=1)
    no_retry = add(conn, "http://once.test/", retries=0)
    respx_mock.get("http://flaky.test/").side_effect = [httpx.ConnectError("boom"), httpx.Response(200)]
    once = respx_mock.get("http://once.test/").mock(return_value=httpx.Response(500))
    with freeze_time(NOON, real_asyncio=True):
        run_tick(options(db_path))
    assert rollup(conn, flaky) == (1, 0)
    assert rollup(conn, no_retry) == (1, 1) and once.call_count == 1


@pytest.mark.respx(assert_all_called=False)
def test_maintenance_and_plan_expiry_use_the_replayed_minutes_time(
    respx_mock: respx.MockRouter, conn: sqlite3.Connection, db_path: str
) -> None:
    in_window = add(conn, "http://maint.test/")
    store.add_plan(conn, "slow", 600)
    store.add_owner(conn, "eve", "slow", clock.minute_start_ms(MINUTE + 5))
    floored = add(conn, "http://floor.test/", owner="eve")  # id 2: phase 2 under the 10 m floor
    store.add_maintenance(
        conn,
        monitor_ref=str(in_window),
        owner_name=None,
        starts_at_ms=clock.minute_start_ms(MINUTE + 1),
        ends_at_ms=clock.minute_start_ms(MINUTE + 3),
    )
    maint = respx_mock.get("http://maint.test/").mock(return_value=httpx.Response(200))
    floor = respx_mock.get("http://floor.test/").mock(return_value=httpx.Response(200))
    # The wall clock says 2030; every replayed minute must still use its own time.
    with freeze_time("2030-01-01", real_asyncio=True):
        for minute in range(MINUTE, MINUTE + 8):
            run_tick(options(db_path, minute=minute))
    assert maint.call_count == 6  # not in MINUTE+1, MINUTE+2
    assert floor.call_count == 1 + 3  # MINUTE+2 under the floor; every minute from MINUTE+5
    hours = conn.execute("SELECT DISTINCT hour_start_ms FROM rollups").fetchall()
    assert hours == [(clock.minute_start_ms(MINUTE),)]
    assert floored == 2


def test_a_bug_inside_one_probe_is_that_monitors_failure_not_the_ticks(
    respx_mock: respx.MockRouter,
    conn: sqlite3.Connection,
    db_path: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    buggy = add(conn, "http://buggy.test/")
    fine = add(conn, "http://fine.test/")
    respx_mock.get("http://fine.test/").mock(return_value=httpx.Response(200))
    real_http = PROBES["http"].probe

    async def sometimes_broken(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
        if monitor.id == buggy:
            raise ZeroDivisionError("a bug")
        return await real_http(monitor, ctx)

    monkeypatch.setitem(PROBES, "http", PROBES["http"]._replace(probe=sometimes_broken))
    with freeze_time(NOON, real_asyncio=True):
        report = run_tick(options(db_path))
    assert report.summary is not None and report.summary.up == 1 and report.summary.down == 1
    assert store.incidents_for(conn, buggy)[0][2] == "probe error: ZeroDivisionError"
    assert rollup(conn, fine) == (1, 0)
    assert "ZeroDivisionError" in capsys.readouterr().err


def test_a_broken_row_is_skipped_with_its_cause_and_the_rest_are_probed(
    respx_mock: respx.MockRouter, conn: sqlite3.Connection, db_path: str
) -> None:
    good = add(conn, "http://good.test/")
    bad = add(conn, "http://bad.test/")
    conn.execute("UPDATE monitors SET url = 'ftp://bad.test/' WHERE id = ?", (bad,))
    respx_mock.get("http://good.test/").mock(return_value=httpx.Response(200))
    with freeze_time(NOON, real_asyncio=True):
        report = run_tick(options(db_path))
    assert report.invalid == [(bad, "invalid monitor: unsupported scheme 'ftp'")]
    assert rollup(conn, good) == (1, 0)
    # a broken row is our configuration, not the site's outage: no check, no incident
    assert rollup(conn, bad) == (0, 0) and store.incidents_for(conn, bad) == []


# --- through the command line ---------------------------------------------------------------

runner = CliRunner()


def test_a_healthy_tick_prints_nothing_and_exits_0(
    respx_mock: respx.MockRouter, conn: sqlite3.Connection, db_path: str
) -> None:
    add(conn, "http://a.test/")
    respx_mock.get("http://a.test/").mock(return_value=httpx.Response(200))
    with freeze_time(NOON, real_asyncio=True):
        result = runner.invoke(app, ["--db", db_path], obj={"transport": respx_transport()})
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and result.stderr == ""


def test_a_tick_with_down_monitors_still_exits_0_and_json_reports_them(
    respx_mock: respx.MockRouter, conn: sqlite3.Connection, db_path: str
) -> None:
    add(conn, "http://a.test/", retries=0)
    respx_mock.get("http://a.test/").mock(return_value=httpx.Response(502))
    with freeze_time(NOON, real_asyncio=True):
        result = runner.invoke(app, ["--db", db_path, "--json"], obj={"transport": respx_transport()})
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
