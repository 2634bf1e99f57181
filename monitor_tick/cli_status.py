"""Commands to look at results: `status-page` and `report`, and what the tick's --status-page
and --metrics-file flags do once a tick has run.

Imported at the end of cli.py. The page and metrics modules are imported only when used, so
an idle tick without those flags stays light.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from monitor_tick import clock, store
from monitor_tick.cli import (
    DbOption,
    JsonOption,
    app,
    db_path,
    duration_s,
    emit_json,
    fail,
    latest_results,
    shown_name,
)
from monitor_tick.model import monitor_state
from monitor_tick.redact import redact_text
from monitor_tick.uptime import Totals, format_pct

if TYPE_CHECKING:
    from monitor_tick.tick import TickReport

TITLE_ENV = "MONITOR_TICK_STATUS_TITLE"


def _io_error(exc: OSError) -> str:
    return f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)


# ---------------------------------------------------------------------------------------------
# The status page


@app.command("status-page")
def status_page(
    ctx: typer.Context,
    out: Annotated[
        str, typer.Option("--out", metavar="DIR", help="Directory to write index.html and badges/ into (created).")
    ],
    title: Annotated[
        str | None, typer.Option(envvar=TITLE_ENV, show_envvar=True, help="The page's title. Default: Status")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write the static status page (index.html, no scripts, no external assets) and SVG badges
    into DIR; every file is replaced atomically. Example: monitor-tick status-page --out /var/www/status"""
    from monitor_tick import statuspage

    try:
        statuspage.publish(db_path(ctx, db), out, clock.now_ms(), title or statuspage.DEFAULT_TITLE)
    except store.StoreError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"status page not written: {_io_error(exc)}")


def after_tick(db: str, report: TickReport, status_dir: str | None, metrics_file: str | None) -> None:
    """The tick's --metrics-file and --status-page, after a tick that ran (as of its clock
    reading). A failure is one line on stderr; the tick's results are recorded, so the exit code
    stays 0 (cron mails the line)."""
    if metrics_file:
        from monitor_tick import metrics

        s = report.summary
        facts = metrics.TickFacts(
            now_ms=report.now_ms,
            due=len(report.due) + len(report.invalid),
            up=s.up if s else 0,
            down=s.down if s else 0,
            unknown=s.unknown if s else 0,
            duration_ms=report.duration_ms,
        )
        try:
            metrics.write(db, metrics_file, facts)
        except store.StoreError as exc:
            typer.echo(f"monitor-tick: metrics not written: {exc}", err=True)
        except OSError as exc:
            typer.echo(f"monitor-tick: metrics not written: {_io_error(exc)}", err=True)
    if status_dir:
        from monitor_tick import statuspage

        try:
            statuspage.publish(db, status_dir, report.now_ms, os.environ.get(TITLE_ENV) or statuspage.DEFAULT_TITLE)
        except store.StoreError as exc:
            typer.echo(f"monitor-tick: status page not written: {exc}", err=True)
        except OSError as exc:
            typer.echo(f"monitor-tick: status page not written: {_io_error(exc)}", err=True)


# ---------------------------------------------------------------------------------------------
# The report

_STATE_COLORS = {"up": "green", "down": "red", "maintenance": "blue"}


@app.command()
def report(
    ctx: typer.Context,
    since: Annotated[str, typer.Option(help="How far back: 24h, 7d, ... (whole UTC hours are counted).")] = "24h",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per monitor: current state, uptime % counted by checks, checks, failures, incidents in the
    window, average latency of up checks. Minutes when monitor-tick was not running are no data:
    they count neither way."""
    window_ms = clock.s_to_ms(duration_s(since, "--since"))
    now_ms = clock.now_ms()
    since_ms = now_ms - window_ms

    def read(conn: store.sqlite3.Connection) -> tuple[list[dict[str, Any]], int]:
        rows = store.report(conn, since_ms, now_ms)
        first = store.first_tick_minute(conn)
        now_minute = clock.minute_of_ms(now_ms)
        start = max(clock.minute_of_ms(clock.hour_start_ms(since_ms)), now_minute if first is None else first)
        return rows, sum(end - begin for begin, end in store.tick_gaps(conn, start, now_minute))

    try:
        rows, no_data_minutes = store.read_db(db_path(ctx, db), read)
    except store.StoreError as exc:
        fail(str(exc))
    out, shown = [], []
    for row in rows:
        totals = Totals(row["checks"], row["failures"], row["latency_ms_sum"] or 0)
        latency, checks = totals.avg_latency_ms, totals.checks
        out.append(
            {
                "id": row["id"],
                "name": redact_text(row["name"]),
                "kind": row["kind"],
                "state": monitor_state(row),
                "checks": totals.checks,
                "failures": totals.failures,
                "uptime_pct": None if not checks else round(100 * (checks - totals.failures) / checks, 3),
                "avg_latency_ms": None if latency is None else round(latency, 1),
                "incidents": row["incidents"],
                "open_incident": bool(row["open_incident"]),
                **latest_results(row, now_ms),
            }
        )
        shown.append(format_pct(totals.hundredths, none="-"))
    if as_json:
        emit_json(out)
        return
    start = clock.display_from_ms(clock.hour_start_ms(since_ms))
    gap = clock.format_duration_s(clock.minutes_to_s(no_data_minutes))
    typer.echo(
        f"Since {start}; uptime counted by checks. "
        + (f"monitor-tick was not running for {gap}: no data, counted neither way." if no_data_minutes else "")
    )
    if not out:
        typer.echo("no monitors; add one with: monitor-tick add URL")
        return
    names = [shown_name(r["name"]) for r in out]
    width = max(24, *map(len, names))  # names whole: two long names never look the same
    header = ("ID", "NAME", "STATE", "UPTIME", "CHECKS", "FAILED", "INCIDENTS", "AVG MS", "NOTE")
    typer.echo(f"{{:>5}}  {{:<{width}}} {{:<12}} {{:>8}} {{:>7}} {{:>7}} {{:>9}} {{:>7}}  {{}}".format(*header))
    for r, uptime, name in zip(out, shown, names, strict=True):
        state = typer.style(f"{r['state']:<12}", fg=_STATE_COLORS.get(r["state"]))
        latency = "-" if r["avg_latency_ms"] is None else f"{r['avg_latency_ms']:.0f}"
        typer.echo(
            f"{r['id']:>5}  {name:<{width}} {state} {uptime:>8} {r['checks']:>7} {r['failures']:>7} "
            f"{r['incidents']:>9} {latency:>7}  {redact_text(r['note'])}".rstrip()
        )
