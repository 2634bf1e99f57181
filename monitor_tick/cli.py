"""The command line. Thin: parse options, call tick/store, map errors to exit codes.

Exit codes: 0 the command (or tick) ran -- down monitors are data, not errors; 1 monitor-tick
itself failed (one line on stderr); 2 usage errors, bad option values included.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from monitor_tick import clock, store
from monitor_tick.entry import (
    DEFAULT_BUDGET,
    DEFAULT_BUSY_TIMEOUT,
    DEFAULT_DB,
    DEFAULT_RETRY_DELAY,
    MAX_CATCH_UP_MINUTES,
    MAX_CONCURRENCY,
    MIN_CONCURRENCY,
    PING_URL_ENVVAR,
    emit_json,
    run_and_ping,
    run_tick_command,
)
from monitor_tick.model import (
    MAX_INTERVAL_SEC,
    AlertSettings,
    InvalidMonitor,
    check_alert_settings,
    check_name,
    expiry_text,
    monitor_state,
)
from monitor_tick.redact import redact_text, redact_url
from monitor_tick.tick import DEFAULT_CATCH_UP_MINUTES, DEFAULT_CONCURRENCY

_T = TypeVar("_T")

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
    """The command's --db, else the root's (`monitor-tick --db PATH COMMAND`), else the default;
    a path that is not a file (``--db ""``, ``--db :memory:``) exits 2."""
    if db is None:
        db = (ctx.find_root().obj or {}).get("db")
    path = DEFAULT_DB if db is None else db
    problem = store.db_path_problem(path)
    if problem:
        fail(f"--db: {problem}", 2)
    return path


def shown_name(name: str) -> str:
    """A name for a text table: whole, with anything unprintable (a row stored before names were
    checked) as '?'."""
    return "".join(ch if ch.isprintable() else "?" for ch in name)


def connect(path: str) -> store.sqlite3.Connection:
    try:
        return store.open_db(path)
    except store.StoreError as exc:
        fail(str(exc))


def checked_name(name: str, what: str) -> None:
    try:
        check_name(name, what)
    except InvalidMonitor as exc:
        fail(str(exc), 2)


def read(path: str, reader: Callable[[store.sqlite3.Connection], _T]) -> _T:
    """`reader(conn)` on the database opened read-only (store.read_db); a StoreError exits 1."""
    try:
        return store.read_db(path, reader)
    except store.StoreError as exc:
        fail(str(exc))


def duration_s(text: str, option: str) -> float:
    try:
        return clock.parse_duration_s(text)
    except ValueError as exc:
        fail(f"{option}: {exc}", 2)


def duration_or_zero_s(text: str, option: str) -> float:
    """A duration where 0 (or 0s) means none."""
    try:
        return clock.parse_duration_or_zero_s(text)
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
            min=0,
            max=clock.LAST_MINUTE,
            help="Run as if the clock read this minute of the epoch (epoch seconds // 60), "
            "to replay or debug it. Never catches up, and records nothing for monitors added "
            "after it. A minute that has not come yet is refused, except with --dry-run.",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what is due; probe and write nothing.")] = False,
    as_json: JsonOption = False,
    concurrency: Annotated[
        int, typer.Option(min=MIN_CONCURRENCY, max=MAX_CONCURRENCY, help="Probes in flight at once.")
    ] = DEFAULT_CONCURRENCY,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Run even if this minute was already run: probe and report what is due, but record only "
            "what its run did not (monitors it cut off or added since), never a check twice.",
        ),
    ] = False,
    retry_delay: Annotated[
        str, typer.Option(help="Pause before a failed probe is tried again within the tick (0 for none).")
    ] = DEFAULT_RETRY_DELAY,
    catch_up: Annotated[
        int,
        typer.Option(
            min=0,
            max=MAX_CATCH_UP_MINUTES,
            help="Also probe for up to this many unclaimed minutes before this one (cron skipped them); "
            "older gaps are recorded as missed. 0 turns catch-up off.",
        ),
    ] = DEFAULT_CATCH_UP_MINUTES,
    budget: Annotated[
        str, typer.Option(help="Stop probing after this long; unfinished probes count as unknown, not down.")
    ] = DEFAULT_BUDGET,
    block_private: Annotated[
        bool,
        typer.Option(
            "--block-private",
            envvar="MONITOR_TICK_BLOCK_PRIVATE",
            show_envvar=True,
            help="Refuse probes to loopback, private, link-local and cloud-metadata addresses "
            "(checked on the resolved address, redirects included). For shared installations.",
        ),
    ] = False,
    busy_timeout: Annotated[
        str, typer.Option(help="How long to wait for another process's write lock before failing.")
    ] = DEFAULT_BUSY_TIMEOUT,
    ping_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            envvar=PING_URL_ENVVAR,
            show_envvar=True,
            help="After the tick, GET this URL (healthchecks.io style), or URL/fail when the tick "
            "failed, so that someone notices when ticks stop. At most a few seconds; a failed ping "
            "is one line on stderr and does not change the exit code.",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Say on stderr what the tick did.")] = False,
    status_page: Annotated[
        str | None, typer.Option(metavar="DIR", help="After the tick, rewrite the status page and badges in DIR.")
    ] = None,
    metrics_file: Annotated[
        str | None, typer.Option(metavar="PATH", help="After the tick, write Prometheus metrics (textfile format).")
    ] = None,
) -> None:
    ctx.obj = {"db": db}
    if ctx.invoked_subcommand is not None:
        return
    # the same functions the console entry point's fast path runs (monitor_tick/entry.py)
    tick = partial(
        run_tick_command,
        db=db,
        minute=minute,
        dry_run=dry_run,
        as_json=as_json,
        concurrency=concurrency,
        force=force,
        retry_delay=retry_delay,
        catch_up=catch_up,
        budget=budget,
        block_private=block_private,
        busy_timeout=busy_timeout,
        status_page=status_page,
        metrics_file=metrics_file,
        verbose=verbose,
    )
    code = run_and_ping(ping_url, dry_run, tick)
    if code:
        raise typer.Exit(code)


# ---------------------------------------------------------------------------------------------
# Monitors


@app.command()
def add(
    ctx: typer.Context,
    url: Annotated[
        str,
        typer.Argument(
            help="What to check: an http(s)://host/path URL; tls://host[:port] (a certificate: down when "
            "invalid or expiring); tcp://host:port (a port accepts connections); or the word heartbeat "
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
    method: Annotated[str | None, typer.Option(help="http: GET or HEAD. [default: GET]")] = None,
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
    from monitor_tick.probes import PROBES, new_monitor  # imports httpx: not on every tick
    from monitor_tick.probes.heartbeat import new_token

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
    }
    remind_s = duration_s(remind, "--remind") if remind else None
    try:
        monitor = new_monitor(
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
    token, token_sha256 = new_token() if PROBES[monitor.kind].pinged else (None, None)
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


@app.command("list")
def list_(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """List monitors with their interval, effective interval (after the plan floor) and state."""
    now_ms = clock.now_ms()
    rows = read(db_path(ctx, db), lambda conn: store.list_monitors(conn, now_ms))
    for row in rows:
        row["state"] = monitor_state(row)  # judged on the real url, shown redacted
        row["url"] = redact_url(row["url"])
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


def latest_results(row: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """What list and report add to a monitor's row: the open incident's cause, the certificate's
    days left (derived from its stored expiry and `now_ms`), a heartbeat's last ping, and all of
    it as one short `note` for the text tables."""
    cause = redact_text(row["cause"]) if row["cause"] else None  # a stored cause may quote a URL
    notes = [cause] if cause else []
    expires_ms = row["cert_expires_at_ms"]
    if expires_ms is not None and not (row["cause"] or "").startswith("tls: "):
        notes.append(f"cert {expiry_text(expires_ms, now_ms)}")
    if row["kind"] == "heartbeat":
        notes.append(_ping_note(row, now_ms))
    return {
        "cause": cause,
        "cert_expires_at_ms": expires_ms,
        "cert_days_left": None if expires_ms is None else clock.days_left(expires_ms, now_ms),
        "last_ping_ms": row["last_ping_ms"],
        "last_ping_failed": None if row["last_ping_ms"] is None else bool(row["last_ping_failed"]),
        "last_duration_ms": row["last_duration_ms"],
        "note": "; ".join(notes),
    }


def _ping_note(row: dict[str, Any], now_ms: int) -> str:
    def ago(ms: int) -> str:
        return clock.format_duration_s(clock.ms_to_s(max(0, now_ms - ms)))

    if row["last_ping_ms"] is None:
        note = "no ping yet"
    else:
        note = f"last ping {ago(row['last_ping_ms'])} ago{': failure' if row['last_ping_failed'] else ''}"
        if row["last_duration_ms"] is not None:
            note += f" (ran {clock.format_duration_s(clock.ms_to_s(row['last_duration_ms']))})"
    if row["started_at_ms"] is not None:
        note += f"; started {ago(row['started_at_ms'])} ago"
    return note


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


def _change(ctx: typer.Context, db: str | None, action: Any) -> Any:
    """Run `action(conn)` on the database and return what it returns; a StoreError exits 1."""
    conn = connect(db_path(ctx, db))
    try:
        return action(conn)
    except store.StoreError as exc:
        fail(str(exc))
    finally:
        conn.close()


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
    checked_name(name, "owner name")
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


from monitor_tick.cli_notify import notify_app  # noqa: E402 -- it builds on the helpers above

app.add_typer(notify_app, name="notify")
from monitor_tick import cli_backup, cli_heartbeat, cli_status  # noqa: E402,F401  (register backup, check, ping, serve, status-page, report)


def main(args: list[str] | None = None) -> None:
    """The Typer app as a command (monitor_tick.entry.main, the console entry point, runs a plain
    tick itself and hands every other command line to this). A failure of monitor-tick itself is
    one line on stderr and exit 1."""
    try:
        app(args=args)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # a bug: say it in one line (cron mails it), never a traceback
        print(f"monitor-tick: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
