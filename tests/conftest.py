from __future__ import annotations

import compileall
import os
import re
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import monitor_tick
from monitor_tick import store
from monitor_tick.probes import draft_monitor
from tests import mariadb, redis_server
from tests.postgres import Server, running_server


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the package once. The tests run `monitor-tick` as a fresh process hundreds of
    times; where PYTHONDONTWRITEBYTECODE is set (as on some CI machines) no such process saves
    what it compiled, so each would compile the whole package again (about 0.3 s here). `pip
    install .` compiles at install; an editable install does not. With xdist, the controlling
    process compiles and its workers need not."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        compileall.compile_dir(Path(monitor_tick.__file__).parent, quiet=1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    """One PostgreSQL server for each test process (each xdist worker; see tests/postgres.py)."""
    with running_server() as server:
        yield server


@pytest.fixture(scope="session")
def maria_server() -> Iterator[mariadb.Server]:
    """One MariaDB server for each test process that needs one (see tests/mariadb.py)."""
    with mariadb.running_server() as server:
        yield server


@pytest.fixture(scope="session")
def redis() -> Iterator[redis_server.Server]:
    """One Redis server for each test process that needs one (see tests/redis_server.py)."""
    with redis_server.running_server() as server:
        yield server


ENGINES = ["sqlite", "postgresql"]
# What a statement that breaks the schema's constraints raises, on either engine
CONSTRAINT_ERRORS = (sqlite3.IntegrityError, store.ConstraintError)


@pytest.fixture(params=ENGINES)
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """--db for a new database with the schema, on each engine in turn: a SQLite file's path,
    or a fresh PostgreSQL database's URL."""
    if request.param == "postgresql":
        return request.getfixturevalue("pg_server").fresh_database()  # type: ignore[no-any-return]
    path = str(tmp_path / "monitor-tick.db")
    store.open_db(path).close()
    return path


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    """A real SQLite file with the schema applied."""
    path = str(tmp_path / "monitor-tick.db")
    store.open_db(path).close()
    return path


@pytest.fixture
def conn(db_path: str) -> Iterator[sqlite3.Connection]:
    connection = store.open_db(db_path)
    yield connection
    connection.close()


def add(
    conn: sqlite3.Connection,
    url: str,
    *,
    every_s: int = 60,
    name: str | None = None,
    owner: str | None = None,
    aligned: bool = False,
    created_at_ms: int = 0,
    token_sha256: bytes | None = None,
    **options: object,
) -> int:
    """Add a monitor through the same store code the CLI uses, with its kind's defaults and then
    `options`, unchecked (so that tests can reach the schema's own checks)."""
    # tests name monitors after their whole URL (the CLI's default name hides query values)
    monitor = draft_monitor(name=name or url, url=url, interval_sec=every_s, aligned=aligned, given=options)
    return store.add_monitor(conn, monitor, owner, created_at_ms, token_sha256=token_sha256)


_WRITE = re.compile(r"^\s*(INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)")


def traced_writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """A list that the SQLite connections store.open_db opens from now on extend with each write
    statement they run, as (verb, table) (SQLite's trace callback)."""
    writes: list[tuple[str, str]] = []
    real_open = store.open_db

    def traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        connection = real_open(*args, **kwargs)  # type: ignore[arg-type]
        connection.set_trace_callback(lambda sql: writes.extend(_WRITE.findall(sql)))
        return connection

    monkeypatch.setattr(store, "open_db", traced)
    return writes


# libpq's trace of the protocol (PQtrace): one message a line, a statement's text may run on
_MESSAGE = re.compile(r"^\S+ \S+\t([FB])\t\d+\t(\w+)\t (.*?)(?=^\S+ \S+\t[FB]\t|\Z)", re.M | re.S)
_NAMED = re.compile(r'"([^"]*)" "([^"]*)"')


def traced_statements(monkeypatch: pytest.MonkeyPatch, trace: Path) -> Callable[[], list[str]]:
    """A function listing, once their connections are closed, each statement that the PostgreSQL
    connections store.open_db opens from now on have run, in order, as sent (from libpq's trace
    into the file `trace`: a Parse names a statement's text, and each Execute runs it once, as
    executemany does; a Query is a statement of its own)."""
    real_open = store.open_db
    sink = trace.open("w")

    def traced(*args: object, **kwargs: object) -> store.Connection:
        connection = real_open(*args, **kwargs)  # type: ignore[arg-type]
        connection.raw.pgconn.trace(sink.fileno())
        return connection

    def statements() -> list[str]:
        sink.close()
        texts: dict[str, str] = {}
        bound = ""
        ran: list[str] = []
        for side, kind, body in _MESSAGE.findall(trace.read_text()):
            named = _NAMED.match(body.strip())
            if side != "F":
                continue
            if kind == "Query":
                ran.append(body.strip().strip('"'))
            elif kind == "Parse" and named:
                texts[named.group(1)] = named.group(2)
            elif kind == "Bind" and named:
                bound = texts[named.group(2)]
            elif kind == "Execute":
                ran.append(bound)
        return ran

    monkeypatch.setattr(store, "open_db", traced)
    return statements


@pytest.fixture
def unresolvable(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A name the resolver says does not exist, without asking any real resolver."""
    real = socket.getaddrinfo

    def lookup(host: object, *args: object, **kwargs: object) -> object:
        if host in ("no-such-host.test", b"no-such-host.test"):  # anyio passes IDNA bytes
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    yield "no-such-host.test"


def rollup(conn: sqlite3.Connection, monitor_id: int) -> tuple[int, int]:
    """(checks, failures) summed over all hours."""
    row = conn.execute(
        "SELECT coalesce(sum(checks), 0), coalesce(sum(failures), 0) FROM rollups WHERE monitor_id = ?",
        (monitor_id,),
    ).fetchone()
    return int(row[0]), int(row[1])


from tests.servers import local_server  # noqa: E402,F401  (a started 127.0.0.1 server, for any test)


def monitor_rows(db_path: str) -> dict[str, dict[str, object]]:
    """Every monitor's row by name, with its owner's name as `owner`."""
    conn = store.open_db(db_path)
    try:
        cursor = conn.execute("SELECT m.*, o.name AS owner FROM monitors m LEFT JOIN owners o ON o.id = m.owner_id")
        names = [c[0] for c in cursor.description]
        return {row[names.index("name")]: dict(zip(names, row, strict=True)) for row in cursor}
    finally:
        conn.close()


def run_installed(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed `monitor-tick` command, as a user runs it."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "monitor-tick"), *args], capture_output=True, text=True, timeout=60
    )
