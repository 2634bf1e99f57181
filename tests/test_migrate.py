"""`monitor-tick migrate SRC DST`: a SQLite file to PostgreSQL and back, every row with its id,
one snapshot of a source that keeps changing, never into a database that holds anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import CheckResult
from monitor_tick.probes.heartbeat import token_digest
from tests.commands import ORDINARY_MS, ok_at
from tests.conftest import add, rollup
from tests.postgres import Server
from tests.servers import LocalServer

MINUTE = 29_934_720
T0_MS = clock.minute_start_ms(MINUTE)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [os.path.join(os.path.dirname(sys.executable), "monitor-tick"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def everything(db: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted, as plain values (bytes stay bytes)."""

    def read(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
        return {
            table: sorted((tuple(row) for row in conn.execute(f"SELECT * FROM {table}")), key=lambda row: repr(row))
            for table in store.copy.TABLES
        }

    return store.read_db(db, read)


def _fill(db: str) -> tuple[int, str]:
    """A database with rows in every table; returns (the heartbeat's id, its token)."""
    conn = store.open_db(db)
    try:
        store.add_plan(conn, "free", 300)
        store.add_owner(conn, "alice", "free", T0_MS + 86_400_000)
        web = add(conn, "http://127.0.0.1:9/web", owner="alice")
        down = add(conn, "http://127.0.0.1:9/down")  # confirmed by its second down check: an event
        gone = add(conn, "http://127.0.0.1:9/gone")
        store.remove_monitor(conn, str(gone))  # a gap in the ids: they are copied, not renumbered
        token = "heartbeat-token-for-tests"
        beat = add(conn, "heartbeat", name="nightly", every_s=3600, grace_sec=60, token_sha256=token_digest(token))
        store.record_ping(conn, beat, "start", T0_MS - 5000)
        store.record_ping(conn, beat, "ok", T0_MS - 1000)
        store.add_maintenance(
            conn, monitor_ref=str(web), owner_name=None, starts_at_ms=T0_MS, ends_at_ms=T0_MS + 60_000
        )
        store.add_maintenance_schedule(
            conn, monitor_ref=str(web), owner_name=None, start_minute=120, duration_min=30, days_mask=127
        )
        store.add_channel(conn, "json://127.0.0.1:9/hook", monitor_ref=None, owner_name=None, created_at_ms=T0_MS)
        store.set_env_ref(conn, "settings:network_canary_url", "${CANARY_URL}", "http://127.0.0.1:9/canary")
        store.set_setting(conn, store.CANARY_SETTING, "http://127.0.0.1:9/canary")
        store.record_invalid(conn, {beat: "cannot be probed here: a test"}, at_ms=T0_MS, host="cron-a", say=True)
        store.locations.host_seen(conn, "cron-a", "home", MINUTE, T0_MS)  # one location: SQLite can hold it
        conn.execute(
            "INSERT INTO location_rollups (monitor_id, hour_start_ms, figures) VALUES (?, ?, 'home 2 0 24')",
            (web, clock.hour_start_ms(T0_MS)),
        )
        for minute in (MINUTE, MINUTE + 1):
            at_ms = clock.minute_start_ms(minute)
            store.claim_minute(conn, minute, at_ms, force=False)
            results = [CheckResult(web, "up", 12, 200), CheckResult(down, "down", None, 503, "status 503")]
            store.write_results(conn, [minute], at_ms, results, finished_at_ms=at_ms + 900)
    finally:
        conn.close()
    return beat, token


def test_a_sqlite_file_moves_to_postgresql_and_back_with_every_row_and_id(pg_server: Server, tmp_path: Path) -> None:
    source = str(tmp_path / "monitor-tick.db")
    beat, token = _fill(source)
    original = everything(source)
    assert all(original[table] for table in store.copy.TABLES)  # a row in every table, or this proves little

    url = pg_server.empty_database()
    done = run("migrate", source, url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("copied ") and "row counts verified" in done.stdout and done.stderr == ""
    assert everything(url) == original

    back = str(tmp_path / "back.db")
    assert run("migrate", url, back).returncode == 0
    assert everything(back) == original

    conn = store.open_db(url)
    try:
        assert store.heartbeat_by_token(conn, token_digest(token)) == beat  # its pings keep working
        newest = max(row[0] for row in original["monitors"])
        assert add(conn, "http://127.0.0.1:9/new") == newest + 1  # ids go on after the copied ones
        assert store.add_channel(conn, "json://x/y", monitor_ref=None, owner_name=None, created_at_ms=0) == 2
    finally:
        conn.close()
    assert run("ping", "nightly", "--db", url).returncode == 0


def test_migrate_refuses_to_put_a_fleet_of_several_locations_into_sqlite(pg_server: Server, tmp_path: Path) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    try:
        store.locations.host_seen(conn, "vps", "eu", MINUTE, T0_MS)
        store.locations.host_seen(conn, "nas", "home", MINUTE, T0_MS)
    finally:
        conn.close()
    done = run("migrate", url, str(tmp_path / "one.db"))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "monitor-tick: migrate: the source checks monitors from several locations; a SQLite file has one host, "
        "so one location (keep PostgreSQL, or give those monitors one location first)\n"
    )
    assert list(tmp_path.iterdir()) == []  # a command that fails leaves no file behind (nor its journals)


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_migrate_refuses_a_destination_that_holds_anything(engine: str, pg_server: Server, tmp_path: Path) -> None:
    source = str(tmp_path / "source.db")
    _fill(source)
    if engine == "postgresql":
        destination = pg_server.fresh_database()
    else:
        destination = str(tmp_path / "destination.db")
    conn = store.open_db(destination)
    add(conn, "http://127.0.0.1:9/mine")
    conn.close()
    before = everything(destination)
    done = run("migrate", source, destination)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "monitor-tick: migrate: the destination is not empty (monitors has 1 rows); copy into a new database\n"
    )
    assert everything(destination) == before


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_the_copy_is_one_snapshot_while_the_source_keeps_changing(
    engine: str, pg_server: Server, tmp_path: Path
) -> None:
    source = str(tmp_path / "source.db")
    _fill(source)
    if engine == "postgresql":
        url = pg_server.empty_database()
        assert run("migrate", source, url).returncode == 0
        source = url
    before = everything(source)

    def tick_meanwhile(table: str) -> None:
        # a tick commits to the source after the monitors were copied, before the rollups
        if table != "monitors":
            return
        conn = store.open_db(source)
        try:
            late = add(conn, "http://127.0.0.1:9/late")
            store.claim_minute(conn, MINUTE + 2, T0_MS + 120_000, force=False)
            store.write_results(conn, [MINUTE + 2], T0_MS + 120_000, [CheckResult(late, "up", 5, 200)], T0_MS + 121_000)
        finally:
            conn.close()

    destination = str(tmp_path / "copy.db")
    counts = store.copy_database(source, destination, after_table=tick_meanwhile)
    assert everything(destination) == before  # neither the late monitor nor its rollup
    assert counts["monitors"] == len(before["monitors"]) and counts["rollups"] == len(before["rollups"])
    assert len(everything(source)["monitors"]) == len(before["monitors"]) + 1  # the tick did commit


def test_a_copy_that_fails_half_way_leaves_the_destination_empty(pg_server: Server, tmp_path: Path) -> None:
    source = str(tmp_path / "source.db")
    _fill(source)
    url = pg_server.empty_database()

    def fail_after_rollups(table: str) -> None:
        if table == "rollups":
            raise store.StoreError("the copy stopped")

    with pytest.raises(store.StoreError, match="the copy stopped"):
        store.copy_database(source, url, after_table=fail_after_rollups)
    assert all(not rows for table, rows in everything(url).items() if table != "plans")
    assert run("migrate", source, url).returncode == 0  # and it can be copied into afterwards
    assert everything(url) == everything(source)


@pytest.mark.parametrize(("source_engine", "destination_engine"), [("sqlite", "postgresql"), ("postgresql", "sqlite")])
def test_a_minute_ticked_before_migrate_is_not_run_again_after_it(
    source_engine: str, destination_engine: str, pg_server: Server, tmp_path: Path, local_server: LocalServer
) -> None:
    """Cron ticks the old database, migrate copies it, and the new crontab's tick comes in the
    same minute: the copied minute counts as run (on PostgreSQL, as if every bucket were claimed
    and finished), so no check is counted twice and no alert comes before --alert-after."""

    def new_database(engine: str, name: str) -> str:
        return pg_server.empty_database() if engine == "postgresql" else str(tmp_path / name)

    source, destination = new_database(source_engine, "source.db"), new_database(destination_engine, "copy.db")
    added_ms = ORDINARY_MS - clock.MS_PER_HOUR
    for name, path, alert_after in (("up", "/ok", "1"), ("down", "/status/503", "2")):
        url = local_server.url(path)
        ok_at(source, added_ms, "add", url, "--name", name, "--every", "1m", "--alert-after", alert_after)
    first = json.loads(ok_at(source, ORDINARY_MS, "--retry-delay", "0", "--json"))
    assert (first["claimed"], first["up"], first["down"]) == (True, 1, 1)
    probed = local_server.hits.snapshot()
    assert run("migrate", source, destination).returncode == 0

    again = json.loads(ok_at(destination, ORDINARY_MS + 20_000, "--retry-delay", "0", "--json"))
    assert (again["claimed"], again["due"]) == (False, 0)
    assert local_server.hits.snapshot() == probed
    conn = store.open_db(destination)
    try:
        assert [rollup(conn, monitor) for monitor in (1, 2)] == [(1, 0), (1, 1)]
        assert conn.execute("SELECT monitor_id, state, down_checks FROM incidents").fetchall() == [(2, "suspected", 1)]
        assert conn.execute("SELECT count(*) FROM incident_events").fetchall() == [(0,)]
    finally:
        conn.close()


def test_migrate_refuses_the_same_database_twice(tmp_path: Path) -> None:
    source = str(tmp_path / "source.db")
    _fill(source)
    done = run("migrate", source, source)
    assert done.returncode == 1
    assert done.stderr == "monitor-tick: migrate: the source and the destination are the same database\n"


def test_a_copy_into_postgresql_ends_with_analyze_so_its_planner_knows_the_tables(
    pg_server: Server, tmp_path: Path
) -> None:
    """The due query's plan at 1M monitors rests on the statistics (bench/postgres.py 1000000):
    a copied database has them at once, not after autovacuum's first round."""
    source = str(tmp_path / "source.db")
    _fill(source)
    url = pg_server.empty_database()
    assert run("migrate", source, url).returncode == 0
    conn = store.open_db(url)
    try:
        analyzed = dict(conn.execute("SELECT relname, last_analyze IS NOT NULL FROM pg_stat_user_tables").fetchall())
    finally:
        conn.close()
    # and the tables migrate does not copy (short-lived: claims, the locations' claims and checks)
    uncopied = ["claims", "location_claims", "location_checks", "quorum_minutes", "schema_version"]
    assert analyzed == {table: True for table in [*store.copy.TABLES, *uncopied]}
