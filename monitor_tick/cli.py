"""The command line. Thin: parse options, call tick/store, map errors to exit codes.

Exit codes: 0 the command (or tick) ran -- down monitors are data, not errors; 1 monitor-tick
itself failed (one line on stderr); 2 usage errors, bad option values included.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, NoReturn

import typer

from monitor_tick import clock, store
from monitor_tick.entry import (
    DEFAULT_DB,
    DEFAULT_RETRY_DELAY,
    MAX_CONCURRENCY,
    MIN_CONCURRENCY,
    emit_json,
    run_tick_command,
)
from monitor_tick.model import InvalidMonitor, Monitor, check_settings
from monitor_tick.redact import redact_url
from monitor_tick.tick import DEFAULT_CONCURRENCY

app = typer.Typer(
    name="monitor-tick",
    help=(
        "A one-shot uptime monitor for cron. With no command, run one tick: probe the monitors "
        "due in this minute (minute of the epoch % interval = phase), record results, and "
        "print nothing unless asked to. Run it every minute from cron."
    ),
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
plan_app = typer.Typer(help="Plans: the shortest interval their owners' monitors run at.", no_args_is_help=True)
owner_app = typer.Typer(help="Owners: who monitors belong to, and on which plan.", no_args_is_help=True)
maintenance_app = typer.Typer(help="Maintenance windows: times when monitors are not probed.", no_args_is_help=True)
app.add_typer(plan_app, name="plan")
app.add_typer(owner_app, name="owner")
app.add_typer(maintenance_app, name="maintenance")

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="MONITOR_TICK_DB",
        show_envvar=True,
        help=f"SQLite database file (created on first use). Default: ./{DEFAULT_DB}",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr, then exit: 1 for our failures, 2 for bad input."""
    typer.echo(f"monitor-tick: {message}", err=True)
    raise typer.Exit(code)


def db_path(ctx: typer.Context, db: str | None) -> str:
    if db:
        return db
    root = ctx.find_root()
    return (root.obj or {}).get("db") or DEFAULT_DB


def connect(path: str) -> store.sqlite3.Connection:
    try:
        return store.open_db(path)
    except store.StoreError as exc:
        fail(str(exc))


def duration_s(text: str, option: str) -> float:
    try:
        return clock.parse_duration_s(text)
    except ValueError as exc:
        fail(f"{option}: {exc}", 2)


def instant_ms(text: str, option: str) -> int:
    try:
        return clock.parse_iso_ms(text)
    except ValueError as exc:
        fail(f"{option}: {exc}", 2)


# ---------------------------------------------------------------------------------------------
# The tick


@app.callback(invoke_without_command=True)
def tick(
    ctx: typer.Context,
    db: DbOption = None,
    minute: Annotated[
        int | None,
        typer.Option(
            help="Run as if the clock read this minute of the epoch (epoch seconds // 60), "
            "to replay or debug it. Never catches up."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what is due; probe and write nothing.")] = False,
    as_json: JsonOption = False,
    concurrency: Annotated[
        int, typer.Option(min=MIN_CONCURRENCY, max=MAX_CONCURRENCY, help="Probes in flight at once.")
    ] = DEFAULT_CONCURRENCY,
    force: Annotated[
        bool, typer.Option("--force", help="Run even if this minute was already run (replays it).")
    ] = False,
    retry_delay: Annotated[
        str, typer.Option(help="Pause before a failed probe is tried again within the tick (0 for none).")
    ] = DEFAULT_RETRY_DELAY,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Say on stderr what the tick did.")] = False,
) -> None:
    ctx.obj = {"db": db}
    if ctx.invoked_subcommand is not None:
        return
    # the same function the console entry point's fast path runs (monitor_tick/entry.py)
    code = run_tick_command(
        db=db,
        minute=minute,
        dry_run=dry_run,
        as_json=as_json,
        concurrency=concurrency,
        force=force,
        retry_delay=retry_delay,
        verbose=verbose,
    )
    if code:
        raise typer.Exit(code)


# ---------------------------------------------------------------------------------------------
# Monitors


@app.command()
def add(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="What to probe: an http:// or https:// URL.")],
    name: Annotated[str | None, typer.Option(help="A unique name. Default: the URL.")] = None,
    every: Annotated[str, typer.Option(help="Interval, whole minutes: 1m, 5m, 1h, 1d or seconds (300).")] = "5m",
    owner: Annotated[str | None, typer.Option(help="Owner name (see `owner add`); their plan's floor applies.")] = None,
    expect: Annotated[
        str, typer.Option(help="Accepted statuses: codes and ranges, e.g. 200-299 or 200,204,301-302.")
    ] = "200-399",
    keyword: Annotated[str | None, typer.Option(help="Text the body (first 1 MiB) must contain.")] = None,
    timeout: Annotated[
        str, typer.Option(help="Hard deadline per attempt (connect, headers and body), e.g. 10s.")
    ] = "10s",
    method: Annotated[str, typer.Option(help="GET or HEAD.")] = "GET",
    retries: Annotated[int, typer.Option(help="Extra attempts within a tick before it counts as down (0 to 3).")] = 1,
    aligned: Annotated[
        bool,
        typer.Option(
            "--aligned",
            help="Fire on wall-clock boundaries (hourly at :00, daily at 00:00 UTC) instead of a spread phase.",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Add a monitor and print its id. Example: monitor-tick add https://example.org --every 1m"""
    interval = duration_s(every, "--every")
    if interval != int(interval):
        fail(f"--every: interval must be whole minutes (got {every})", 2)
    method = method.upper()
    settings = {
        "url": url,
        "interval_sec": int(interval),
        "method": method,
        "expect_status": expect,
        "keyword": keyword,
        "timeout_s": duration_s(timeout, "--timeout"),
        "retries": retries,
    }
    try:
        kind = check_settings(**settings)  # type: ignore[arg-type]
    except InvalidMonitor as exc:
        fail(str(exc), 2)
    monitor = Monitor(
        id=0, name=name or url, kind=kind, effective_interval_sec=int(interval), aligned=aligned, **settings
    )  # type: ignore[arg-type]
    conn = connect(db_path(ctx, db))
    try:
        new_id = store.add_monitor(conn, monitor, owner, clock.now_ms())
    except store.StoreError as exc:
        fail(str(exc))
    finally:
        conn.close()
    typer.echo(str(new_id))


@app.command("list")
def list_(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """List monitors with their interval, effective interval (after the plan floor) and state."""
    conn = connect(db_path(ctx, db))
    try:
        rows = store.list_monitors(conn, clock.now_ms())
    finally:
        conn.close()
    for row in rows:
        row["url"] = redact_url(row["url"])
        row["state"] = monitor_state(row)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no monitors; add one with: monitor-tick add URL")
        return
    typer.echo(f"{'ID':>5}  {'NAME':<24} {'EVERY':>6}  {'STATE':<12} URL")
    for row in rows:
        every = clock.format_duration_s(row["effective_interval_sec"])
        if row["effective_interval_sec"] != row["interval_sec"]:
            every += "*"
        typer.echo(f"{row['id']:>5}  {row['name'][:24]:<24} {every:>6}  {row['state']:<12} {row['url']}")
    if any(r["effective_interval_sec"] != r["interval_sec"] for r in rows):
        typer.echo("* raised to the owner's plan floor")


def monitor_state(row: dict[str, Any]) -> str:
    if not row["enabled"]:
        return "paused"
    if row["auto_paused"]:
        return "auto-paused"
    if row["in_maintenance"]:
        return "maintenance"
    if row["down_since_ms"] is not None:
        return "down"
    if row["last_check_ms"] is None:
        return "new"
    return "up"


@app.command()
def pause(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Stop probing a monitor until `resume`."""
    _change(ctx, db, lambda conn: store.set_paused(conn, monitor, True))


@app.command()
def resume(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Probe a paused or auto-paused monitor again."""
    _change(ctx, db, lambda conn: store.set_paused(conn, monitor, False))


@app.command()
def remove(
    ctx: typer.Context, monitor: Annotated[str, typer.Argument(help="Monitor id or name.")], db: DbOption = None
) -> None:
    """Delete a monitor with its rollups and incidents."""
    _change(ctx, db, lambda conn: store.remove_monitor(conn, monitor))


def _change(ctx: typer.Context, db: str | None, action: Any) -> None:
    conn = connect(db_path(ctx, db))
    try:
        action(conn)
    except store.StoreError as exc:
        fail(str(exc))
    finally:
        conn.close()


@app.command()
def report(
    ctx: typer.Context,
    since: Annotated[str, typer.Option(help="How far back: 24h, 7d, ... (whole UTC hours are counted).")] = "24h",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per monitor: checks, failures, uptime % (by checks), average latency of up checks, open incident."""
    window_ms = clock.s_to_ms(duration_s(since, "--since"))
    conn = connect(db_path(ctx, db))
    try:
        rows = store.report(conn, clock.now_ms() - window_ms)
    finally:
        conn.close()
    out = []
    for row in rows:
        checks, failures = row["checks"], row["failures"]
        answered = checks - failures
        out.append(
            {
                "id": row["id"],
                "name": row["name"],
                "checks": checks,
                "failures": failures,
                "uptime_pct": None if not checks else round(100 * (checks - failures) / checks, 3),
                "avg_latency_ms": round(row["latency_ms_sum"] / answered, 1) if answered else None,
                "open_incident": bool(row["open_incident"]),
            }
        )
    if as_json:
        emit_json(out)
        return
    typer.echo(f"{'ID':>5}  {'NAME':<24} {'CHECKS':>7} {'FAILED':>7} {'UPTIME':>8} {'AVG MS':>8}  OPEN")
    for r in out:
        uptime = "-" if r["uptime_pct"] is None else f"{r['uptime_pct']:.2f}%"
        latency = "-" if r["avg_latency_ms"] is None else f"{r['avg_latency_ms']:.0f}"
        typer.echo(
            f"{r['id']:>5}  {r['name'][:24]:<24} {r['checks']:>7} {r['failures']:>7} {uptime:>8} {latency:>8}  "
            f"{'yes' if r['open_incident'] else 'no'}"
        )


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
    _change(ctx, db, lambda conn: store.add_plan(conn, name, int(floor_s)))


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
    _change(ctx, db, lambda conn: store.add_owner(conn, name, plan, expires_ms))


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
    _change(
        ctx,
        db,
        lambda conn: store.add_maintenance(
            conn, monitor_ref=monitor, owner_name=owner, starts_at_ms=starts_ms, ends_at_ms=ends_ms
        ),
    )


def main(args: list[str] | None = None) -> None:
    """The Typer app as a command (monitor_tick.entry.main, the console entry point, runs a plain
    tick itself and hands every other command line to this)."""
    try:
        app(args=args)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
