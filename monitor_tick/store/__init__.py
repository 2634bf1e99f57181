"""The store: every SQL statement, one module per concern, and two engines.

    copy.py        `migrate`: every row of one database into a new one, either engine
    engine.py      which engine --db names (a postgresql:// URL, else a SQLite file); opens it
    sqlite.py      the SQLite engine: opening the file (checks, PRAGMAs, schema and
                   migrations/), read-only opens, backup and check, SQLite's errors in one
                   line; the only module that imports sqlite3 or touches the file
    postgres.py    the PostgreSQL engine (psycopg 3, an optional extra): only what differs --
                   connecting, schema_postgres.sql and its version, the write lock,
                   placeholders, the few statements whose syntax differs, errors in one line
    db.py          what the others share: StoreError, the write transaction, row helpers, the
                   seam between the engines (db.statement)
    ledger.py      the minute ledger (`ticks`): claims, catch-up, --force reruns
    due.py         due selection (SELECT_DUE, fetched as DUE_IDS) and the rollups that order the probes
    results.py     a tick's results: rollups, incident steps, the ledger's figures; housekeeping
    deliveries.py  incident events, channels, the deliveries outbox, settings
    manage.py      monitors (add, edit, list, pause, remove), and finding one by name
    accounts.py    plans, owners, maintenance windows (add, edit, list, remove)
    reads.py       report, status page, badges and metrics: reads only
    pings.py       heartbeat tokens and pings
    imports.py     monitors brought in from another tool, all in one transaction
    invalid.py     what the ticks found of monitors they could not probe, and who said so when
    config.py      the configuration as a whole (export, apply) and its `${VAR}` references

Both engines run synchronously (the standard library's sqlite3, psycopg): the database is
touched before the probes start and after they all finish, never while they run, so an idle
tick needs no event loop.
Every statement is parameterised. Every instant passed in is epoch ms, read once per tick by
the caller (SQLite's own clock never decides anything). Errors a user can cause or meet
(missing directory, foreign file, locked database, read-only file, newer schema) are raised as
StoreError with a one-line message.

The public API is what is imported below (callers write `store.open_db(...)`); the rest of each
module is its own.
"""

from __future__ import annotations

from monitor_tick.store import locations, locationsql, places
from monitor_tick.store.accounts import (
    add_maintenance,
    add_maintenance_schedule,
    add_owner,
    add_plan,
    edit_owner,
    edit_plan,
    list_maintenance,
    list_owners,
    list_plans,
    remove_maintenance,
    remove_owner,
    remove_plan,
)
from monitor_tick.store.db import ConstraintError, EngineError, StoreError, is_postgres_url, write_tx
from monitor_tick.store.deliveries import (
    CANARY_SETTING,
    DeliveryOutcome,
    add_channel,
    add_due_reminders,
    canary_setting,
    channel_urls,
    claim_deliveries,
    finish_deliveries,
    get_setting,
    has_delivery_work,
    list_channels,
    remove_channel,
    set_setting,
)
from monitor_tick.store.due import DUE_IDS, SELECT_DUE, due_ids, recent_rollups, select_due
from monitor_tick.store.engine import (
    EXTRA_HINT,
    backup,
    db_path_problem,
    file_only,
    integrity_problems,
    is_missing,
    open_db,
    open_read_only,
    read_db,
    set_busy_timeout,
)
from monitor_tick.store.invalid import record_invalid
from monitor_tick.store.ledger import (
    BUCKETS,
    Buckets,
    Claim,
    Rerun,
    claim_buckets,
    claim_minute,
    claim_minutes,
)
from monitor_tick.store.manage import (
    add_monitor,
    incidents_for,
    list_monitors,
    monitor_detail,
    monitor_id,
    monitor_row,
    next_checks,
    remove_monitor,
    set_paused,
    update_monitor,
)
from monitor_tick.store.pings import heartbeat_by_token, heartbeat_id, heartbeat_pings, record_ping
from monitor_tick.store.reads import (
    fleet_hosts,
    has_monitors,
    host_minutes,
    last_tick,
    recent_incidents,
    report,
    rollup_hours,
    rollups_by_day,
    status_monitors,
    tick_gaps,
    ticks_per_day,
)
from monitor_tick.store.results import (
    AUTO_PAUSE_DEFAULT_MS,
    RETENTION_DEFAULT_MS,
    AutoPaused,
    WriteSummary,
    housekeep,
    write_results,
)
from monitor_tick.store.sqlite import (
    DEFAULT_BUSY_TIMEOUT_S,
    SCHEMA_VERSION,
    WAL_LIMIT_BYTES,
    Connection,
    DatabaseError,
    describe_error,
    schema_sql,
)

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "locations",
    "locationsql",
    "places",
    "configuration",
    "env_ref",
    "set_env_ref",
    "set_token_digest",
    "StoreError",
    "EngineError",
    "ConstraintError",
    "is_postgres_url",
    "EXTRA_HINT",
    "file_only",
    "copy_database",
    "write_tx",
    "SCHEMA_VERSION",
    "DEFAULT_BUSY_TIMEOUT_S",
    "WAL_LIMIT_BYTES",
    "db_path_problem",
    "is_missing",
    "open_db",
    "open_read_only",
    "read_db",
    "set_busy_timeout",
    "backup",
    "integrity_problems",
    "describe_error",
    "schema_sql",
    "Connection",
    "DatabaseError",
    "Claim",
    "Rerun",
    "claim_minute",
    "claim_minutes",
    "BUCKETS",
    "Buckets",
    "claim_buckets",
    "SELECT_DUE",
    "DUE_IDS",
    "select_due",
    "due_ids",
    "recent_rollups",
    "AUTO_PAUSE_DEFAULT_MS",
    "RETENTION_DEFAULT_MS",
    "AutoPaused",
    "WriteSummary",
    "housekeep",
    "write_results",
    "CANARY_SETTING",
    "DeliveryOutcome",
    "add_channel",
    "add_due_reminders",
    "canary_setting",
    "channel_urls",
    "claim_deliveries",
    "finish_deliveries",
    "get_setting",
    "has_delivery_work",
    "list_channels",
    "remove_channel",
    "set_setting",
    "add_maintenance",
    "add_maintenance_schedule",
    "add_monitor",
    "add_owner",
    "add_plan",
    "incidents_for",
    "list_monitors",
    "next_checks",
    "monitor_id",
    "remove_monitor",
    "set_paused",
    "edit_owner",
    "edit_plan",
    "list_maintenance",
    "list_owners",
    "list_plans",
    "monitor_row",
    "monitor_detail",
    "remove_maintenance",
    "remove_owner",
    "remove_plan",
    "update_monitor",
    "host_minutes",
    "fleet_hosts",
    "has_monitors",
    "last_tick",
    "recent_incidents",
    "report",
    "rollup_hours",
    "rollups_by_day",
    "status_monitors",
    "tick_gaps",
    "ticks_per_day",
    "heartbeat_by_token",
    "heartbeat_id",
    "heartbeat_pings",
    "record_ping",
    "record_invalid",
    "ImportedMonitor",
    "existing_names",
    "import_monitors",
    "taken_tokens",
]


# What only `apply`/`export`, `migrate` and `import` use is imported when first asked for: most
# runs are idle ticks, and these modules (with hashlib) would cost each of them a few ms.
_DEFERRED = {
    "configuration": "config",
    "env_ref": "config",
    "set_env_ref": "config",
    "set_token_digest": "config",
    "copy_database": "copy",
    "ImportedMonitor": "imports",
    "existing_names": "imports",
    "import_monitors": "imports",
    "taken_tokens": "imports",
}


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _DEFERRED.values():  # the module itself (store.copy)
        return import_module(f"{__name__}.{name}")
    if name not in _DEFERRED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_DEFERRED[name]}"), name)
    globals()[name] = value
    return value
