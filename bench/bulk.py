"""Bulk loading for the benchmarks: many monitors and owners in one transaction each, with no
per-row checks beyond the schema's (large databases in seconds, not through `add`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from monitor_tick import store

_BULK_MONITOR_COLUMNS = (
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
    """Insert many monitors in one transaction; each row holds the values of _BULK_MONITOR_COLUMNS
    in that order. For loading large databases (bench/): no per-row checks beyond the schema's."""
    placeholders = ", ".join("?" for _ in _BULK_MONITOR_COLUMNS)
    with store.write_tx(conn):
        conn.executemany(
            f"INSERT INTO monitors ({', '.join(_BULK_MONITOR_COLUMNS)}) VALUES ({placeholders})",  # noqa: S608
            rows,
        )


def insert_owners(conn: sqlite3.Connection, rows: Iterable[tuple[int, str, int, int | None]]) -> None:
    """Insert many (id, name, plan_id, plan_expires_at_ms) owners in one transaction (bench/)."""
    with store.write_tx(conn):
        conn.executemany("INSERT INTO owners (id, name, plan_id, plan_expires_at_ms) VALUES (?, ?, ?, ?)", rows)
