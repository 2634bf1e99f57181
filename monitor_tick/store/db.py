"""What every part of the store shares: StoreError, the write transaction, and the helpers that
read rows and inserted ids. Nothing here imports sqlite3 or touches the file (store/sqlite.py
opens the database): `Connection` is the engine's DB-API connection, for type hints."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from monitor_tick.core.model import COMMON_SETTINGS, OPTIONS

if TYPE_CHECKING:
    from sqlite3 import Connection, Cursor

# A monitor's settings for `FROM monitors m`: every Monitor field is a column of the same name,
# so an option added to core/model.py is read by list, report and the status page without an edit.
SETTING_COLUMNS = ", ".join(f"m.{column}" for column in (*COMMON_SETTINGS, *OPTIONS))


class StoreError(Exception):
    """A database problem, with a message fit for one line on stderr."""


@contextmanager
def write_tx(conn: Connection) -> Iterator[None]:
    """One write transaction, taking the write lock up front (BEGIN IMMEDIATE): a deferred
    transaction that reads and then writes gets SQLITE_BUSY at once in WAL mode, ignoring the
    busy timeout. Rolls back on any error, so results are never half-written. Inside another
    write_tx it joins that one: `apply` makes many changes, all or none."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def one(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> Any:
    """The first column of the first row of `sql`; None when there is no row."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def dicts(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
    """Every row of `sql` as a dict keyed by column name (rows that stay inside the store and the
    commands; frozen dataclasses cross other borders)."""
    cursor = conn.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def inserted_id(cursor: Cursor) -> int:
    """The id of the row the INSERT that made `cursor` added."""
    return int(cursor.lastrowid or 0)


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
    held = " ".join(
        f", coalesce((SELECT max(id) FROM {t}), 0)" for t in (series, *(t for t, s in ID_SERIES.items() if s == series))
    )
    new = 1 + int(
        one(conn, f"SELECT max(coalesce((SELECT last_id FROM id_high_water WHERE table_name = ?), 0){held})", (series,))
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
IN_SCHEDULED_WINDOW = """(
    (s.days_mask >> ((:now_ms / 60000 / 1440 + 3) % 7)) & 1
      AND :now_ms / 60000 % 1440 >= s.start_minute
      AND :now_ms / 60000 % 1440 < s.start_minute + s.duration_min
    OR (s.days_mask >> ((:now_ms / 60000 / 1440 + 2) % 7)) & 1
      AND :now_ms / 60000 % 1440 + 1440 < s.start_minute + s.duration_min)"""
