"""A monitor's places: `add`/`edit --locations LOC[,LOC...] --quorum K --notify-partial`, checked
(core/quorum.py) and warned about (a location no host has ticked from yet)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from monitor_tick import store
from monitor_tick.core import clock, quorum

LOCATIONS_HELP = (
    "Check it once a due minute from each of these locations (hosts ticking with --location), "
    "or 'all' (every location that ticked in the last 7 days); a quorum of them decides. "
    "PostgreSQL fleets only (SQLite has one location). [default: once, by any host]"
)
QUORUM_HELP = "With --locations: how many must see it down. [default: a majority: 2 of 2 or 3, 3 of 4 or 5]"
NOTIFY_PARTIAL_HELP = "With --locations: notify (once per episode) when fewer than the quorum see it down."


def place_columns(
    conn: store.Connection, before: Mapping[str, Any], given: Mapping[str, Any], *, pinged: bool
) -> dict[str, Any]:
    """The place columns after `given` (locations, quorum, notify_partial; None: unchanged, ''
    clears the locations) over `before`. Exits 2 with one line when they cannot be used; warns
    of a location no host has used yet."""
    columns = dict(before)
    try:
        if given.get("locations") is not None:
            text = given["locations"]
            columns["locations"] = quorum.parse_locations(text) if text else None
            if not text:  # what goes with the locations goes with them
                columns["quorum"] = None
                columns["notify_partial"] = 0
        if given.get("quorum") is not None:
            columns["quorum"] = given["quorum"]
        if given.get("notify_partial") is not None:
            columns["notify_partial"] = int(given["notify_partial"])
        quorum.check_places(
            columns["locations"],
            columns["quorum"],
            pinged=pinged,
            one_host=conn.engine == "sqlite",
            notify_partial=bool(columns["notify_partial"]),
        )
    except quorum.LocationError as exc:
        typer.echo(f"monitor-tick: {exc}", err=True)
        raise typer.Exit(2) from None
    stored, k = columns["locations"], columns["quorum"]
    if stored is not None and stored != quorum.ALL and conn.engine != "sqlite":
        unused = sorted(set(stored.split(",")) - store.places.locations_used(conn))
        for name in unused:
            typer.echo(f"monitor-tick: warning: no host has ticked from location {name!r} yet", err=True)
    if stored == quorum.ALL and k is not None and conn.engine != "sqlite":
        # not refused: hosts may start ticking after their monitors are added, and 'all' grows
        # with them; until K locations do, K is all of them (quorum.quorum_of)
        n = len(store.locations.all_locations(conn, clock.now_ms()))
        if k > n:
            typer.echo(
                f"monitor-tick: warning: --quorum {k} is more than the {n} location{'s' if n != 1 else ''} hosts "
                f"ticked from in the last 7 days; until {k} do, a minute is down only when all of them see it down",
                err=True,
            )
    return columns
