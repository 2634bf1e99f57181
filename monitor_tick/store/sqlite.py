"""All SQL lives here: opening the database, claiming minutes, selecting what is due, writing
results, and the management commands' reads and writes.

Uses the standard library's sqlite3 synchronously: the database is touched before the probes
start and after they all finish, never while they run, so an idle tick needs no event loop.

Every statement is parameterised. Every instant passed in is epoch ms, read once per tick by
the caller (SQLite's own clock never decides anything).

Errors a user can cause or meet (missing directory, foreign file, locked database, read-only
file, newer schema) are raised as StoreError with a one-line message.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar
from urllib.parse import quote

from monitor_tick.core.clock import MINUTES_PER_DAY, MS_PER_DAY, hour_start_ms, minute_of_ms
from monitor_tick.core.incidents import Open, Step, Transition, step
from monitor_tick.core.model import COMMON_SETTINGS, OPTIONS, AlertSettings, CheckResult, Monitor, Pings

SCHEMA_VERSION = 3
_T = TypeVar("_T")
DEFAULT_BUSY_TIMEOUT_S = 10.0
# The -wal file: checkpointed once it holds this much, and cut back to it when SQLite starts it
# over (journal_size_limit). Without the cut, a -wal grown while a reader held a transaction open
# would keep its size for as long as any process (`serve`) has the database open.
WAL_LIMIT_BYTES = 256 * 1024
_PAGE_BYTES = 4096  # SQLite's default page size; nothing here changes it
_SQLITE_MAGIC = b"SQLite format 3\x00"


class StoreError(Exception):
    """A database problem, with a message fit for one line on stderr."""


def schema_sql() -> str:
    from importlib import resources  # only when a database is created: an idle tick skips it

    return resources.files("monitor_tick").joinpath("schema.sql").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Opening


def db_path_problem(path: str) -> str | None:
    """Why `path` cannot be monitor-tick's database file, in a few words; None when it can be.
    An empty path and SQLite's ':memory:' would each give a database that vanishes when the
    command ends (or, through a URI, a stray file named ':memory:')."""
    if path in ("", ":memory:"):
        return f"{path or repr(path)} is not a database file (monitor-tick keeps its state in a file)"
    return None


def open_db(
    path: str, *, create: bool = True, migrate: bool = True, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
) -> sqlite3.Connection:
    """Open (and on first use create, readable by its owner only) the database at `path`;
    upgrade an older schema (see migrations/), unless `migrate` is false (read-only commands):
    then an older schema is refused.

    Raises StoreError, having created or changed nothing, when the directory is missing or not
    writable, the file is read-only, not a monitor-tick database, or its schema is newer than
    this program, or `path` is not a file name (db_path_problem).
    """
    problem = db_path_problem(path)
    if problem:
        raise StoreError(problem)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise StoreError(f"database directory does not exist: {directory}")
    exists = os.path.exists(path)
    if exists:
        _check_header(path)
        if not os.access(path, os.W_OK):
            raise StoreError(f"database {path} is read-only")
    if not os.access(directory, os.W_OK):
        raise StoreError(f"database directory {directory} is not writable (SQLite keeps its journal there)")
    if not exists:
        if not create:
            raise StoreError(f"no database at {path}")
        _create_private_file(path)

    def prepare(conn: sqlite3.Connection) -> None:
        _configure(conn, busy_timeout_s)
        _ensure_schema(conn, path, migrate=migrate)

    return _connect(path, "rw", busy_timeout_s, prepare, describe_error)


def _connect(
    path: str,
    mode: str,
    busy_timeout_s: float,
    prepare: Callable[[sqlite3.Connection], None],
    describe: Callable[[sqlite3.Error, str], str],
) -> sqlite3.Connection:
    """Connect to `path` in SQLite's `mode` (rw, ro) and run `prepare` on the connection; on any
    error close it and raise StoreError (`describe` words a sqlite3 error)."""
    try:
        conn = sqlite3.connect(
            f"file:{_uri_path(path)}?mode={mode}",
            uri=True,
            timeout=busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open database {path}: {exc}") from None
    try:
        prepare(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(describe(exc, path)) from None
    except StoreError:
        conn.close()
        raise
    return conn


def _uri_path(path: str) -> str:
    return quote(os.path.abspath(path))  # '%', '?' and '#' are URI syntax, not file name


def _create_private_file(path: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another process created it a moment ago: it initialises the schema
    except OSError as exc:
        raise StoreError(f"cannot create database {path}: {exc.strerror}") from None
    os.close(fd)


def _check_header(path: str) -> None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(f"cannot read database {path}: {exc.strerror}") from None
    if head and head != _SQLITE_MAGIC:
        raise StoreError(f"not a SQLite database: {path}")


def _configure(conn: sqlite3.Connection, busy_timeout_s: float) -> None:
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    # a passive checkpoint (it never waits for a reader) after any commit that leaves the -wal
    # over WAL_LIMIT_BYTES, and the file cut back to that once the checkpoint has caught up
    conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_LIMIT_BYTES // _PAGE_BYTES}")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")


def open_read_only(path: str, *, any_version: bool = False) -> sqlite3.Connection:
    """Open the database at `path` for reading only (SQLite's mode=ro): never created, written or
    upgraded, so a read-only file (or one in a read-only directory) still serves the commands
    that only read. Raises StoreError when there is no database, it is not monitor-tick's, its
    schema is not this program's (unless `any_version`: backup and check), or SQLite cannot
    read it."""
    problem = db_path_problem(path)
    if problem:
        raise StoreError(problem)
    if not os.path.isfile(path):
        raise StoreError(f"no database at {path}")
    _check_header(path)

    def prepare(conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(DEFAULT_BUSY_TIMEOUT_S * 1000)}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # the first read of the file
        if version == 0:
            _refuse_foreign(conn, path)
            raise StoreError(f"no database at {path} (the file is empty: no command has written it yet)")
        if not any_version:
            _check_version(version, path, migrate=False)

    return _connect(path, "ro", DEFAULT_BUSY_TIMEOUT_S, prepare, _read_error)


def backup(path: str, out_path: str) -> None:
    """Copy the database at `path` to the new file `out_path`, readable by its owner only, with
    SQLite's online backup API in one step: one read transaction, so the copy is one consistent
    snapshot while other processes keep committing (in WAL mode a reader holds up no writer).
    The copy is written under a temporary name beside `out_path` and linked into place, so a
    failed backup leaves nothing at `out_path`, and an existing file there is never replaced.
    Raises StoreError."""
    problem = db_path_problem(out_path)
    if problem:
        raise StoreError(problem)
    if os.path.lexists(out_path):
        raise StoreError(f"{out_path} exists; a backup never overwrites a file")
    directory = os.path.dirname(os.path.abspath(out_path))
    source = open_read_only(path, any_version=True)  # a file about to be upgraded is worth a copy
    try:
        import tempfile  # only here: an idle tick never imports it

        fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(out_path)}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        source.close()
        raise StoreError(f"backup not written: {exc.strerror}: {directory}") from None
    os.close(fd)  # mkstemp made it 0600; SQLite gives its journal the same mode
    try:
        copy = sqlite3.connect(temporary, isolation_level=None)
        try:
            source.backup(copy)  # pages=-1: every page in one step
        finally:
            copy.close()
        os.link(temporary, out_path)  # unlike rename, fails when out_path appeared meanwhile
    except FileExistsError:
        raise StoreError(f"{out_path} exists; a backup never overwrites a file") from None
    except sqlite3.Error as exc:
        raise StoreError(describe_error(exc, path)) from None
    except OSError as exc:
        raise StoreError(f"backup not written: {exc.strerror}: {out_path}") from None
    finally:
        source.close()
        os.unlink(temporary)


def integrity_problems(path: str) -> list[str]:
    """What SQLite's integrity and foreign-key checks find wrong with the database at `path`
    (empty when it is sound), read-only. Raises StoreError when it cannot be opened at all."""
    conn = open_read_only(path, any_version=True)
    try:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check") if row[0] != "ok"]
        problems += [
            f"a {table} row (rowid {rowid}) refers to a missing {parent} row"
            for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check")
        ]
    except sqlite3.DatabaseError as exc:  # "database disk image is malformed": the check stopped
        problems = [str(exc)]
    finally:
        conn.close()
    return problems


def _read_error(exc: sqlite3.Error, path: str) -> str:
    """describe_error, and the one case only a reader meets: a WAL database is read through its
    -shm file, which exists while a writer has the database open; with none open, a reader must
    create it, and cannot in a directory it may not write. (immutable=1 would skip the -shm, but
    then a tick writing meanwhile could hand the reader a torn page.)"""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK) and not os.path.exists(f"{path}-shm"):
        return f"cannot read database {path}: SQLite needs {path}-shm beside it and {directory} is not writable"
    return describe_error(exc, path)


def _refuse_foreign(conn: sqlite3.Connection, path: str) -> None:
    """Raise StoreError when a database at schema version 0 already has tables (not ours)."""
    if conn.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").fetchone()[0]:
        raise StoreError(f"{path} is a SQLite database but not a monitor-tick one")


def _check_version(version: int, path: str, *, migrate: bool) -> None:
    """Raise StoreError for a schema this program cannot use: newer, or older without `migrate`."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"database {path} has schema version {version}, newer than this monitor-tick "
            f"understands ({SCHEMA_VERSION}); upgrade monitor-tick"
        )
    if 0 < version < SCHEMA_VERSION and not migrate:
        raise StoreError(
            f"database {path} has schema version {version}, older than this monitor-tick's "
            f"({SCHEMA_VERSION}); the next tick (or any command that writes) upgrades it"
        )


def _ensure_schema(conn: sqlite3.Connection, path: str, *, migrate: bool) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    _check_version(version, path, migrate=migrate)
    # table rebuilds (see migrations/) need foreign keys off, and that cannot change inside a
    # transaction; foreign_key_check below stands in for them before the upgrade commits
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:  # another process initialised or upgraded it while we waited
            conn.execute("COMMIT")
            return
        if version == 0:
            _refuse_foreign(conn, path)
            for statement in _statements(schema_sql()):
                conn.execute(statement)
        else:
            _migrate(conn, path, version)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")


def _migrate(conn: sqlite3.Connection, path: str, version: int) -> None:
    """Upgrade a database at schema `version` to SCHEMA_VERSION inside the caller's transaction:
    every step of migrations/ above `version`, in order. A failed step raises, and the caller
    rolls all of them back: the file stays at `version`, unchanged."""
    from monitor_tick import migrations  # only when upgrading: an idle tick never reads them

    for migration in migrations.steps_after(version):
        try:
            for statement in _statements(migration.sql):
                conn.execute(statement)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot upgrade database {path} to schema version {migration.version}: {exc}") from None
    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise StoreError(f"cannot upgrade database {path}: {len(broken)} rows would break foreign keys")


def _statements(script: str) -> Iterator[str]:
    """Split schema.sql or a migration into statements (no semicolons inside strings or triggers)."""
    buffer: list[str] = []
    for line in script.splitlines():
        if line.lstrip().startswith("--"):
            continue
        buffer.append(line)
        if line.rstrip().endswith(";"):
            statement = "\n".join(buffer).strip()
            buffer = []
            if sqlite3.complete_statement(statement):
                yield statement
    if "".join(buffer).strip():
        raise StoreError("a schema script ends inside a statement")


def describe_error(exc: sqlite3.Error, path: str) -> str:
    text = str(exc)
    # SQLite says "database or disk is full" when a write runs out of space, but "disk I/O error"
    # when it is the -shm file it cannot allocate; the disk's free space tells the two apart
    if "disk is full" in text or ("disk I/O" in text and _no_space_left(path)):
        return f"no space left on the disk for database {path} (free some: the next tick runs normally)"
    if "locked" in text or "busy" in text:
        return f"database {path} is locked by another process (gave up waiting)"
    if "readonly" in text or "read-only" in text:
        return f"database {path} is read-only"
    if "not a database" in text:
        return f"not a SQLite database: {path}"
    if "disk I/O" in text:
        return f"disk I/O error on database {path}"
    return f"database error on {path}: {text}"


# less free space than this is a full disk for SQLite: the -shm file alone takes 32 KiB
_FULL_BELOW_BYTES = 64 * 1024


def _no_space_left(path: str) -> bool:
    """True when the file system holding `path` has (almost) no space left for this user."""
    try:
        fs = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return False
    blocks = fs.f_bfree if os.geteuid() == 0 else fs.f_bavail  # root may use the reserved blocks
    return blocks * fs.f_frsize < _FULL_BELOW_BYTES


@contextmanager
def write_tx(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taking the write lock up front (BEGIN IMMEDIATE): a deferred
    transaction that reads and then writes gets SQLITE_BUSY at once in WAL mode, ignoring the
    busy timeout. Rolls back on any error, so results are never half-written."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# ---------------------------------------------------------------------------------------------
# The tick: claim, select, write


def claim_minute(conn: sqlite3.Connection, minute: int, started_at_ms: int, *, force: bool) -> bool:
    """Claim `minute` for this run: True when this run owns it now.

    Exactly one of any number of concurrent runs for a minute wins (an INSERT on the primary
    key). With `force`, the minute is claimed again even if an earlier run had it.
    """
    return claim_minutes(conn, minute, started_at_ms, force=force, catch_up_minutes=0) is not None


@dataclass(frozen=True)
class Rerun:
    """A --force rerun of a minute whose run finished: it records only what that run did not."""

    run_minute: int  # the ledger row of the run (the minute itself, or the one that caught it up)
    started_at_ms: int  # when that run (or the last rerun) started
    unrecorded: frozenset[int]  # monitors it probed but did not record (unknown)

    def may_record(self, monitor: int, created_at_ms: int) -> bool:
        """Whether a check of `monitor` would be its first for the run's minutes."""
        return monitor in self.unrecorded or created_at_ms > self.started_at_ms


@dataclass(frozen=True)
class Claim:
    minute: int
    covered: list[int]  # earlier, unclaimed minutes this run probes for (catch-up)
    missed: int  # unclaimed minutes too old to probe for, recorded as missed
    rerun: Rerun | None = None  # set when this is a --force rerun of a finished minute


MAX_MISSED_MINUTES = 90 * 1_440  # a longer gap is recorded for its last 90 days only

# A row recorded as missed by a run whose clock read later than this run's (`:at_ms`): a clock
# that was ahead claimed minutes that had not come yet. Nothing was probed for it, so a live tick
# may take it over without counting anything twice (item 9 of issue 10: otherwise one tick under
# a clock 3 hours ahead leaves the live ticks that follow nothing to do for 3 hours).
_CLAIMED_AHEAD = ":reclaim AND ticks.missed = 1 AND ticks.started_at_ms > :at_ms"


def claim_minutes(
    conn: sqlite3.Connection,
    minute: int,
    started_at_ms: int,
    *,
    force: bool,
    catch_up_minutes: int,
    reclaim_missed: bool = False,
) -> Claim | None:
    """Claim `minute`, and with `catch_up_minutes` > 0 the unclaimed minutes since the newest
    claimed one: those within the window are covered by this run, older ones recorded as
    missed. None when another run already has `minute`. Each minute is claimed by exactly one
    run, however many race (INSERT ... ON CONFLICT DO NOTHING inside one write transaction).

    `reclaim_missed` (live ticks): minutes recorded as missed by a run whose clock read later
    than `started_at_ms` count as unclaimed. With `force`, a minute whose run finished is
    returned with `rerun` (record only what that run did not); one that never ran or whose run
    died is claimed afresh.
    """
    with write_tx(conn):
        if force:
            return _claim_forced(conn, minute, started_at_ms)
        params = {"minute": minute, "at_ms": started_at_ms, "reclaim": reclaim_missed}
        cursor = conn.execute(
            "INSERT INTO ticks (minute, started_at_ms) VALUES (:minute, :at_ms) ON CONFLICT (minute) "
            f"DO UPDATE SET started_at_ms = excluded.started_at_ms, missed = 0 WHERE {_CLAIMED_AHEAD}",
            params,
        )
        if cursor.rowcount != 1:
            return None
        if catch_up_minutes <= 0:
            return Claim(minute, [], 0)
        last = _one(
            conn,
            # newest first through the primary key, stopping at the first match (max() would scan)
            f"SELECT minute FROM ticks WHERE minute < :minute AND NOT ({_CLAIMED_AHEAD}) ORDER BY minute DESC LIMIT 1",
            params,
        )
        if last is None or last >= minute - 1:  # the first tick ever, or no gap
            return Claim(minute, [], 0)
        window_start = max(last + 1, minute - catch_up_minutes)
        missed_start = max(last + 1, window_start - MAX_MISSED_MINUTES)
        missed = conn.execute(
            _INSERT_RANGE.format(columns="minute, started_at_ms, missed", values="m, :at_ms, 1"),
            {**params, "first": missed_start, "last": window_start - 1},
        ).fetchall()
        covered = conn.execute(
            _INSERT_RANGE.format(columns="minute, started_at_ms, covered_by", values="m, :at_ms, :by"),
            {**params, "first": window_start, "last": minute - 1, "by": minute},
        ).fetchall()
        return Claim(minute, sorted(row[0] for row in covered), len(missed))


def _claim_forced(conn: sqlite3.Connection, minute: int, started_at_ms: int) -> Claim:
    """--force: a rerun of a finished run (see Rerun), or a fresh claim when nothing was recorded
    for `minute` (never claimed, missed, or its run died: finished_at_ms NULL)."""
    found = conn.execute("SELECT coalesce(covered_by, minute) FROM ticks WHERE minute = ? AND missed = 0", (minute,))
    row = found.fetchone()
    run = None
    if row is not None:
        run = conn.execute(
            "SELECT minute, started_at_ms, unrecorded_ids FROM ticks WHERE minute = ? AND finished_at_ms IS NOT NULL",
            (row[0],),
        ).fetchone()
    if run is not None:
        unrecorded = frozenset(int(i) for i in json.loads(run[2] or "[]"))
        return Claim(minute, [], 0, Rerun(int(run[0]), int(run[1]), unrecorded))
    conn.execute(
        "INSERT INTO ticks (minute, started_at_ms) VALUES (?, ?) "
        "ON CONFLICT (minute) DO UPDATE SET started_at_ms = excluded.started_at_ms, "
        "finished_at_ms = NULL, covered_by = NULL, missed = 0, unrecorded_ids = NULL",
        (minute, started_at_ms),
    )
    return Claim(minute, [], 0)


_INSERT_RANGE = (
    """
WITH RECURSIVE r(m) AS (SELECT :first WHERE :first <= :last UNION ALL SELECT m + 1 FROM r WHERE m < :last)
INSERT INTO ticks ({columns}) SELECT {values} FROM r WHERE true
ON CONFLICT (minute) DO UPDATE SET started_at_ms = excluded.started_at_ms, covered_by = excluded.covered_by,
  missed = excluded.missed WHERE """
    + _CLAIMED_AHEAD
    + "\nRETURNING minute\n"
)


# The floor (seconds) in force for owner `o` joined to plan `p`, given the default plan's floor
# `df`: the default plan's once the owner's plan has expired at the tick's time.
_FLOOR = (
    "CASE WHEN p.id IS NULL OR (o.plan_expires_at_ms IS NOT NULL AND o.plan_expires_at_ms <= :now_ms)"
    " THEN df.floor_sec ELSE p.min_interval_sec END"
)
_PHASE_INDEXED = "(CASE WHEN aligned = 1 THEN 0 ELSE id % (interval_sec / 60) END)"
# A row whose interval has no schedule (only possible when edited by hand with the schema's
# CHECK ignored). It is offered to the tick once an hour so the tick can say what is wrong.
# Must match the monitors_bad_interval index's WHERE to the letter.
_BAD_INTERVAL = (
    "NOT (typeof(interval_sec) = 'integer' AND interval_sec >= 60 AND interval_sec % 60 = 0)"
    " AND enabled = 1 AND auto_paused = 0"
)

# Plan floors up to this (seconds) are served by walking the short intervals (b1 below), larger
# ones through their owners (b2).
_SMALL_FLOOR_SEC = 900

# One query. Candidates come from indexes, so the cost follows the rows that are due, not the
# table (CROSS JOIN fixes the join order, MATERIALIZED keeps the CTEs from being inlined into a
# scan): (a) for each distinct interval (a loose index scan over monitors_due) the monitors whose
# indexed phase equals minute % n; (b) monitors whose owner's floor may be above their own
# interval: (b1) for floors up to _SMALL_FLOOR_SEC every monitor below the largest such floor (an
# index range: the 1-14 minute monitors, most of them due anyway), (b2) for larger floors through
# the owners on them (the owners are read only when such a plan exists); (c) rows whose interval
# is unusable, once an hour, through a partial index that is empty on a healthy database. Extra
# candidates cost little: the final WHERE is the authoritative rule of schedule.py.
SELECT_DUE = f"""
WITH RECURSIVE
  df(floor_sec) AS (SELECT min_interval_sec FROM plans WHERE id = 1),
  intervals(n_sec) AS (
    SELECT (SELECT min(interval_sec) FROM monitors WHERE enabled = 1 AND auto_paused = 0)
    UNION ALL
    SELECT (SELECT min(interval_sec) FROM monitors
             WHERE enabled = 1 AND auto_paused = 0 AND interval_sec > intervals.n_sec)
      FROM intervals WHERE n_sec IS NOT NULL
  ),
  small(floor_sec) AS (SELECT max(min_interval_sec) FROM plans WHERE min_interval_sec <= {_SMALL_FLOOR_SEC}),
  raised(owner_id, floor_sec) AS MATERIALIZED (
    SELECT o.id, {_FLOOR} FROM owners o LEFT JOIN plans p ON p.id = o.plan_id, df
     WHERE (SELECT max(min_interval_sec) FROM plans) > {_SMALL_FLOOR_SEC}
  ),
  candidates(id) AS MATERIALIZED (
    SELECT monitors.id FROM intervals, monitors
     WHERE monitors.interval_sec = intervals.n_sec AND enabled = 1 AND auto_paused = 0
       AND {_PHASE_INDEXED} = :minute % (intervals.n_sec / 60)
    UNION
    SELECT m.id FROM small CROSS JOIN monitors m
     WHERE small.floor_sec > 60 AND m.interval_sec < small.floor_sec
       AND m.enabled = 1 AND m.auto_paused = 0
    UNION
    SELECT m.id FROM raised r CROSS JOIN monitors m ON m.owner_id = r.owner_id
     WHERE r.floor_sec > {_SMALL_FLOOR_SEC} AND m.interval_sec < r.floor_sec
       AND m.enabled = 1 AND m.auto_paused = 0
    UNION
    SELECT m.id FROM df, monitors m
     WHERE df.floor_sec > 60 AND m.owner_id IS NULL AND m.interval_sec < df.floor_sec
       AND m.enabled = 1 AND m.auto_paused = 0
    UNION
    SELECT id FROM monitors WHERE {_BAD_INTERVAL} AND :minute % 60 = id % 60
  ),
  due AS (
    SELECT m.*, max(m.interval_sec, {_FLOOR}) AS effective_interval_sec,
           m.owner_id IS NOT NULL AND o.id IS NULL AS owner_missing,
           o.id IS NOT NULL AND p.id IS NULL AS plan_missing
      FROM candidates c
      CROSS JOIN monitors m ON m.id = c.id
      LEFT JOIN owners o ON o.id = m.owner_id
      LEFT JOIN plans p ON p.id = o.plan_id
      CROSS JOIN df
  )
SELECT * FROM due
 WHERE CASE WHEN {_BAD_INTERVAL} THEN :minute % 60 = id % 60
            ELSE :minute % (effective_interval_sec / 60)
                 = CASE WHEN aligned = 1 THEN 0 ELSE id % (effective_interval_sec / 60) END
       END
   AND NOT EXISTS (SELECT 1 FROM maintenance_windows w
                    WHERE w.monitor_id = due.id AND w.ends_at_ms > :now_ms AND w.starts_at_ms <= :now_ms)
   AND NOT EXISTS (SELECT 1 FROM maintenance_windows w
                    WHERE w.owner_id = due.owner_id AND w.ends_at_ms > :now_ms AND w.starts_at_ms <= :now_ms)
"""


def select_due(conn: sqlite3.Connection, minute: int, now_ms: int) -> list[dict[str, Any]]:
    """Rows of the monitors due in `minute`, as dicts in id order; `now_ms` decides plan expiry
    and maintenance. Rows are not validated here: a hand-edited row may hold anything."""
    cursor = conn.execute(SELECT_DUE, {"minute": minute, "now_ms": now_ms})
    names = [column[0] for column in cursor.description]
    # sorted here: SQLite would sort whole rows in a temporary B-tree, which costs more
    return sorted((dict(zip(names, row, strict=True)) for row in cursor), key=lambda row: row["id"])


@dataclass(frozen=True)
class WriteSummary:
    up: int
    down: int
    unknown: int
    opened: list[int]
    resolved: list[int]
    stale: int
    confirmed: list[int] = field(default_factory=list)  # incidents announced as down this tick


_UPSERT_ROLLUP = """
INSERT INTO rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum,
                     latency_ms_min, latency_ms_max, last_check_ms, cert_expires_at_ms)
VALUES (:monitor_id, :hour_start_ms, 1, :failures, :latency_ms, :latency_min, :latency_max, :at_ms,
        :cert_expires_at_ms)
ON CONFLICT (monitor_id, hour_start_ms) DO UPDATE SET
  cert_expires_at_ms = CASE WHEN excluded.last_check_ms >= last_check_ms
                            THEN excluded.cert_expires_at_ms ELSE cert_expires_at_ms END,
  checks = checks + 1,
  failures = failures + excluded.failures,
  latency_ms_sum = latency_ms_sum + excluded.latency_ms_sum,
  latency_ms_min = min(coalesce(latency_ms_min, excluded.latency_ms_min),
                       coalesce(excluded.latency_ms_min, latency_ms_min)),
  latency_ms_max = max(coalesce(latency_ms_max, excluded.latency_ms_max),
                       coalesce(excluded.latency_ms_max, latency_ms_max)),
  last_check_ms = max(last_check_ms, excluded.last_check_ms)
RETURNING last_check_ms
"""


def write_results(
    conn: sqlite3.Connection,
    minutes: Sequence[int],
    at_ms: int,
    results: Iterable[CheckResult],
    finished_at_ms: int,
    *,
    network_lost: bool = False,
    ahead_after_ms: int | None = None,
    rerun: Rerun | None = None,
) -> WriteSummary:
    """Write one tick's results in one transaction: a rollup upsert per decided check, an
    incident step per down check or per up check of a monitor with an open incident (see
    incidents.py; confirming and resolving record events to notify), and the tick's rows in the
    ledger (`minutes`: the run's own minute first, then the minutes it caught up;
    `network_lost` marks them: see "Alerts" below).

    A result is stale when a newer check of the same monitor is already counted (a later tick
    that overlapped this one committed first): it is counted in the rollup but changes no
    incident, so state never flips backwards. A check counted after `ahead_after_ms` (a live
    tick's clock reading plus the longest it can have run) cannot come from a later tick: a
    clock that was ahead counted it, and it makes nothing stale, so it cannot hide an outage.

    `rerun` (a --force rerun; `results` holds only what it may record): the run's ledger row
    keeps its figures and is told what is now recorded. Raises sqlite3.Error; nothing is
    written then.
    """
    up = down = unknown = stale = 0
    opened: list[int] = []
    resolved: list[int] = []
    confirmed: list[int] = []
    hour_ms = hour_start_ms(at_ms)
    ahead = _NEVER if ahead_after_ms is None else ahead_after_ms
    unrecorded: list[int] = []
    with write_tx(conn):
        open_by_monitor = _open_incidents(conn)
        results = list(results)
        # a monitor removed while the tick probed: its result has nowhere to go
        existing = _alert_thresholds(conn, [r.monitor_id for r in results])
        for result in results:
            if result.monitor_id not in existing:
                continue
            if result.status == "unknown":
                unknown += 1
                unrecorded.append(result.monitor_id)
                continue
            is_up = result.status == "up"
            up += is_up
            down += not is_up
            latency = result.latency_ms if is_up else None  # averages are of answered, up checks
            (last_check_ms,) = conn.execute(
                _UPSERT_ROLLUP,
                {
                    "monitor_id": result.monitor_id,
                    "hour_start_ms": hour_ms,
                    "failures": 0 if is_up else 1,
                    "latency_ms": latency or 0,
                    "latency_min": latency,
                    "latency_max": latency,
                    "at_ms": at_ms,
                    "cert_expires_at_ms": result.cert_expires_at_ms,
                },
            ).fetchone()
            could_change = not is_up or result.monitor_id in open_by_monitor
            if at_ms < last_check_ms <= ahead or (
                could_change and _newer_check_exists(conn, result.monitor_id, at_ms, ahead)
            ):
                stale += 1
                continue
            change = _apply_incident_step(
                conn, result, open_by_monitor.get(result.monitor_id), existing[result.monitor_id], at_ms
            )
            if change is not None:
                if change.transition is Transition.OPEN:
                    opened.append(result.monitor_id)
                elif change.transition is Transition.RESOLVE:
                    resolved.append(result.monitor_id)
                if change.confirms:
                    confirmed.append(result.monitor_id)
        if rerun is not None:
            recorded = {r.monitor_id for r in results if r.status != "unknown"}
            conn.execute(
                "UPDATE ticks SET started_at_ms = ?, finished_at_ms = ?, unrecorded_ids = ? WHERE minute = ?",
                (at_ms, finished_at_ms, _id_list((rerun.unrecorded - recorded) | set(unrecorded)), rerun.run_minute),
            )
            return WriteSummary(up, down, unknown, opened, resolved, stale, confirmed)
        own_minute, *covered = minutes or [None]  # no minute: results only (bench, tests)
        conn.execute(
            "UPDATE ticks SET finished_at_ms = :finished, due = :due, up = :up, down = :down, "
            "unknown = :unknown, opened = :opened, resolved = :resolved, unrecorded_ids = :unrecorded "
            "WHERE minute = :minute",
            {
                "unrecorded": _id_list(unrecorded),
                "finished": finished_at_ms,
                "due": up + down + unknown,
                "up": up,
                "down": down,
                "unknown": unknown,
                "opened": len(opened),
                "resolved": len(resolved),
                "minute": own_minute,
            },
        )
        conn.executemany(
            "UPDATE ticks SET finished_at_ms = ? WHERE minute = ? AND covered_by = ?",
            [(finished_at_ms, minute, own_minute) for minute in covered],
        )
        if network_lost:
            _mark_network_lost(conn, minutes)
    return WriteSummary(up, down, unknown, opened, resolved, stale, confirmed)


_NEVER = 2**62  # no instant is counted after it: for replays every newer check is a later one


def _id_list(ids: Iterable[int]) -> str | None:
    """Monitor ids as a ledger column holds them: a JSON array, NULL when there are none."""
    ordered = sorted(set(ids))
    return json.dumps(ordered, separators=(",", ":")) if ordered else None


def _newer_check_exists(conn: sqlite3.Connection, monitor: int, at_ms: int, ahead_after_ms: int) -> bool:
    """Whether a check newer than `at_ms`, and not after `ahead_after_ms` (see write_results), is
    counted in a later hour than at_ms's (a tick that overlapped this one across an hour
    boundary, or a replay of an older minute). Read only for results that could change an
    incident, so a healthy monitor still costs one upsert."""
    newest = _one(
        conn,
        "SELECT max(last_check_ms) FROM rollups WHERE monitor_id = ? AND hour_start_ms > ? AND last_check_ms <= ?",
        (monitor, hour_start_ms(at_ms), ahead_after_ms),
    )
    return newest is not None and newest > at_ms


@dataclass(frozen=True)
class AutoPaused:
    monitor_id: int
    name: str
    down_since_ms: int


def _auto_pause(conn: sqlite3.Connection, now_ms: int, after_ms: int) -> list[AutoPaused]:
    """Auto-pause the monitors down continuously for longer than `after_ms`, each with a
    'paused' event to notify: a monitor that stops being probed is never silent."""
    found = conn.execute(
        "SELECT m.id, m.name, i.id, i.started_at_ms FROM monitors m "
        "JOIN incidents i ON i.monitor_id = m.id AND i.resolved_at_ms IS NULL "
        "WHERE m.auto_paused = 0 AND i.started_at_ms < ? ORDER BY m.id",
        (now_ms - after_ms,),
    ).fetchall()
    for monitor, _, incident_id, _ in found:
        conn.execute("UPDATE monitors SET auto_paused = 1 WHERE id = ?", (monitor,))
        _record_event(conn, incident_id, monitor, "paused", now_ms)
    return [AutoPaused(monitor, name, started_ms) for monitor, name, _, started_ms in found]


def housekeep(
    conn: sqlite3.Connection, now_ms: int, *, auto_pause_after_ms: int, retention_ms: int
) -> tuple[list[AutoPaused], int]:
    """Auto-pause monitors down continuously for longer than `auto_pause_after_ms` and delete
    rollups, ledger minutes, and incident events with their deliveries older than the retention
    period; an open incident's events stay (it is still being told about). Returns (paused,
    rollups deleted)."""
    with write_tx(conn):
        paused = _auto_pause(conn, now_ms, auto_pause_after_ms)
        deleted = conn.execute(
            "DELETE FROM rollups WHERE hour_start_ms < ?", (hour_start_ms(now_ms - retention_ms),)
        ).rowcount
        conn.execute("DELETE FROM ticks WHERE minute < ?", (minute_of_ms(now_ms - retention_ms),))
        # deliveries go with their events (ON DELETE CASCADE)
        conn.execute(
            "DELETE FROM incident_events WHERE created_at_ms < ? AND incident_id NOT IN "
            "(SELECT id FROM incidents WHERE resolved_at_ms IS NULL)",
            (now_ms - retention_ms,),
        )
    return paused, deleted


# ---------------------------------------------------------------------------------------------
# Management


def _one(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> Any:
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def plan_id(conn: sqlite3.Connection, name: str) -> int:
    found = _one(conn, "SELECT id FROM plans WHERE name = ?", (name,))
    if found is None:
        raise StoreError(f"no plan named {name!r}")
    return int(found)


def owner_id(conn: sqlite3.Connection, name: str) -> int:
    found = _one(conn, "SELECT id FROM owners WHERE name = ?", (name,))
    if found is None:
        raise StoreError(f"no owner named {name!r}")
    return int(found)


def monitor_id(conn: sqlite3.Connection, ref: str) -> int:
    """A monitor by id or by name."""
    found = None
    if ref.isdigit():
        found = _one(conn, "SELECT id FROM monitors WHERE id = ?", (int(ref),))
    if found is None:
        found = _one(conn, "SELECT id FROM monitors WHERE name = ?", (ref,))
    if found is None:
        raise StoreError(f"no monitor {ref!r}")
    return int(found)


def add_plan(conn: sqlite3.Connection, name: str, min_interval_sec: int) -> int:
    with write_tx(conn):
        if _one(conn, "SELECT id FROM plans WHERE name = ?", (name,)) is not None:
            raise StoreError(f"a plan named {name!r} exists")
        return int(
            conn.execute("INSERT INTO plans (name, min_interval_sec) VALUES (?, ?)", (name, min_interval_sec)).lastrowid
            or 0
        )


def add_owner(conn: sqlite3.Connection, name: str, plan_name: str, plan_expires_at_ms: int | None) -> int:
    with write_tx(conn):
        if _one(conn, "SELECT id FROM owners WHERE name = ?", (name,)) is not None:
            raise StoreError(f"an owner named {name!r} exists")
        return int(
            conn.execute(
                "INSERT INTO owners (name, plan_id, plan_expires_at_ms) VALUES (?, ?, ?)",
                (name, plan_id(conn, plan_name), plan_expires_at_ms),
            ).lastrowid
            or 0
        )


_MONITOR_COLUMNS = (*COMMON_SETTINGS, *OPTIONS)  # Monitor fields stored under the same names


def add_monitor(
    conn: sqlite3.Connection,
    monitor: Monitor,
    owner_name: str | None,
    created_at_ms: int,
    alerts: AlertSettings = AlertSettings(),  # noqa: B008 -- frozen, so one shared default is safe
    *,
    token_sha256: bytes | None = None,
    name_given: bool = True,
) -> int:
    """Insert a checked monitor; `token_sha256` identifies a heartbeat's pings. A name that was
    not given (the redacted URL) is made unique with ' (2)', ' (3)', ...; a given one must be."""
    with write_tx(conn):
        name = monitor.name
        for n in range(2, 1000):
            if _one(conn, "SELECT id FROM monitors WHERE name = ?", (name,)) is None:
                break
            if name_given:
                raise StoreError(f"a monitor named {monitor.name!r} exists; choose another with --name")
            name = f"{monitor.name} ({n})"
        monitor = replace(monitor, name=name)
        owner = owner_id(conn, owner_name) if owner_name else None
        values = {column: getattr(monitor, column) for column in _MONITOR_COLUMNS}
        values["aligned"] = int(monitor.aligned)
        values.update(
            owner_id=owner,
            created_at_ms=created_at_ms,
            token_sha256=token_sha256,
            alert_after_checks=alerts.alert_after_checks,
            resolve_after_checks=alerts.resolve_after_checks,
            remind_every_sec=alerts.remind_every_sec,
        )
        # the column names are Monitor's own field names, never user input
        return int(
            conn.execute(
                f"INSERT INTO monitors ({', '.join(values)}) VALUES ({', '.join(':' + c for c in values)})", values
            ).lastrowid
            or 0
        )


def set_paused(conn: sqlite3.Connection, ref: str, paused: bool) -> int:
    """Pause (enabled = 0) or resume (enabled = 1, auto-pause cleared) a monitor."""
    with write_tx(conn):
        found = monitor_id(conn, ref)
        if paused:
            conn.execute("UPDATE monitors SET enabled = 0 WHERE id = ?", (found,))
        else:
            conn.execute("UPDATE monitors SET enabled = 1, auto_paused = 0 WHERE id = ?", (found,))
    return found


def remove_monitor(conn: sqlite3.Connection, ref: str) -> int:
    with write_tx(conn):
        found = monitor_id(conn, ref)
        conn.execute("DELETE FROM monitors WHERE id = ?", (found,))
    return found


def _scope(conn: sqlite3.Connection, monitor_ref: str | None, owner_name: str | None) -> tuple[int | None, int | None]:
    """(monitor id, owner id) of a row that covers one monitor or one owner's monitors."""
    monitor = monitor_id(conn, monitor_ref) if monitor_ref else None
    owner = owner_id(conn, owner_name) if owner_name else None
    return monitor, owner


def add_maintenance(
    conn: sqlite3.Connection, *, monitor_ref: str | None, owner_name: str | None, starts_at_ms: int, ends_at_ms: int
) -> int:
    with write_tx(conn):
        monitor, owner = _scope(conn, monitor_ref, owner_name)
        return int(
            conn.execute(
                "INSERT INTO maintenance_windows (monitor_id, owner_id, starts_at_ms, ends_at_ms) VALUES (?, ?, ?, ?)",
                (monitor, owner, starts_at_ms, ends_at_ms),
            ).lastrowid
            or 0
        )


def list_monitors(conn: sqlite3.Connection, now_ms: int) -> list[dict[str, Any]]:
    """Every monitor with its effective interval and current state at `now_ms`."""
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            f"""
            WITH df(floor_sec) AS (SELECT min_interval_sec FROM plans WHERE id = 1)
            SELECT m.id, m.name, m.kind, m.url, m.interval_sec, m.aligned, m.method, m.expect_status,
                   m.keyword, m.keyword_absent, m.expires_within_sec, m.grace_sec,
                   m.timeout_s, m.retries, m.enabled, m.auto_paused, o.name AS owner, {_LATEST_RESULTS},
                   max(m.interval_sec, {_FLOOR}) AS effective_interval_sec,
                   EXISTS (SELECT 1 FROM maintenance_windows w
                            WHERE (w.monitor_id = m.id OR w.owner_id = m.owner_id)
                              AND w.starts_at_ms <= :now_ms AND w.ends_at_ms > :now_ms) AS in_maintenance,
                   (SELECT i.started_at_ms FROM incidents i
                     WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL) AS down_since_ms,
                   (SELECT max(r.last_check_ms) FROM rollups r WHERE r.monitor_id = m.id) AS last_check_ms
              FROM monitors m
              LEFT JOIN owners o ON o.id = m.owner_id
              LEFT JOIN plans p ON p.id = o.plan_id
              LEFT JOIN pings ON pings.monitor_id = m.id
             CROSS JOIN df
             ORDER BY m.id
            """,
            {"now_ms": now_ms},
        ).fetchall()
    finally:
        conn.row_factory = None
    return [dict(row) for row in rows]


def incidents_for(conn: sqlite3.Connection, monitor: int) -> list[tuple[int, int | None, str]]:
    """(started_at_ms, resolved_at_ms, cause) of one monitor's incidents, oldest first."""
    return [
        (int(a), None if b is None else int(b), str(c))
        for a, b, c in conn.execute(
            "SELECT started_at_ms, resolved_at_ms, cause FROM incidents WHERE monitor_id = ? "
            "ORDER BY started_at_ms, id",
            (monitor,),
        )
    ]


RETENTION_DEFAULT_MS = 400 * MS_PER_DAY
AUTO_PAUSE_DEFAULT_MS = 7 * MS_PER_DAY


# ---------------------------------------------------------------------------------------------
# Alerts: confirmation counted on the open incident, incident events, channels, deliveries
# (schema.sql "Alerts"). Delivery runs after the results commit; every claim is a conditional
# UPDATE under BEGIN IMMEDIATE, so overlapping ticks never hold the same delivery.

CANARY_SETTING = "network_canary_url"


def _open_incidents(conn: sqlite3.Connection) -> dict[int, tuple[int, Open]]:
    """monitor id -> (incident id, its counters) for every open incident."""
    return {
        monitor: (incident, Open(state, downs, ups))
        for monitor, incident, state, downs, ups in conn.execute(
            "SELECT monitor_id, id, state, down_checks, up_checks FROM incidents WHERE resolved_at_ms IS NULL"
        )
    }


def _alert_thresholds(conn: sqlite3.Connection, monitor_ids: Sequence[int]) -> dict[int, AlertSettings]:
    """The alert settings of those of `monitor_ids` that still exist."""
    return {
        row[0]: AlertSettings(row[1], row[2], row[3])
        for row in conn.execute(
            "SELECT id, alert_after_checks, resolve_after_checks, remind_every_sec FROM monitors "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(monitor_ids)),),
        )
    }


def _apply_incident_step(
    conn: sqlite3.Connection,
    result: CheckResult,
    open_incident: tuple[int, Open] | None,
    settings: AlertSettings,
    at_ms: int,
) -> Step | None:
    """Write what one decided, current check does to its monitor's incident (incidents.step),
    and record the event people are told about, if any."""
    incident_id, counters = open_incident if open_incident is not None else (None, None)
    change = step(
        counters,
        result.status == "up",
        alert_after=settings.alert_after_checks,
        resolve_after=settings.resolve_after_checks,
    )
    if change is None:
        return None
    confirmed_at_ms = at_ms if change.confirms else None
    if change.transition is Transition.OPEN:
        incident_id = conn.execute(
            "INSERT INTO incidents (monitor_id, started_at_ms, cause, http_status, state, down_checks, "
            "up_checks, confirmed_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                result.monitor_id,
                at_ms,
                result.cause or "down",
                result.http_status,
                change.state,
                change.down_checks,
                change.up_checks,
                confirmed_at_ms,
            ),
        ).lastrowid
    elif change.transition is Transition.COUNT:
        conn.execute(
            "UPDATE incidents SET state = ?, down_checks = ?, up_checks = ?, "
            "confirmed_at_ms = coalesce(confirmed_at_ms, ?) WHERE id = ? AND resolved_at_ms IS NULL",
            (change.state, change.down_checks, change.up_checks, confirmed_at_ms, incident_id),
        )
    else:
        conn.execute(
            "UPDATE incidents SET up_checks = ?, resolved_at_ms = ? WHERE id = ? AND resolved_at_ms IS NULL",
            (change.up_checks, at_ms, incident_id),
        )
    if change.event is not None and incident_id is not None:
        _record_event(conn, incident_id, result.monitor_id, change.event.value, at_ms)
    return change


def _record_event(conn: sqlite3.Connection, incident_id: int, monitor: int, kind: str, at_ms: int) -> None:
    """An incident event, and a pending delivery to every channel that covers the monitor."""
    event_id = conn.execute(
        "INSERT INTO incident_events (incident_id, kind, created_at_ms) VALUES (?, ?, ?)",
        (incident_id, kind, at_ms),
    ).lastrowid
    conn.execute(
        "INSERT INTO deliveries (event_id, channel_id, next_attempt_at_ms) "
        "SELECT ?, c.id, ? FROM monitors m JOIN channels c "
        "ON c.monitor_id = m.id OR c.owner_id = m.owner_id OR (c.monitor_id IS NULL AND c.owner_id IS NULL) "
        "WHERE m.id = ?",
        (event_id, at_ms, monitor),
    )


def _mark_network_lost(conn: sqlite3.Connection, minutes: Sequence[int]) -> None:
    conn.executemany("UPDATE ticks SET network_lost = 1 WHERE minute = ?", [(m,) for m in minutes])


# Confirmed open incidents of active monitors whose next reminder is due, when anyone listens.
_DUE_REMINDERS = """
SELECT i.id, i.monitor_id FROM incidents i JOIN monitors m ON m.id = i.monitor_id
 WHERE i.resolved_at_ms IS NULL AND i.state = 'confirmed'
   AND m.remind_every_sec IS NOT NULL AND m.enabled = 1 AND m.auto_paused = 0
   AND coalesce(i.reminded_at_ms, i.confirmed_at_ms) + m.remind_every_sec * 1000 <= :now_ms
   AND EXISTS (SELECT 1 FROM channels)
"""

# Deliveries a run may claim: due, or claimed by a run whose claim expired (it died mid-send),
# and not behind an older delivery to the same channel that is waiting (backing off, or being
# sent by another run) -- a channel hears of its events in order.
_CLAIMABLE = """
SELECT d.event_id, d.channel_id FROM deliveries d
 WHERE ((d.state = 'pending' AND d.next_attempt_at_ms <= :now_ms)
        OR (d.state = 'sending' AND d.claimed_until_ms <= :now_ms))
   AND NOT EXISTS (SELECT 1 FROM deliveries b
                    WHERE b.channel_id = d.channel_id AND b.event_id < d.event_id
                      AND ((b.state = 'pending' AND b.next_attempt_at_ms > :now_ms)
                           OR (b.state = 'sending' AND b.claimed_until_ms > :now_ms)))
"""


def has_delivery_work(conn: sqlite3.Connection, now_ms: int) -> bool:
    """Whether anything is to be sent at `now_ms`: a due delivery or a due reminder. One read
    through partial indexes, so an idle tick stays cheap."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM deliveries WHERE state = 'pending' AND next_attempt_at_ms <= :now_ms) "
        "OR EXISTS (SELECT 1 FROM deliveries WHERE state = 'sending' AND claimed_until_ms <= :now_ms) "
        f"OR EXISTS ({_DUE_REMINDERS})",
        {"now_ms": now_ms},
    ).fetchone()
    return bool(row[0])


def add_due_reminders(conn: sqlite3.Connection, now_ms: int) -> int:
    """Record a reminder event (with its deliveries) for every incident whose reminder is due."""
    with write_tx(conn):
        due = conn.execute(_DUE_REMINDERS, {"now_ms": now_ms}).fetchall()
        for incident_id, monitor in due:
            conn.execute("UPDATE incidents SET reminded_at_ms = ? WHERE id = ?", (now_ms, incident_id))
            _record_event(conn, incident_id, monitor, "reminder", now_ms)
    return len(due)


def claim_deliveries(
    conn: sqlite3.Connection, now_ms: int, token: str, claimed_until_ms: int, limit: int
) -> list[dict[str, Any]]:
    """Claim up to `limit` deliveries for this run (`token`) until `claimed_until_ms`, oldest
    first, and return them with what their messages need, ordered by channel then event."""
    with write_tx(conn):
        conn.execute(
            "UPDATE deliveries SET state = 'sending', claim_token = :token, claimed_until_ms = :until "
            f"WHERE (event_id, channel_id) IN ({_CLAIMABLE} ORDER BY d.event_id LIMIT :limit) "
            "AND (state = 'pending' OR claimed_until_ms <= :now_ms)",
            {"token": token, "until": claimed_until_ms, "now_ms": now_ms, "limit": limit},
        )
        conn.row_factory = sqlite3.Row
        try:
            rows = conn.execute(
                """
                SELECT d.event_id, d.channel_id, d.attempts, c.url AS channel_url,
                       e.kind, e.created_at_ms, m.name AS monitor_name, m.url AS monitor_url,
                       i.cause, i.http_status, i.started_at_ms, i.resolved_at_ms
                  FROM deliveries d
                  JOIN channels c ON c.id = d.channel_id
                  JOIN incident_events e ON e.id = d.event_id
                  JOIN incidents i ON i.id = e.incident_id
                  JOIN monitors m ON m.id = i.monitor_id
                 WHERE d.state = 'sending' AND d.claim_token = ?
                 ORDER BY d.channel_id, d.event_id
                """,
                (token,),
            ).fetchall()
        finally:
            conn.row_factory = None
    return [dict(row) for row in rows]


@dataclass(frozen=True)
class DeliveryOutcome:
    """What became of one claimed delivery: 'sent', 'retry' (at next_attempt_at_ms), 'failed'
    (given up) or 'released' (not attempted in this run; its attempts are unchanged)."""

    event_id: int
    channel_id: int
    outcome: str
    error: str | None = None
    next_attempt_at_ms: int | None = None


def finish_deliveries(conn: sqlite3.Connection, token: str, now_ms: int, outcomes: Sequence[DeliveryOutcome]) -> int:
    """Record outcomes of this run's claims; a claim another run has since taken over (ours
    expired) is left alone. Returns how many were recorded."""
    updates = {
        "sent": "state = 'sent', attempts = attempts + 1, sent_at_ms = :now_ms, last_error = NULL",
        "retry": "state = 'pending', attempts = attempts + 1, next_attempt_at_ms = :next, last_error = :error",
        "failed": "state = 'failed', attempts = attempts + 1, last_error = :error",
        "released": "state = 'pending'",
    }
    recorded = 0
    with write_tx(conn):
        for o in outcomes:
            recorded += conn.execute(
                f"UPDATE deliveries SET {updates[o.outcome]}, claim_token = NULL, claimed_until_ms = NULL "
                "WHERE event_id = :event AND channel_id = :channel AND state = 'sending' AND claim_token = :token",
                {
                    "now_ms": now_ms,
                    "next": o.next_attempt_at_ms,
                    "error": o.error,
                    "event": o.event_id,
                    "channel": o.channel_id,
                    "token": token,
                },
            ).rowcount
    return recorded


def add_channel(
    conn: sqlite3.Connection, url: str, *, monitor_ref: str | None, owner_name: str | None, created_at_ms: int
) -> int:
    with write_tx(conn):
        monitor, owner = _scope(conn, monitor_ref, owner_name)
        return int(
            conn.execute(
                "INSERT INTO channels (url, monitor_id, owner_id, created_at_ms) VALUES (?, ?, ?, ?)",
                (url, monitor, owner, created_at_ms),
            ).lastrowid
            or 0
        )


def list_channels(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every channel with what it covers and how its deliveries stand. `url` holds secrets."""
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            """
            SELECT c.id, c.url, m.name AS monitor, o.name AS owner,
                   (SELECT count(*) FROM deliveries d
                     WHERE d.channel_id = c.id AND d.state IN ('pending', 'sending')) AS pending,
                   (SELECT count(*) FROM deliveries d WHERE d.channel_id = c.id AND d.state = 'sent') AS sent,
                   (SELECT count(*) FROM deliveries d WHERE d.channel_id = c.id AND d.state = 'failed') AS failed
              FROM channels c
              LEFT JOIN monitors m ON m.id = c.monitor_id
              LEFT JOIN owners o ON o.id = c.owner_id
             ORDER BY c.id
            """
        ).fetchall()
    finally:
        conn.row_factory = None
    return [dict(row) for row in rows]


def channel_urls(conn: sqlite3.Connection, channel: int | None = None) -> list[tuple[int, str]]:
    """(id, url) of one channel or of all; raises StoreError for an unknown id."""
    if channel is None:
        return [(int(i), str(u)) for i, u in conn.execute("SELECT id, url FROM channels ORDER BY id")]
    url = _one(conn, "SELECT url FROM channels WHERE id = ?", (channel,))
    if url is None:
        raise StoreError(f"no channel {channel}")
    return [(channel, str(url))]


def remove_channel(conn: sqlite3.Connection, channel: int) -> None:
    """Delete a channel with its deliveries; raises StoreError for an unknown id."""
    with write_tx(conn):
        if not conn.execute("DELETE FROM channels WHERE id = ?", (channel,)).rowcount:
            raise StoreError(f"no channel {channel}")


def get_setting(conn: sqlite3.Connection, name: str) -> str | None:
    found = _one(conn, "SELECT value FROM settings WHERE name = ?", (name,))
    return None if found is None else str(found)


def set_setting(conn: sqlite3.Connection, name: str, value: str | None) -> None:
    """Set a setting, or remove it with None."""
    with write_tx(conn):
        if value is None:
            conn.execute("DELETE FROM settings WHERE name = ?", (name,))
        else:
            conn.execute(
                "INSERT INTO settings (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (name, value),
            )


# ---------------------------------------------------------------------------------------------
# Status page, badges, metrics and report: reads only, a few queries per page.
# Nothing here is written per check; all of it is derived from rollups, incidents and ticks.

# A monitor's current-state columns and the settings that decide "invalid" (see
# model.monitor_state), for `FROM monitors m` at
# :now_ms. The last check is read from the monitor's newest rollup hour (a primary-key seek)
# rather than a max over all its hours.
_STATE_COLUMNS = """
    m.enabled, m.auto_paused,
    m.kind, m.url, m.interval_sec, m.aligned, m.method, m.expect_status, m.keyword, m.timeout_s, m.retries,
    m.keyword_absent, m.expires_within_sec, m.grace_sec,
    EXISTS (SELECT 1 FROM maintenance_windows w
             WHERE (w.monitor_id = m.id OR w.owner_id = m.owner_id)
               AND w.starts_at_ms <= :now_ms AND w.ends_at_ms > :now_ms) AS in_maintenance,
    (SELECT i.started_at_ms FROM incidents i
      WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL) AS down_since_ms,
    (SELECT r.last_check_ms FROM rollups r
      WHERE r.monitor_id = m.id ORDER BY r.hour_start_ms DESC LIMIT 1) AS last_check_ms
"""


def _dicts(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(sql, params).fetchall()
    finally:
        conn.row_factory = None
    return [dict(row) for row in rows]


def report(conn: sqlite3.Connection, since_ms: int, now_ms: int) -> list[dict[str, Any]]:
    """Per monitor, over the rollup hours that start at or after the hour of `since_ms`: checks,
    failures, latency sum of up checks, the incidents that overlap [since_ms, now_ms], and the
    current-state columns at `now_ms`."""
    return _dicts(
        conn,
        f"""
        SELECT m.id, m.name, {_STATE_COLUMNS}, {_LATEST_RESULTS},
               (SELECT count(*) FROM incidents i
                 WHERE i.monitor_id = m.id AND i.started_at_ms <= :now_ms
                   AND (i.resolved_at_ms IS NULL OR i.resolved_at_ms >= :since_ms)) AS incidents,
               coalesce(sum(r.checks), 0) AS checks,
               coalesce(sum(r.failures), 0) AS failures,
               sum(r.latency_ms_sum) AS latency_ms_sum,
               EXISTS (SELECT 1 FROM incidents i
                        WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL) AS open_incident
          FROM monitors m
          LEFT JOIN rollups r ON r.monitor_id = m.id AND r.hour_start_ms >= :since_hour_ms
          LEFT JOIN pings ON pings.monitor_id = m.id
         GROUP BY m.id
         ORDER BY m.id
        """,
        {"since_hour_ms": hour_start_ms(since_ms), "since_ms": since_ms, "now_ms": now_ms},
    )


def status_monitors(conn: sqlite3.Connection, now_ms: int) -> list[dict[str, Any]]:
    """Every monitor with its current-state columns at `now_ms`, when it was created, and the
    totals of its newest rollup hour (`hour_checks`, `hour_failures`, `hour_latency_ms_sum`)."""
    return _dicts(
        conn,
        f"""
        SELECT m.id, m.name, m.created_at_ms, {_STATE_COLUMNS},
               h.hour_start_ms, h.checks AS hour_checks, h.failures AS hour_failures,
               h.latency_ms_sum AS hour_latency_ms_sum
          FROM monitors m
          LEFT JOIN rollups h ON h.monitor_id = m.id
               AND h.hour_start_ms = (SELECT max(x.hour_start_ms) FROM rollups x WHERE x.monitor_id = m.id)
         ORDER BY m.id
        """,
        {"now_ms": now_ms},
    )


def rollups_by_day(conn: sqlite3.Connection, since_ms: int, tier_starts_ms: Sequence[int]) -> list[dict[str, Any]]:
    """Rollup totals per monitor, UTC day and tier, over the hours from the hour of `since_ms`.

    `tier` counts how many of `tier_starts_ms` an hour starts at or after, so one pass serves
    nested windows: the rows of window k are those with tier >= k. A day cut by a window's start
    comes back as two rows. Each monitor's hours are read through the primary key.
    """
    tiers = " + ".join(f"(r.hour_start_ms >= :tier{k})" for k in range(len(tier_starts_ms))) or "0"
    return _dicts(
        conn,
        f"""
        SELECT r.monitor_id, r.hour_start_ms / :ms_per_day AS day, {tiers} AS tier,
               sum(r.checks) AS checks, sum(r.failures) AS failures, sum(r.latency_ms_sum) AS latency_ms_sum
          FROM monitors m
          CROSS JOIN rollups r ON r.monitor_id = m.id AND r.hour_start_ms >= :since_hour_ms
         GROUP BY r.monitor_id, day, tier
        """,
        {
            "since_hour_ms": hour_start_ms(since_ms),
            "ms_per_day": MS_PER_DAY,
            **{f"tier{k}": hour_start_ms(start) for k, start in enumerate(tier_starts_ms)},
        },
    )


def recent_incidents(conn: sqlite3.Connection, since_ms: int, per_monitor: int) -> list[dict[str, Any]]:
    """The newest `per_monitor` incidents of each monitor among those open at or after
    `since_ms` (started_at_ms, resolved_at_ms, cause), newest first, each row with `total`: how
    many of that monitor's incidents overlap the window."""
    return _dicts(
        conn,
        """
        SELECT monitor_id, started_at_ms, resolved_at_ms, cause, http_status, total FROM (
            SELECT i.*, row_number() OVER (PARTITION BY i.monitor_id ORDER BY i.started_at_ms DESC, i.id DESC) AS n,
                   count(*) OVER (PARTITION BY i.monitor_id) AS total
              FROM incidents i
             WHERE i.resolved_at_ms IS NULL OR i.resolved_at_ms >= :since_ms
        ) WHERE n <= :per_monitor
         ORDER BY monitor_id, started_at_ms DESC
        """,
        {"since_ms": since_ms, "per_monitor": per_monitor},
    )


def tick_gaps(conn: sqlite3.Connection, from_minute: int, until_minute: int) -> list[tuple[int, int]]:
    """The [start, end) minute ranges within [from_minute, until_minute) when no tick probed:
    unclaimed minutes, minutes claimed too late to probe (missed = 1) and runs that died
    (finished_at_ms NULL). Those are "no data", never downtime. One range scan of the ledger."""
    return [
        (int(start), int(end))
        for start, end in conn.execute(
            """
            WITH ran(minute) AS (
                SELECT minute FROM ticks
                 WHERE minute >= :from AND minute < :until AND missed = 0 AND finished_at_ms IS NOT NULL
                UNION ALL SELECT :until
            )
            SELECT previous + 1, minute FROM (
                SELECT minute, lag(minute, 1, :from - 1) OVER (ORDER BY minute) AS previous FROM ran
            ) WHERE minute > previous + 1
            """,
            {"from": from_minute, "until": until_minute},
        )
    ]


def ticks_per_day(conn: sqlite3.Connection, from_minute: int, until_minute: int) -> dict[int, int]:
    """UTC day of the epoch -> how many minutes of it within [from_minute, until_minute) a tick
    probed. Cheaper than tick_gaps over many days: callers look for gaps only in days short
    of minutes."""
    return dict(
        conn.execute(
            "SELECT minute / :per_day, count(*) FROM ticks WHERE minute >= :from AND minute < :until "
            "AND missed = 0 AND finished_at_ms IS NOT NULL GROUP BY 1",
            {"per_day": MINUTES_PER_DAY, "from": from_minute, "until": until_minute},
        ).fetchall()
    )


def first_tick_minute(conn: sqlite3.Connection) -> int | None:
    """The minute of the oldest row in the ledger: before it, monitor-tick had never run."""
    found = _one(conn, "SELECT min(minute) FROM ticks", ())
    return None if found is None else int(found)


def last_tick(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """The newest finished tick that probed: minute, started/finished_at_ms, due, up, down, unknown."""
    rows = _dicts(
        conn,
        "SELECT minute, started_at_ms, finished_at_ms, due, up, down, unknown FROM ticks "
        "WHERE missed = 0 AND finished_at_ms IS NOT NULL ORDER BY minute DESC LIMIT 1",
        {},
    )
    return rows[0] if rows else None


def read_db(path: str, read: Callable[[sqlite3.Connection], _T]) -> _T:
    """Open the database at `path` read-only (open_read_only), call `read` with the connection,
    close it. Raises StoreError, for sqlite3 errors during `read` too."""
    conn = open_read_only(path)
    try:
        return read(conn)
    except sqlite3.Error as exc:
        raise StoreError(describe_error(exc, path)) from None
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# Probe kinds' own results: certificate expiry (on rollups), heartbeat tokens and pings

# What list and report show of a monitor's latest results (needs `m` = monitors and `pings`
# left-joined): the open incident's cause, the newest check's certificate expiry, and the last
# heartbeat signals.
_LATEST_RESULTS = """
(SELECT oi.cause FROM incidents oi WHERE oi.monitor_id = m.id AND oi.resolved_at_ms IS NULL) AS cause,
(SELECT rr.cert_expires_at_ms FROM rollups rr WHERE rr.monitor_id = m.id
  ORDER BY rr.hour_start_ms DESC LIMIT 1) AS cert_expires_at_ms,
pings.last_ping_ms, pings.last_ping_failed, pings.last_duration_ms, pings.started_at_ms
"""

PING_SIGNALS = ("ok", "fail", "start")


def heartbeat_pings(conn: sqlite3.Connection, monitor_ids: Sequence[int]) -> dict[int, Pings]:
    """The last signals of these monitors, in one query (the tick hands them to the heartbeat probe)."""
    return {
        int(row[0]): Pings(int(row[1]), row[2], bool(row[3]), row[4])
        for row in conn.execute(
            "SELECT m.id, m.created_at_ms, p.last_ping_ms, coalesce(p.last_ping_failed, 0), p.last_duration_ms "
            "FROM monitors m LEFT JOIN pings p ON p.monitor_id = m.id "
            "WHERE m.id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(monitor_ids)),),
        )
    }


def heartbeat_id(conn: sqlite3.Connection, ref: str) -> int:
    """A heartbeat monitor by id or name; StoreError when there is none or it is another kind."""
    found = monitor_id(conn, ref)
    if _one(conn, "SELECT token_sha256 IS NOT NULL FROM monitors WHERE id = ?", (found,)) != 1:
        raise StoreError(f"monitor {ref!r} is not a heartbeat (add one with: monitor-tick add heartbeat)")
    return found


def heartbeat_by_token(conn: sqlite3.Connection, token_sha256: bytes) -> int | None:
    """The heartbeat monitor whose token has this SHA-256 digest, if any."""
    found = _one(conn, "SELECT id FROM monitors WHERE token_sha256 = ?", (token_sha256,))
    return None if found is None else int(found)


_RECORD_START = """
INSERT INTO pings (monitor_id, started_at_ms) VALUES (:monitor_id, :at_ms)
ON CONFLICT (monitor_id) DO UPDATE SET started_at_ms = excluded.started_at_ms
"""
# A ping ends the run a start signal began: its duration is kept, the start is cleared.
_RECORD_PING = """
INSERT INTO pings (monitor_id, last_ping_ms, last_ping_failed) VALUES (:monitor_id, :at_ms, :failed)
ON CONFLICT (monitor_id) DO UPDATE SET
  last_ping_ms = excluded.last_ping_ms,
  last_ping_failed = excluded.last_ping_failed,
  last_duration_ms = CASE WHEN started_at_ms <= excluded.last_ping_ms
                          THEN excluded.last_ping_ms - started_at_ms END,
  started_at_ms = NULL
"""


def record_ping(conn: sqlite3.Connection, monitor: int, signal: str, at_ms: int) -> None:
    """Record one signal ('ok', 'fail' or 'start') of a heartbeat monitor at `at_ms`: one upsert.
    Raises sqlite3.Error (e.g. the monitor was removed a moment ago)."""
    if signal not in PING_SIGNALS:
        raise ValueError(f"unknown ping signal {signal!r}")
    sql = _RECORD_START if signal == "start" else _RECORD_PING
    with write_tx(conn):
        conn.execute(sql, {"monitor_id": monitor, "at_ms": at_ms, "failed": int(signal == "fail")})


# ---------------------------------------------------------------------------------------------
# Performance: probe order from history


def recent_rollups(conn: sqlite3.Connection, monitor_ids: Sequence[int]) -> dict[int, tuple[int, int | None, int]]:
    """monitor id -> (failures, latency_ms_max, last_check_ms) of its newest rollup hour, for
    the monitors that have one. One primary-key seek per monitor (the tick orders its probes by
    this)."""
    if not monitor_ids:
        return {}
    rows = conn.execute(
        "SELECT r.monitor_id, r.failures, r.latency_ms_max, r.last_check_ms FROM json_each(?) j "
        "JOIN rollups r ON r.monitor_id = j.value "
        "AND r.hour_start_ms = (SELECT max(hour_start_ms) FROM rollups WHERE monitor_id = j.value)",
        (json.dumps(list(monitor_ids)),),
    )
    return {int(monitor): (int(failures), latency, int(last)) for monitor, failures, latency, last in rows}
