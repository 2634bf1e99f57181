"""The PostgreSQL engine (--db postgresql://...), through psycopg 3: only what differs from
SQLite. Connecting (one line when it fails, the password never shown), the schema
(schema_postgres.sql) and its version, the write transaction, placeholders, the statements
whose syntax differs, and errors in one line. Every other statement is the text the store's
modules run on SQLite too.

Imported only for a postgresql:// URL (see engine.py), so the SQLite path never imports psycopg.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, TypeVar

import psycopg
from psycopg.adapt import Loader

from monitor_tick.core import urls
from monitor_tick.core.model import InvalidMonitor
from monitor_tick.core.redact import redact_url
from monitor_tick.store.db import ConstraintError, EngineError, StoreError, script_statements
from monitor_tick.store.due import due_ids_sql, due_rows_sql, select_due_sql
from monitor_tick.store.ledger import BUCKETS, claim_buckets_sql
from monitor_tick.store.locationsql import postgres_statements as location_statements
from monitor_tick.store.sqlite import DEFAULT_BUSY_TIMEOUT_S, SCHEMA_VERSION, check_version

_T = TypeVar("_T")

# Taken by every write transaction, so PostgreSQL's writers run one at a time, as SQLite's do:
# the store's transactions read and then write (a minute's claim, the incident steps against
# the open incidents), and their correctness under concurrent ticks rests on that order. They
# are short (no probe runs inside one), so the fleet's hosts wait milliseconds for each other.
_WRITE_LOCK_KEY = 0x6D6F6E74  # "mont": any constant shared by every monitor-tick process

# How long connecting may take (libpq's connect_timeout, whole seconds, at least 2) before it
# fails, when the server's host drops packets rather than refusing them
CONNECT_TIMEOUT_S = 10

# The row whose interval has no schedule: typed columns hold integers only (see due.py; must
# match schema_postgres.sql's monitors_bad_interval index).
_USABLE_INTERVAL = "{n} >= 60 AND {n} % 60 = 0"  # an integer column: no typeof()

# Statements whose PostgreSQL text differs (db.statement): SQLite's json_each(?) over a JSON
# array of ids is jsonb_array_elements_text here.
_IDS = "(SELECT CAST(value AS BIGINT) FROM jsonb_array_elements_text(CAST(? AS JSONB)) AS ids(value))"
# The one place where a clock other than the tick's decides: whether a bucket's lease has
# expired is judged by the database server's clock, which every host shares, so hosts whose
# clocks disagree (up to the lease's margin) never both believe they hold a bucket.
_SERVER_NOW_MS = "CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)"

STATEMENTS = {
    "due_ids": due_ids_sql(
        select_due_sql(_USABLE_INTERVAL, lateral=True),
        "coalesce(json_agg(id), '[]')::text",
        "coalesce(json_agg(effective_interval_sec), '[]')::text",
    ),
    "due_rows": due_rows_sql("", f"m.id IN {_IDS}"),
    "claim_buckets": claim_buckets_sql(_SERVER_NOW_MS),
    "finish_buckets": (
        "UPDATE claims SET finished_at_ms = :finished_at_ms, checks = (SELECT count(*) "
        "FROM jsonb_array_elements_text(CAST(:recorded AS JSONB)) AS r(value) "
        f"WHERE CAST(r.value AS BIGINT) % {BUCKETS} = claims.bucket) "
        "WHERE minute = :minute AND token = :token "
        "AND bucket IN (SELECT CAST(value AS BIGINT) FROM jsonb_array_elements_text(CAST(:held AS JSONB)) AS b(value))"
    ),
    **location_statements(_SERVER_NOW_MS),
    # migrate (copy.py): the source's snapshot, and the identity sequence set past copied ids
    "begin_snapshot": "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    # migrate's copy is on disk when it says so, whatever the server's synchronous_commit; and
    # VACUUM can mark a page all-visible only once the commit that wrote its rows is flushed
    "durable_commit": "SET LOCAL synchronous_commit = on",
    # the copy's visibility map, which index-only scans rest on (due.py), and its statistics
    "vacuum_copy": "VACUUM",
    "analyze_copy": "ANALYZE",
    "set_next_id": (
        "SELECT setval(pg_get_serial_sequence('{table}', 'id'), coalesce((SELECT max(id) FROM {table}), 0) + 1, false)"
    ),
    "recent_rollups": (
        "SELECT r.monitor_id, r.failures, r.latency_ms_max, r.last_check_ms FROM rollups r "
        f"WHERE r.monitor_id IN {_IDS} "
        "AND r.hour_start_ms = (SELECT max(hour_start_ms) FROM rollups WHERE monitor_id = r.monitor_id)"
    ),
    "alert_thresholds": (
        f"SELECT id, alert_after_checks, resolve_after_checks, remind_every_sec FROM monitors WHERE id IN {_IDS}"
    ),
    "heartbeat_pings": (
        "SELECT m.id, m.created_at_ms, p.last_ping_ms, coalesce(p.last_ping_failed, 0), p.last_duration_ms "
        f"FROM monitors m LEFT JOIN pings p ON p.monitor_id = m.id WHERE m.id IN {_IDS}"
    ),
}


def schema_sql() -> str:
    from importlib import resources  # only when a database is created

    return resources.files("monitor_tick").joinpath("schema_postgres.sql").read_text(encoding="utf-8")


# SQLite's placeholders to psycopg's: `?` -> %s, `:name` -> %(name)s, and a literal % doubled;
# string literals and PostgreSQL's `::` casts are left alone.
_TOKENS = re.compile(r"'(?:[^']|'')*'|::|\?|(?<![:\w]):([A-Za-z_]\w*)|%")


@lru_cache(maxsize=512)
def placeholders(sql: str) -> str:
    """`sql` as written for SQLite, with psycopg's placeholders."""

    def swap(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == "?":
            return "%s"
        if text == "%":
            return "%%"
        if match.group(1):
            return f"%({match.group(1)})s"
        return text

    return _TOKENS.sub(swap, sql)


class _NumberLoader(Loader):
    """numeric as int (or float): PostgreSQL's sum() of BIGINT is numeric, SQLite's an integer."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return float(text) if "." in text or "e" in text.lower() else int(text)


class Connection:
    """A PostgreSQL connection with the few methods the store's modules use on SQLite's
    (execute, executemany, begin_write, rollback_quietly, lost, close). psycopg runs in autocommit,
    so BEGIN and COMMIT are statements, as on SQLite with isolation_level=None."""

    engine = "postgresql"
    statements = STATEMENTS

    def __init__(
        self, raw: psycopg.Connection[Any], url: str, reconnect: Callable[[], psycopg.Connection[Any]]
    ) -> None:
        self.raw = raw
        self.url = url
        self._reconnect = reconnect
        self._session: dict[str, str] = {}  # set_config settings made since connecting (set_session)
        # the server ended the session for idling inside a transaction (idle_in_transaction_s):
        # this process was stopped there
        self.ended_idle = False

    def set_session(self, name: str, value: str) -> None:
        """Set a setting for the rest of the session (kept by reopen)."""
        self.execute("SELECT set_config(?, ?, false)", (name, value))
        self._session[name] = value

    def server_up_s(self) -> float:
        """Seconds since the server (its postmaster) started, by its own clock."""
        return float(self.execute("SELECT extract(epoch FROM now() - pg_postmaster_start_time())").fetchone()[0])

    def reopen(self) -> None:
        """Connect again, as connected first and with the settings set since, after the server
        dropped this connection (`lost`): what the dropped session had not committed, the server
        rolled back."""
        try:
            self.raw.close()
        except psycopg.Error:
            pass
        self.raw = self._reconnect()
        self.ended_idle = False
        for name, value in list(self._session.items()):
            self.set_session(name, value)

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> psycopg.Cursor[Any]:
        self.ended_idle = False
        try:
            return self.raw.execute(placeholders(sql), _params(params), prepare=False)
        except psycopg.Error as exc:
            self.ended_idle = isinstance(exc, psycopg.errors.IdleInTransactionSessionTimeout)
            raise _engine_error(exc, self.url) from None

    def executemany(self, sql: str, rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> None:
        self.ended_idle = False
        try:
            with self.raw.cursor() as cursor:
                cursor.executemany(placeholders(sql), [_params(row) for row in rows])
        except psycopg.Error as exc:
            self.ended_idle = isinstance(exc, psycopg.errors.IdleInTransactionSessionTimeout)
            raise _engine_error(exc, self.url) from None

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (as sqlite3's attribute of that name)."""
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def begin_write(self) -> None:
        self.execute("BEGIN")
        self.execute("SELECT pg_advisory_xact_lock(?)", (_WRITE_LOCK_KEY,))

    def lost(self) -> bool:
        """Whether the server dropped this connection (a restart, a failover): a process that
        keeps it open (`serve`) connects again."""
        return bool(self.raw.broken or self.raw.closed)

    def rollback_quietly(self) -> None:
        # a connection the server dropped has nothing to roll back: the server did it
        try:
            self.raw.execute("ROLLBACK")
        except psycopg.Error:
            pass

    def close(self) -> None:
        self.raw.close()


def _params(params: Sequence[Any] | Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
    # a bool is 0 or 1, as SQLite stores it: the 0/1 columns are BIGINT with the same CHECK
    if isinstance(params, Mapping):
        return {name: int(value) if isinstance(value, bool) else value for name, value in params.items()}
    return tuple(int(value) if isinstance(value, bool) else value for value in params)


def shown(url: str) -> str:
    """The URL as messages show it: the password hidden."""
    return redact_url(url)


def _engine_error(exc: psycopg.Error, url: str) -> EngineError:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return EngineError(f"database {shown(url)} is locked by another process (gave up waiting)")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return EngineError(f"database {shown(url)} is read-only for this command")
    if isinstance(exc, psycopg.IntegrityError):
        return ConstraintError(f"database error on {shown(url)}: {text}")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return EngineError(f"lost the connection to database {shown(url)}: {text}")
    return EngineError(f"database error on {shown(url)}: {text}")


def _lock_timeout_ms(busy_timeout_s: float) -> int:
    # lock_timeout = 0 would wait forever: SQLite's busy timeout of 0 (do not wait) is 1 ms here
    return max(int(busy_timeout_s * 1000), 1)


def set_busy_timeout(conn: Connection, busy_timeout_s: float) -> None:
    """From now on, a write waits at most `busy_timeout_s` (>= 0) for another writer's lock (the
    write lock of begin_write and any row lock): the session's lock_timeout, which outlives the
    transaction it is set in."""
    conn.set_session("lock_timeout", f"{_lock_timeout_ms(busy_timeout_s)}ms")


def _connect(
    url: str,
    busy_timeout_s: float,
    *,
    read_only: bool,
    connect_timeout_s: int = CONNECT_TIMEOUT_S,
    idle_in_transaction_s: float | None = None,
) -> Connection:
    # a writer waits lock_timeout for another's write lock, as SQLite's busy timeout; set at
    # connect time (libpq's options), which costs no round trip
    # JIT and parallel workers cost more than the tick's short queries take: JIT compiled the due
    # query for about 450 ms at 1M monitors (its estimated cost is high: the planner prices every
    # branch, also those that read nothing), to run it in 80 ms then, 11 ms since its plan reads
    # indexes alone (bench/postgres.py); a parallel worker takes milliseconds to start
    settings = (
        f"-c lock_timeout={_lock_timeout_ms(busy_timeout_s)} -c TimeZone=UTC"
        " -c jit=off -c max_parallel_workers_per_gather=0"
    )
    if read_only:
        settings += " -c default_transaction_read_only=on"
    if idle_in_transaction_s is not None:
        # the server ends the session when it idles this long inside a transaction: a host
        # stopped there (a paused VM, SIGSTOP) would hold the fleet's write lock, and the other
        # hosts' writes would wait for it until they fail (run/shares.py connects again)
        settings += f" -c idle_in_transaction_session_timeout={max(int(idle_in_transaction_s * 1000), 1)}"

    try:  # libpq's own messages quote a URL it cannot parse whole, its password too
        urls.split(url, "--db", host_list=True)
    except InvalidMonitor as exc:
        raise StoreError(f"cannot connect to database {shown(url)}: {exc}") from None

    def connect() -> psycopg.Connection[Any]:
        try:
            raw = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout_s, options=settings)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to database {shown(url)}: {connect_failure(str(exc))}") from None
        raw.adapters.register_loader("numeric", _NumberLoader)
        return raw

    return Connection(connect(), url, connect)


# libpq's primary message for one attempt (its hint follows on a line of its own, after a tab)
_ATTEMPT = re.compile(
    r'connection to server (?:at "(?P<host>[^"]*)"(?: \((?P<address>[^)]*)\))?, port (?P<port>\d+)'
    r'|on socket "(?P<socket>[^"]*)") failed: (?P<why>[^\n]*)'
)
_SEVERITY = re.compile(r"^(?:FATAL|ERROR|PANIC):\s+")


def connect_failure(text: str) -> str:
    """psycopg's message of a failed connection as one line: where and why, for each attempt
    (`server at 127.0.0.1 port 5432: database "x" does not exist`), without libpq's hints or the
    server's severity; else its first line."""
    attempts = []
    for attempt in _ATTEMPT.finditer(text):
        host, address, port, socket, why = attempt.group("host", "address", "port", "socket", "why")
        where = f"on socket {socket}" if socket else f"at {host}{f' ({address})' if address else ''} port {port}"
        attempts.append(f"server {where}: {_SEVERITY.sub('', why.strip())}")
    if attempts:  # psycopg names the last attempt first, then (of several) each in order
        return "; ".join(reversed(dict.fromkeys(reversed(attempts))))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("\t")]
    first = lines[0] if lines else "connection failed"
    return first.removeprefix("connection failed: ").removeprefix("connection is bad: ")


def open_db(
    url: str,
    *,
    create: bool = True,
    migrate: bool = True,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    connect_timeout_s: int = CONNECT_TIMEOUT_S,
    idle_in_transaction_s: float | None = None,
) -> Connection:
    """Connect to the PostgreSQL database at `url`, giving up after `connect_timeout_s` (and,
    with `idle_in_transaction_s`, ended by the server when it idles that long inside a
    transaction); on first
    use create the schema in it, and upgrade an older schema (see migrations/) unless `migrate`
    is false. Raises StoreError when it cannot connect, the database holds tables that are not
    monitor-tick's, or its schema is newer than this program (or older, without `migrate`)."""
    conn = _connect(
        url,
        busy_timeout_s,
        read_only=False,
        connect_timeout_s=connect_timeout_s,
        idle_in_transaction_s=idle_in_transaction_s,
    )
    try:
        _ensure_schema(conn, url, create=create, migrate=migrate)
    except BaseException:
        conn.close()
        raise
    return conn


def open_read_only(url: str) -> Connection:
    """Connect for reading only: every transaction is read-only, the schema is never created
    or upgraded. Raises StoreError when there is no monitor-tick schema of this version."""
    conn = _connect(url, DEFAULT_BUSY_TIMEOUT_S, read_only=True)
    try:
        version = _version(conn)
        if version is None:
            _refuse_foreign(conn, url)
            raise StoreError(f"no database at {shown(url)} (no command has written it yet)")
        _check_version(version, url, migrate=False)
    except BaseException:
        conn.close()
        raise
    return conn


def read_db(url: str, read: Callable[[Connection], _T]) -> _T:
    """open_read_only, `read(conn)`, close."""
    conn = open_read_only(url)
    try:
        return read(conn)
    finally:
        conn.close()


def _version(conn: Connection) -> int | None:
    if conn.execute("SELECT to_regclass('schema_version')").fetchone()[0] is None:
        return None
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return None if row[0] is None else int(row[0])


def _refuse_foreign(conn: Connection, url: str) -> None:
    tables = conn.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
    ).fetchone()[0]
    if tables:
        raise StoreError(f"{shown(url)} is a PostgreSQL database but not a monitor-tick one")


def _check_version(version: int, url: str, *, migrate: bool) -> None:
    check_version(version, f"{shown(url)}", migrate=migrate)


def _ensure_schema(conn: Connection, url: str, *, create: bool, migrate: bool) -> None:
    if _version(conn) == SCHEMA_VERSION:
        return
    conn.begin_write()  # DDL is transactional here: a failed upgrade leaves the database as it was
    said: list[str] = []  # what the upgrade's steps say, once it has committed
    try:
        version = _version(conn)  # another process may have created or upgraded it meanwhile
        if version is None:
            if not create:
                raise StoreError(f"no database at {shown(url)}")
            _refuse_foreign(conn, url)
            _run_script(conn, schema_sql())
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif version != SCHEMA_VERSION:
            _check_version(version, url, migrate=migrate)
            said = _migrate(conn, url, version)
        conn.execute("COMMIT")
    except BaseException:
        conn.rollback_quietly()
        raise
    if said:
        from monitor_tick.store import migrations  # only after an upgrade

        migrations.announce(said)


def _migrate(conn: Connection, url: str, version: int) -> list[str]:
    """Every PostgreSQL step above `version`, in order, inside the caller's transaction; returns
    the lines the steps say, for the caller to say once the upgrade has committed."""
    from monitor_tick.store import migrations  # only when upgrading

    lines: list[str] = []
    for step in migrations.steps_after(version, engine="postgresql"):
        try:
            if step.upgrade is not None:
                lines += step.upgrade(conn)
            _run_script(conn, step.sql)
        except EngineError as exc:
            raise StoreError(f"cannot upgrade database {shown(url)} to schema version {step.version}: {exc}") from None
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
    return lines


def _run_script(conn: Connection, script: str) -> None:
    """Run a schema script or migration step, statement by statement."""
    for statement in script_statements(script):
        try:
            conn.raw.execute(statement)  # DDL as written: no placeholders to turn
        except psycopg.Error as exc:
            raise _engine_error(exc, conn.url) from None
