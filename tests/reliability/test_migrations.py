"""Upgrades never break the cron line: a database made by an older monitor-tick is upgraded in
place by the first command that writes, or on SQLite by a command that only reads, with its
history intact; an older program refuses a newer file; dry runs, and every reader on
PostgreSQL, change nothing."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from monitor_tick import store
from monitor_tick.core.redact import redact_url
from monitor_tick.store import migrations
from tests.commands import clock_at
from tests.conftest import add
from tests.postgres import Server

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
V1_TOKEN = (FIXTURES / "v1.token").read_text().strip()


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The command under a fixed ordinary clock: at 03:17 UTC the real one would auto-pause the
    fixture's monitors, down for over a year, and say so."""
    env = {**os.environ, **clock_at()}
    return subprocess.run([MONITOR_TICK, "--db", db, *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.fixture
def v1_db(tmp_path: Path) -> str:
    """A copy of a database that monitor-tick 0.1.0 (schema version 1) made through its own
    commands (tests/fixtures/make_v1_db.sh): plans, owners, monitors, a heartbeat, a window, a
    channel, replayed ticks with confirmed incidents and a pending delivery."""
    path = tmp_path / "v1.db"
    shutil.copy(FIXTURES / "v1.db", path)
    return str(path)


def schema_of(path: str) -> dict[tuple[str, str], str]:
    """Every table and index, by (type, name), as its SQL without comments, quotes or white
    space: an upgraded file and a new one must agree to the letter."""
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL").fetchall()
    conn.close()
    return {(kind, name): re.sub(r"\s+|\"", "", re.sub(r"--[^\n]*", "", sql)) for kind, name, sql in rows}


def version_of(path: str) -> int:
    # read-only and without a journal: the committed fixture is read by other tests (and xdist
    # workers) at the same time, and must not gain -wal or -shm files beside it
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_the_steps_are_numbered_without_gaps_up_to_the_schema_version() -> None:
    assert [step.version for step in migrations.steps()] == list(range(2, store.SCHEMA_VERSION + 1))


def test_the_fixture_is_a_version_1_file() -> None:
    assert version_of(str(FIXTURES / "v1.db")) == 1


def test_an_upgraded_version_1_file_has_exactly_the_schema_of_a_new_one(v1_db: str, tmp_path: Path) -> None:
    new = str(tmp_path / "new.db")
    store.open_db(new).close()
    store.open_db(v1_db).close()
    assert version_of(v1_db) == store.SCHEMA_VERSION
    assert schema_of(v1_db) == schema_of(new)
    conn = sqlite3.connect(v1_db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()


def test_the_first_tick_upgrades_a_version_1_file_and_keeps_its_history(v1_db: str) -> None:
    before = sqlite3.connect(v1_db)
    history = {
        table: before.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("monitors", "rollups", "incidents", "incident_events", "channels", "pings", "owners", "plans")
    }
    incidents = before.execute("SELECT id, monitor_id, started_at_ms, cause, state FROM incidents").fetchall()
    before.close()
    assert history["incidents"] == 3 and history["rollups"] == 3

    done = cli(v1_db, "--retry-delay", "0")
    # the delivery that version 1 kept retrying is three weeks old now: given up, said once
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        "monitor-tick: gave up notifying json://127.0.0.1:9/*** of 'DOWN: refused' after 6 attempts: "
        "A Connection error occurred sending JSON notification to 127.0.0.1.\n"
    )
    assert version_of(v1_db) == store.SCHEMA_VERSION

    after = sqlite3.connect(v1_db)
    for table, count in history.items():
        if table != "rollups":
            assert after.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == count, table
    # the old hours are still there, and the tick counted new checks beside them
    assert after.execute("SELECT sum(checks) FROM rollups WHERE hour_start_ms = 1762776000000").fetchone()[0] == 26
    assert after.execute("SELECT count(*) FROM rollups").fetchone()[0] > history["rollups"]
    # the confirmed outages stay open (the refused ports are still refused), none reopened
    assert after.execute("SELECT id, monitor_id, started_at_ms, cause, state FROM incidents").fetchall() == incidents
    after.close()

    # the heartbeat's token, printed by version 1 and stored only as a digest, still pings
    conn = store.open_db(v1_db)
    assert store.heartbeat_by_token(conn, hashlib.sha256(V1_TOKEN.encode()).digest()) == 4
    conn.close()
    listed = cli(v1_db, "list")
    assert listed.returncode == 0 and "backups" in listed.stdout and "refused" in listed.stdout


def _rows(path: str) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in HISTORY}
    finally:
        conn.close()


HISTORY = ("monitors", "rollups", "incidents", "incident_events", "channels", "pings", "owners", "plans", "ticks")


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["list"], "backups"),
        (["show", "refused"], "monitor 1 (refused)"),
        (["report"], "refused"),
        (["plan", "list"], "free"),
        (["notify", "list"], "json://127.0.0.1:9/"),
        (["owner", "list"], "alice"),
        (["hosts"], "no claims"),
        (["status-page", "--out", "{site}"], "refused"),  # shown in {site}/index.html
    ],
)
def test_a_command_that_only_reads_upgrades_a_writable_older_file_first(
    v1_db: str, args: list[str], shown: str, tmp_path: Path
) -> None:
    history = _rows(v1_db)
    site = tmp_path / "site"
    done = cli(v1_db, *(arg.format(site=site) for arg in args))
    assert (done.returncode, done.stderr) == (0, "")
    assert shown in (done.stdout or (site / "index.html").read_text(encoding="utf-8"))
    assert version_of(v1_db) == store.SCHEMA_VERSION
    assert _rows(v1_db) == history  # upgraded as a tick upgrades it, every row kept


@pytest.mark.parametrize("args", [["--dry-run"], ["apply", "--dry-run", "monitors.toml"]])
def test_a_dry_run_never_upgrades_and_says_what_will(v1_db: str, args: list[str], tmp_path: Path) -> None:
    (tmp_path / "monitors.toml").write_text('[monitors.api]\nurl = "http://127.0.0.1:9/"\n', encoding="utf-8")
    before = Path(v1_db).read_bytes()
    done = subprocess.run(
        [MONITOR_TICK, "--db", v1_db, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **clock_at()},
        cwd=tmp_path,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"monitor-tick: database {v1_db} has schema version 1, older than this monitor-tick's "
        f"({store.SCHEMA_VERSION}); the next tick (or any command that writes) upgrades it\n"
    )
    assert Path(v1_db).read_bytes() == before


def test_on_postgresql_commands_that_only_read_refuse_an_older_schema_and_never_upgrade_it(
    pg_server: Server, tmp_path: Path
) -> None:
    """The hosts of a fleet upgrade their shared database with their ticks. A reader from a newer
    install (a laptop's `list`) must not: every host still on the older program would then refuse
    the newer schema, and stop."""
    url = pg_server.fresh_database()
    assert cli(url, "add", "http://127.0.0.1:9/", "--name", "api").returncode == 0
    older = store.SCHEMA_VERSION - 1  # what every command reads first (the tables need not be older)
    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute("UPDATE schema_version SET version = %s", (older,))
    readers = [["list"], ["show", "api"], ["report"], ["export"], ["notify", "list"], ["hosts"], ["--dry-run"]]
    for args in [*readers, ["status-page", "--out", str(tmp_path / "site")]]:
        done = cli(url, *args)
        assert (done.returncode, done.stdout) == (1, ""), args
        assert done.stderr == (
            f"monitor-tick: database {redact_url(url)} has schema version {older}, older than this monitor-tick's "
            f"({store.SCHEMA_VERSION}); the next tick (or any command that writes) upgrades it\n"
        ), args
    with psycopg.connect(url) as raw:
        assert raw.execute("SELECT version FROM schema_version").fetchall() == [(older,)]
    assert not (tmp_path / "site").exists()


def test_an_older_program_refuses_a_newer_file_in_one_line(db_path: str) -> None:
    raw = sqlite3.connect(db_path)
    raw.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    raw.close()
    done = cli(db_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"monitor-tick: database {db_path} has schema version {store.SCHEMA_VERSION + 1}, newer than this "
        f"monitor-tick understands ({store.SCHEMA_VERSION}); upgrade monitor-tick\n"
    )


def test_a_failing_step_leaves_the_file_as_it_was(v1_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    good = migrations.Step(2, "adds a column", "ALTER TABLE monitors ADD COLUMN scratch TEXT;")
    bad = migrations.Step(3, "breaks", "ALTER TABLE no_such_table ADD COLUMN x TEXT;")
    monkeypatch.setattr(migrations, "steps_after", lambda version: [good, bad])
    monkeypatch.setattr(store.sqlite, "SCHEMA_VERSION", 3)
    before = schema_of(v1_db)
    with pytest.raises(store.StoreError, match=r"cannot upgrade database .* to schema version 3: no such table"):
        store.open_db(v1_db)
    assert version_of(v1_db) == 1
    assert schema_of(v1_db) == before  # the first step was rolled back with the second


def test_step_3_gives_the_ledger_its_unrecorded_ids_and_keeps_its_rows(v1_db: str) -> None:
    before = sqlite3.connect(v1_db)
    rows = before.execute("SELECT * FROM ticks ORDER BY minute").fetchall()
    before.close()
    assert rows  # the fixture's replayed ticks
    store.open_db(v1_db).close()
    after = sqlite3.connect(v1_db)
    columns = [row[1] for row in after.execute("PRAGMA table_info(ticks)")]
    assert columns[len(rows[0]) :] == ["unrecorded_ids", "replayed"]  # step 18 adds the second
    # the old runs are kept as they were; none is taken to have left anything unrecorded, and
    # step 18 takes each for a live tick's (stored rows cannot tell a replay from one)
    assert after.execute("SELECT * FROM ticks ORDER BY minute").fetchall() == [(*row, None, 0) for row in rows]
    after.close()


def test_step_5_rebuilds_monitors_keeping_every_row_and_what_refers_to_them(v1_db: str) -> None:
    before = sqlite3.connect(v1_db)
    monitors = before.execute("SELECT * FROM monitors ORDER BY id").fetchall()
    rollups = before.execute("SELECT count(*) FROM rollups").fetchone()[0]
    before.close()
    store.open_db(v1_db).close()
    after = sqlite3.connect(v1_db)
    after.execute("PRAGMA foreign_keys = ON")
    # every row whole, the new settings at their defaults (no headers, no body, verified TLS)
    new = after.execute("SELECT * FROM monitors ORDER BY id").fetchall()
    assert [row[: len(monitors[0])] for row in new] == monitors
    added = ("max_latency_ms", "json_field", "headers", "basic_auth", "body", "ca_file", "insecure")
    defaults = after.execute(f"SELECT DISTINCT {', '.join(added)} FROM monitors").fetchall()
    assert defaults == [(None, None, None, None, None, None, 0)]
    # the new methods pass the rebuilt CHECK; a made-up one still does not
    after.execute("UPDATE monitors SET method = 'POST' WHERE id = 1")
    with pytest.raises(sqlite3.IntegrityError):
        after.execute("UPDATE monitors SET method = 'BREW' WHERE id = 1")
    # the tables that refer to monitors still cascade from the rebuilt table
    monitor_id = after.execute("SELECT monitor_id FROM rollups LIMIT 1").fetchone()[0]
    own = after.execute("SELECT count(*) FROM rollups WHERE monitor_id = ?", (monitor_id,)).fetchone()[0]
    after.execute("DELETE FROM monitors WHERE id = ?", (monitor_id,))
    assert after.execute("SELECT count(*) FROM rollups").fetchone()[0] == rollups - own
    assert after.execute("PRAGMA foreign_key_check").fetchall() == []
    after.close()


def test_the_upgrade_seeds_the_id_high_water_mark_so_a_removed_monitors_id_is_never_given_again(v1_db: str) -> None:
    raw = sqlite3.connect(v1_db)
    newest = raw.execute("SELECT max(id), name FROM monitors").fetchone()
    raw.close()
    assert cli(v1_db, "remove", str(newest[0])).returncode == 0  # upgrades, then removes the newest
    added = cli(v1_db, "add", "http://127.0.0.1:9/", "--name", "after-upgrade")
    assert added.stdout == f"{newest[0] + 1}\n"
    conn = sqlite3.connect(v1_db)
    marks = dict(conn.execute("SELECT table_name, last_id FROM id_high_water").fetchall())
    tables = ("owners", "plans", "maintenance_windows", "channels")
    held = {table: conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0] for table in tables}
    conn.close()
    assert marks == {"monitors": newest[0] + 1, **{table: held[table] for table in tables if held[table] is not None}}


NFC, NFD = "caf\u00e9", "cafe\u0301"  # é as one code point; e and a combining accent: printed the same


def _undo_step_17(conn: store.Connection) -> None:
    """Back to the tables before step 17 (and the steps after it), for a test of an earlier step on a new database."""
    integer = "INTEGER" if conn.engine == "sqlite" else "BIGINT"
    conn.execute("ALTER TABLE rollups DROP COLUMN phases")  # step 21
    conn.execute(f"ALTER TABLE rollups ADD COLUMN handed_at_ms {integer}")  # step 20
    conn.execute("ALTER TABLE ticks DROP COLUMN replayed")  # step 18
    conn.execute("ALTER TABLE claims DROP COLUMN taken_from")  # step 19's one column outside step 17's tables
    for table in ("fleet_hosts", "location_claims", "location_checks", "quorum_minutes", "location_rollups"):
        conn.execute(f"DROP TABLE {table}")
    for column in ("locations", "quorum", "notify_partial"):
        conn.execute(f"ALTER TABLE monitors DROP COLUMN {column}")
    conn.execute("ALTER TABLE incidents DROP COLUMN kind")


def test_step_14_puts_names_in_nfc_and_renames_those_that_then_collide_saying_so(any_db: str) -> None:
    """On both engines: names an older version stored as typed, 'café' in two Unicode forms."""
    conn = store.open_db(any_db)
    ids = [add(conn, f"http://127.0.0.1:9/{n}", name=f"m{n}") for n in range(6)]
    store.add_owner(conn, "o1", "default", None)
    store.add_owner(conn, "o2", "default", None)
    stored = {
        ids[0]: NFC,
        ids[1]: NFD,
        ids[2]: f"{NFC} (2)",
        ids[3]: f"cr{NFD}me",
        ids[4]: NFD.upper(),
        ids[5]: f"{NFD} (3)",  # the name ids[1] is renamed to, in the other form
    }
    for monitor, name in stored.items():
        conn.execute("UPDATE monitors SET name = ?, group_name = ? WHERE id = ?", (name, f"{NFD} group", monitor))
    conn.execute("UPDATE owners SET name = ? WHERE name = 'o1'", (NFD,))
    conn.execute("UPDATE owners SET name = ? WHERE name = 'o2'", (NFC,))
    older = 13  # before step 14; what later steps add is taken off again
    _undo_step_17(conn)
    conn.execute("ALTER TABLE rollups DROP COLUMN handed_at_ms")  # step 16
    if conn.engine == "sqlite":
        conn.execute(f"PRAGMA user_version = {older}")
    else:
        conn.execute("UPDATE schema_version SET version = ?", (older,))
    conn.close()

    done = cli(any_db, "pause", str(ids[0]))  # the first command that writes upgrades it
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        f"monitor-tick: upgrade: owner 1 renamed {NFD!r} -> {NFC + ' (2)'!r}: owner 2 has the same name "
        "in another Unicode form\n"
        f"monitor-tick: upgrade: monitor {ids[1]} renamed {NFD!r} -> {NFC + ' (3)'!r}: monitor {ids[0]} has the "
        "same name in another Unicode form\n"
        f"monitor-tick: upgrade: monitor {ids[5]} renamed {NFD + ' (3)'!r} -> {NFC + ' (3) (2)'!r}: monitor {ids[1]} "
        "was renamed to that name in this upgrade\n"
    )
    conn = store.open_db(any_db)
    try:
        names = dict(conn.execute("SELECT id, name FROM monitors").fetchall())
        groups = {group for (group,) in conn.execute("SELECT DISTINCT group_name FROM monitors")}
        owners = sorted(name for (name,) in conn.execute("SELECT name FROM owners"))
    finally:
        conn.close()
    assert names == {
        ids[0]: NFC,
        ids[1]: f"{NFC} (3)",  # 'café (2)' was another monitor's name already
        ids[2]: f"{NFC} (2)",
        ids[3]: f"cr{NFC}me",  # in NFC, and no other monitor's: not renamed, as it prints the same
        ids[4]: NFC.upper(),
        ids[5]: f"{NFC} (3) (2)",
    }
    assert groups == {f"{NFC} group"}
    assert owners == [NFC, f"{NFC} (2)"]
    assert json.loads(cli(any_db, "list", "--json").stdout)[1]["name"] == f"{NFC} (3)"


# rows a version 3 database may hold, one or more in each of its tables (its own columns only)
V3_ROWS = (
    "INSERT INTO plans (id, name, min_interval_sec) VALUES (2, 'pro', 60)",
    "INSERT INTO owners (id, name, plan_id, plan_expires_at_ms) VALUES (1, 'alice', 2, NULL)",
    "INSERT INTO monitors (id, owner_id, name, url, interval_sec, created_at_ms) "
    "VALUES (1, 1, 'api', 'http://127.0.0.1:9/', 60, 1762776000000), "
    "(2, NULL, 'nightly', 'heartbeat', 86400, 1762776000000)",
    "INSERT INTO maintenance_windows (monitor_id, owner_id, starts_at_ms, ends_at_ms) "
    "VALUES (1, NULL, 1762776000000, 1762779600000)",
    "INSERT INTO rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum, last_check_ms) "
    "VALUES (1, 1762776000000, 60, 2, 1450, 1762779540000)",
    "INSERT INTO incidents (monitor_id, started_at_ms, cause, state, confirmed_at_ms) "
    "VALUES (1, 1762776060000, 'connect refused', 'confirmed', 1762776120000)",
    "INSERT INTO ticks (minute, started_at_ms, finished_at_ms, due, up, down) "
    "VALUES (29379600, 1762776000000, 1762776000900, 2, 1, 1)",
    "INSERT INTO channels (url, monitor_id, created_at_ms) VALUES ('json://127.0.0.1:9/hook', 1, 1762776000000)",
    "INSERT INTO incident_events (incident_id, kind, created_at_ms) VALUES (1, 'down', 1762776120000)",
    "INSERT INTO deliveries (event_id, channel_id, next_attempt_at_ms) VALUES (1, 1, 1762776120000)",
    "INSERT INTO settings (name, value) VALUES ('network_canary_url', 'http://127.0.0.1:9/canary')",
    "INSERT INTO pings (monitor_id, last_ping_ms) VALUES (2, 1762776000000)",
)


def _pg_dump_schema(server: Server, url: str) -> list[str]:
    """pg_dump's schema of `url` (tables, columns, types, defaults, constraints, indexes, storage
    parameters, sequences), without its comments and the session's random \\restrict key."""
    dumped = subprocess.run(
        [f"{server.bin_dir}/pg_dump", "--schema-only", "--no-owner", "--dbname", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in dumped.splitlines() if line and not line.startswith(("--", "\\restrict", "\\unrestrict"))]


def _v3_history(url: str) -> dict[str, list[tuple[object, ...]]]:
    with psycopg.connect(url) as raw:
        return {
            table: raw.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in [re.match(r"INSERT INTO (\w+)", row)[1] for row in V3_ROWS]  # type: ignore[index]
        }


def test_a_version_3_postgresql_database_upgrades_to_exactly_the_schema_of_a_new_one_keeping_its_rows(
    pg_server: Server,
) -> None:
    """The first PostgreSQL schema (version 3: schema_postgres.sql as commit 75b2774 shipped it,
    tests/fixtures/schema_postgres_v3.sql), with rows, upgraded through every later step by
    store.open_db (what every command that writes does first), on a real server: pg_dump then shows the schema of a new database
    to the line, and every row is still there."""
    url = pg_server.empty_database()
    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute((FIXTURES / "schema_postgres_v3.sql").read_text())
        raw.execute("INSERT INTO schema_version (version) VALUES (3)")
        for row in V3_ROWS:
            raw.execute(row)
    before = _v3_history(url)
    assert all(before.values())

    store.open_db(url).close()  # what every command that writes does first
    with psycopg.connect(url) as raw:
        assert raw.execute("SELECT version FROM schema_version").fetchall() == [(store.SCHEMA_VERSION,)]
        # a version 3 row's later columns take their defaults; step 6 seeded the ids handed out
        assert raw.execute("SELECT id, method, private, first_check_minute FROM monitors ORDER BY id").fetchall() == [
            (1, "GET", 0, None),
            (2, "GET", 0, None),
        ]
        assert dict(raw.execute("SELECT table_name, last_id FROM id_high_water").fetchall()) == {
            "monitors": 2,
            "owners": 1,
            "plans": 2,
            "maintenance_windows": 1,
            "channels": 1,
        }
    after = _v3_history(url)
    assert {table: [row[: len(before[table][0])] for row in rows] for table, rows in after.items()} == before
    assert _pg_dump_schema(pg_server, url) == _pg_dump_schema(pg_server, pg_server.fresh_database())
