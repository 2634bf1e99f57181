"""Hosts that never answer are down, however many there are and whatever their timeout; the
healthy monitors beside them are never cut off because of them."""

from __future__ import annotations

import asyncio
import json
import sqlite3

from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.core.model import MAX_TIMEOUT_S
from monitor_tick.probes import monitor_from_row
from monitor_tick.run.tick import DEFAULT_BUDGET_S, SLOT_HOLD_SHARE, TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import LocalServer, send_response

MINUTE = 29_934_720
# scaled down from the defaults: the largest timeout `add` accepts is 25 s under a 30 s budget
BUDGET_S = 2.0
TIMEOUT_S = BUDGET_S * MAX_TIMEOUT_S / DEFAULT_BUDGET_S
CONCURRENCY = 2


def test_the_largest_timeout_add_accepts_ends_inside_the_budget_even_started_late() -> None:
    # A hanging probe gives its slot away after SLOT_HOLD_SHARE of the budget; three of them
    # queued on one slot start at 0, 1 and 2 holds: the third still ends as `timeout`.
    assert MAX_TIMEOUT_S + 2 * SLOT_HOLD_SHARE * DEFAULT_BUDGET_S < DEFAULT_BUDGET_S


def add_cli(db_path: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["add", "http://a.test/", *args, "--db", db_path])
    return result.exit_code, result.stderr


def test_a_timeout_above_the_largest_is_refused_by_add_and_probed_at_the_largest_when_stored(
    conn: sqlite3.Connection, db_path: str
) -> None:
    assert add_cli(db_path, "--timeout", "30s") == (
        2,
        f"monitor-tick: timeout must be more than 0s and at most {MAX_TIMEOUT_S:g}s (got 30.0)\n",
    )
    assert add_cli(db_path, "--timeout", f"{MAX_TIMEOUT_S:g}s") == (0, "")
    # a row written by an older version, when 30 s was allowed, is probed at the largest timeout
    conn.execute("UPDATE monitors SET timeout_s = 30")
    (row,) = store.select_due(conn, MINUTE + 1, clock.minute_start_ms(MINUTE + 1))
    assert monitor_from_row(row).timeout_s == MAX_TIMEOUT_S


def test_three_times_concurrency_hanging_hosts_are_down_within_three_due_minutes_and_healthy_ones_stay_up(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    # the hanging monitors come first in id order: a new database starts probes in id order
    hanging = [
        add(conn, local_server.url(f"/hang?n={n}"), name=f"hang{n}", timeout_s=TIMEOUT_S, retries=0)
        for n in range(3 * CONCURRENCY)
    ]
    healthy = [add(conn, local_server.url(f"/ok?n={n}"), name=f"ok{n}", timeout_s=TIMEOUT_S) for n in range(3)]
    for minute in range(MINUTE, MINUTE + 3):
        report = run_tick(
            TickOptions(db_path=db_path, minute=minute, concurrency=CONCURRENCY, budget_s=BUDGET_S, retry_delay_s=0)
        )
        status = {r.monitor_id: (r.status, r.cause) for r in report.results}
        assert [status[m] for m in healthy] == [("up", None)] * 3, minute
        # every tick ends inside its budget (plus the time to write): nothing waits for a hang
        assert report.duration_ms < clock.s_to_ms(BUDGET_S) + 1_000
    for m in hanging:
        checks, failures = rollup(conn, m)
        assert failures >= 1 and failures == checks, (m, checks, failures)
    open_incidents = conn.execute("SELECT monitor_id, cause FROM incidents WHERE resolved_at_ms IS NULL").fetchall()
    assert sorted(open_incidents) == [(m, "timeout") for m in hanging]
    assert all(rollup(conn, m) == (3, 0) for m in healthy)


def test_twenty_times_concurrency_hanging_hosts_never_keep_healthy_ones_from_being_up(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    """A host that went down (it answered 503 in the first minute) then hangs; its monitors are
    20x --concurrency and come first in id order. Having failed, they start after every monitor
    that was up: those are up every minute, and each hanging one is decided now and then."""

    async def unavailable(reader: object, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        await send_response(writer, 503, "down\n", method=method)

    async def hang(reader: object, writer: object, path: str, method: str) -> None:
        await asyncio.get_running_loop().create_future()  # until cancelled

    local_server.route("/down", unavailable)
    hanging = [
        add(conn, local_server.url(f"/down?n={n}"), name=f"down{n}", timeout_s=TIMEOUT_S, retries=0)
        for n in range(20 * CONCURRENCY)
    ]
    healthy = [add(conn, local_server.url(f"/ok?n={n}"), name=f"ok{n}", timeout_s=TIMEOUT_S) for n in range(3)]
    decided: dict[int, int] = {}
    for minute in range(MINUTE, MINUTE + 4):
        report = run_tick(
            TickOptions(db_path=db_path, minute=minute, concurrency=CONCURRENCY, budget_s=BUDGET_S, retry_delay_s=0)
        )
        local_server.route("/down", hang)
        status = {r.monitor_id: (r.status, r.cause) for r in report.results}
        assert [status[m] for m in healthy] == [("up", None)] * 3, minute
        for m in hanging:
            decided[status[m][1]] = decided.get(status[m][1], 0) + 1
    # every one answered 503 in the first minute; since then, hanging ones end as timeouts
    assert decided["status 503"] == len(hanging)
    assert decided["timeout"] >= 3 * CONCURRENCY
    assert all(rollup(conn, m) == (4, 0) for m in healthy)


def test_a_monitor_whose_timeout_does_not_fit_the_budget_is_said_hourly_as_a_configuration_error(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    # a hanging host could never end as `timeout`, only cut off as unknown, for ever: never silently
    monitor = add(conn, local_server.url("/hang"), name="slow", timeout_s=5, retries=0)
    said = []
    for minute in (MINUTE, MINUTE + 1):  # the first minute of an hour, and the next
        result = CliRunner().invoke(
            app, ["--db", db_path, "--minute", str(minute), "--budget", "1s", "--retry-delay", "0", "--json"]
        )
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["unknown"] == 1
        said.append(result.stderr)
    assert said == [
        f"monitor-tick: monitor {monitor}: its --timeout 5s does not fit the tick's --budget 1s: a host that never "
        "answers would be unknown, never down; lower one or raise the other\n",
        "",
    ]


def test_a_budget_above_its_bound_is_refused(db_path: str) -> None:
    result = CliRunner().invoke(app, ["--budget", "10m", "--db", db_path])
    assert (result.exit_code, result.stderr) == (2, "monitor-tick: --budget: at most 30s (got 10m)\n")
