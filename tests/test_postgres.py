"""PostgreSQL as the engine (--db postgresql://...): the two schemas held together, every command
through the installed `monitor-tick`, the schema version, what only a file can do, a missing
psycopg, and a server restarted under a running tick. (The store and tick tests run on both
engines: see the `any_db` fixture in conftest.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from freezegun import freeze_time

from monitor_tick import store
from monitor_tick.core import clock, schedule
from monitor_tick.run import shares
from monitor_tick.run.tick import TickOptions, run_tick
from monitor_tick.store import migrations, postgres
from tests.commands import clock_at
from tests.conftest import _WRITE, add, traced_statements
from tests.postgres import Server
from tests.servers import LocalServer, refused_port, send_response
from tests.test_schedule import _expected_due, _random_world

MINUTE = 29_934_720  # 2026-12-01T00:00Z


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    command = [os.path.join(os.path.dirname(sys.executable), "monitor-tick"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def started(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """The installed `monitor-tick` with `args`, started (use it in a with block)."""
    command = [os.path.join(os.path.dirname(sys.executable), "monitor-tick"), *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _sqlite_shape(path: str) -> dict[str, object]:
    conn = sqlite3.connect(path)
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")]
    shape: dict[str, object] = {}
    for table in tables:
        columns = [
            (name, bool(notnull), pk > 0) for _, name, _, notnull, _, pk in conn.execute(f"PRAGMA table_info({table})")
        ]
        # a SQLite INTEGER PRIMARY KEY may hold NULL on paper; it never does (it is the rowid)
        columns = [(name, notnull or pk, pk) for name, notnull, pk in columns]
        keys = sorted((row[3], row[2], row[4]) for row in conn.execute(f"PRAGMA foreign_key_list({table})"))
        sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0]
        shape[table] = (columns, keys, sql.count("CHECK"))
    shape["indexes"] = sorted(
        row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL")
    )
    conn.close()
    return shape


def _postgres_shape(url: str) -> dict[str, object]:
    conn = psycopg.connect(url)
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "AND table_name <> 'schema_version' ORDER BY table_name"
        )
    ]
    shape: dict[str, object] = {}
    for table in tables:
        pk = {
            row[0]
            for row in conn.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary",
                (table,),
            )
        }
        columns = [
            (name, nullable == "NO", name in pk)
            for name, nullable in conn.execute(
                "SELECT column_name, is_nullable FROM information_schema.columns "
                "WHERE table_name = %s ORDER BY ordinal_position",
                (table,),
            )
        ]
        keys = sorted(
            (column, parent, parent_column)
            for column, parent, parent_column in conn.execute(
                "SELECT a.attname, c.confrelid::regclass::text, pa.attname FROM pg_constraint c "
                "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
                "JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = c.confkey[1] "
                "WHERE c.contype = 'f' AND c.conrelid = %s::regclass",
                (table,),
            )
        )
        checks = conn.execute(
            "SELECT count(*) FROM pg_constraint WHERE contype = 'c' AND conrelid = %s::regclass", (table,)
        ).fetchone()[0]
        shape[table] = (columns, keys, checks)
    shape["indexes"] = sorted(
        row[0]
        for row in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
            "AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('p', 'u'))"
        )
    )
    conn.close()
    return shape


def test_both_schemas_have_the_same_tables_columns_keys_checks_and_indexes(pg_server: Server, tmp_path: Path) -> None:
    path = str(tmp_path / "monitor-tick.db")
    store.open_db(path).close()
    sqlite_shape = _sqlite_shape(path)
    postgres_shape = _postgres_shape(pg_server.fresh_database())
    assert "monitors" in sqlite_shape and sqlite_shape["indexes"]  # the comparison is not of nothing
    assert postgres_shape == sqlite_shape


def test_both_engines_have_a_step_for_every_schema_version_after_the_first_postgresql_one() -> None:
    sqlite_steps = [s.version for s in migrations.steps("sqlite") if s.version > migrations.FIRST_POSTGRES_VERSION]
    assert [s.version for s in migrations.steps("postgresql")] == sqlite_steps
    assert store.SCHEMA_VERSION == max([migrations.FIRST_POSTGRES_VERSION, *sqlite_steps])


def test_a_postgresql_database_records_its_schema_version_and_a_newer_one_is_refused(pg_server: Server) -> None:
    url = pg_server.empty_database()
    store.open_db(url).close()
    with psycopg.connect(url, autocommit=True) as raw:
        assert raw.execute("SELECT version FROM schema_version").fetchall() == [(store.SCHEMA_VERSION,)]
        raw.execute("UPDATE schema_version SET version = %s", (store.SCHEMA_VERSION + 1,))
    with pytest.raises(store.StoreError, match="newer than this monitor-tick"):
        store.open_db(url)
    done = run("list", "--db", url)
    assert done.returncode == 1 and "newer than this monitor-tick" in done.stderr


def test_a_postgresql_database_with_other_tables_is_refused_unchanged(pg_server: Server) -> None:
    url = pg_server.empty_database()
    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute("CREATE TABLE recipes (name text)")
    done = run("--db", url)
    assert done.returncode == 1
    assert done.stderr.strip().endswith("is a PostgreSQL database but not a monitor-tick one")
    with psycopg.connect(url) as raw:
        tables = raw.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
        assert tables.fetchall() == [("recipes",)]


def test_read_only_commands_never_create_the_schema(pg_server: Server) -> None:
    url = pg_server.empty_database()
    for command in (["list"], ["report"], ["--dry-run"], ["notify", "list"]):
        done = run(*command, "--db", url)
        assert done.returncode == 1 and "no database at" in done.stderr, command
    with psycopg.connect(url) as raw:
        assert raw.execute("SELECT to_regclass('schema_version')").fetchone() == (None,)


def test_backup_and_check_are_for_sqlite_files_and_point_to_pg_dump(pg_server: Server, tmp_path: Path) -> None:
    url = pg_server.fresh_database()
    for command in (["backup", "--out", str(tmp_path / "copy.db")], ["check"]):
        done = run(*command, "--db", url)
        assert done.returncode == 1 and done.stdout == ""
        assert re.fullmatch(
            rf"monitor-tick: {command[0]} is for SQLite files; for PostgreSQL use pg_dump.*\n", done.stderr
        )
    assert not (tmp_path / "copy.db").exists()


def test_without_psycopg_one_line_names_the_extra(pg_server: Server) -> None:
    # a process in which `import psycopg` fails, as it does without the extra installed
    code = "import sys; sys.modules['psycopg'] = None; from monitor_tick.cli.entry import main; main()"
    for args in ([], ["list"]):
        done = subprocess.run(
            [sys.executable, "-c", code, "--db", pg_server.url("whatever"), *args], capture_output=True, text=True
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr == "monitor-tick: PostgreSQL needs psycopg: pip install 'monitor-tick[postgres]'\n"


def test_the_password_in_the_url_is_never_printed(pg_server: Server) -> None:
    url = f"postgresql://postgres:s3cret-pw@127.0.0.1:{pg_server.port}/no_such_db"
    done = run("--db", url)
    assert done.returncode == 1 and done.stderr.startswith("monitor-tick: cannot connect to database postgresql://")
    assert "s3cret-pw" not in done.stderr and len(done.stderr.splitlines()) == 1


REFUSED = 'connection to server at "127.0.0.1", port {} failed: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?'


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("connection failed: " + REFUSED.format(1), "server at 127.0.0.1 port 1: Connection refused"),
        (
            'connection failed: connection to server at "db.lan" (10.0.0.5), port 5432 failed: FATAL:  '
            'password authentication failed for user "tick"',
            'server at db.lan (10.0.0.5) port 5432: password authentication failed for user "tick"',
        ),
        (
            'connection is bad: connection to server on socket "/run/postgresql/.s.PGSQL.5432" failed: No such file '
            "or directory\n\tIs the server running locally and accepting connections on that socket?",
            "server on socket /run/postgresql/.s.PGSQL.5432: No such file or directory",
        ),
        (  # psycopg's form for several hosts: the last attempt, then all of them
            "connection failed: "
            + REFUSED.format(2)
            + "\nMultiple connection attempts failed. All failures were:\n- host: '127.0.0.1', port: '1', hostaddr: "
            "'127.0.0.1': connection failed: "
            + REFUSED.format(1)
            + "\n- host: '127.0.0.1', port: '2', hostaddr: '127.0.0.1': connection failed: "
            + REFUSED.format(2),
            "server at 127.0.0.1 port 1: Connection refused; server at 127.0.0.1 port 2: Connection refused",
        ),
        ('invalid URI query parameter: "foo"\n', 'invalid URI query parameter: "foo"'),
        ("connection failed: connection timeout expired", "connection timeout expired"),
        ("", "connection failed"),
    ],
)
def test_a_connection_failure_is_told_in_one_line(text: str, line: str) -> None:
    assert postgres.connect_failure(text) == line


def test_a_connection_that_fails_is_one_clean_line_naming_the_server_and_why(pg_server: Server) -> None:
    """libpq's message is lines: the primary one ('connection to server at ... failed: ...'),
    then a hint after a tab. One line says where and why, the server's own words without its
    severity ('FATAL:  ')."""
    closed = refused_port()
    cases = {
        f"postgresql://postgres@127.0.0.1:{closed}/x": f"server at 127.0.0.1 port {closed}: Connection refused",
        pg_server.url("no_such_db"): f'server at 127.0.0.1 port {pg_server.port}: database "no_such_db" does not exist',
    }
    for url, why in cases.items():
        shown = url.replace("postgres@", "***@")
        for args in (["--db", url], ["list", "--db", url], ["add", "http://127.0.0.1:9/", "--db", url]):
            done = run(*args)
            assert (done.returncode, done.stdout) == (1, ""), args
            assert done.stderr == f"monitor-tick: cannot connect to database {shown}: {why}\n", args


def test_a_redirecting_monitors_get_is_sent_once_a_tick_on_postgresql(
    pg_server: Server, local_server: LocalServer
) -> None:
    """A redirected monitor's request is sent once a tick, and its redirect followed once, on
    PostgreSQL's flow of shares as on SQLite's."""
    env = {**os.environ, "MONITOR_TICK_DB": pg_server.fresh_database()}

    def at(minute: int, *args: str) -> None:
        env["MONITOR_TICK_TEST_CLOCK_OFFSET_MS"] = str(clock.minute_start_ms(minute) + 5_000 - clock.now_ms())
        done = run(*args, env=env)
        assert (done.returncode, done.stderr) == (0, ""), args

    at(MINUTE, "add", local_server.url("/redirect/1"), "--every", "1m")
    at(MINUTE)
    assert local_server.hits.snapshot() == {"/redirect/1": 1, "/ok": 1}
    at(MINUTE + 1)
    at(MINUTE + 2)
    assert local_server.hits.snapshot() == {"/redirect/1": 3, "/ok": 3}


def test_every_command_works_on_postgresql(pg_server: Server, local_server: LocalServer, tmp_path: Path) -> None:
    url = pg_server.fresh_database()
    env = {**os.environ, "MONITOR_TICK_DB": url}  # the URL from the environment, as cron passes it
    minute_ms = clock.minute_start_ms(MINUTE)
    env["MONITOR_TICK_TEST_CLOCK_OFFSET_MS"] = str(minute_ms + 5_000 - clock.now_ms())

    def ok(*args: str) -> str:
        done = run(*args, env=env)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    ok("plan", "add", "pro", "--min-interval", "1m")
    ok("owner", "add", "alice", "--plan", "pro")
    up = ok("add", local_server.url("/ok"), "--name", "up", "--every", "1m", "--owner", "alice").strip()
    down = ok("add", local_server.url("/status/503"), "--name", "down", "--every", "1m", "--alert-after", "1").strip()
    token = ok("add", "heartbeat", "--name", "job", "--every", "1h", "--grace", "5m").split()[-1]
    ok("maintenance", "add", "--monitor", "up", "--from", "2099-01-01T00:00Z", "--until", "2099-01-02T00:00Z")
    ok("notify", "add", "json://127.0.0.1:9/hook", "--monitor", "down")
    ok("notify", "canary", local_server.url("/ok"))
    assert "down" in ok("--dry-run")
    ok("ping", "job")
    page, metrics = tmp_path / "page", tmp_path / "metrics.prom"
    tick = ok("--json", "--status-page", str(page), "--metrics-file", str(metrics), "--retry-delay", "0")
    assert '"due":2' in tick.replace(" ", "") and '"opened":1' in tick.replace(" ", "")
    assert local_server.hits["/ok"] == 1 and local_server.hits["/status/503"] == 2  # one retry
    listed = ok("list")
    assert re.search(rf"^\s+{down}\s+down\s", listed, re.M) and re.search(rf"^\s+{up}\s+up\s", listed, re.M)
    assert "last ping" in listed
    report = {row["name"]: row for row in json.loads(ok("report", "--json"))}
    assert (report["up"]["checks"], report["up"]["failures"], report["up"]["uptime_pct"]) == (1, 0, 100.0)
    assert (report["down"]["checks"], report["down"]["failures"], report["down"]["incidents"]) == (1, 1, 1)
    assert report["job"]["last_ping_failed"] is False
    assert (page / "index.html").exists() and "monitor_tick" in metrics.read_text()
    assert (
        "status 503"
        in ok("status-page", "--out", str(tmp_path / "again")) + (tmp_path / "again" / "index.html").read_text()
    )
    assert "json://127.0.0.1:9/***" in ok("notify", "list")
    ok("pause", "up")
    ok("resume", "up")
    ok("remove", "up")
    assert not re.search(r"\bup\b", ok("list").split("\n", 1)[1].replace("/ok", ""))

    # serve: a heartbeat's ping over HTTP lands in the same database
    with started("serve", "--port", "0", env=env) as server:
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            port = re.search(r":(\d+)", line)
            assert port, line
            with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/ping/{token}/fail", timeout=10) as answer:
                assert answer.status == 200
        finally:
            server.terminate()
            server.wait(timeout=10)
    with psycopg.connect(url) as raw:
        assert raw.execute("SELECT last_ping_failed FROM pings").fetchall() == [(1,)]


def test_a_tick_that_loses_postgresql_mid_probe_says_so_writes_nothing_and_the_next_minute_works(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    add(conn, local_server.url("/hang"), name="hang", timeout_s=3.0, retries=0)
    conn.close()
    env = {**os.environ, "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(clock.minute_start_ms(MINUTE) - clock.now_ms())}
    with started("--db", url, "--budget", "5s", env=env) as tick:
        try:
            # the tick has claimed its minute and is probing
            assert local_server.hits.wait_for("/hang", timeout=20)
            pg_server.restart()
            out, err = tick.communicate(timeout=30)
        finally:
            tick.kill()
    assert tick.returncode == 1 and out == ""
    assert re.fullmatch(r"monitor-tick: lost the connection to database postgresql://\S+: .+\n", err), err
    with psycopg.connect(url) as raw:
        assert raw.execute("SELECT count(*) FROM rollups").fetchone() == (0,)
        assert raw.execute("SELECT minute, finished_at_ms FROM ticks").fetchall() == [(MINUTE, None)]
    env["MONITOR_TICK_TEST_CLOCK_OFFSET_MS"] = str(clock.minute_start_ms(MINUTE + 1) - clock.now_ms())
    done = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "monitor-tick"), "--db", url, "--budget", "5s", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert '"claimed":true' in done.stdout.replace(" ", "")


class Gate:
    """A route whose requests wait, unanswered, until the test opens the gate (then 200)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._open: asyncio.Event | None = None

    async def handler(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        if self._open is None:  # made on the server's own loop
            self._loop, self._open = asyncio.get_running_loop(), asyncio.Event()
        await self._open.wait()
        await send_response(writer, 200, "ok", method=method)

    def open(self) -> None:
        assert self._loop is not None and self._open is not None
        self._loop.call_soon_threadsafe(self._open.set)


def test_a_host_claims_its_next_share_while_the_probes_of_its_first_are_still_running(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    monitors = [add(conn, local_server.url(f"/gate?m={n}"), name=f"m{n}", timeout_s=20.0) for n in range(store.BUCKETS)]
    conn.close()
    gate = Gate()
    local_server.route("/gate", gate.handler)
    env = {**os.environ, **clock_at(clock.minute_start_ms(MINUTE) + 5_000)}
    with started("--db", url, "--budget", "25s", "--lease", "40s", env=env) as tick:
        try:
            first = local_server.hits.wait_for("/gate", timeout=20)
            # one monitor a bucket: more probes than the first share's buckets, none answered yet
            more = local_server.hits.wait_for("/gate", count=first_share(url) + 1, timeout=20)
            held = local_server.hits["/gate"]
            gate.open()
            out, err = tick.communicate(timeout=30)
        finally:
            tick.kill()
    assert first and more, "the host waited for its first share's probes before claiming more"
    assert tick.returncode == 0 and out == "" and err == ""
    assert held < store.BUCKETS  # it did not take the whole minute at once...
    with psycopg.connect(url) as raw:  # ...and every monitor was checked once
        assert raw.execute("SELECT monitor_id, checks FROM rollups ORDER BY monitor_id").fetchall() == [
            (monitor, 1) for monitor in monitors
        ]


def first_share(url: str) -> int:
    """How many buckets of MINUTE the first claim took: each claim is a transaction of its own,
    so its rows share their xmin (until a write finishes them)."""
    with psycopg.connect(url) as raw:
        return int(
            raw.execute(
                "SELECT count(*) FROM claims WHERE minute = %s GROUP BY xmin::text::bigint "
                "ORDER BY xmin::text::bigint LIMIT 1",
                (MINUTE,),
            ).fetchone()[0]
        )


def test_a_share_s_results_are_written_with_one_statement_per_table_not_one_per_check(
    pg_server: Server, local_server: LocalServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    monitors = [add(conn, local_server.url(f"/ok?m={n}"), name=f"m{n}", retries=0) for n in range(200)]
    conn.close()
    statements = traced_statements(monkeypatch, tmp_path / "trace")
    with freeze_time(clock.iso_from_ms(clock.minute_start_ms(MINUTE) + 5_000), real_asyncio=True):
        report = run_tick(TickOptions(db_path=url, retry_delay_s=0))
    assert report.summary is not None and report.summary.up == len(monitors)
    ran = statements()
    shares = sum("INSERT INTO claims" in sql for sql in ran) - 1  # the last claim found none left
    assert 1 < shares < len(monitors) / 3  # each share has checks to write: 200 monitors, 64 buckets
    writes = Counter(found for sql in ran for found in _WRITE.findall(sql))
    assert writes == {
        ("INSERT INTO", "ticks"): 1,  # the minute's claim
        ("INSERT INTO", "fleet_hosts"): 1,  # where this host is, as its tick ends (`monitor-tick locations`)
        ("INSERT INTO", "rollups"): shares,
        ("UPDATE", "claims"): shares,
        ("UPDATE", "ticks"): shares,
    }


def test_a_lease_no_longer_than_the_budget_is_refused(tmp_path: Path) -> None:
    done = run("--db", str(tmp_path / "x.db"), "--budget", "30s", "--lease", "30s")
    assert done.returncode == 2 and done.stderr == "monitor-tick: --lease: 30s must be longer than --budget (30s)\n"
    assert not (tmp_path / "x.db").exists()


def test_hosts_on_sqlite_says_minutes_are_shared_on_postgresql_only(tmp_path: Path) -> None:
    path = str(tmp_path / "x.db")
    assert run("--db", path).returncode == 0
    done = run("hosts", "--db", path)
    assert done.returncode == 0 and done.stdout == "no claims in this window (hosts share minutes on PostgreSQL only)\n"


def test_hosts_lines_each_column_up_under_its_heading(pg_server: Server, local_server: LocalServer) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    add(conn, local_server.url("/ok"), name="ok", retries=0)
    conn.close()
    hosts = ("web-1", "a-rather-long-host-name.eu-central-1.compute.internal")
    for minute, host in zip((MINUTE, MINUTE + 1), hosts, strict=True):
        with freeze_time(clock.iso_from_ms(clock.minute_start_ms(minute) + 5_000), real_asyncio=True):
            assert run_tick(TickOptions(db_path=url, retry_delay_s=0, host_name=host)).claimed
    shown = run("hosts", "--db", url, env={**os.environ, **clock_at(clock.minute_start_ms(MINUTE + 2))})
    assert shown.returncode == 0, shown.stderr
    header, *rows = shown.stdout.splitlines()
    assert [row.split()[3] for row in rows] == list(hosts)
    headings = ("BUCKETS", "UNFINISHED", "TOOK OVER", "CHECKS", "SECONDS")
    ends = [header.index(heading) + len(heading) for heading in headings]
    for row, host in zip(rows, hosts, strict=True):
        assert row.index(host) == header.index("HOST") and row.index("fleet") == header.index("SHARE"), (header, row)
        assert [value.end() for value in re.finditer(r"\S+", row)][-5:] == ends, (header, row)


def test_the_daily_housekeeping_keeps_a_day_of_claims(pg_server: Server) -> None:
    """64 claim rows a minute, whatever the monitors (about 24 MB a day, bench/postgres.py): a day
    of them is what `monitor-tick hosts` shows, and what says how many hosts tick the database."""
    url = pg_server.fresh_database()
    housekeeping = MINUTE + schedule.HOUSEKEEPING_MINUTE_OF_DAY
    ticked = (housekeeping - 1441, housekeeping - 1439, housekeeping - 60, housekeeping)
    for minute in ticked:
        with freeze_time(clock.iso_from_ms(clock.minute_start_ms(minute) + 5_000), real_asyncio=True):
            assert run_tick(TickOptions(db_path=url, retry_delay_s=0, host_name="web-1")).claimed
    shown = run(
        "hosts", "--db", url, "--since", "3d", env={**os.environ, **clock_at(clock.minute_start_ms(housekeeping))}
    )
    assert shown.returncode == 0, shown.stderr
    listed = [row.split()[:2] for row in shown.stdout.splitlines()[1:]]
    assert listed == [clock.iso_from_ms(clock.minute_start_ms(m))[:16].split("T") for m in ticked[1:]], shown.stdout


def test_on_a_fleet_a_monitor_of_one_host_itself_is_refused_in_one_line(pg_server: Server, tmp_path: Path) -> None:
    """Once two hosts have ticked the database (`monitor-tick hosts`), a monitor of a loopback
    address or of a unix socket would be each host probing itself: add, edit, apply and import
    refuse it, and take everything else."""
    url = pg_server.fresh_database()
    env = {**os.environ, **clock_at(clock.minute_start_ms(MINUTE) + 5_000)}

    def on_db(*args: str) -> subprocess.CompletedProcess[str]:
        return run(*args, "--db", url, env=env)

    assert on_db("add", "http://127.0.0.1:9/", "--name", "local").returncode == 0  # one host: its own
    for minute, host in ((MINUTE, "h1"), (MINUTE + 1, "h2")):
        ticked = run("--db", url, "--host-name", host, env={**os.environ, **clock_at(clock.minute_start_ms(minute))})
        assert ticked.returncode == 0, ticked.stderr
    loopback = (
        "monitor-tick: a loopback address is host-local, and 2 hosts tick this database (monitor-tick hosts): "
        "each would probe itself; monitors of one host need a database of their own\n"
    )
    socket_line = loopback.replace("a loopback address", "a unix socket")
    for target, line in (
        ("http://localhost:8080/", loopback),
        ("tcp://[::1]:22", loopback),
        ("docker://web", socket_line),
        ("docker://web?host=tcp://127.0.0.1:2375", loopback),
    ):
        refused = on_db("add", target, "--name", "refused")
        assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", line), target
    for target in ("https://example.org/", "docker://web?host=tcp://engine.example:2375"):
        assert on_db("add", target).returncode == 0, target
    assert on_db("edit", "local", "--name", "still-local").returncode == 0  # its URL unchanged
    edited = on_db("edit", "https://example.org/", "--url", "http://127.0.0.1:8080/")
    assert (edited.returncode, edited.stderr) == (1, loopback)
    config = tmp_path / "monitors.toml"
    config.write_text('[monitors.ssh]\nurl = "tcp://127.0.0.1:22"\ninterval_sec = 60\n')
    applied = on_db("apply", str(config))
    assert (applied.returncode, applied.stdout) == (2, "")
    assert applied.stderr == f"monitor-tick: {config}:2: monitors.ssh.url: {loopback.removeprefix('monitor-tick: ')}"
    gatus = tmp_path / "gatus.yaml"
    gatus.write_text(
        "endpoints:\n"
        '  - {name: ssh, url: "tcp://127.0.0.1:22", conditions: ["[CONNECTED] == true"]}\n'
        '  - {name: site, url: "https://example.net/", conditions: ["[STATUS] == 200"]}\n'
    )
    imported = on_db("import", "gatus", str(gatus))
    assert imported.returncode == 0, imported.stderr
    assert (
        f"  skipped   ssh: cannot be added here: {loopback.removeprefix('monitor-tick: ').strip()}" in imported.stdout
    )
    names = {row["name"] for row in json.loads(on_db("list", "--json").stdout)}
    assert names == {"still-local", "https://example.org/", "docker://web?host=***", "site"}


def test_a_sqlite_file_is_one_host_s_whatever_names_ticked_it(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    for minute, host in ((MINUTE, "h1"), (MINUTE + 1, "h2")):
        ticked = run("--db", db, "--host-name", host, env={**os.environ, **clock_at(clock.minute_start_ms(minute))})
        assert ticked.returncode == 0, ticked.stderr
    added = run("add", "http://127.0.0.1:9/", "--db", db)
    assert added.returncode == 0 and added.stderr == ""


def test_the_due_query_reads_only_monitors_due_for_nearly_every_due_monitor_on_postgresql(
    pg_server: Server, tmp_path: Path
) -> None:
    """As on SQLite (test_schedule.py): the monitors due by their own interval, and those below
    the small plan floors, are read from monitors_due alone (an index-only scan: it holds the id,
    as SQLite's holds the rowid), the intervals walked through it too. The database is made as a
    user makes one, by `migrate` from a SQLite file, and planned with the statistics migrate
    leaves (bench/postgres.py shows the plan and its time at 100,000 and 1M monitors)."""
    source = str(tmp_path / "source.db")
    conn = store.open_db(source)
    with store.write_tx(conn):
        store.add_plan(conn, "free", 300)
        conn.executemany(
            "INSERT INTO owners (id, name, plan_id) VALUES (?, ?, 2)", [(n, f"o{n}") for n in range(1, 101)]
        )
        intervals = (60, 300, 900, 1800, 3600, 3600, 21600, 86400, 86400, 86400)
        conn.executemany(
            "INSERT INTO monitors (id, owner_id, name, url, interval_sec, aligned, created_at_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, 0)",
            [
                (
                    n,
                    n % 100 + 1 if n % 5 else None,
                    f"m{n}",
                    f"https://m{n}.example/",
                    intervals[n % 10],
                    int(n % 7 == 0),
                )
                for n in range(1, 20_001)
            ],
        )
    conn.close()
    url = pg_server.empty_database()
    assert run("migrate", source, url).returncode == 0
    conn = store.open_db(url)
    try:

        def plan() -> str:
            params = {"minute": MINUTE + 7, "now_ms": clock.minute_start_ms(MINUTE + 7)}
            return "\n".join(row[0] for row in conn.execute("EXPLAIN " + conn.statements["due_ids"], params))

        text = plan()
        parts = dict(re.findall(r"^ {8}CTE (\w+)\n((?:^ {9,}.*\n?)*)", text, re.MULTILINE))
        for part in ("intervals", "plain", "short"):
            assert "Index Only Scan using monitors_due on monitors" in parts[part], (part, text)
        # the owners on plans above 15 minutes, as on SQLite (read only when such a plan exists)
        assert re.search(r"Index Scan (using|on) monitors_owner", parts["candidates"]), text
        assert "Index Only Scan using monitors_bad_interval on monitors" in parts["candidates"], text
        assert "Index Scan using monitors_first_check on monitors" in parts["candidates"], text
        assert "Seq Scan on monitors" not in text, text
        conn.execute("DROP INDEX monitors_due")
        assert "monitors_due" not in plan()  # the assertions above can fail
        due = store.select_due(conn, MINUTE + 7, clock.minute_start_ms(MINUTE + 7))
        assert due and all(
            (MINUTE + 7) % (row["effective_interval_sec"] // 60)
            == (0 if row["aligned"] else row["id"] % (row["effective_interval_sec"] // 60))
            for row in due
        )
    finally:
        conn.close()


def test_the_due_query_selects_exactly_what_the_rule_says_over_a_day_on_postgresql(pg_server: Server) -> None:
    """test_schedule.py's day, on PostgreSQL's own text of the query (its LATERAL parts): plans
    above 15 minutes (owners read through monitors_owner), expiry, windows and first checks."""
    conn = store.open_db(pg_server.fresh_database())
    try:
        _random_world(conn, random.Random(1), 400)
        total = 0
        for minute in range(MINUTE, MINUTE + 1440):
            got = {row["id"] for row in store.select_due(conn, minute, clock.minute_start_ms(minute))}
            assert got == _expected_due(conn, minute), minute
            total += len(got)
        assert total > 10_000  # the world is not trivially empty
    finally:
        conn.close()


def test_a_host_stopped_inside_a_transaction_holds_the_fleet_for_seconds_not_until_it_runs_again(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    monitors = [
        add(conn, local_server.url(f"/ok?m={n}"), name=f"m{n}", retries=0, timeout_s=2.0) for n in range(store.BUCKETS)
    ]
    conn.close()
    env = {**os.environ, **clock_at(clock.minute_start_ms(MINUTE) + 5_000)}
    fast = ["--db", url, "--budget", "3s", "--lease", "4s", "--retry-delay", "0"]  # its sessions idle 1 s at most
    with psycopg.connect(url, autocommit=True) as lock, psycopg.connect(url, autocommit=True) as look:
        # the write lock is taken, so the first host's tick waits for it inside its first transaction...
        lock.execute("BEGIN")
        lock.execute("SELECT pg_advisory_xact_lock(%s)", (postgres._WRITE_LOCK_KEY,))
        stopped = started(*fast, "--host-name", "stopped", env=env)
        try:
            waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            while look.execute(waiting).fetchone() == (0,):
                assert stopped.poll() is None, stopped.communicate()
            # ...and is stopped there (a paused VM): once the lock is free its session holds it
            stopped.send_signal(signal.SIGSTOP)
            lock.execute("COMMIT")
            with started(*fast, "--host-name", "other", env=env) as other:
                out, err = other.communicate(timeout=30)
            assert (other.returncode, out, err) == (0, "", "")  # not failed after waiting for the lock
        finally:
            stopped.send_signal(signal.SIGCONT)
            stopped.communicate(timeout=30)
    with psycopg.connect(url) as raw:
        assert raw.execute("SELECT monitor_id, checks FROM rollups ORDER BY monitor_id").fetchall() == [
            (monitor, 1) for monitor in monitors
        ]


def test_a_database_restart_during_a_long_call_still_fails_the_tick_and_is_not_taken_for_a_stopped_host(
    pg_server: Server,
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url, idle_in_transaction_s=0.1)
    tick_started = time.perf_counter()

    def waits_then_restarts() -> object:  # as a claim waiting for the write lock while the server restarts
        pg_server.restart()
        return conn.execute("SELECT 1").fetchone()

    try:
        with pytest.raises(store.StoreError, match="lost the connection"):
            shares.on_connection(conn, waits_then_restarts, (), lambda: "nothing claimed", 0.1, tick_started)
    finally:
        conn.close()
