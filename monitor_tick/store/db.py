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
    busy timeout. Rolls back on any error, so results are never half-written."""
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
