"""The console entry point (`monitor-tick`, `python -m monitor_tick`): a plain tick without Typer.

Cron starts it 1,440 times a day. A command line made only of the tick's own options is parsed
by cli/options.py with the standard library and run by cli/tick.py; anything else goes to the
Typer app (cli/app.py), the source of truth for usage, help and usage errors.

The command's own tick (cron's process) ends the process as soon as its output is flushed,
without the interpreter's teardown: collecting and freeing every module, class and function a
tick imported is about a tenth of a small tick's instructions (bench/instructions.py), spent on
memory the exit frees anyway. Nothing is left to it: the tick has closed its database, joined
its database thread and flushed its output; its other threads are daemon threads, which exit
never waits for; and it registers no exit handler of its own. For the same reason its garbage
collector is off while the tick starts (see run/tick.py, where its probes turn it on).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence

from monitor_tick.cli.options import parse_tick_args
from monitor_tick.cli.tick import fail_line, run_tick_command, stdout_reader_may_leave


def main(args: Sequence[str] | None = None) -> None:
    """A plain tick here, everything else through Typer. Raises SystemExit with the exit code;
    without `args` (the command itself: the command line is the process's), a plain tick ends
    the process instead (see above)."""
    argv = sys.argv[1:] if args is None else list(args)
    options = parse_tick_args(argv, os.environ)
    if options is None:
        # the one deferred import of the command line outside cli/deferred.py: Typer, which
        # this fast path exists to avoid (and cli/app.py imports deferred.py itself)
        from monitor_tick.cli.app import main as typer_main

        typer_main(argv)
        return
    if args is None:
        # what a tick makes before its probes run (modules, classes, functions, rows) lives until
        # the process ends: collecting while it grows walks it again and again and frees nothing
        gc.disable()
    try:
        with stdout_reader_may_leave():
            code = run_tick_command(**options)
    except KeyboardInterrupt:
        code = 130  # as Typer exits on Ctrl-C
    except Exception as exc:  # a bug: say it in one line (cron mails it), never a traceback
        code = fail_line(f"internal error: {type(exc).__name__}: {exc}")
    if args is None:
        if sys.stderr is not None:  # None: started with stderr closed
            sys.stderr.flush()  # stdout was flushed above (stdout_reader_may_leave)
        os._exit(code)
    sys.exit(code)
