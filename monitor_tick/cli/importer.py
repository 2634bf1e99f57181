"""`monitor-tick import gatus|uptime-kuma`: monitors from another tool, in one command.

Names are the key: a monitor whose name the database has is left as it is, so a second import
adds nothing twice. The report lists, per monitor, what was not carried over and why.

`--to-file FILE` writes the monitors file (`export`'s format, for `apply`) instead: the import
runs into a scratch database in a temporary directory, which is then exported, so the file says
exactly what an import would have added, its secrets as placeholders.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Annotated, Any

import typer

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.common import DbOption, connect, db_path, fail, read
from monitor_tick.cli.configexport import EXPORT_MODE, export_text
from monitor_tick.core import clock
from monitor_tick.publish.atomic import describe_os_error, write_text_atomic

import_app = typer.Typer(
    help=(
        "Bring monitors over from Uptime Kuma (its database) or Gatus (its YAML): each becomes a "
        "monitor as `add` makes it, and the report says what could not be carried over and why. "
        "Running it again adds nothing twice (names are the key). A database that does not exist yet is created."
    ),
    no_args_is_help=True,
)

DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Say what would be imported and what not; write nothing.")
]
ToFileOption = Annotated[
    str | None,
    typer.Option(
        help="Write a monitors file (export's format, mode 0600; see `apply`) instead of the database; "
        "secrets typed in become ${VAR} placeholders, with a warning (as export writes them)."
    ),
]


@import_app.command("gatus")
def import_gatus(
    ctx: typer.Context,
    config: Annotated[str, typer.Argument(help="Gatus' configuration file (config.yaml).")],
    dry_run: DryRunOption = False,
    to_file: ToFileOption = None,
    db: DbOption = None,
) -> None:
    """Import Gatus endpoints (needs PyYAML: pip install 'monitor-tick[gatus]'). Each endpoint's
    url, method, headers, body, interval (under a minute: one minute), client timeout and the
    conditions monitor-tick has ([STATUS], [RESPONSE_TIME] <, [CERTIFICATE_EXPIRATION] >, [BODY]
    and [BODY].path ==, [CONNECTED]) carry over; its group becomes its status-page group, its alerts channels."""
    _import(ctx, db, lambda importers: importers.gatus.read(config), dry_run, to_file)


@import_app.command("uptime-kuma")
def import_uptime_kuma(
    ctx: typer.Context,
    database: Annotated[str, typer.Argument(help="Uptime Kuma's database file (data/kuma.db), opened read-only.")],
    dry_run: DryRunOption = False,
    to_file: ToFileOption = None,
    db: DbOption = None,
) -> None:
    """Import Uptime Kuma 1.23 or 2.0 monitors: http, keyword, json-query (a plain path ==),
    port, ping, dns, docker (its Docker host a socket or plain tcp) and push (a heartbeat keeping
    its token: `serve` takes /api/push/TOKEN), with their interval, timeout, statuses, method,
    headers, body, basic auth, paused state and certificate expiry. Retries become --alert-after;
    notifications Apprise can send, channels."""
    _import(ctx, db, lambda importers: importers.kuma.read(database), dry_run, to_file)


def _import(
    ctx: typer.Context, db: str | None, reader: Callable[[Any], Any], dry_run: bool, to_file: str | None
) -> None:
    if dry_run and to_file is not None:
        fail("--dry-run and --to-file contradict each other: give one", 2)
    importers = deferred.importers()
    try:
        plan = reader(importers)
    except importers.plan.ImportProblem as exc:
        fail(str(exc))
    path = db_path(ctx, db)
    now_ms = clock.now_ms()
    if to_file is not None:
        with tempfile.TemporaryDirectory(prefix="monitor-tick-import-") as scratch:
            conn = connect(os.path.join(scratch, "import.db"), create=True)
            try:
                lines, _ = importers.apply.run(conn, plan, now_ms, dry_run=False, to_file=True)
                text, warnings = export_text(conn, now_ms)
            except store.StoreError as exc:
                fail(str(exc))
            finally:
                conn.close()
        try:
            write_text_atomic(to_file, text, mode=EXPORT_MODE)
        except OSError as exc:
            fail(f"cannot write {to_file}: {describe_os_error(exc)}")
        for warning in warnings:
            typer.echo(f"monitor-tick: import: {warning}", err=True)
        lines.append(f"wrote {to_file}; make a database match it with: monitor-tick apply {to_file}")
    elif dry_run:
        if not store.is_missing(path):
            lines, _ = read(path, lambda conn: importers.apply.run(conn, plan, now_ms, dry_run=True), dry_run=True)
        else:  # nothing to compare with: everything would be added
            lines, _ = importers.apply.run(None, plan, now_ms, dry_run=True)
    else:
        created = store.is_missing(path)  # a new user's first command: an import can fill an empty one
        conn = connect(path, create=True)
        try:
            lines, _ = importers.apply.run(conn, plan, now_ms, dry_run=False)
        except store.StoreError as exc:
            fail(str(exc))
        finally:
            conn.close()
        if created:
            typer.echo(f"monitor-tick: created database {path}", err=True)
    for line in lines:
        typer.echo(line)
