"""Forgetting a location: `locations forget NAME` removes a place whose hosts are gone, so that
`--locations all` no longer names it (it would otherwise for 7 days after its last tick)."""

from __future__ import annotations

from monitor_tick.core import clock
from monitor_tick.store.db import StoreError, one, write_tx

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from monitor_tick.store.db import Connection

# a host that ticked this recently may still be running: its location is not gone
RECENT_MINUTES = 10


def forget_location(conn: Connection, name: str, now_ms: int) -> int:
    """Remove location `name`'s hosts; returns how many. Refused (StoreError, one line) when no
    host has it, when a monitor names it, or when one of its hosts ticked in the last
    RECENT_MINUTES minutes (it would come back at its next tick)."""
    with write_tx(conn):
        newest = one(conn, "SELECT max(last_minute) FROM fleet_hosts WHERE location = ?", (name,))
        if newest is None:
            raise StoreError(f"no host has ticked from location {name!r}")
        naming = [
            str(monitor)
            for monitor, stored in conn.execute("SELECT name, locations FROM monitors WHERE locations IS NOT NULL")
            if name in str(stored).split(",")
        ]
        if naming:
            raise StoreError(f"location {name!r} is named by {', '.join(naming)}: edit their --locations first")
        ago = clock.minute_of_ms(now_ms) - int(newest)
        if ago < RECENT_MINUTES:
            raise StoreError(
                f"a host of location {name!r} ticked {max(ago, 0)} minute(s) ago; stop its cron line first"
            )
        return conn.execute("DELETE FROM fleet_hosts WHERE location = ?", (name,)).rowcount
