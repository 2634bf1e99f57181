"""Commands to look at results: `status-page`, `report` and `hosts`. The page module is imported only
when used (cli/deferred.py), so other command lines stay light; what the tick's --status-page
and --metrics-file write is publish/tick_outputs.py."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.common import (
    DbOption,
    JsonOption,
    change,
    db_path,
    duration_s,
    fail,
    latest_results,
    read,
    shown_name,
)
from monitor_tick.cli.options import STATUS_TITLE_ENVVAR
from monitor_tick.cli.tick import emit_json
from monitor_tick.core import clock
from monitor_tick.core.model import monitor_state
from monitor_tick.core.redact import redact_text
from monitor_tick.publish.atomic import describe_os_error
from monitor_tick.publish.uptime import Totals, format_pct

app = typer.Typer()  # merged into the root app (cli/app.py)


# ---------------------------------------------------------------------------------------------
# The status page


@app.command("status-page")
def status_page(
    ctx: typer.Context,
    out: Annotated[
        str, typer.Option("--out", metavar="DIR", help="Directory to write index.html and badges/ into (created).")
    ],
    title: Annotated[
        str | None, typer.Option(envvar=STATUS_TITLE_ENVVAR, show_envvar=True, help="The page's title. Default: Status")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write the static status page (index.html, no scripts, no external assets) and SVG badges
    into DIR; every file is replaced atomically. Example: monitor-tick status-page --out /var/www/status"""
    statuspage = deferred.statuspage()
    try:
        statuspage.publish(db_path(ctx, db), out, clock.now_ms(), title or statuspage.DEFAULT_TITLE)
    except store.StoreError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"status page not written: {describe_os_error(exc)}")


# ---------------------------------------------------------------------------------------------
# The report

_STATE_COLORS = {"up": "green", "down": "red", "maintenance": "blue"}


@app.command()
def report(
    ctx: typer.Context,
    since: Annotated[str, typer.Option(help="How far back: 24h, 7d, ... (whole UTC hours are counted).")] = "24h",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per monitor: current state, uptime % counted by checks, checks, failures, incidents in the
    window, average latency of up checks. Minutes when monitor-tick was not running are no data:
    they count neither way. A monitor checked from several locations counts the quorum's verdict
    of each minute, and lists beneath it each location's own checks, failures and latency."""
    window_ms = clock.s_to_ms(duration_s(since, "--since"))
    now_ms = clock.now_ms()
    since_ms = now_ms - window_ms

    def collect(conn: store.Connection) -> tuple[list[dict[str, Any]], int]:
        rows = store.report(conn, since_ms, now_ms)
        for row in rows:  # a monitor with locations: each location's own checks and latency too
            if row["locations"] is not None:
                row["places"] = store.locationsql.location_figures(conn, row["id"], clock.hour_start_ms(since_ms))
        start = clock.minute_of_ms(clock.hour_start_ms(since_ms))
        return rows, sum(end - begin for begin, end in store.tick_gaps(conn, start, clock.minute_of_ms(now_ms)))

    rows, no_data_minutes = read(db_path(ctx, db), collect)
    out, shown = [], []
    for row in rows:
        totals = Totals(row["checks"], row["failures"], row["latency_ms_sum"] or 0)
        latency, checks = totals.avg_latency_ms, totals.checks
        out.append(
            {
                "id": row["id"],
                "name": redact_text(row["name"]),
                "kind": row["kind"],
                "state": monitor_state(row),
                "checks": totals.checks,
                "failures": totals.failures,
                "uptime_pct": None if not checks else round(100 * (checks - totals.failures) / checks, 3),
                "avg_latency_ms": None if latency is None else round(latency, 1),
                "incidents": row["incidents"],
                "open_incident": bool(row["open_incident"]),
                **latest_results(row, now_ms),
            }
        )
        if "places" in row:
            out[-1]["locations"] = [_place(place) for place in row["places"]]
        shown.append(format_pct(totals.hundredths, none="-"))
    if as_json:
        emit_json(out)
        return
    start = clock.display_from_ms(clock.hour_start_ms(since_ms))
    gap = clock.format_duration_s(clock.minutes_to_s(no_data_minutes))
    typer.echo(
        f"Since {start}; uptime counted by checks. "
        + (f"monitor-tick was not running for {gap}: no data, counted neither way." if no_data_minutes else "")
    )
    if not out:
        typer.echo("no monitors; add one with: monitor-tick add URL")
        return
    names = [shown_name(r["name"]) for r in out]
    width = max(24, *map(len, names))  # names whole (but one stored over the bound): two never look the same
    header = ("ID", "NAME", "STATE", "UPTIME", "CHECKS", "FAILED", "INCIDENTS", "AVG MS", "NOTE")
    typer.echo(f"{{:>5}}  {{:<{width}}} {{:<12}} {{:>8}} {{:>7}} {{:>7}} {{:>9}} {{:>7}}  {{}}".format(*header))
    for r, uptime, name in zip(out, shown, names, strict=True):
        state = typer.style(f"{r['state']:<12}", fg=_STATE_COLORS.get(r["state"]))
        latency = "-" if r["avg_latency_ms"] is None else f"{r['avg_latency_ms']:.0f}"
        typer.echo(
            f"{r['id']:>5}  {name:<{width}} {state} {uptime:>8} {r['checks']:>7} {r['failures']:>7} "
            f"{r['incidents']:>9} {latency:>7}  {redact_text(r['note'])}".rstrip()
        )
        for place in r.get("locations", []):  # beneath the quorum's figures, each location's own
            latency = "-" if place["avg_latency_ms"] is None else f"{place['avg_latency_ms']:.0f} ms"
            figures = f"{place['checks']:>5} checks {place['failures']:>5} failed  {latency}"
            typer.echo(f"{'':>9}from {place['location']:<12} {figures}")


def _place(place: dict[str, Any]) -> dict[str, Any]:
    """One location's figures of a monitor, as report gives them: its own checks, failures and
    the average latency of its up checks (the monitor's uptime is the quorum's)."""
    totals = Totals(place["checks"], place["failures"], place["latency_ms_sum"] or 0)
    latency = totals.avg_latency_ms
    return {
        "location": place["location"],
        "checks": totals.checks,
        "failures": totals.failures,
        "avg_latency_ms": None if latency is None else round(latency, 1),
    }


# ---------------------------------------------------------------------------------------------
# Hosts


@app.command()
def hosts(
    ctx: typer.Context,
    since: Annotated[str, typer.Option(help="How far back: 1h, 1d, ... (claims are kept a day).")] = "1h",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Who ticked which minutes (PostgreSQL, several hosts): per minute, host and share (the
    fleet's 64 buckets, or the 16 of its location's monitors with --locations), the buckets it
    claimed, how many it never finished (it died, or lost them to another host past its lease),
    how many it took over from such a host, the checks it recorded and how long it took from its
    first claim to its last write. On SQLite, where one host runs each minute whole, there is
    nothing to show."""
    now_ms = clock.now_ms()
    from_minute = clock.minute_of_ms(now_ms - clock.s_to_ms(duration_s(since, "--since")))
    rows = read(db_path(ctx, db), lambda conn: store.host_minutes(conn, from_minute))
    for row in rows:
        first, last = row["first_claim_ms"], row["last_write_ms"]
        row["duration_ms"] = None if first is None or last is None else last - first
    if as_json:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no claims in this window (hosts share minutes on PostgreSQL only)")
        return
    width = max(16, *(len(shown_name(r["host"])) for r in rows))
    shares = ["fleet" if r["location"] is None else f"location {r['location']}" for r in rows]
    # one format for the heading and the rows, so that they line up ('2026-12-01 00:00 UTC')
    widths = f"{{:<{len(clock.display_from_ms(0))}}}  {{:<{width}}} {{:<{max(8, *map(len, shares))}}}"
    line = f"{widths} {{:>7}} {{:>10}} {{:>9}} {{:>7}} {{:>8}}".format
    typer.echo(line("MINUTE (UTC)", "HOST", "SHARE", "BUCKETS", "UNFINISHED", "TOOK OVER", "CHECKS", "SECONDS"))
    for r, share in zip(rows, shares, strict=True):
        seconds = "-" if r["duration_ms"] is None else f"{r['duration_ms'] / 1000:.1f}"
        minute = clock.display_from_ms(clock.minute_start_ms(r["minute"]))
        figures = (r["buckets"], r["unfinished"], r["took_over"], r["checks"], seconds)
        typer.echo(line(minute, shown_name(r["host"]), share, *figures))


# ---------------------------------------------------------------------------------------------
# Locations


locations_app = typer.Typer()


@locations_app.callback(invoke_without_command=True)
def locations(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """The places hosts probe from (their tick's --location; 'default' without it): each
    location's hosts, the newest minute each ticked and what its network canary said, in which
    minute ('none': the host has no canary; a host whose canary failed sets aside only its own
    network-level failures). On SQLite there is one host, so one location. `locations forget
    NAME` removes a location that is gone."""
    if ctx.invoked_subcommand is not None:
        return
    found = read(db_path(ctx, db), store.places.list_locations)
    rows = [
        {
            "location": place.name,
            "last_minute": max(h["last_minute"] for h in place.hosts),
            "hosts": [
                {
                    "host": h["host"],
                    "last_minute": h["last_minute"],
                    "last_tick": clock.iso_from_ms(clock.minute_start_ms(h["last_minute"])),
                    "canary": _canary(h),
                    "canary_minute": h["canary_minute"] if h["has_canary"] else None,
                }
                for h in place.hosts
            ],
        }
        for place in found
    ]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no host has ticked on a shared database yet (on SQLite there is one host, so one location)")
        return
    width = max(16, *(len(shown_name(h["host"])) for r in rows for h in r["hosts"]))
    line = f"{{:<32}}  {{:<{width}}} {{:<{len(clock.display_from_ms(0))}}}  {{}}".format
    typer.echo(line("LOCATION", "HOST", "LAST MINUTE (UTC)", "CANARY"))
    for r in rows:
        for h in r["hosts"]:
            last = clock.display_from_ms(clock.minute_start_ms(h["last_minute"]))
            canary = h["canary"]
            if h["canary_minute"] is not None:  # when it said so: a host whose ticks fail says it no more
                canary += f" at {clock.display_from_ms(clock.minute_start_ms(h['canary_minute']))}"
            typer.echo(line(r["location"], shown_name(h["host"]), last, canary).rstrip())


def _canary(host: dict[str, Any]) -> str:
    """What a host's network canary said, as `locations` gives it: none (the host has no canary:
    nothing is ever set aside), not asked yet (no tick of it had checks), ok or network lost."""
    if not host["has_canary"]:
        return "none"
    if host["canary_minute"] is None:
        return "not asked yet"
    return "network lost" if host["network_lost"] else "ok"


@locations_app.command("forget")
def forget(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The location, as its hosts' --location gave it.")],
    db: DbOption = None,
) -> None:
    """Remove a location whose hosts are gone, so that --locations all no longer names it (else it
    does for 7 days after its last tick, and counts in each such monitor's quorum until a minute
    closes). Refused while a monitor names it, or a host of it ticked in the last 10 minutes.
    Example: monitor-tick locations forget d"""
    removed = change(ctx, db, lambda conn: store.places.forget_location(conn, name, clock.now_ms()))
    typer.echo(f"forgot location {name} ({removed} host{'' if removed == 1 else 's'})")
