"""`migrate`: copy one database into a new one, either engine to either engine (a SQLite file to
PostgreSQL and back), every row with its id.

The source is read in one read transaction (one consistent snapshot while ticks go on
committing to it); the destination is written in one write transaction, checked for the same
row counts before it commits, so a failed copy leaves it as empty as it was (a SQLite file it
created is removed again: a command that fails leaves no file behind). A PostgreSQL
destination is then vacuumed and analyzed (VACUUM, ANALYZE), so its planner has the visibility
map and the statistics at once."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

from monitor_tick.store import engine
from monitor_tick.store.db import StoreError, is_postgres_url, one, write_tx

# Every table, parents before the rows that refer to them
TABLES = (
    "plans",
    "owners",
    "monitors",
    "maintenance_windows",
    "maintenance_schedules",
    "id_high_water",
    "env_refs",
    "rollups",
    "incidents",
    "ticks",
    "channels",
    "incident_events",
    "deliveries",
    "settings",
    "pings",
    "invalid_monitors",
    "invalid_reports",
    "fleet_hosts",
    "location_rollups",
)
# Tables whose `id` a new row takes from the engine (PostgreSQL's identity sequences are set past
# the copied ids; SQLite takes max(id) + 1 by itself)
_WITH_IDS = (
    "plans",
    "owners",
    "monitors",
    "maintenance_windows",
    "maintenance_schedules",
    "incidents",
    "channels",
    "incident_events",
)
_BATCH_ROWS = 1000


def copy_database(source: str, destination: str, *, after_table: Callable[[str], None] | None = None) -> dict[str, int]:
    """Copy every row of the database `source` into `destination` (created with the schema if
    need be), ids included; returns table -> rows copied. `after_table(name)` is called once each
    table is read (tests use it to write to the source meanwhile). Raises StoreError when the
    destination holds anything but a new database's default plan, when the two are one database,
    or when the counts differ at the end; nothing is written then, and a SQLite file made for
    the copy is removed."""
    if source == destination:
        raise StoreError("migrate: the source and the destination are the same database")
    reader = engine.open_read_only(source)
    try:
        new_file = not is_postgres_url(destination) and not os.path.exists(destination)
        try:
            writer = engine.open_db(destination)
            try:
                counts = _copy(reader, writer, after_table)
                _vacuum_and_analyze(writer)
                return counts
            finally:
                writer.close()
        except BaseException:
            if new_file:
                _remove_sqlite_file(destination)
            raise
    finally:
        reader.close()


def _remove_sqlite_file(path: str) -> None:
    """Remove a SQLite database file with its journals (those that are there)."""
    for name in (path, f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def _copy(reader: Any, writer: Any, after_table: Callable[[str], None] | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    # one read transaction over every table: the snapshot (SQLite: a WAL read transaction;
    # PostgreSQL: REPEATABLE READ)
    reader.execute(reader.statements.get("begin_snapshot", "BEGIN"))
    try:
        with write_tx(writer):
            durable = writer.statements.get("durable_commit")
            if durable is not None:
                writer.execute(durable)
            _refuse_non_empty(writer)
            if writer.engine == "sqlite" and _several_locations(reader):
                raise StoreError(
                    "migrate: the source checks monitors from several locations; a SQLite file has one host, "
                    "so one location (keep PostgreSQL, or give those monitors one location first)"
                )
            writer.execute("DELETE FROM plans")  # a new database's default plan: the source's replaces it
            for table in TABLES:
                counts[table] = _copy_table(reader, writer, table)
                if after_table is not None:
                    after_table(table)
            for table in TABLES:
                written = one(writer, f"SELECT count(*) FROM {table}", ())
                if written != counts[table]:
                    raise StoreError(f"migrate: {table} has {written} rows in the copy, {counts[table]} in the source")
            for table in _WITH_IDS:
                _set_next_id(writer, table)
    finally:
        reader.execute("COMMIT")
    return counts


def _vacuum_and_analyze(writer: Any) -> None:
    # PostgreSQL's planner needs the tables' statistics, and its index-only scans the visibility
    # map, for the due query's plan at scale (bench/postgres.py): without them the copy would
    # wait for autovacuum's first rounds. VACUUM comes first: it marks a page all-visible only
    # once the commits of its rows are flushed, and ANALYZE's own commit, were it asynchronous
    # (synchronous_commit = off), would hold back the copy's too (the commit log keeps one flush
    # position for a group of transactions). SQLite gets neither: its due query fixes its own
    # plan (CROSS JOIN, INDEXED BY), which the tests assert on a database without statistics;
    # sqlite_stat1 could only move it.
    for name in ("vacuum_copy", "analyze_copy"):
        statement = writer.statements.get(name)
        if statement is not None:
            writer.execute(statement)


def _several_locations(reader: Any) -> bool:
    """Whether the source's hosts tick from several locations, or a monitor names several."""
    places = one(reader, "SELECT count(DISTINCT location) FROM fleet_hosts", ())
    return bool(places > 1 or one(reader, "SELECT count(*) FROM monitors WHERE locations LIKE ?", ("%,%",)))


def _refuse_non_empty(writer: Any) -> None:
    for table in TABLES:
        rows = one(writer, f"SELECT count(*) FROM {table}", ())
        default_plan_only = table == "plans" and rows == 1 and one(writer, "SELECT id FROM plans", ()) == 1
        if rows and not default_plan_only:
            raise StoreError(
                f"migrate: the destination is not empty ({table} has {rows} rows); copy into a new database"
            )


def _copy_table(reader: Any, writer: Any, table: str) -> int:
    # the table names are ours (TABLES), never input
    cursor = reader.execute(f"SELECT * FROM {table}")
    columns = [column[0] for column in cursor.description]
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    copied = 0
    while rows := cursor.fetchmany(_BATCH_ROWS):
        writer.executemany(insert, [tuple(row) for row in rows])
        copied += len(rows)
    return copied


def _set_next_id(writer: Any, table: str) -> None:
    statement = writer.statements.get("set_next_id")
    if statement is not None:
        writer.execute(statement.format(table=table))
