"""Monitors, plans, owners and maintenance windows: `add`, `list`, `pause`, `resume`, `remove`,
`plan add`, `owner add`, `maintenance add`."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.common import (
    DbOption,
    JsonOption,
    change,
    checked_name,
    connect,
    db_path,
    duration_or_zero_s,
    duration_s,
    fail,
    instant_ms,
    latest_results,
    read,
    shown_name,
)
from monitor_tick.cli.tick import emit_json
from monitor_tick.core import clock
from monitor_tick.core.model import MAX_INTERVAL_SEC, AlertSettings, InvalidMonitor, check_alert_settings
from monitor_tick.core.redact import redact_settings

app = typer.Typer()  # merged into the root app (cli/app.py)
plan_app = typer.Typer(help="Plans: the shortest interval their owners' monitors run at.", no_args_is_help=True)
owner_app = typer.Typer(help="Owners: who monitors belong to, and on which plan.", no_args_is_help=True)
maintenance_app = typer.Typer(help="Maintenance windows: times when monitors are not probed.", no_args_is_help=True)


# ---------------------------------------------------------------------------------------------
# Monitors


@app.command()
def add(
    ctx: typer.Context,
    url: Annotated[
        str,
        typer.Argument(
            help="What to check: an http(s)://host/path URL; tls://host[:port] (a certificate: down when "
            "invalid or expiring); tcp://host:port (a port accepts connections); "
            "dns://name?type=A&server=IP[:PORT][&expect=VALUE] (a DNS server answers, with that value); "
            "icmp://host (it answers a ping; needs net.ipv4.ping_group_range to cover this group); "
            "or the word heartbeat "
            "(a cron job pings it: prints the token instead of the id)."
        ),
    ],
    name: Annotated[
        str | None,
        typer.Option(
            help="A unique name, one line, not all digits (those read as ids). "
            "Default: the URL, its credentials and query values hidden."
        ),
    ] = None,
    every: Annotated[
        str,
        typer.Option(
            help="Interval, whole minutes from 1m to 365d: 1m, 5m, 1h, 1d or seconds (300). A heartbeat's period."
        ),
    ] = "5m",
    owner: Annotated[str | None, typer.Option(help="Owner name (see `owner add`); their plan's floor applies.")] = None,
    expect: Annotated[
        str | None,
        typer.Option(help="http: accepted statuses, codes and ranges, e.g. 200-299 or 200,204. [default: 200-399]"),
    ] = None,
    keyword: Annotated[str | None, typer.Option(help="http: text the body (first 1 MiB) must contain.")] = None,
    keyword_absent: Annotated[
        str | None, typer.Option(help="http: text the body (first 1 MiB) must NOT contain, e.g. maintenance.")
    ] = None,
    expires_within: Annotated[
        str | None,
        typer.Option(help="tls:// (default 14d), https://: down when the certificate expires within this, e.g. 30d."),
    ] = None,
    grace: Annotated[
        str | None,
        typer.Option(help="heartbeat: how late past --every a ping may be before it is down, e.g. 1h. [default: 1h]"),
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(
            help="One hard deadline for the check, retries included (connect, TLS, headers and body), "
            "at most 25s (inside the tick's 30s budget), e.g. 5s. [default: 10s]"
        ),
    ] = None,
    method: Annotated[
        str | None,
        typer.Option(help="http: GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS. [default: GET]"),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            help="http: a request header, 'Name: value'; repeat for more. The value may be or hold "
            "${ENV_VAR} references, resolved by the tick from its environment (cron's) and never printed."
        ),
    ] = None,
    basic_auth: Annotated[
        str | None,
        typer.Option(
            help="http: USER:PASSWORD for HTTP basic authentication; either may be a ${ENV_VAR} reference. "
            "A literal password is stored in the database as given; it is never printed."
        ),
    ] = None,
    body: Annotated[
        str | None, typer.Option(help="http: the request body, with --method POST, PUT, ... (${ENV_VAR} resolved).")
    ] = None,
    ca_file: Annotated[
        str | None,
        typer.Option(
            help="https: a PEM file of certificate authorities to trust instead of the system's (a home lab's CA)."
        ),
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", help="https: do not verify the certificate at all (`list` says so)."),
    ] = False,
    max_latency: Annotated[
        str | None,
        typer.Option(
            help="http, tls, tcp: down when the check takes longer, e.g. 500ms or 2s "
            "(its own time: connect to the body's end; never the wait for a probe slot)."
        ),
    ] = None,
    json_field: Annotated[
        str | None,
        typer.Option(
            help="http: PATH=VALUE, the JSON body's field at the dotted PATH must equal VALUE, e.g. status=UP or "
            "data.db.ok=true (a string field matches its text exactly, a number by value, true/false/null as spelled)."
        ),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(help="Extra attempts within a tick before it counts as down (0 to 3). [default: 1]"),
    ] = None,
    aligned: Annotated[
        bool,
        typer.Option(
            "--aligned",
            help="Fire on wall-clock boundaries (hourly at :00, daily at 00:00 UTC) instead of a spread phase.",
        ),
    ] = False,
    alert_after: Annotated[
        int, typer.Option(help="Notify after this many consecutive down checks (1 to 10).")
    ] = AlertSettings.alert_after_checks,
    resolve_after: Annotated[
        int, typer.Option(help="Resolve after this many consecutive up checks (1 to 10).")
    ] = AlertSettings.resolve_after_checks,
    remind: Annotated[
        str | None, typer.Option(help="While it stays down, remind every this long (e.g. 1h). Default: never.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Add a monitor and print its id (a heartbeat's token). Example: monitor-tick add https://example.org --every 1m"""
    probes = deferred.probes()
    interval = duration_s(every, "--every")
    if interval != int(interval):
        fail(f"--every: interval must be whole minutes (got {every})", 2)
    options = {
        "method": None if method is None else method.upper(),
        "expect_status": expect,
        "keyword": keyword,
        "keyword_absent": keyword_absent,
        "expires_within_sec": None if expires_within is None else round(duration_s(expires_within, "--expires-within")),
        "grace_sec": None if grace is None else round(duration_or_zero_s(grace, "--grace")),
        "timeout_s": None if timeout is None else duration_s(timeout, "--timeout"),
        "retries": retries,
        "max_latency_ms": None if max_latency is None else round(duration_s(max_latency, "--max-latency") * 1000),
        "json_field": json_field,
        "headers": None if not header else "\n".join(header),
        "basic_auth": basic_auth,
        "body": body,
        # cron runs the tick from another directory
        "ca_file": None if ca_file is None else os.path.abspath(ca_file),
        "insecure": insecure or None,
    }
    remind_s = duration_s(remind, "--remind") if remind else None
    try:
        monitor = probes.new_monitor(
            name=name,
            url=url,
            interval_sec=int(interval),
            aligned=aligned,
            given={option: value for option, value in options.items() if value is not None},
        )
        alert_settings = check_alert_settings(
            AlertSettings(alert_after, resolve_after, None if remind_s is None else round(remind_s))
        )
    except InvalidMonitor as exc:
        fail(str(exc), 2)
    token, token_sha256 = probes.heartbeat.new_token() if probes.PROBES[monitor.kind].pinged else (None, None)
    conn = connect(db_path(ctx, db))
    try:
        new_id = store.add_monitor(
            conn, monitor, owner, clock.now_ms(), alert_settings, token_sha256=token_sha256, name_given=name is not None
        )
    except store.StoreError as exc:
        fail(str(exc))
    finally:
        conn.close()
    typer.echo(token or str(new_id))
    unable = probes.PROBES[monitor.kind].host_check()
    if unable:  # added all the same (the setting can change), but said now rather than at the hour
        typer.echo(f"monitor-tick: monitor {new_id} cannot be probed here until this changes: {unable}", err=True)


@app.command("list")
def list_(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """List monitors with their interval, effective interval (after the plan floor) and state."""
    now_ms = clock.now_ms()
    rows = read(db_path(ctx, db), lambda conn: store.list_monitors(conn, now_ms))
    for row in rows:
        row["state"] = deferred.probes().monitor_state(row)  # judged on the real settings, shown redacted
        row.update(redact_settings(row))
        row.update(latest_results(row, now_ms))
    if as_json:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no monitors; add one with: monitor-tick add URL")
        return
    names = [shown_name(row["name"]) for row in rows]
    width = max(24, *map(len, names))  # names whole: two long names never look the same
    typer.echo(f"{'ID':>5}  {'NAME':<{width}} {'EVERY':>6}  {'STATE':<12} URL")
    for row, name in zip(rows, names, strict=True):
        every = clock.format_duration_s(row["effective_interval_sec"])
        if row["effective_interval_sec"] != row["interval_sec"]:
            every += "*"
        line = f"{row['id']:>5}  {name:<{width}} {every:>6}  {row['state']:<12} {row['url']}"
        typer.echo(f"{line}  {row['note']}" if row["note"] else line)
    if any(r["effective_interval_sec"] != r["interval_sec"] for r in rows):
        typer.echo("* raised to the owner's plan floor")


@app.command()
def pause(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Stop probing a monitor until `resume`."""
    change(ctx, db, lambda conn: store.set_paused(conn, monitor, True))


@app.command()
def resume(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Probe a paused or auto-paused monitor again."""
    change(ctx, db, lambda conn: store.set_paused(conn, monitor, False))


@app.command()
def remove(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Delete a monitor with its rollups and incidents."""
    change(ctx, db, lambda conn: store.remove_monitor(conn, monitor))


# ---------------------------------------------------------------------------------------------
# Plans, owners, maintenance


@plan_app.command("add")
def plan_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Plan name.")],
    min_interval: Annotated[str, typer.Option(help="The shortest interval for this plan's monitors, e.g. 5m.")],
    db: DbOption = None,
) -> None:
    """Add a plan. Example: monitor-tick plan add free --min-interval 5m"""
    floor_s = duration_s(min_interval, "--min-interval")
    if floor_s < 60 or floor_s % 60:
        fail(f"--min-interval must be whole minutes, at least 1m (got {min_interval})", 2)
    if floor_s > MAX_INTERVAL_SEC:
        fail(f"--min-interval must be at most {clock.format_duration_s(MAX_INTERVAL_SEC)} (got {min_interval})", 2)
    checked_name(name, "plan name")
    change(ctx, db, lambda conn: store.add_plan(conn, name, int(floor_s)))


@owner_app.command("add")
def owner_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Owner name.")],
    plan: Annotated[str, typer.Option(help="Plan name (see `plan add`).")] = "default",
    expires: Annotated[
        str | None,
        typer.Option(
            help="When the plan ends (ISO-8601, UTC unless an offset is given); the default plan applies after."
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Add an owner. Example: monitor-tick owner add alice --plan pro --expires 2027-01-01"""
    expires_ms = instant_ms(expires, "--expires") if expires else None
    checked_name(name, "owner name")
    change(ctx, db, lambda conn: store.add_owner(conn, name, plan, expires_ms))


@maintenance_app.command("add")
def maintenance_add(
    ctx: typer.Context,
    from_: Annotated[str, typer.Option("--from", help="Start (ISO-8601, UTC unless an offset is given).")],
    until: Annotated[str, typer.Option(help="End, exclusive (ISO-8601).")],
    monitor: Annotated[str | None, typer.Option(help="Monitor id or name.")] = None,
    owner: Annotated[str | None, typer.Option(help="Owner name: covers all their monitors.")] = None,
    db: DbOption = None,
) -> None:
    """Add a maintenance window for one monitor or for all of an owner's monitors."""
    if (monitor is None) == (owner is None):
        fail("give exactly one of --monitor or --owner", 2)
    starts_ms, ends_ms = instant_ms(from_, "--from"), instant_ms(until, "--until")
    if ends_ms <= starts_ms:
        fail("--until must be after --from", 2)
    change(
        ctx,
        db,
        lambda conn: store.add_maintenance(
            conn, monitor_ref=monitor, owner_name=owner, starts_at_ms=starts_ms, ends_at_ms=ends_ms
        ),
    )
