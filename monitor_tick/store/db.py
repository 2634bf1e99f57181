"""What every part of the store shares: StoreError, the write transaction, the helpers that
read rows and inserted ids, and the seam between the engines. Nothing here imports an engine's
driver or touches the file (store/sqlite.py and store/postgres.py open the database).

Both engines run the same SQL text, written with SQLite's placeholders (`?`, `:name`); the
PostgreSQL connection turns them into psycopg's. Where the engines' syntax differs, a module
names the statement and the engine may replace it (`statement`): store/postgres.py holds those.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from monitor_tick.core.model import COMMON_SETTINGS, OPTIONS

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from sqlite3 import Connection, Cursor
    from typing import Any

# A monitor's settings for `FROM monitors m`: every Monitor field is a column of the same name,
# so an option added to core/model.py is read by list, report and the status page without an edit.
SETTING_COLUMNS = ", ".join(f"m.{column}" for column in (*COMMON_SETTINGS, *OPTIONS))


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(db: str) -> bool:
    """Whether --db names a PostgreSQL database (a URL) rather than a SQLite file."""
    return db.startswith(POSTGRES_SCHEMES)


class StoreError(Exception):
    """A database problem, with a message fit for one line on stderr."""


class OlderSchemaError(StoreError):
    """The database's schema is older than this program's, and the command that met it did not
    upgrade it (a dry run, any reader on PostgreSQL, or a read-only SQLite file)."""


class EngineError(StoreError):
    """An error the PostgreSQL engine met running a statement, already worded for one line (a
    SQLite statement raises sqlite3.Error, which callers word with describe_error)."""


class ConstraintError(EngineError):
    """A statement broke a constraint (e.g. a row it refers to was removed a moment ago)."""


@contextmanager
def write_tx(conn: Connection) -> Iterator[None]:
    """One write transaction, taking the write lock up front (the engine's begin_write: SQLite's
    BEGIN IMMEDIATE; see the engine modules). Rolls back on any error, so results are never
    half-written. Inside another write_tx it joins that one: `apply` makes many changes, all or
    none."""
    if conn.in_transaction:
        yield
        return
    conn.begin_write()  # type: ignore[attr-defined]
    try:
        yield
    except BaseException:
        conn.rollback_quietly()  # type: ignore[attr-defined]
        raise
    conn.execute("COMMIT")


def to_json(value: object, **options: Any) -> str:
    """json.dumps(value): the id arrays the SQL reads with json_each, and the like. json (its
    decoder, scanner and C speedups) is imported on first use, which an idle tick never makes."""
    import json

    return json.dumps(value, **options)


def from_json(text: str) -> Any:
    """json.loads(text), imported on first use as in to_json."""
    import json

    return json.loads(text)


def statement(conn: Connection, name: str, text: str) -> str:
    """`text`, or the engine's own text for the statement `name` where its syntax differs."""
    return conn.statements.get(name, text)  # type: ignore[attr-defined,no-any-return]


def greatest(a: str, b: str) -> str:
    """SQL for the larger of two non-NULL expressions, in a text both engines run (SQLite's
    scalar max(a, b) is GREATEST in PostgreSQL, where max() is only the aggregate)."""
    return f"(CASE WHEN ({a}) >= ({b}) THEN ({a}) ELSE ({b}) END)"


def least(a: str, b: str) -> str:
    """SQL for the smaller of two expressions (NULL when both are; see greatest)."""
    return f"(CASE WHEN ({a}) <= ({b}) THEN ({a}) ELSE ({b}) END)"


def one(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> Any:
    """The first column of the first row of `sql`; None when there is no row."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def dicts(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
    """Every row of `sql` as a dict keyed by column name (rows that stay inside the store and the
    commands; named tuples cross other borders)."""
    cursor = conn.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def inserted_id(cursor: Cursor) -> int:
    """The id of the row that an `INSERT ... RETURNING id` added."""
    return int(cursor.fetchone()[0])


def script_statements(script: str) -> Iterator[str]:
    """The statements of a schema script or migration step: each ends with `;` at the end of a
    line (none inside strings); comment lines are left out. Raises StoreError when the script
    ends inside a statement."""
    buffer: list[str] = []
    for line in script.splitlines():
        if line.lstrip().startswith("--"):
            continue
        buffer.append(line)
        if line.rstrip().endswith(";"):
            yield "\n".join(buffer).strip()
            buffer = []
    if "".join(buffer).strip():
        raise StoreError("a schema script ends inside a statement")


# Tables whose ids are never given twice (schema.sql's id_high_water); the names are ours,
# never user input.
NEVER_REUSED = ("monitors", "owners", "plans", "maintenance_windows", "channels")
# tables that draw their ids from another's mark: one-off and recurring maintenance windows share
# one series, so a window id names one window of either kind
ID_SERIES = {"maintenance_schedules": "maintenance_windows"}


def insert_row(conn: Connection, table: str, values: Mapping[str, Any]) -> int:
    """INSERT `values` (column -> value; the columns are ours, never user input) into `table`
    with a new id: one above both the largest id its series has ever handed out and the largest
    its tables hold, so that a deleted row's id never goes to another row. Call inside a write
    transaction."""
    series = ID_SERIES.get(table, table)
    assert series in NEVER_REUSED, table
    # the aggregate max over one column (scalar max() is SQLite's only), NULLs left out
    held = "".join(
        f" UNION ALL SELECT max(id) FROM {t}" for t in (series, *(t for t, s in ID_SERIES.items() if s == series))
    )
    new = 1 + int(
        one(
            conn,
            "SELECT coalesce(max(v), 0) FROM "
            f"(SELECT last_id AS v FROM id_high_water WHERE table_name = ?{held}) AS ids",
            (series,),
        )
    )
    conn.execute(
        "INSERT INTO id_high_water (table_name, last_id) VALUES (?, ?)"
        " ON CONFLICT (table_name) DO UPDATE SET last_id = excluded.last_id",
        (series, new),
    )
    columns = {"id": new, **values}
    conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})", columns)
    return new


# Whether the tick's time (:now_ms) is inside a recurring maintenance window `s`
# (maintenance_schedules): started today on one of its days, or yesterday and running past
# midnight. Day 0 of the epoch was a Thursday (weekday 3, Monday 0). schedule.in_scheduled_window
# is the same rule in Python.
# In a text both engines run: PostgreSQL shifts a BIGINT by an INTEGER only, and takes `& 1`
# as a number, not a truth value.
IN_SCHEDULED_WINDOW = """(
    ((s.days_mask >> CAST((:now_ms / 60000 / 1440 + 3) % 7 AS INTEGER)) & 1) = 1
      AND :now_ms / 60000 % 1440 >= s.start_minute
      AND :now_ms / 60000 % 1440 < s.start_minute + s.duration_min
    OR ((s.days_mask >> CAST((:now_ms / 60000 / 1440 + 2) % 7 AS INTEGER)) & 1) = 1
      AND :now_ms / 60000 % 1440 + 1440 < s.start_minute + s.duration_min)"""

# Whether monitor `m` is in maintenance at :now_ms: a one-off window or a recurring one that
# covers it or its owner (list and status reads; the due query filters with its own NOT EXISTS).
IN_MAINTENANCE = f"""(
    EXISTS (SELECT 1 FROM maintenance_windows w
             WHERE (w.monitor_id = m.id OR w.owner_id = m.owner_id)
               AND w.starts_at_ms <= :now_ms AND w.ends_at_ms > :now_ms)
    OR EXISTS (SELECT 1 FROM maintenance_schedules s
                WHERE (s.monitor_id = m.id OR s.owner_id = m.owner_id)
                  AND {IN_SCHEDULED_WINDOW}))"""
