"""Heartbeat commands: `ping` records a cron job's signal; `serve` receives signals over HTTP;
`heartbeat rotate` gives a heartbeat a new token.

A heartbeat monitor is added with `monitor-tick add heartbeat --name NAME --every 1d`; the
tick then checks, each period, that a ping arrived (probes/heartbeat.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.common import DbOption, connect, db_path, fail
from monitor_tick.core import clock

app = typer.Typer()  # merged into the root app (cli/app.py)
heartbeat_app = typer.Typer(help="Heartbeats: their ping tokens.", no_args_is_help=True)


@app.command()
def ping(
    ctx: typer.Context,
    monitor: Annotated[str, typer.Argument(help="Heartbeat monitor id or name.")],
    failed: Annotated[
        bool, typer.Option("--fail", help="The job failed: the monitor is down at its next check.")
    ] = False,
    start: Annotated[
        bool, typer.Option("--start", help="The job is starting: its next ping records how long it ran.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Record a heartbeat's ping, now. Prints nothing. In a crontab:
    backup.sh && monitor-tick ping backups || monitor-tick ping backups --fail"""
    if failed and start:
        fail("give at most one of --fail and --start", 2)
    path = db_path(ctx, db)
    conn = connect(path)
    try:
        found = store.heartbeat_id(conn, monitor)
        store.record_ping(conn, found, "fail" if failed else "start" if start else "ok", clock.now_ms())
    except store.StoreError as exc:
        fail(str(exc))
    except store.DatabaseError as exc:
        fail(store.describe_error(exc, path))
    finally:
        conn.close()


@app.command()
def serve(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port to listen on (0: any free port).")],
    host: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 to take pings from other machines.")
    ] = "127.0.0.1",
    db: DbOption = None,
) -> None:
    """Receive heartbeat pings over HTTP until stopped (Ctrl-C or SIGTERM): jobs elsewhere run
    curl -fsS --retry 5 --retry-connrefused http://HOST:PORT/ping/TOKEN (or .../TOKEN/fail,
    .../TOKEN/start); Uptime Kuma's push path /api/push/TOKEN?status=up|down works too. Prints the
    address it listens on; unknown tokens get the same 404 as any other bad request. When the
    database is lost (a PostgreSQL restart, a restored SQLite file), it connects again; until
    then pings get 503, and one line on stderr says so."""
    receiver = deferred.receiver()
    path = db_path(ctx, db)
    database = receiver.Database(path, connect(path, create=True))

    def ready(bound_host: str, bound_port: int) -> None:
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        typer.echo(f"listening on http://{shown}:{bound_port}")

    def log(line: str) -> None:
        typer.echo(f"monitor-tick: {line}", err=True)

    try:
        receiver.serve(database, host, port, ready, log)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    finally:
        database.close()


@heartbeat_app.command("rotate")
def rotate(
    ctx: typer.Context,
    monitor: Annotated[str, typer.Argument(help="Heartbeat monitor id or name.")],
    db: DbOption = None,
) -> None:
    """Give a heartbeat a new ping token and print it (once: only its digest is stored); the old
    token stops working at once, and `apply` of a monitors file written before refuses to bring it
    back (without --allow-token-change). Its history stays. Example: monitor-tick heartbeat rotate backups"""
    token, digest = deferred.probes().heartbeat.new_token()
    conn = connect(db_path(ctx, db))
    try:
        store.set_token_digest(conn, store.heartbeat_id(conn, monitor), digest)
    except store.StoreError as exc:
        fail(str(exc))
    finally:
        conn.close()
    typer.echo(token)
