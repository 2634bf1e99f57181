"""The tick as a command, without Typer: both the console entry point's fast path (cli/entry.py)
and the Typer app's root callback (cli/app.py) run `run_tick_command`, which prints what the
tick did and returns the exit code. Nothing here imports pycurl, asyncio or Typer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.options import DEFAULT_DB, STATUS_TITLE_ENVVAR
from monitor_tick.core import clock, quorum
from monitor_tick.core.model import Monitor
from monitor_tick.run.report import TickReport
from monitor_tick.run.tick import MAX_BUDGET_S, THIS_HOST, MinuteNotYet, TickOptions, due_now, run_tick

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any


def run_tick_command(*, ping_url: str | None = None, **options: Any) -> int:
    """The tick as the command runs it: output on stdout/stderr, returns the exit code (0 the tick
    ran, down monitors included; 1 it failed; 2 a bad option value). `options`: the rest of the
    option table (cli/options.py) by name.

    With `ping_url`, the tick is followed by a GET of it, or of URL/fail when the code is not 0
    or the tick raised (--dry-run pings nothing). A URL that cannot be pinged is a bad option
    value (2), before the tick."""
    if not ping_url:
        return _run_tick(**options)
    ping = deferred.ping()
    try:
        ping.check_ping_url(ping_url)
    except ValueError as exc:
        return fail_line(f"--ping-url: {exc}", 2)
    code = 1  # until the tick returns: a bug (said by the caller) or Ctrl-C is a failed tick
    try:
        code = _run_tick(**options)
    finally:
        if not options["dry_run"]:  # a dry run says nothing about whether the ticks run
            reason = ping.ping(ping_url, failed=code != 0)
            if reason is not None:
                _err(f"monitor-tick: --ping-url: no ping to {ping.where(ping_url)}: {reason}")
    return code


def _run_tick(
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
    host_name: str | None,
    location: str | None,
    lease: str,
    status_page: str | None,
    metrics_file: str | None,
    verbose: bool,
) -> int:
    """run_tick_command without the ping."""
    path = DEFAULT_DB if db is None else db
    problem = store.db_path_problem(path)
    if problem:
        return fail_line(f"--db: {problem}", 2)
    try:
        delay_s = _duration_s(retry_delay, "--retry-delay", zero_is_none=True)
        budget_s = _duration_s(budget, "--budget")
        if budget_s > MAX_BUDGET_S:  # a tick ends inside its minute (run/tick.py)
            raise ValueError(f"--budget: at most {MAX_BUDGET_S:g}s (got {budget})")
        busy_timeout_s = _duration_s(busy_timeout, "--busy-timeout")
        lease_s = _duration_s(lease, "--lease")
    except ValueError as exc:
        return fail_line(str(exc), 2)
    if lease_s <= budget_s:
        return fail_line(f"--lease: {lease} must be longer than --budget ({budget})", 2)
    try:
        place = quorum.DEFAULT if location is None else quorum.check_name(location)
    except quorum.LocationError as exc:
        return fail_line(f"--location: {exc}", 2)
    options = TickOptions(
        db_path=path,
        minute=minute,
        force=force,
        concurrency=concurrency,
        retry_delay_s=delay_s,
        catch_up_minutes=catch_up,
        budget_s=budget_s,
        guard=deferred.address_guard() if block_private else None,
        busy_timeout_s=busy_timeout_s,
        lease_s=lease_s,
        location=place,
        host_name=host_name or THIS_HOST,
    )
    try:
        if dry_run:
            due_minute, monitors, invalid = due_now(options)
            _print_dry_run(due_minute, monitors, invalid, as_json)
            return 0
        report = run_tick(options)
    except MinuteNotYet as exc:
        return fail_line(str(exc), 2)
    except store.StoreError as exc:
        return fail_line(str(exc))
    for monitor_id, cause in report.skipped_to_say():
        _err(f"monitor-tick: monitor {monitor_id} skipped: {cause}")
    for line in [*report.unfit_lines(budget_s), *report.auto_paused_lines()]:
        _err(f"monitor-tick: {line}")
    if report.no_monitors:  # once a day, so that cron mails it: maybe the wrong --db
        _err(
            f"monitor-tick: {path} has no monitors, so nothing is checked; add one with: "
            "monitor-tick add URL (said once a day)"
        )
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
        facts = deferred.metrics().TickFacts(
            now_ms=report.now_ms,
            due=len(report.due) + len(report.invalid),
            up=report.summary.up if report.summary else 0,
            down=report.summary.down if report.summary else 0,
            unknown=report.summary.unknown if report.summary else 0,
            duration_ms=report.duration_ms,
        )
        title = os.environ.get(STATUS_TITLE_ENVVAR)
        for line in deferred.tick_outputs().write(path, facts, status_page, metrics_file, title):
            _err(f"monitor-tick: {line}")
    return 0


def tick_warnings(report: TickReport) -> list[str]:
    """The tick's alert problems, one line each: our network was lost; deliveries given up."""
    lines = []
    if report.network_lost and report.summary is not None:
        offline = sum(deferred.alert_policy().is_offline(r) for r in report.results)
        lines.append(
            f"network looks down from here: {offline} of {len(report.results)} checks failed to reach their "
            "host (dns, connect error); counted as unknown, no incidents opened for them, nobody notified"
        )
    if report.delivery is not None:
        lines += report.delivery.warnings
    return lines


def _duration_s(text: str, option: str, *, zero_is_none: bool = False) -> float:
    try:
        return clock.parse_duration_or_zero_s(text) if zero_is_none else clock.parse_duration_s(text)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def emit_json(value: Any) -> None:
    import json  # deferred: a tick without --json never needs it

    print(json.dumps(value, separators=(",", ":")))


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def fail_line(message: str, code: int = 1) -> int:
    """One line on stderr; returns the exit code."""
    _err(f"monitor-tick: {message}")
    return code


# 128 + SIGPIPE: what a shell reports for a command a closed pipe stopped (`seq 1000000 | head -1`)
CLOSED_PIPE_EXIT = 141


@contextmanager
def stdout_reader_may_leave() -> Iterator[None]:
    """Around a whole command: when stdout's reader leaves (`monitor-tick list | head -1`), end
    at once, quietly, with CLOSED_PIPE_EXIT (raises SystemExit) -- not 0, since what was to be
    printed was not all read (a `set -o pipefail` script sees it as it sees coreutils), and not
    1, which says that monitor-tick failed. Whatever is still buffered is written here, so that
    it fails here, not in Python's exit. SIGPIPE itself stays ignored: probes write to sockets
    a remote end may close."""
    try:
        try:
            yield
        finally:
            if sys.stdout is not None:  # None: started with stdout closed
                sys.stdout.flush()
    except BrokenPipeError:
        # nothing buffered may try again at exit (the recipe of Python's `signal` documentation)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(CLOSED_PIPE_EXIT)


def _print_dry_run(minute: int, monitors: list[Monitor], invalid: list[tuple[int, str]], as_json: bool) -> None:
    from monitor_tick.core.redact import redact_url  # deferred: a tick that probes never shows a URL here

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
