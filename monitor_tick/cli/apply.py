"""`apply FILE [--dry-run] [--prune]` and `export [--out FILE]`: monitors, owners, plans,
maintenance windows and channels as a TOML file (the format: cli/configread.py)."""

from __future__ import annotations

import os
import tempfile
import tomllib
from collections.abc import Callable
from typing import Annotated, Any

import typer

from monitor_tick import store
from monitor_tick.cli.common import DbOption, connect, db_path, fail, read, warn_unset_references
from monitor_tick.cli.configexport import EXPORT_MODE, export_text
from monitor_tick.cli.configfile import Plan, read_plan
from monitor_tick.cli.configread import FileError, line_of, tick_resolves_url
from monitor_tick.core import clock
from monitor_tick.publish.atomic import describe_os_error, write_text_atomic

app = typer.Typer()  # merged into the root app (cli/app.py)


def _file_error(path: str, text: str, exc: FileError) -> str:
    line = line_of(text, exc.path)
    where = f"{path}:{line}" if line else path
    return f"{where}: {'.'.join(map(str, exc.path))}: {exc}" if exc.path else f"{where}: {exc}"


def _print_plan(plan: Plan, *, dry_run: bool) -> None:
    for change in plan.changes:
        typer.echo(f"{change.sign} {change.text}")
    counts = {sign: sum(1 for c in plan.changes if c.sign == sign) for sign in "+~-"}
    verb = "would be" if dry_run else ""
    if plan.changes:
        summary = f"{counts['+']} to add, {counts['~']} to change, {counts['-']} to remove"
        typer.echo(f"{summary}{' (dry run: nothing applied)' if dry_run else ''}")
    else:
        typer.echo("no changes")
    if plan.kept:
        typer.echo(f"not in the file, kept ({verb or 'removed'} only with --prune): {', '.join(plan.kept)}")


def _plan_on_empty_database(plan_of: Callable[[store.Connection], Plan]) -> Plan:
    """`plan_of` a new, empty database in a temporary directory (gone when this returns: the
    plan's actions are not to be run). Raises FileError."""
    with tempfile.TemporaryDirectory(prefix="monitor-tick-apply-") as directory:
        conn = connect(os.path.join(directory, "check.db"), create=True)
        try:
            return plan_of(conn)
        finally:
            conn.close()


@app.command()
def apply(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="The TOML file (see `monitor-tick export`).")],
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the plan (against an empty database when there is none yet); change or create nothing.",
        ),
    ] = False,
    prune: Annotated[
        bool, typer.Option("--prune", help="Also remove what the file does not have (monitors with their history).")
    ] = False,
    allow_token_change: Annotated[
        bool,
        typer.Option(
            "--allow-token-change",
            help="Let the file's token_sha256 replace a heartbeat's token (after `heartbeat rotate`, an older "
            "file is refused without it).",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Make the database match a file: monitors, owners, plans, maintenance windows and channels,
    keyed by name. Prints the plan as + (add) ~ (change) - (remove) lines; a second apply
    changes nothing. `${VAR}` in the file is read from the environment. A bad file: one line
    naming the line, and nothing is applied."""
    path = db_path(ctx, db)
    try:
        with open(file, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        fail(f"cannot read {file}: {describe_os_error(exc)}")
    except UnicodeDecodeError:
        fail(f"{file}: not UTF-8 text", 2)
    now_ms = clock.now_ms()

    def plan_of(conn: store.Connection) -> Plan:
        return read_plan(conn, text, prune=prune, now_ms=now_ms, allow_token_change=allow_token_change)

    try:
        monitors = tomllib.loads(text).get("monitors")  # a syntax error is named before the database is opened
        created = store.is_missing(path)
        if dry_run:  # a database not made yet is an empty one, and stays unmade
            plan = _plan_on_empty_database(plan_of) if created else read(path, plan_of, dry_run=True)
            _print_plan(plan, dry_run=True)
            _warn_unset_references(monitors)
            return
        if created:  # a file that cannot be applied must not leave a new database behind
            _plan_on_empty_database(plan_of)
        conn = connect(path, create=True)
        try:
            with store.write_tx(conn):
                plan = plan_of(conn)
                for change in plan.changes:
                    change.action(conn)
        except store.StoreError as exc:
            fail(f"nothing applied: {exc}")
        finally:
            conn.close()
    except tomllib.TOMLDecodeError as exc:
        fail(f"{file}: {exc}", 2)
    except FileError as exc:
        fail(_file_error(file, text, exc), 2)
    if created:
        typer.echo(f"monitor-tick: created database {path}", err=True)
    _print_plan(plan, dry_run=False)
    for name, token in plan.tokens:
        typer.echo(f"heartbeat {name}: token {token} (shown once; ping it with `monitor-tick ping {name}`)")
    _warn_unset_references(monitors)


def _warn_unset_references(monitors: Any) -> None:
    """warn_unset_references for each monitor of a file that read_plan accepted."""
    for name, entry in (monitors or {}).items():
        url = entry.get("url") if tick_resolves_url(entry.get("url")) else None
        warn_unset_references(name, url, *(entry.get(key) for key in ("headers", "basic_auth", "body")))


@app.command()
def export(
    ctx: typer.Context,
    out: Annotated[str | None, typer.Option(help="Write the file here (mode 0600) instead of to stdout.")] = None,
    db: DbOption = None,
) -> None:
    """Write the configuration as a file for `apply`: monitors, owners, plans, maintenance windows
    not yet over, channels and the network canary. Secrets are never written: `${VAR}` references
    stay as they were applied, a secret typed in becomes a placeholder (with a warning naming it),
    and a heartbeat's token is written as its SHA-256."""
    now_ms = clock.now_ms()
    text, warnings = read(db_path(ctx, db), lambda conn: export_text(conn, now_ms))
    for warning in warnings:
        typer.echo(f"monitor-tick: export: {warning}", err=True)
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        write_text_atomic(out, text, mode=EXPORT_MODE)
    except OSError as exc:
        fail(f"cannot write {out}: {describe_os_error(exc)}")
