"""Which engine --db names: a postgresql:// URL is PostgreSQL (store/postgres.py, imported only
then: the SQLite path never imports psycopg), anything else a SQLite file (store/sqlite.py).
The commands open databases through here."""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType

from monitor_tick.store import sqlite
from monitor_tick.store.db import StoreError, is_postgres_url

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _T = TypeVar("_T")

EXTRA_HINT = "PostgreSQL needs psycopg: pip install 'monitor-tick[postgres]'"


def _postgres() -> ModuleType:
    try:
        from monitor_tick.store import postgres  # lazy: psycopg only for a postgresql:// --db
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "psycopg":
            raise StoreError(EXTRA_HINT) from None
        raise
    return postgres


def db_path_problem(db: str) -> str | None:
    """Why `db` names no database, in a few words; None when it does (a file path or a URL)."""
    return None if is_postgres_url(db) else sqlite.db_path_problem(db)


def is_missing(db: str) -> bool:
    """Whether `db` is a SQLite file that does not exist yet: the first command that writes makes
    it. A PostgreSQL URL names a database on its server, which a command never creates."""
    return not is_postgres_url(db) and not os.path.exists(db)


def open_db(db: str, **options: Any) -> Any:
    """The engine's open_db (see sqlite.open_db, postgres.open_db). Raises StoreError.
    `idle_in_transaction_s` is PostgreSQL's alone (postgres.open_db): SQLite's one writer is
    this process."""
    if is_postgres_url(db):
        return _postgres().open_db(db, **options)
    options.pop("idle_in_transaction_s", None)
    return sqlite.open_db(db, **options)


def open_read_only(db: str, **options: Any) -> Any:
    if is_postgres_url(db):
        return _postgres().open_read_only(db)
    return sqlite.open_read_only(db, **options)


def read_db(db: str, read: Callable[[Any], _T], *, upgrade: bool = False) -> _T:
    """`read(conn)` on the database opened read-only. `upgrade` (the commands that only read,
    but for dry runs): a SQLite file of an older schema is upgraded first where this process
    may write it (sqlite.read_db). Never a PostgreSQL database: its hosts upgrade it with their
    ticks, and a reader from a newer install (a laptop's `list`) would stop every host still on
    the older program. Raises StoreError (OlderSchemaError for an older schema not upgraded)."""
    if is_postgres_url(db):
        return _postgres().read_db(db, read)  # type: ignore[no-any-return]
    return sqlite.read_db(db, read, upgrade=upgrade)


def set_busy_timeout(conn: Any, busy_timeout_s: float) -> None:
    """From now on, a write on `conn` waits at most `busy_timeout_s` (>= 0) for another writer's
    lock (SQLite's busy timeout, PostgreSQL's lock_timeout)."""
    (_postgres() if conn.engine == "postgresql" else sqlite).set_busy_timeout(conn, busy_timeout_s)


def file_only(command: str, db: str, instead: str) -> None:
    """Raise StoreError when `command`, which works on a SQLite file, is given a PostgreSQL URL;
    the message says what to use `instead`."""
    if is_postgres_url(db):
        raise StoreError(f"{command} is for SQLite files; for PostgreSQL {instead}")


def backup(db: str, out_path: str) -> None:
    file_only("backup", db, "use pg_dump (pg_dump -Fc DBNAME > FILE; pg_restore restores it)")
    sqlite.backup(db, out_path)


def integrity_problems(db: str) -> list[str]:
    file_only("check", db, "use pg_dump, which reads every row (pg_dump DBNAME > /dev/null), or pg_amcheck")
    return sqlite.integrity_problems(db)
