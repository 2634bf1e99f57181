"""The locations as people see them: each with its hosts (`locations`), the places used, each
place's newest verdict (the metrics), and forgetting a location: `locations forget NAME` removes
a place whose hosts are gone, so that `--locations all` no longer names it (it would otherwise
for 7 days after its last tick)."""

from __future__ import annotations

from monitor_tick.core import clock
from monitor_tick.core.records import NamedTuple
from monitor_tick.store.db import StoreError, dicts, one, write_tx
from monitor_tick.store.deliveries import CANARY_SETTING, canary_setting

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

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


class Location(NamedTuple):
    name: str
    hosts: list[dict[str, Any]]  # host, last_minute, network_lost, canary_minute, has_canary


def list_locations(conn: Connection) -> list[Location]:
    """Each location with its hosts: the newest minute each ticked, whether it has a network
    canary (its own or the shared one), and what its newest tick with checks found of its
    network (network_lost) in which minute (canary_minute; None: no tick with checks yet)."""
    canaries = {
        str(name) for (name,) in conn.execute("SELECT name FROM settings WHERE name LIKE ?", (f"{CANARY_SETTING}%",))
    }
    found: dict[str, list[dict[str, Any]]] = {}
    for row in dicts(
        conn,
        "SELECT location, host, last_minute, network_lost, canary_minute FROM fleet_hosts ORDER BY location, host",
    ):
        row["has_canary"] = bool({CANARY_SETTING, canary_setting(row["host"])} & canaries)
        found.setdefault(row.pop("location"), []).append(row)
    return [Location(name, hosts) for name, hosts in found.items()]


def locations_used(conn: Connection) -> set[str]:
    """Every location a host has ticked from (ever)."""
    return {str(row[0]) for row in conn.execute("SELECT DISTINCT location FROM fleet_hosts")}


def location_up(conn: Connection) -> list[tuple[int, str, bool]]:
    """(monitor, location, up) of each location's newest decided check of each monitor with
    locations, while its checks are kept (CHECKS_KEPT_MINUTES): the metrics' location_up."""
    rows = conn.execute(
        "SELECT c.monitor_id, c.location, c.up FROM location_checks c WHERE c.up IS NOT NULL AND c.minute = "
        "(SELECT max(n.minute) FROM location_checks n WHERE n.monitor_id = c.monitor_id "
        "AND n.location = c.location AND n.up IS NOT NULL) ORDER BY c.monitor_id, c.location"
    )
    return [(int(monitor), str(location), bool(up)) for monitor, location, up in rows]
