"""The console entry point: a plain tick runs without Typer.

Cron starts `monitor-tick` 1,440 times a day, and importing Typer (with its click) costs about
three times what a whole idle tick does. So a command line made only of the tick's own options
is parsed here, with the standard library, and run by `run_tick_command`, the same function the
Typer app's root callback calls. Anything else -- a subcommand, --help, --status-page or
--metrics-file, an option or value this parser does not accept exactly as Typer would -- goes to
the Typer app in cli.py, which stays the source of truth for usage, help and usage errors.
Nothing here imports httpx, asyncio or Typer.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from monitor_tick import clock, store
from monitor_tick.model import Monitor
from monitor_tick.redact import redact_url
from monitor_tick.tick import (
    DEFAULT_BUDGET_S,
    DEFAULT_CATCH_UP_MINUTES,
    DEFAULT_CONCURRENCY,
    DEFAULT_RETRY_DELAY_S,
    MinuteNotYet,
    TickOptions,
    due_now,
    run_tick,
)

DEFAULT_DB = "monitor-tick.db"
DB_ENVVAR = "MONITOR_TICK_DB"
BLOCK_PRIVATE_ENVVAR = "MONITOR_TICK_BLOCK_PRIVATE"
PING_URL_ENVVAR = "MONITOR_TICK_PING_URL"
MIN_CONCURRENCY, MAX_CONCURRENCY = 1, 1000
MAX_CATCH_UP_MINUTES = 1440
DEFAULT_RETRY_DELAY = f"{DEFAULT_RETRY_DELAY_S:g}s"
DEFAULT_BUDGET = f"{DEFAULT_BUDGET_S:g}s"
DEFAULT_BUSY_TIMEOUT = f"{store.DEFAULT_BUSY_TIMEOUT_S:g}s"

_FLAGS = {
    "--dry-run": "dry_run",
    "--json": "as_json",
    "--force": "force",
    "--block-private": "block_private",
    "-v": "verbose",
    "--verbose": "verbose",
}
_VALUED = {
    "--db": "db",
    "--minute": "minute",
    "--concurrency": "concurrency",
    "--retry-delay": "retry_delay",
    "--catch-up": "catch_up",
    "--budget": "budget",
    "--busy-timeout": "busy_timeout",
    "--ping-url": "ping_url",
}
# whole-number options and the range Typer accepts for each
_RANGES = {
    "minute": (0, clock.LAST_MINUTE),
    "concurrency": (MIN_CONCURRENCY, MAX_CONCURRENCY),
    "catch_up": (0, MAX_CATCH_UP_MINUTES),
}


def parse_tick_args(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The tick's options from a command line, as run_tick_command's keyword arguments; None
    when the command line is anything but the tick's options with valid values (Typer's turn)."""
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in environ):
        return None  # shell completion is Typer's
    if BLOCK_PRIVATE_ENVVAR in environ:
        return None  # Typer reads boolean environment variables its own way
    values: dict[str, Any] = {
        "db": None,
        "minute": None,
        "dry_run": False,
        "as_json": False,
        "concurrency": str(DEFAULT_CONCURRENCY),
        "force": False,
        "retry_delay": DEFAULT_RETRY_DELAY,
        "catch_up": str(DEFAULT_CATCH_UP_MINUTES),
        "budget": DEFAULT_BUDGET,
        "block_private": False,
        "busy_timeout": DEFAULT_BUSY_TIMEOUT,
        "ping_url": None,
        "status_page": None,
        "metrics_file": None,
        "verbose": False,
    }
    pending = list(args)
    while pending:
        arg = pending.pop(0)
        name, equals, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in _FLAGS and not equals:
            values[_FLAGS[name]] = True
        elif name in _VALUED:
            if equals:
                value = inline
            elif pending and not pending[0].startswith("-"):
                value = pending.pop(0)
            else:
                return None  # a missing value, or one that looks like an option
            values[_VALUED[name]] = value
        else:
            return None  # --help, a subcommand, --status-page, an unknown option, "--", "-vv", ...
    for option, (low, high) in _RANGES.items():
        if values[option] is None:
            continue
        try:
            values[option] = int(values[option])
        except ValueError:
            return None
        if not low <= values[option] <= high:
            return None
    if values["db"] is None:
        values["db"] = environ.get(DB_ENVVAR) or None
    if values["ping_url"] is None:
        values["ping_url"] = environ.get(PING_URL_ENVVAR) or None
    return values


def run_and_ping(ping_url: str | None, dry_run: bool, tick: Callable[[], int]) -> int:
    """Run `tick` (run_tick_command with the other options) and return its exit code; with
    `ping_url`, then GET it, or URL/fail when the code is not 0 or `tick` raised (--dry-run
    pings nothing). A URL that cannot be pinged is a bad option value (2), before the tick."""
    if not ping_url:
        return tick()
    from monitor_tick import ping

    try:
        ping.check_ping_url(ping_url)
    except ValueError as exc:
        return _fail(f"--ping-url: {exc}", 2)
    code = 1  # until the tick returns: a bug (said by the caller) or Ctrl-C is a failed tick
    try:
        code = tick()
    finally:
        if not dry_run:  # a dry run says nothing about whether the ticks run
            reason = ping.ping(ping_url, failed=code != 0)
            if reason is not None:
                _err(f"monitor-tick: --ping-url: no ping to {ping.where(ping_url)}: {reason}")
    return code


def run_tick_command(
    *,
    db: str | None,
    minute: int | None,
    dry_run: bool,
    as_json: bool,
    concurrency: int,
    force: bool,
    retry_delay: str,
    catch_up: int,
    budget: str,
    block_private: bool,
    busy_timeout: str,
    status_page: str | None,
    metrics_file: str | None,
    verbose: bool,
) -> int:
    """The tick as the command runs it: output on stdout/stderr, returns the exit code (0 the tick
    ran, down monitors included; 1 it failed; 2 a bad option value)."""
    path = DEFAULT_DB if db is None else db
    problem = store.db_path_problem(path)
    if problem:
        return _fail(f"--db: {problem}", 2)
    try:
        delay_s = _duration_s(retry_delay, "--retry-delay", zero_is_none=True)
        budget_s = _duration_s(budget, "--budget")
        busy_timeout_s = _duration_s(busy_timeout, "--busy-timeout")
    except ValueError as exc:
        return _fail(str(exc), 2)
    guard = None
    if block_private:
        from monitor_tick.probes.guard import AddressGuard

        guard = AddressGuard()
    options = TickOptions(
        db_path=path,
        minute=minute,
        force=force,
        dry_run=dry_run,
        concurrency=concurrency,
        retry_delay_s=delay_s,
        catch_up_minutes=catch_up,
        budget_s=budget_s,
        guard=guard,
        busy_timeout_s=busy_timeout_s,
    )
    try:
        if dry_run:
            due_minute, monitors, invalid = due_now(options)
            _print_dry_run(due_minute, monitors, invalid, as_json)
            return 0
        report = run_tick(options)
    except MinuteNotYet as exc:
        return _fail(str(exc), 2)
    except store.StoreError as exc:
        return _fail(str(exc))
    for monitor_id, cause in report.skipped_to_say():
        _err(f"monitor-tick: monitor {monitor_id} skipped: {cause}")
    for line in report.auto_paused_lines():
        _err(f"monitor-tick: {line}")
    if report.network_lost or report.delivery is not None:
        from monitor_tick.alerts import tick_warnings

        for warning in tick_warnings(report):
            _err(f"monitor-tick: {warning}")
    if as_json:
        emit_json(report.as_json())
    elif verbose:
        if not report.claimed:
            _err(f"minute {report.minute} was already run; nothing probed (use --force to replay)")
        else:
            _err(
                "minute {minute}: {due} due, {up} up, {down} down, {unknown} unknown, "
                "{opened} opened, {confirmed} confirmed, {resolved} resolved, {notified} notified "
                "in {duration_ms} ms".format(**report.as_json())
            )
            if report.covered or report.missed:
                _err(
                    f"caught up {len(report.covered)} skipped minute(s); {report.missed} older minute(s) "
                    "recorded as missed"
                )
    if report.claimed and (status_page or metrics_file):
        from monitor_tick.cli_status import after_tick

        after_tick(path, report, status_page, metrics_file)
    return 0


def _duration_s(text: str, option: str, *, zero_is_none: bool = False) -> float:
    try:
        return clock.parse_duration_or_zero_s(text) if zero_is_none else clock.parse_duration_s(text)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def emit_json(value: Any) -> None:
    print(json.dumps(value, separators=(",", ":")))


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def _fail(message: str, code: int = 1) -> int:
    _err(f"monitor-tick: {message}")
    return code


def _print_dry_run(minute: int, monitors: list[Monitor], invalid: list[tuple[int, str]], as_json: bool) -> None:
    if as_json:
        emit_json(
            {
                "minute": minute,
                "due": [
                    {
                        "id": m.id,
                        "name": m.name,
                        "url": redact_url(m.url),
                        "interval_sec": m.interval_sec,
                        "effective_interval_sec": m.effective_interval_sec,
                    }
                    for m in monitors
                ],
            }
        )
        return
    print(f"minute {minute} ({clock.iso_from_ms(clock.minute_start_ms(minute))}): {len(monitors)} due")
    for m in monitors:
        print(f"  {m.id:>5}  {m.name}  every {clock.format_duration_s(m.effective_interval_sec)}  {redact_url(m.url)}")
    for monitor_id, cause in invalid:
        print(f"  {monitor_id:>5}  {cause}")


def main(args: Sequence[str] | None = None) -> None:
    """Console entry point (`monitor-tick`): a plain tick here, everything else through Typer."""
    argv = sys.argv[1:] if args is None else list(args)
    options = parse_tick_args(argv, os.environ)
    if options is None:
        from monitor_tick.cli import main as typer_main

        typer_main(argv)
        return
    ping_url = options.pop("ping_url")
    try:
        code = run_and_ping(ping_url, options["dry_run"], lambda: run_tick_command(**options))
    except KeyboardInterrupt:
        code = 130  # as Typer exits on Ctrl-C
    except Exception as exc:  # a bug: say it in one line (cron mails it), never a traceback
        code = _fail(f"internal error: {type(exc).__name__}: {exc}")
    sys.exit(code)
