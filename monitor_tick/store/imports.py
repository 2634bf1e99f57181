"""Monitors brought in from another tool (`monitor-tick import`): all of one import in one
transaction, so a failed import leaves nothing half-written, and names as the key, so running
it again adds nothing twice. Each gets its first check within minutes, as `add`'s do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monitor_tick.core.model import AlertSettings, Monitor
from monitor_tick.store.db import insert_row, one, write_tx
from monitor_tick.store.manage import insert_monitor

if TYPE_CHECKING:
    from monitor_tick.store.db import Connection


@dataclass(frozen=True)
class ImportedMonitor:
    """A checked monitor to add (its group included), with what comes with it: whether it runs,
    a heartbeat's token digest, and the Apprise URLs of the channels that cover it alone."""

    monitor: Monitor
    alerts: AlertSettings
    enabled: bool = True
    token_sha256: bytes | None = None
    channels: tuple[str, ...] = ()


def existing_names(conn: Connection, names: Sequence[str]) -> set[str]:
    """Which of `names` a monitor already has."""
    return {name for name in names if one(conn, "SELECT 1 FROM monitors WHERE name = ?", (name,))}


def taken_tokens(conn: Connection, digests: Sequence[bytes]) -> set[bytes]:
    """Which of these heartbeat token digests a monitor already has."""
    return {d for d in digests if one(conn, "SELECT 1 FROM monitors WHERE token_sha256 = ?", (d,))}


def import_monitors(conn: Connection, items: Sequence[ImportedMonitor], created_at_ms: int) -> list[int | None]:
    """Add each monitor whose name no monitor has, with its channels, in one transaction: per
    item its new id, or None when one of that name (or with that token) exists and was left as is."""
    ids: list[int | None] = []
    with write_tx(conn):
        for item in items:
            name_taken = one(conn, "SELECT 1 FROM monitors WHERE name = ?", (item.monitor.name,))
            token_taken = item.token_sha256 is not None and one(
                conn, "SELECT 1 FROM monitors WHERE token_sha256 = ?", (item.token_sha256,)
            )
            if name_taken or token_taken:
                ids.append(None)
                continue
            new_id = insert_monitor(
                conn, item.monitor, None, created_at_ms, item.alerts, item.token_sha256, enabled=item.enabled
            )
            for url in item.channels:  # ids never given twice, as `notify add`'s
                insert_row(conn, "channels", {"url": url, "monitor_id": new_id, "created_at_ms": created_at_ms})
            ids.append(new_id)
    return ids
