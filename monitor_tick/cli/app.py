"""The Typer app: the tick as its root callback (made from the option table in cli/options.py)
and the commands of the modules beside it. Thin: parse options, call the core and the store, map
errors to exit codes.

Exit codes: 0 the command (or tick) ran -- down monitors are data, not errors; 1 monitor-tick
itself failed (one line on stderr); 2 usage errors, bad option values included; 141 (quietly)
stdout's reader left before the output's end (`monitor-tick list | head -1`).
"""

from __future__ import annotations

import inspect
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from monitor_tick.cli import accounts, apply, backup, edit, heartbeat, importer, monitors, notify, show, status
from monitor_tick.cli.options import TICK_OPTIONS, TickOption
from monitor_tick.cli.tick import run_tick_command, stdout_reader_may_leave


class _Commands(TyperGroup):
    def invoke(self, ctx: typer.Context) -> Any:
        # within Typer's own handling, which ends a closed pipe with exit 1 (see stdout_reader_may_leave)
        with stdout_reader_may_leave():
            return super().invoke(ctx)


app = typer.Typer(
    name="monitor-tick",
    cls=_Commands,
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
# the order of `--help`'s command list
for commands in (monitors.app, edit.app, show.app, apply.app, backup.app, heartbeat.app, status.app):
    app.add_typer(commands)
app.add_typer(accounts.plan_app, name="plan")
app.add_typer(accounts.owner_app, name="owner")
app.add_typer(accounts.maintenance_app, name="maintenance")
app.add_typer(notify.notify_app, name="notify")
app.add_typer(heartbeat.heartbeat_app, name="heartbeat")
app.add_typer(importer.import_app, name="import")
app.add_typer(status.locations_app, name="locations")


def tick_parameter(option: TickOption) -> inspect.Parameter:
    """One row of the option table as a Typer parameter (what Typer reads through
    inspect.signature)."""
    declared = typer.Option(
        *option.flags,
        min=option.low,
        max=option.high,
        envvar=option.envvar,
        show_envvar=option.envvar is not None,
        metavar=option.metavar,
        help=option.help,
    )
    kind = option.kind | None if option.optional else option.kind
    return inspect.Parameter(
        option.name, inspect.Parameter.KEYWORD_ONLY, default=option.default, annotation=Annotated[kind, declared]
    )


def tick(ctx: typer.Context, **options: Any) -> None:
    ctx.obj = {**(ctx.obj or {}), "db": options["db"]}  # the subcommands' default --db
    if ctx.invoked_subcommand is not None:
        return
    # the same function the console entry point's fast path runs (cli/entry.py)
    code = run_tick_command(**options)
    if code:
        raise typer.Exit(code)


tick.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        *map(tick_parameter, TICK_OPTIONS),
    ]
)
tick.__annotations__ = {}  # Typer reads the signature above, not the `**options` hint
app.callback(invoke_without_command=True)(tick)


def main(args: list[str] | None = None) -> None:
    """The Typer app as a command (cli/entry.py's main, the console entry point, runs a plain
    tick itself and hands every other command line to this). A failure of monitor-tick itself is
    one line on stderr and exit 1."""
    try:
        app(args=args, obj={})
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # a bug: say it in one line (cron mails it), never a traceback
        print(f"monitor-tick: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
