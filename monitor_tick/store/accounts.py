"""Accounts: plans, owners and maintenance windows as the commands add, edit, remove and list
them (finding one by name, and the monitors themselves: manage.py). Ids are never given twice
(db.insert_row). Names are stored in NFC (model.normal_name): 'café' typed either way is one
name."""

from __future__ import annotations

from monitor_tick.core.model import normal_name
from monitor_tick.store.db import (
    IN_SCHEDULED_WINDOW,
    StoreError,
    dicts,
    insert_row,
    one,
    write_tx,
)
from monitor_tick.store.manage import owner_id, plan_id, scope

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

    from monitor_tick.store.db import Connection


def add_plan(conn: Connection, name: str, min_interval_sec: int) -> int:
    name = normal_name(name)
    with write_tx(conn):
        if one(conn, "SELECT id FROM plans WHERE name = ?", (name,)) is not None:
            raise StoreError(f"a plan named {name!r} exists")
        return insert_row(conn, "plans", {"name": name, "min_interval_sec": min_interval_sec})


def add_owner(conn: Connection, name: str, plan_name: str, plan_expires_at_ms: int | None) -> int:
    name = normal_name(name)
    with write_tx(conn):
        if one(conn, "SELECT id FROM owners WHERE name = ?", (name,)) is not None:
            raise StoreError(f"an owner named {name!r} exists")
        return insert_row(
            conn,
            "owners",
            {"name": name, "plan_id": plan_id(conn, plan_name), "plan_expires_at_ms": plan_expires_at_ms},
        )


def add_maintenance(
    conn: Connection, *, monitor_ref: str | None, owner_name: str | None, starts_at_ms: int, ends_at_ms: int
) -> int:
    with write_tx(conn):
        monitor, owner = scope(conn, monitor_ref, owner_name)
        return insert_row(
            conn,
            "maintenance_windows",
            {"monitor_id": monitor, "owner_id": owner, "starts_at_ms": starts_at_ms, "ends_at_ms": ends_at_ms},
        )


def list_plans(conn: Connection) -> list[dict[str, Any]]:
    """Every plan with its floor and how many owners are on it; plan 1 is the default."""
    return dicts(
        conn,
        "SELECT p.id, p.name, p.min_interval_sec, p.id = 1 AS is_default,"
        " (SELECT count(*) FROM owners o WHERE o.plan_id = p.id) AS owners FROM plans p ORDER BY p.id",
    )


def edit_plan(conn: Connection, name: str, *, min_interval_sec: int) -> int:
    """Set a plan's floor (the default plan's too, which applies to monitors without an owner
    and to owners whose plan expired); returns the old floor. Applies from the next tick on:
    the floor is read live, stored intervals are never rewritten."""
    with write_tx(conn):
        found = plan_id(conn, name)
        old = int(one(conn, "SELECT min_interval_sec FROM plans WHERE id = ?", (found,)))
        conn.execute("UPDATE plans SET min_interval_sec = ? WHERE id = ?", (min_interval_sec, found))
    return old


def remove_plan(conn: Connection, name: str) -> int:
    """Delete a plan no owner is on; the default plan stays. Returns its id."""
    with write_tx(conn):
        found = plan_id(conn, name)
        if found == 1:
            raise StoreError("the default plan cannot be removed (change its floor with `plan edit default`)")
        owners = [str(n) for (n,) in conn.execute("SELECT name FROM owners WHERE plan_id = ? ORDER BY id", (found,))]
        if owners:
            raise StoreError(
                f"plan {name!r} has owners ({', '.join(owners)}); move them first with `owner edit NAME --plan`"
            )
        conn.execute("DELETE FROM plans WHERE id = ?", (found,))
    return found


def list_owners(conn: Connection) -> list[dict[str, Any]]:
    """Every owner with their plan, its expiry, the default plan's floor in force after it, and
    how many monitors they own."""
    return dicts(
        conn,
        "SELECT o.id, o.name, p.name AS plan, p.min_interval_sec, o.plan_expires_at_ms,"
        " (SELECT count(*) FROM monitors m WHERE m.owner_id = o.id) AS monitors"
        " FROM owners o LEFT JOIN plans p ON p.id = o.plan_id ORDER BY o.id",
    )


def edit_owner(
    conn: Connection, name: str, *, plan_name: str | None = None, expires_at_ms: int | None = None, clear_expiry: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Change an owner's plan and/or its expiry (`clear_expiry`: never expires); returns the
    owner's (plan, plan_expires_at_ms) before and after. The floor applies from the next tick."""
    with write_tx(conn):
        found = owner_id(conn, name)
        query = (
            "SELECT p.name AS plan, o.plan_expires_at_ms FROM owners o LEFT JOIN plans p ON p.id = o.plan_id"
            " WHERE o.id = ?"
        )
        before = dicts(conn, query, (found,))[0]
        if plan_name is not None:
            conn.execute("UPDATE owners SET plan_id = ? WHERE id = ?", (plan_id(conn, plan_name), found))
        if expires_at_ms is not None or clear_expiry:
            conn.execute("UPDATE owners SET plan_expires_at_ms = ? WHERE id = ?", (expires_at_ms, found))
        after = dicts(conn, query, (found,))[0]
    return before, after


def remove_owner(conn: Connection, name: str) -> dict[str, Any]:
    """Delete an owner: their monitors stay, without an owner (the default plan applies), and
    their maintenance windows and channels go. Returns the owner's id and those counts."""
    with write_tx(conn):
        found = owner_id(conn, name)
        removed = dicts(
            conn,
            "SELECT :id AS id,"
            " (SELECT count(*) FROM monitors WHERE owner_id = :id) AS monitors,"
            " (SELECT count(*) FROM maintenance_windows WHERE owner_id = :id)"
            " + (SELECT count(*) FROM maintenance_schedules WHERE owner_id = :id) AS windows,"
            " (SELECT count(*) FROM channels WHERE owner_id = :id) AS channels",
            {"id": found},
        )[0]
        conn.execute("DELETE FROM owners WHERE id = ?", (found,))
    return removed


def add_maintenance_schedule(
    conn: Connection,
    *,
    monitor_ref: str | None,
    owner_name: str | None,
    start_minute: int,
    duration_min: int,
    days_mask: int,
) -> int:
    """A recurring window: `duration_min` minutes from `start_minute` after 00:00 UTC on the
    weekdays of `days_mask` (bit 0 Monday); its id is drawn with the one-off windows'."""
    with write_tx(conn):
        monitor, owner = scope(conn, monitor_ref, owner_name)
        return insert_row(
            conn,
            "maintenance_schedules",
            {
                "monitor_id": monitor,
                "owner_id": owner,
                "start_minute": start_minute,
                "duration_min": duration_min,
                "days_mask": days_mask,
            },
        )


def list_maintenance(conn: Connection, now_ms: int) -> list[dict[str, Any]]:
    """Maintenance windows not over at `now_ms` (active and upcoming), soonest first, with the
    monitor or owner each covers and whether it is active; then the recurring ones (their
    start_minute, duration_min and days_mask set; starts_at_ms and ends_at_ms NULL)."""
    return dicts(
        conn,
        "SELECT w.id, m.name AS monitor, o.name AS owner, w.starts_at_ms, w.ends_at_ms,"
        " w.starts_at_ms <= :now_ms AS active, NULL AS start_minute, NULL AS duration_min, NULL AS days_mask"
        " FROM maintenance_windows w LEFT JOIN monitors m ON m.id = w.monitor_id"
        " LEFT JOIN owners o ON o.id = w.owner_id"
        " WHERE w.ends_at_ms > :now_ms ORDER BY w.starts_at_ms, w.id",
        {"now_ms": now_ms},
    ) + dicts(
        conn,
        f"SELECT s.id, m.name AS monitor, o.name AS owner, NULL AS starts_at_ms, NULL AS ends_at_ms,"
        f" {IN_SCHEDULED_WINDOW} AS active, s.start_minute, s.duration_min, s.days_mask"
        " FROM maintenance_schedules s LEFT JOIN monitors m ON m.id = s.monitor_id"
        " LEFT JOIN owners o ON o.id = s.owner_id ORDER BY s.id",
        {"now_ms": now_ms},
    )


def remove_maintenance(conn: Connection, window: int) -> dict[str, Any]:
    """Delete a maintenance window, one-off (past, active or upcoming) or recurring; returns its
    row with the monitor or owner it covered."""
    with write_tx(conn):
        for table in ("maintenance_windows", "maintenance_schedules"):  # ids are unique across both
            rows = dicts(
                conn,
                f"SELECT w.*, m.name AS monitor, o.name AS owner FROM {table} w"
                " LEFT JOIN monitors m ON m.id = w.monitor_id LEFT JOIN owners o ON o.id = w.owner_id WHERE w.id = ?",
                (window,),
            )
            if rows:
                conn.execute(f"DELETE FROM {table} WHERE id = ?", (window,))
                return rows[0]
    raise StoreError(f"no maintenance window {window}")
