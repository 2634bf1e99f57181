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
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from monitor_tick.clock import MS_PER_DAY, hour_start_ms
from monitor_tick.model import CheckResult, Monitor

SCHEMA_VERSION = 1
DEFAULT_BUSY_TIMEOUT_S = 10.0
_SQLITE_MAGIC = b"SQLite format 3\x00"


class StoreError(Exception):
    """A database problem, with a message fit for one line on stderr."""


def schema_sql() -> str:
    from importlib import resources  # only when a database is created: an idle tick skips it

    return resources.files("monitor_tick").joinpath("schema.sql").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Opening


def open_db(path: str, *, create: bool = True, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """Open (and on first use create, readable by its owner only) the database at `path`.

    Raises StoreError, having created or changed nothing, when the directory is missing, the
    file is not a monitor-tick database, or its schema is newer than this program.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise StoreError(f"database directory does not exist: {directory}")
    exists = os.path.exists(path)
    if exists:
        _check_header(path)
    elif not create:
        raise StoreError(f"no database at {path}")
    else:
        _create_private_file(path)
    try:
        conn = sqlite3.connect(
            f"file:{_uri_path(path)}?mode=rw",
            uri=True,
            timeout=busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open database {path}: {exc}") from None
    try:
        _configure(conn, busy_timeout_s)
        _ensure_schema(conn, path)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(describe_error(exc, path)) from None
    except StoreError:
        conn.close()
        raise
    return conn


def _uri_path(path: str) -> str:
    return os.path.abspath(path).replace("?", "%3f").replace("#", "%23")


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


def _ensure_schema(conn: sqlite3.Connection, path: str) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"database {path} has schema version {version}, newer than this monitor-tick "
            f"understands ({SCHEMA_VERSION}); upgrade monitor-tick"
        )
    if version != 0:
        raise StoreError(f"database {path} has unknown schema version {version}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:  # another process initialised it while we waited
            conn.execute("COMMIT")
            return
        tables = conn.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").fetchone()[0]
        if tables:
            raise StoreError(f"{path} is a SQLite database but not a monitor-tick one")
        for statement in _statements(schema_sql()):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("PRAGMA journal_mode = WAL")


def _statements(script: str) -> Iterator[str]:
    """Split schema.sql into statements (it has no semicolons inside strings or triggers)."""
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
        raise StoreError("schema.sql ends inside a statement")


def describe_error(exc: sqlite3.Error, path: str) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"database {path} is locked by another process (gave up waiting)"
    if "readonly" in text or "read-only" in text:
        return f"database {path} is read-only"
    if "not a database" in text:
        return f"not a SQLite database: {path}"
    if "disk I/O" in text:
        return f"disk I/O error on database {path}"
    return f"database error on {path}: {text}"


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
    with write_tx(conn):
        if force:
            conn.execute(
                "INSERT INTO ticks (minute, started_at_ms) VALUES (?, ?) "
                "ON CONFLICT (minute) DO UPDATE SET started_at_ms = excluded.started_at_ms, "
                "finished_at_ms = NULL, covered_by = NULL, missed = 0",
                (minute, started_at_ms),
            )
            return True
        cursor = conn.execute(
            "INSERT INTO ticks (minute, started_at_ms) VALUES (?, ?) ON CONFLICT (minute) DO NOTHING",
            (minute, started_at_ms),
        )
        return cursor.rowcount == 1


# The floor (seconds) in force for owner `o` joined to plan `p`, given the default plan's floor
# `df`: the default plan's once the owner's plan has expired at the tick's time.
_FLOOR = (
    "CASE WHEN p.id IS NULL OR (o.plan_expires_at_ms IS NOT NULL AND o.plan_expires_at_ms <= :now_ms)"
    " THEN df.floor_sec ELSE p.min_interval_sec END"
)
_PHASE_INDEXED = "(CASE WHEN aligned = 1 THEN 0 ELSE id % (interval_sec / 60) END)"

# Plan floors up to this (seconds) are served by walking the short intervals (b1 below), larger
# ones through their owners (b2).
_SMALL_FLOOR_SEC = 900

# One query. Candidates come from indexes, so the cost follows the rows that are due, not the
# table (CROSS JOIN fixes the join order, MATERIALIZED keeps the CTEs from being inlined into a
# scan): (a) for each distinct interval (a loose index scan over monitors_due) the monitors whose
# indexed phase equals minute % n; (b) monitors whose owner's floor may be above their own
# interval: (b1) for floors up to _SMALL_FLOOR_SEC every monitor below the largest such floor (an
# index range: the 1-14 minute monitors, most of them due anyway), (b2) for larger floors through
# the owners on them (the owners are read only when such a plan exists). Extra candidates cost
# little: the final WHERE is the authoritative rule of schedule.py.
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
  ),
  due AS (
    SELECT m.*, max(m.interval_sec, {_FLOOR}) AS effective_interval_sec
      FROM candidates c
      CROSS JOIN monitors m ON m.id = c.id
      LEFT JOIN owners o ON o.id = m.owner_id
      LEFT JOIN plans p ON p.id = o.plan_id
      CROSS JOIN df
  )
SELECT * FROM due
 WHERE :minute % (effective_interval_sec / 60)
       = CASE WHEN aligned = 1 THEN 0 ELSE id % (effective_interval_sec / 60) END
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


_UPSERT_ROLLUP = """
INSERT INTO rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum,
                     latency_ms_min, latency_ms_max, last_check_ms)
VALUES (:monitor_id, :hour_start_ms, 1, :failures, :latency_ms, :latency_min, :latency_max, :at_ms)
ON CONFLICT (monitor_id, hour_start_ms) DO UPDATE SET
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
) -> WriteSummary:
    """Write one tick's results in one transaction: a rollup upsert per decided check, an
    incident opened or resolved per transition, and the tick's row(s) in the ledger.

    A result is stale when a newer check of the same monitor is already counted (a later tick
    that overlapped this one committed first): it is counted in the rollup but changes no
    incident, so state never flips backwards. Raises sqlite3.Error; nothing is written then.
    """
    from monitor_tick.incidents import Transition, transition

    up = down = unknown = stale = 0
    opened: list[int] = []
    resolved: list[int] = []
    hour_ms = hour_start_ms(at_ms)
    with write_tx(conn):
        open_by_monitor = dict(
            conn.execute("SELECT monitor_id, id FROM incidents WHERE resolved_at_ms IS NULL").fetchall()
        )
        results = list(results)
        # a monitor removed while the tick probed: its result has nowhere to go
        existing = {
            row[0]
            for row in conn.execute(
                "SELECT id FROM monitors WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([r.monitor_id for r in results]),),
            )
        }
        for result in results:
            if result.monitor_id not in existing:
                continue
            if result.status == "unknown":
                unknown += 1
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
                },
            ).fetchone()
            if last_check_ms > at_ms:
                stale += 1
                continue
            change = transition(result.monitor_id in open_by_monitor, is_up)
            if change is Transition.OPEN:
                conn.execute(
                    "INSERT INTO incidents (monitor_id, started_at_ms, cause, http_status) VALUES (?, ?, ?, ?)",
                    (result.monitor_id, at_ms, result.cause or "down", result.http_status),
                )
                opened.append(result.monitor_id)
            elif change is Transition.RESOLVE:
                conn.execute(
                    "UPDATE incidents SET resolved_at_ms = ? WHERE id = ? AND resolved_at_ms IS NULL",
                    (at_ms, open_by_monitor[result.monitor_id]),
                )
                resolved.append(result.monitor_id)
        for minute in minutes:
            conn.execute(
                "UPDATE ticks SET finished_at_ms = :finished, due = :due, up = :up, down = :down, "
                "unknown = :unknown, opened = :opened, resolved = :resolved WHERE minute = :minute",
                {
                    "finished": finished_at_ms,
                    "due": up + down + unknown,
                    "up": up,
                    "down": down,
                    "unknown": unknown,
                    "opened": len(opened),
                    "resolved": len(resolved),
                    "minute": minute,
                },
            )
    return WriteSummary(up, down, unknown, opened, resolved, stale)


def housekeep(conn: sqlite3.Connection, now_ms: int, *, auto_pause_after_ms: int, retention_ms: int) -> tuple[int, int]:
    """Auto-pause monitors down continuously for longer than `auto_pause_after_ms` and delete
    rollups whose hour ended before the retention period. Returns (paused, rollups deleted)."""
    with write_tx(conn):
        paused = conn.execute(
            "UPDATE monitors SET auto_paused = 1 WHERE auto_paused = 0 AND id IN "
            "(SELECT monitor_id FROM incidents WHERE resolved_at_ms IS NULL AND started_at_ms < ?)",
            (now_ms - auto_pause_after_ms,),
        ).rowcount
        deleted = conn.execute(
            "DELETE FROM rollups WHERE hour_start_ms < ?", (hour_start_ms(now_ms - retention_ms),)
        ).rowcount
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


def add_monitor(conn: sqlite3.Connection, monitor: Monitor, owner_name: str | None, created_at_ms: int) -> int:
    with write_tx(conn):
        if _one(conn, "SELECT id FROM monitors WHERE name = ?", (monitor.name,)) is not None:
            raise StoreError(f"a monitor named {monitor.name!r} exists; choose another with --name")
        owner = owner_id(conn, owner_name) if owner_name else None
        return int(
            conn.execute(
                "INSERT INTO monitors (owner_id, name, kind, url, interval_sec, aligned, method, "
                "expect_status, keyword, timeout_s, retries, created_at_ms) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    owner,
                    monitor.name,
                    monitor.kind,
                    monitor.url,
                    monitor.interval_sec,
                    int(monitor.aligned),
                    monitor.method,
                    monitor.expect_status,
                    monitor.keyword,
                    monitor.timeout_s,
                    monitor.retries,
                    created_at_ms,
                ),
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


def add_maintenance(
    conn: sqlite3.Connection, *, monitor_ref: str | None, owner_name: str | None, starts_at_ms: int, ends_at_ms: int
) -> int:
    with write_tx(conn):
        monitor = monitor_id(conn, monitor_ref) if monitor_ref else None
        owner = owner_id(conn, owner_name) if owner_name else None
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
                   m.keyword, m.timeout_s, m.retries, m.enabled, m.auto_paused, o.name AS owner,
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
             CROSS JOIN df
             ORDER BY m.id
            """,
            {"now_ms": now_ms},
        ).fetchall()
    finally:
        conn.row_factory = None
    return [dict(row) for row in rows]


def report(conn: sqlite3.Connection, since_ms: int) -> list[dict[str, Any]]:
    """Per monitor totals over the rollup hours that start at or after the hour of `since_ms`."""
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            """
            SELECT m.id, m.name, m.url,
                   coalesce(sum(r.checks), 0) AS checks,
                   coalesce(sum(r.failures), 0) AS failures,
                   sum(r.latency_ms_sum) AS latency_ms_sum,
                   EXISTS (SELECT 1 FROM incidents i
                            WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL) AS open_incident
              FROM monitors m
              LEFT JOIN rollups r ON r.monitor_id = m.id AND r.hour_start_ms >= :since_hour_ms
             GROUP BY m.id
             ORDER BY m.id
            """,
            {"since_hour_ms": hour_start_ms(since_ms)},
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
# Performance: probe order from history; bulk loading (bench/)


def recent_rollups(conn: sqlite3.Connection, monitor_ids: Sequence[int]) -> dict[int, tuple[int, int | None]]:
    """monitor id -> (failures, latency_ms_max) of its newest rollup hour, for the monitors
    that have one. One primary-key seek per monitor (the tick orders its probes by this)."""
    if not monitor_ids:
        return {}
    rows = conn.execute(
        "SELECT r.monitor_id, r.failures, r.latency_ms_max FROM json_each(?) j "
        "JOIN rollups r ON r.monitor_id = j.value "
        "AND r.hour_start_ms = (SELECT max(hour_start_ms) FROM rollups WHERE monitor_id = j.value)",
        (json.dumps(list(monitor_ids)),),
    )
    return {int(monitor): (int(failures), latency) for monitor, failures, latency in rows}


_MONITOR_COLUMNS = (
    "id",
    "owner_id",
    "name",
    "kind",
    "url",
    "interval_sec",
    "aligned",
    "method",
    "expect_status",
    "keyword",
    "timeout_s",
    "retries",
    "enabled",
    "auto_paused",
    "created_at_ms",
)


def insert_monitors(conn: sqlite3.Connection, rows: Iterable[Sequence[Any]]) -> None:
    """Insert many monitors in one transaction; each row holds the values of _MONITOR_COLUMNS
    in that order. For loading large databases (bench/): no per-row checks beyond the schema's."""
    placeholders = ", ".join("?" for _ in _MONITOR_COLUMNS)
    with write_tx(conn):
        conn.executemany(
            f"INSERT INTO monitors ({', '.join(_MONITOR_COLUMNS)}) VALUES ({placeholders})",  # noqa: S608
            rows,
        )


def insert_owners(conn: sqlite3.Connection, rows: Iterable[tuple[int, str, int, int | None]]) -> None:
    """Insert many (id, name, plan_id, plan_expires_at_ms) owners in one transaction (bench/)."""
    with write_tx(conn):
        conn.executemany("INSERT INTO owners (id, name, plan_id, plan_expires_at_ms) VALUES (?, ?, ?, ?)", rows)
