"""What every part of the store shares: StoreError, the write transaction, and small helpers
for reading rows. Nothing here opens a file or speaks SQLite's PRAGMAs (store/sqlite.py does)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


class StoreError(Exception):
    """A database problem, with a message fit for one line on stderr."""


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


def _one(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> Any:
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def _dicts(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(sql, params).fetchall()
    finally:
        conn.row_factory = None
    return [dict(row) for row in rows]
