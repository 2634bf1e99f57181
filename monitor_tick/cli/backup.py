"""Commands that look after the database file itself: `backup` and `check`.

Both open the database read-only (store.open_read_only).
"""

from __future__ import annotations

from typing import Annotated

import typer

from monitor_tick import store
from monitor_tick.cli.common import DbOption, db_path, fail

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
    database is sound (exit 0) or damaged (exit 1: restore a backup, see the README)."""
    path = db_path(ctx, db)
    try:
        problems = store.integrity_problems(path)
    except store.StoreError as exc:
        fail(str(exc))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        fail(f"database {path} is damaged: {problems[0]}{more}")
    typer.echo(f"database {path} is sound (integrity and foreign keys checked)")
