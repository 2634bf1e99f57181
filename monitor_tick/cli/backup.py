"""Commands that look after the database itself: `backup` and `check` (SQLite files; both
open the database read-only), and `migrate` (either engine to either engine).
"""

from __future__ import annotations

from typing import Annotated

import typer

from monitor_tick import store
from monitor_tick.cli.common import DbOption, db_path, fail
from monitor_tick.core.redact import redact_url

app = typer.Typer()  # merged into the root app (cli/app.py)


@app.command()
def backup(
    ctx: typer.Context,
    out: Annotated[str, typer.Option("--out", metavar="FILE", help="The new file to write (never an existing one).")],
    db: DbOption = None,
) -> None:
    """Copy the database to FILE, readable by its owner only, with SQLite's online backup API: a
    consistent snapshot even while ticks commit. Prints nothing. Example, daily from cron:
    monitor-tick backup --out /var/backups/monitor-tick-$(date +%F).db"""
    path = db_path(ctx, db)
    problem = store.db_path_problem(out)
    if problem:
        fail(f"--out: {problem}", 2)
    try:
        store.backup(path, out)
    except store.StoreError as exc:
        fail(str(exc))


@app.command()
def check(ctx: typer.Context, db: DbOption = None) -> None:
    """Run SQLite's integrity and foreign-key checks, read-only, and say in one line whether the
    database is sound (exit 0) or damaged (exit 1: restore a backup, see docs/troubleshooting.md)."""
    path = db_path(ctx, db)
    try:
        problems = store.integrity_problems(path)
    except store.StoreError as exc:
        fail(str(exc))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        fail(f"database {path} is damaged: {problems[0]}{more}")
    typer.echo(f"database {path} is sound (integrity and foreign keys checked)")


@app.command()
def migrate(
    source: Annotated[str, typer.Argument(metavar="SRC", help="A SQLite file or a postgresql:// URL to copy.")],
    destination: Annotated[
        str, typer.Argument(metavar="DST", help="A new SQLite file, or an empty PostgreSQL database's URL.")
    ],
) -> None:
    """Copy every row of SRC into DST, ids included: monitors, owners, plans, maintenance windows,
    rollups, incidents, events, deliveries, channels, settings, pings and the ledger. SRC is read
    as one consistent snapshot (cron may keep ticking it); DST must be empty, and is written in
    one transaction whose row counts are checked against SRC before it commits; a PostgreSQL DST
    is then vacuumed and analyzed, so its planner has what it needs at once. Example:
    monitor-tick migrate /var/lib/monitor-tick/monitor-tick.db postgresql://monitor@db.lan/monitor_tick"""
    for name, value in (("SRC", source), ("DST", destination)):
        problem = store.db_path_problem(value)
        if problem:
            fail(f"{name}: {problem}", 2)
    try:
        counts = store.copy_database(source, destination)
    except store.StoreError as exc:
        fail(str(exc))
    shown = {
        name: redact_url(value) if store.is_postgres_url(value) else value
        for name, value in (("s", source), ("d", destination))
    }
    typer.echo(
        f"copied {sum(counts.values())} rows ({counts['monitors']} monitors) from {shown['s']} to {shown['d']}; "
        "row counts verified"
    )
