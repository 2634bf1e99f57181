"""The configuration as a whole, for `export` and `apply`: everything the commands set (plans,
owners, monitors, maintenance windows not yet over, channels, the network canary), read in one
go, and the `${VAR}` references an applied file stood for (env_refs)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from monitor_tick.store.db import dicts, write_tx
from monitor_tick.store.deliveries import CANARY_SETTING

if TYPE_CHECKING:
    from monitor_tick.store.db import Connection


def configuration(conn: Connection, now_ms: int) -> dict[str, Any]:
    """Every plan, owner, monitor (every column, its owner's name, its token's digest), the
    maintenance windows not over at `now_ms` and the recurring ones, the channels, and the
    canary, in id order."""
    return {
        "plans": dicts(conn, "SELECT id, name, min_interval_sec FROM plans ORDER BY id"),
        "owners": dicts(
            conn,
            "SELECT o.id, o.name, p.name AS plan, o.plan_expires_at_ms"
            " FROM owners o LEFT JOIN plans p ON p.id = o.plan_id ORDER BY o.id",
        ),
        "monitors": dicts(
            conn, "SELECT m.*, o.name AS owner FROM monitors m LEFT JOIN owners o ON o.id = m.owner_id ORDER BY m.id"
        ),
        "maintenance": dicts(
            conn,
            "SELECT w.id, m.name AS monitor, o.name AS owner, w.starts_at_ms, w.ends_at_ms"
            " FROM maintenance_windows w LEFT JOIN monitors m ON m.id = w.monitor_id"
            " LEFT JOIN owners o ON o.id = w.owner_id WHERE w.ends_at_ms > ? ORDER BY w.starts_at_ms, w.id",
            (now_ms,),
        ),
        "schedules": dicts(
            conn,
            "SELECT s.id, m.name AS monitor, o.name AS owner, s.start_minute, s.duration_min, s.days_mask"
            " FROM maintenance_schedules s LEFT JOIN monitors m ON m.id = s.monitor_id"
            " LEFT JOIN owners o ON o.id = s.owner_id ORDER BY s.id",
        ),
        "channels": dicts(
            conn,
            "SELECT c.id, c.url, m.name AS monitor, o.name AS owner FROM channels c"
            " LEFT JOIN monitors m ON m.id = c.monitor_id LEFT JOIN owners o ON o.id = c.owner_id ORDER BY c.id",
        ),
        "settings": {
            name: value
            for name, value in conn.execute("SELECT name, value FROM settings WHERE name = ?", (CANARY_SETTING,))
        },
    }


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8")).digest()


def env_ref(conn: Connection, target: str, value: str) -> str | None:
    """The `${VAR}` text an applied file gave for `target`, while the stored `value` is still
    what it resolved to; else None."""
    row = conn.execute("SELECT template, value_sha256 FROM env_refs WHERE target = ?", (target,)).fetchone()
    return str(row[0]) if row is not None and bytes(row[1]) == _digest(value) else None


def set_env_ref(conn: Connection, target: str, template: str | None, value: str) -> None:
    """Remember (or with None forget) the `${VAR}` text that `value` of `target` came from."""
    with write_tx(conn):
        if template is None:
            conn.execute("DELETE FROM env_refs WHERE target = ?", (target,))
        else:
            conn.execute(
                "INSERT INTO env_refs (target, template, value_sha256) VALUES (?, ?, ?)"
                " ON CONFLICT (target) DO UPDATE SET template = excluded.template,"
                " value_sha256 = excluded.value_sha256",
                (target, template, _digest(value)),
            )


def set_token_digest(conn: Connection, monitor: int, token_sha256: bytes) -> None:
    """A heartbeat's token digest, as a file gave it: pings with that token count from now on."""
    with write_tx(conn):
        conn.execute("UPDATE monitors SET token_sha256 = ? WHERE id = ?", (token_sha256, monitor))
