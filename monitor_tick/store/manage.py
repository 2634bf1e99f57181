"""Management: plans, owners, monitors and maintenance windows as the commands add, find,
pause, remove and list them."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from monitor_tick.core.model import COMMON_SETTINGS, OPTIONS, AlertSettings, Monitor
from monitor_tick.store.db import SETTING_COLUMNS, StoreError, dicts, greatest, inserted_id, one, write_tx
from monitor_tick.store.due import FLOOR
from monitor_tick.store.reads import LATEST_RESULTS

if TYPE_CHECKING:
    from monitor_tick.store.db import Connection


def plan_id(conn: Connection, name: str) -> int:
    found = one(conn, "SELECT id FROM plans WHERE name = ?", (name,))
    if found is None:
        raise StoreError(f"no plan named {name!r}")
    return int(found)


def owner_id(conn: Connection, name: str) -> int:
    found = one(conn, "SELECT id FROM owners WHERE name = ?", (name,))
    if found is None:
        raise StoreError(f"no owner named {name!r}")
    return int(found)


def monitor_id(conn: Connection, ref: str) -> int:
    """A monitor by id or by name."""
    found = None
    if ref.isdecimal():  # what int() reads as a number (not "²"), as check_name's all-digit rule
        found = one(conn, "SELECT id FROM monitors WHERE id = ?", (int(ref),))
    if found is None:
        found = one(conn, "SELECT id FROM monitors WHERE name = ?", (ref,))
    if found is None:
        raise StoreError(f"no monitor {ref!r}")
    return int(found)


def add_plan(conn: Connection, name: str, min_interval_sec: int) -> int:
    with write_tx(conn):
        if one(conn, "SELECT id FROM plans WHERE name = ?", (name,)) is not None:
            raise StoreError(f"a plan named {name!r} exists")
        return inserted_id(
            conn.execute(
                "INSERT INTO plans (name, min_interval_sec) VALUES (?, ?) RETURNING id", (name, min_interval_sec)
            )
        )


def add_owner(conn: Connection, name: str, plan_name: str, plan_expires_at_ms: int | None) -> int:
    with write_tx(conn):
        if one(conn, "SELECT id FROM owners WHERE name = ?", (name,)) is not None:
            raise StoreError(f"an owner named {name!r} exists")
        return inserted_id(
            conn.execute(
                "INSERT INTO owners (name, plan_id, plan_expires_at_ms) VALUES (?, ?, ?) RETURNING id",
                (name, plan_id(conn, plan_name), plan_expires_at_ms),
            )
        )


_MONITOR_COLUMNS = (*COMMON_SETTINGS, *OPTIONS)  # Monitor fields stored under the same names


def add_monitor(
    conn: Connection,
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
            if one(conn, "SELECT id FROM monitors WHERE name = ?", (name,)) is None:
                break
            if name_given:
                raise StoreError(f"a monitor named {monitor.name!r} exists; choose another with --name")
            name = f"{monitor.name} ({n})"
        owner = owner_id(conn, owner_name) if owner_name else None
        return insert_monitor(conn, replace(monitor, name=name), owner, created_at_ms, alerts, token_sha256)


def insert_monitor(
    conn: Connection,
    monitor: Monitor,
    owner: int | None,
    created_at_ms: int,
    alerts: AlertSettings,
    token_sha256: bytes | None,
    *,
    enabled: bool = True,
) -> int:
    """The INSERT of a checked, named monitor, inside the caller's write transaction."""
    values = {column: getattr(monitor, column) for column in _MONITOR_COLUMNS}
    values["aligned"] = int(monitor.aligned)
    values.update(
        owner_id=owner,
        enabled=int(enabled),
        created_at_ms=created_at_ms,
        token_sha256=token_sha256,
        alert_after_checks=alerts.alert_after_checks,
        resolve_after_checks=alerts.resolve_after_checks,
        remind_every_sec=alerts.remind_every_sec,
    )
    # the column names are Monitor's own field names, never user input
    return inserted_id(
        conn.execute(
            f"INSERT INTO monitors ({', '.join(values)}) VALUES ({', '.join(':' + c for c in values)}) RETURNING id",
            values,
        )
    )


def set_paused(conn: Connection, ref: str, paused: bool) -> int:
    """Pause (enabled = 0) or resume (enabled = 1, auto-pause cleared) a monitor."""
    with write_tx(conn):
        found = monitor_id(conn, ref)
        if paused:
            conn.execute("UPDATE monitors SET enabled = 0 WHERE id = ?", (found,))
        else:
            conn.execute("UPDATE monitors SET enabled = 1, auto_paused = 0 WHERE id = ?", (found,))
    return found


def remove_monitor(conn: Connection, ref: str) -> int:
    with write_tx(conn):
        found = monitor_id(conn, ref)
        conn.execute("DELETE FROM monitors WHERE id = ?", (found,))
    return found


def scope(conn: Connection, monitor_ref: str | None, owner_name: str | None) -> tuple[int | None, int | None]:
    """(monitor id, owner id) of a row that covers one monitor or one owner's monitors."""
    monitor = monitor_id(conn, monitor_ref) if monitor_ref else None
    owner = owner_id(conn, owner_name) if owner_name else None
    return monitor, owner


def add_maintenance(
    conn: Connection, *, monitor_ref: str | None, owner_name: str | None, starts_at_ms: int, ends_at_ms: int
) -> int:
    with write_tx(conn):
        monitor, owner = scope(conn, monitor_ref, owner_name)
        return inserted_id(
            conn.execute(
                "INSERT INTO maintenance_windows (monitor_id, owner_id, starts_at_ms, ends_at_ms) "
                "VALUES (?, ?, ?, ?) RETURNING id",
                (monitor, owner, starts_at_ms, ends_at_ms),
            )
        )


def list_monitors(conn: Connection, now_ms: int) -> list[dict[str, Any]]:
    """Every monitor with its effective interval and current state at `now_ms`."""
    return dicts(
        conn,
        f"""
        WITH df(floor_sec) AS (SELECT min_interval_sec FROM plans WHERE id = 1)
        SELECT m.id, {SETTING_COLUMNS}, m.enabled, m.auto_paused, o.name AS owner, {LATEST_RESULTS},
               {greatest("m.interval_sec", FLOOR)} AS effective_interval_sec,
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
    )


def incidents_for(conn: Connection, monitor: int) -> list[tuple[int, int | None, str]]:
    """(started_at_ms, resolved_at_ms, cause) of one monitor's incidents, oldest first."""
    return [
        (int(a), None if b is None else int(b), str(c))
        for a, b, c in conn.execute(
            "SELECT started_at_ms, resolved_at_ms, cause FROM incidents WHERE monitor_id = ? "
            "ORDER BY started_at_ms, id",
            (monitor,),
        )
    ]
