"""Monitors: `add`, `list`, `pause`, `resume`, `remove` (`edit` is in cli/edit.py; plans,
owners and maintenance windows in cli/accounts.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer

from monitor_tick import store
from monitor_tick.cli import deferred, places
from monitor_tick.cli.common import (
    DbOption,
    JsonOption,
    change,
    connect,
    counted,
    db_path,
    duration_or_zero_s,
    duration_s,
    fail,
    latest_results,
    next_check_ms,
    quorum_in_numbers,
    read,
    shown_name,
    warn_unset_references,
)
from monitor_tick.cli.tick import emit_json
from monitor_tick.core import clock
from monitor_tick.core.model import OPTIONS, AlertSettings, InvalidMonitor, check_alert_settings, monitor_state
from monitor_tick.core.quorum import PLACE_COLUMNS
from monitor_tick.core.redact import redact_settings

app = typer.Typer()  # merged into the root app (cli/app.py)


# ---------------------------------------------------------------------------------------------
# Monitors


# `add`'s parameters that set a Monitor option under another name, and how their text becomes
# the option's value; a parameter named like its option, taken as Typer parses it, needs
# neither. `edit` takes the same parameters (cli/edit.py), so an option added here is editable.
_OPTION_OF_PARAMETER = {
    "expect": "expect_status",
    "expires_within": "expires_within_sec",
    "grace": "grace_sec",
    "timeout": "timeout_s",
    "max_latency": "max_latency_ms",
    "header": "headers",
}
_CONVERT: dict[str, Callable[[Any], Any]] = {
    "method": str.upper,
    "expires_within": lambda text: round(duration_s(text, "--expires-within")),
    "grace": lambda text: round(duration_or_zero_s(text, "--grace")),
    "timeout": lambda text: duration_s(text, "--timeout"),
    "max_latency": lambda text: round(duration_s(text, "--max-latency") * 1000),
    "header": lambda lines: "\n".join(lines) or None,  # repeated: one 'Name: value' a line
    "ca_file": os.path.abspath,  # cron runs the tick from another directory
    "insecure": lambda flag: flag or None,  # a flag not given is no option given
}


def option_of(parameter: str) -> str | None:
    """The Monitor option that `add`'s (or `edit`'s) parameter sets, if any."""
    option = _OPTION_OF_PARAMETER.get(parameter, parameter)
    return option if option in OPTIONS else None


def given_options(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The Monitor options among `add`'s (or `edit`'s) parameter values, converted, leaving out
    those not given (None, or None once converted). Exits 2 on a bad value."""
    given = {}
    for parameter, value in parameters.items():
        option = option_of(parameter)
        if option is not None and value is not None:
            converted = _CONVERT.get(parameter, lambda v: v)(value)
            if converted is not None:
                given[option] = converted
    return given


def interval_s(every: str) -> int:
    """--every as whole seconds; exits 2 unless it is whole minutes (the range is the model's check)."""
    interval = duration_s(every, "--every")
    if interval != int(interval):
        fail(f"--every: interval must be whole minutes (got {every})", 2)
    return int(interval)


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
            "smtp://host[:port][?starttls=1] (a mail server greets with 220; with STARTTLS, its certificate); "
            "ssh://host[:port] (an SSH server identifies itself; no login); "
            "ws(s)://host[:port]/path (a WebSocket opens and closes cleanly; the `ws` extra); "
            "postgresql://user[:password]@host[:port]/dbname, mysql://user[:password]@host[:port][/dbname] and "
            "redis(s)://[[user]:password@]host[:port][/db] (the server lets the user in and answers SELECT 1, "
            "a ping, PING; a password may be a ${VAR} reference; each needs its extra: postgres, mysql, redis); "
            "docker://NAME[?host=ENGINE] (a container runs, and is healthy if it has a health check; ENGINE is "
            "unix:///path/docker.sock, by default /var/run/docker.sock, or tcp://host:port); "
            "or the word heartbeat "
            "(a cron job pings it: prints the token instead of the id). "
            "It may hold ${ENV_VAR} references (not in the scheme or port), resolved by the tick: "
            "'https://${MY_DOMAIN}/health'."
        ),
    ],
    name: Annotated[
        str | None,
        typer.Option(
            help="A unique name, one line of at most 200 characters, no space at either end, not all digits "
            "(those read as ids). "
            "[default: the URL, its credentials and every query value hidden (a Docker engine's too)]"
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
        typer.Option(
            help="tls://, https://, smtp://...?starttls=1, wss://, rediss://, mysql://...?tls=1: down when the "
            "certificate expires within this, e.g. 30d. [default: 14d for tls:// and smtp://, no check for the others]"
        ),
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
            "${ENV_VAR} references, resolved by the tick from its environment (cron's) and never printed "
            "(a warning when one is not set here)."
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
            help="https, tls, wss, rediss, smtp ?starttls=1, mysql ?tls=1: a PEM file of certificate authorities "
            "to trust instead of the system's (a home lab's CA). PostgreSQL: the URL's sslrootcert."
        ),
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", help="https: do not verify the certificate at all (`list` says so)."),
    ] = False,
    max_latency: Annotated[
        str | None,
        typer.Option(
            help="Every kind but heartbeat: down when the check takes longer, e.g. 500ms or 2s "
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
    private: Annotated[
        bool,
        typer.Option("--private", help="Leave it out of the status page and its summary, with no badge."),
    ] = False,
    group: Annotated[
        str | None, typer.Option(help="The status page's section it is shown in, e.g. 'Public sites'.")
    ] = None,
    alert_after: Annotated[
        int, typer.Option(help="Notify after this many consecutive down checks (1 to 10).")
    ] = AlertSettings._field_defaults["alert_after_checks"],
    resolve_after: Annotated[
        int, typer.Option(help="Resolve after this many consecutive up checks (1 to 10).")
    ] = AlertSettings._field_defaults["resolve_after_checks"],
    remind: Annotated[
        str | None, typer.Option(help="While it stays down, remind every this long (e.g. 1h). [default: never]")
    ] = None,
    locations: Annotated[str | None, typer.Option(metavar="LOC[,LOC...]", help=places.LOCATIONS_HELP)] = None,
    quorum: Annotated[int | None, typer.Option(metavar="K", help=places.QUORUM_HELP)] = None,
    notify_partial: Annotated[bool, typer.Option("--notify-partial", help=places.NOTIFY_PARTIAL_HELP)] = False,
    db: DbOption = None,
) -> None:
    """Add a monitor and print its id (a heartbeat's token). Example: monitor-tick add https://example.org --every 1m"""
    probes = deferred.probes()
    interval = interval_s(every)
    given = given_options(locals())
    remind_s = duration_s(remind, "--remind") if remind else None
    try:
        monitor = probes.new_monitor(
            name=name,
            url=url,
            interval_sec=interval,
            aligned=aligned,
            given=given,
            private=private,
            group_name=group,
        )
        alert_settings = check_alert_settings(
            AlertSettings(alert_after, resolve_after, None if remind_s is None else round(remind_s))
        )
    except InvalidMonitor as exc:
        fail(str(exc), 2)
    token, token_sha256 = probes.heartbeat.new_token() if probes.PROBES[monitor.kind].pinged else (None, None)
    path = db_path(ctx, db)
    created = store.is_missing(path)
    if created and owner is not None:  # a new database has no owners: say so, create none
        fail(f"no owner named {owner!r}")
    conn = connect(path, create=True)
    try:
        refused = probes.fleet_refusal(monitor, store.fleet_hosts(conn))
        if refused:
            fail(refused)
        given_places = {"locations": locations, "quorum": quorum, "notify_partial": notify_partial or None}
        place = places.place_columns(conn, PLACE_COLUMNS, given_places, pinged=probes.PROBES[monitor.kind].pinged)
        new_id = store.add_monitor(
            conn,
            monitor,
            owner,
            clock.now_ms(),
            alert_settings,
            token_sha256=token_sha256,
            name_given=name is not None,
            places=place,
        )
    except store.StoreError as exc:
        fail(str(exc))
    finally:
        conn.close()
    if created:
        typer.echo(f"monitor-tick: created database {path}", err=True)
    typer.echo(token or str(new_id))
    warn_unset_references(monitor.name, monitor.url, monitor.headers, monitor.basic_auth, monitor.body)
    unable = probes.PROBES[monitor.kind].host_check()
    if unable:  # added all the same (the setting can change), but said now rather than at the hour
        typer.echo(f"monitor-tick: monitor {new_id} cannot be probed here until this changes: {unable}", err=True)


@app.command("list")
def list_(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """List monitors with their interval, effective interval (after the plan floor), state and
    when each is next checked (and, for a monitor checked from named locations, where from and
    its quorum). State `invalid`: the newest tick that had it due could not probe it (the note
    says why, on which host and when)."""
    now_ms = clock.now_ms()
    rows, all_count = read(
        db_path(ctx, db),
        lambda conn: (store.list_monitors(conn, now_ms), len(store.locations.all_locations(conn, now_ms))),
    )
    for row in rows:
        row["state"] = monitor_state(row)
        row["next_check_ms"] = next_check_ms(row, row["state"])
        row.update(redact_settings(row))
        row.update(latest_results(row, now_ms))
    if as_json:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no monitors; add one with: monitor-tick add URL")
        return
    names = [shown_name(row["name"]) for row in rows]
    width = max(24, *map(len, names))  # names whole (but one stored over the bound): two never look the same
    typer.echo(f"{'ID':>5}  {'NAME':<{width}} {'EVERY':>6}  {'STATE':<12} {'NEXT':<8} URL")
    for row, name in zip(rows, names, strict=True):
        every = clock.format_duration_s(row["effective_interval_sec"])
        if row["effective_interval_sec"] != row["interval_sec"]:
            every += "*"
        upcoming = row["next_check_ms"]
        within = "-" if upcoming is None else "in " + clock.format_duration_ms(max(0, upcoming - now_ms))
        line = f"{row['id']:>5}  {name:<{width}} {every:>6}  {row['state']:<12} {within:<8} {row['url']}"
        if row.get("locations"):  # checked from named locations: where, and how many must see it down
            k = quorum_in_numbers(row["locations"], row["quorum"], all_count)
            line += f"  from {row['locations'].replace(',', ', ')}, quorum {k}"
        typer.echo(f"{line}  {row['note']}" if row["note"] else line)
    if any(r["effective_interval_sec"] != r["interval_sec"] for r in rows):
        typer.echo("* raised to the owner's plan floor")


@app.command()
def pause(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Stop probing a monitor until `resume`."""
    change(ctx, db, lambda conn: store.set_paused(conn, monitor, True, clock.now_ms()))


@app.command()
def resume(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Probe a paused or auto-paused monitor again."""
    change(ctx, db, lambda conn: store.set_paused(conn, monitor, False, clock.now_ms()))


@app.command()
def remove(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Delete a monitor with its rollups and incidents, and say what went. Its id is never given
    to another monitor."""
    removed = change(ctx, db, lambda conn: store.remove_monitor(conn, monitor))
    went = [
        counted(removed["rollup_hours"], "rollup hour"),
        counted(removed["incidents"], "incident"),
        counted(removed["windows"], "maintenance window"),
        counted(removed["channels"], "channel"),
    ]
    typer.echo(f"removed monitor {removed['id']} ({shown_name(removed['name'])}) with {', '.join(went)}")
