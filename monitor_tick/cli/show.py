"""`show NAME|ID [--json]`: one monitor in full -- its settings, state and next check, where the
newest HTTP check's time went (its phases), the last 24 hours' checks and failures per hour, its
incidents with causes and durations, and the alert deliveries of those incidents. Reads only:
the database is opened read-only."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.common import (
    ALERT_FLAGS,
    NOT_PROBED,
    DbOption,
    JsonOption,
    db_path,
    latest_results,
    next_check_ms,
    quorum_in_numbers,
    read,
    setting_text,
    shown_name,
)
from monitor_tick.cli.tick import emit_json
from monitor_tick.core import clock
from monitor_tick.core.model import OPTION_FLAGS, Phases, monitor_state
from monitor_tick.core.redact import REDACTED_SETTINGS, redact_channel_url, redact_settings, redact_text

app = typer.Typer()  # merged into the root app (cli/app.py)

HOURS = 24


def _detail(ref: str, db: str, now_ms: int) -> dict[str, Any]:
    since_ms = clock.hour_start_ms(now_ms) - (HOURS - 1) * clock.MS_PER_HOUR
    found, all_count = read(
        db,
        lambda conn: (
            store.monitor_detail(conn, ref, now_ms, since_ms),
            len(store.locations.all_locations(conn, now_ms)),
        ),
    )
    monitor = found["monitor"]
    if monitor["locations"] is not None:
        monitor["quorum_shown"] = quorum_in_numbers(monitor["locations"], monitor["quorum"], all_count)
    monitor["state"] = monitor_state(monitor)
    monitor["next_check_ms"] = next_check_ms(monitor, monitor["state"])
    phases = Phases.parse(found["phases"])
    monitor["phases"] = None if phases is None else phases.as_json()
    monitor.update(latest_results(monitor, now_ms))
    kind = deferred.probes().PROBES.get(monitor["kind"])
    # what is shown: the options of its kind, secrets hidden (settings may hold credentials)
    monitor.update(redact_settings(monitor))
    for option in OPTION_FLAGS:
        if kind is not None and option not in kind.options:
            monitor.pop(option, None)
        elif isinstance(monitor.get(option), str) and option not in REDACTED_SETTINGS:
            monitor[option] = redact_text(monitor[option])
    counted = {row["hour_start_ms"]: row for row in found["hours"]}
    hours = []
    for n in range(HOURS):
        hour_ms = since_ms + n * clock.MS_PER_HOUR
        row = counted.get(hour_ms, {})
        hours.append({"hour_start_ms": hour_ms, "checks": row.get("checks", 0), "failures": row.get("failures", 0)})
    for incident in found["incidents"]:
        incident["cause"] = redact_text(incident["cause"])
        incident["duration_ms"] = (incident["resolved_at_ms"] or now_ms) - incident["started_at_ms"]
    for delivery in found["deliveries"]:
        delivery["channel_url"] = redact_channel_url(delivery["channel_url"])
        if delivery["last_error"]:
            delivery["last_error"] = redact_text(delivery["last_error"])
    places = []
    for place in found["locations"]:
        answered = place["checks"] - place["failures"]
        place["latency_ms_avg"] = round(place["latency_ms_sum"] / answered) if answered else None
        places.append(place)
    return {
        "monitor": monitor,
        "hours": hours,
        "incidents": found["incidents"],
        "deliveries": found["deliveries"],
        "locations": places,
    }


def _settings_lines(monitor: dict[str, Any]) -> list[str]:
    every = setting_text("interval_sec", monitor["interval_sec"])
    if monitor["effective_interval_sec"] != monitor["interval_sec"]:
        every += f" (raised to {setting_text('interval_sec', monitor['effective_interval_sec'])} by the plan floor)"
    lines = [
        f"  url        {monitor['url']}",
        f"  kind       {monitor['kind']}",
        f"  every      {every}{', aligned' if monitor['aligned'] else ''}",
        f"  owner      {shown_name(monitor['owner']) if monitor['owner'] else 'none'}",
        f"  page       {'private (not on the status page)' if monitor['private'] else 'public'}, group "
        f"{setting_text('group_name', monitor['group_name'])}",
    ]
    options = [
        f"{flag} {setting_text(option, monitor[option])}" for option, flag in OPTION_FLAGS.items() if option in monitor
    ]
    alerts = [f"{flag} {setting_text(column, monitor[column])}" for column, flag in ALERT_FLAGS.items()]
    if monitor["notify_partial"]:
        alerts.append("--notify-partial")
    lines += [f"  options    {', '.join(options) or 'none'}", f"  alerts     {', '.join(alerts)}"]
    if monitor["locations"] is not None:
        lines.append(f"  locations  {monitor['locations']}, quorum {monitor['quorum_shown']}")
    return lines


def _phases_text(phases: dict[str, int | None]) -> str:
    """'lookup 1, connect 2, tls 9, first byte 15, total 16': each phase's end."""
    names = {"lookup_ms": "lookup", "connect_ms": "connect", "tls_ms": "tls", "first_byte_ms": "first byte"}
    shown = [f"{name} {phases[key]}" for key, name in names.items() if phases[key] is not None]
    return ", ".join([*shown, f"total {phases['total_ms']}"])


def _when(ms: int | None) -> str:
    return "-" if ms is None else clock.display_from_ms(ms)


@app.command()
def show(
    ctx: typer.Context,
    monitor: Annotated[str, typer.Argument(help="Monitor id or name.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one monitor in full: settings, state, next check, where the newest HTTP check's
    time went, the last 24 hours' checks and failures per hour, incidents with causes and
    durations, and alert deliveries."""
    now_ms = clock.now_ms()
    detail = _detail(monitor, db_path(ctx, db), now_ms)
    if as_json:
        emit_json(detail)
        return
    row = detail["monitor"]
    upcoming = row["next_check_ms"]
    lines = [f"monitor {row['id']} ({shown_name(row['name'])})", *_settings_lines(row)]
    state = row["state"] + (f": {row['note']}" if row["note"] else "")
    lines.append(f"  state      {state}; last check {_when(row['last_check_ms'])}")
    if upcoming is None:
        why = "not probed" if row["state"] in NOT_PROBED else "every minute it is due falls in maintenance"
        lines.append(f"  next check none ({why})")
    else:
        lines.append(f"  next check {_when(upcoming)} (in {clock.format_duration_ms(upcoming - now_ms)})")
    if row["phases"] is not None:
        lines.append(f"  timing     {_phases_text(row['phases'])} (the newest check, ms from its start)")
    lines.append(f"last {HOURS} hours (UTC; checks/failures)")
    for hour in detail["hours"]:
        failed = f"  {hour['failures']} failed" if hour["failures"] else ""
        lines.append(f"  {clock.iso_from_ms(hour['hour_start_ms'])[11:16]}  {hour['checks']:>4} checks{failed}")
    if detail["locations"]:
        lines.append(f"last {HOURS} hours per location (checks/failures, average latency of the up checks)")
        for place in detail["locations"]:
            latency = "-" if place["latency_ms_avg"] is None else f"{place['latency_ms_avg']}ms"
            figures = f"{place['checks']:>4} checks  {place['failures']} failed  {latency}"
            lines.append(f"  {place['location']:<12} {figures}")
    lines.append(f"incidents ({len(detail['incidents'])})")
    for incident in detail["incidents"]:
        ongoing = " (open)" if incident["resolved_at_ms"] is None else ""
        partial = "partial " if incident["kind"] == "partial" else ""  # a partial episode: down from some locations
        lines.append(
            f"  {_when(incident['started_at_ms'])}  for {clock.format_duration_ms(incident['duration_ms'])}{ongoing}"
            f"  {partial}{incident['state']}  {incident['cause']}"
        )
    lines.append(f"alert deliveries ({len(detail['deliveries'])})")
    for delivery in detail["deliveries"]:
        error = f": {delivery['last_error']}" if delivery["last_error"] else ""
        lines.append(
            f"  {_when(delivery['created_at_ms'])}  {delivery['kind']:<8} channel {delivery['channel_id']} "
            f"{delivery['channel_url']}  {delivery['state']}{error}"
        )
    typer.echo("\n".join(lines))
