"""With --block-private, a monitor that points at a refused address is a configuration error,
like an invalid row: no check, no incident, no alert, and one line on stderr an hour."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core import schedule
from monitor_tick.probes.guard import AddressGuard, IPAddress
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.receivers import JsonReceiver
from tests.servers import LocalServer

MINUTE = 29_934_720  # 2026-12-01T00:00Z, the first minute of an hour
MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")


def tick(db_path: str, minute: int) -> tuple[int, str]:
    done = subprocess.run(
        [MONITOR_TICK, "--db", db_path, "--minute", str(minute), "--retry-delay", "0", "--block-private"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "MONITOR_TICK_BLOCK_PRIVATE"},
        check=False,
    )
    assert done.stdout == ""
    return done.returncode, done.stderr


def test_a_refused_address_records_nothing_pages_no_one_and_is_reported_once_an_hour(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    private = add(conn, local_server.url("/ok"), name="lan", retries=0)
    hourly = add(conn, local_server.url("/ok?hourly"), name="lan-hourly", every_s=3600, aligned=True, retries=0)
    with JsonReceiver() as rx:
        store.add_channel(conn, rx.apprise_url(), monitor_ref=None, owner_name=None, created_at_ms=0)
        outputs = [tick(db_path, minute) for minute in (MINUTE, MINUTE + 1, MINUTE + 2, MINUTE + 60)]
        assert rx.posts == 0
    line = "monitor-tick: monitor {} skipped: refused by --block-private: blocked: 127.0.0.1 is not a public address\n"
    assert outputs == [
        (0, line.format(private) + line.format(hourly)),
        (0, ""),
        (0, ""),
        (0, line.format(private) + line.format(hourly)),
    ]
    assert rollup(conn, private) == (0, 0) and rollup(conn, hourly) == (0, 0)
    assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (0,)
    assert conn.execute("SELECT sum(down), sum(up), sum(unknown) FROM ticks").fetchone() == (0, 0, 0)
    assert local_server.hits.total == 0


@pytest.mark.parametrize(
    ("period_min", "aligned"), [(1, False), (5, False), (7, False), (5, True), (45, False), (60, True)]
)
def test_a_problem_seen_at_every_due_minute_is_said_once_an_hour(period_min: int, aligned: bool) -> None:
    for monitor_id in (1, 3, 44):
        said = [
            minute // 60
            for minute in range(MINUTE, MINUTE + 24 * 60)
            if schedule.is_due(minute, monitor_id, period_min, aligned)
            and schedule.is_hourly_report_minute(minute, period_min)
        ]
        # said in exactly one due minute of each hour: any period_min minutes in a row hold one
        assert said == [MINUTE // 60 + hour for hour in range(24)], (monitor_id, said)


class CountingGuard(AddressGuard):
    """The real guard, counting the lookups it judges: one a probe attempt."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def check(self, addresses: Iterable[IPAddress]) -> None:  # every kind's lookup is judged here
        self.asked += 1
        super().check(addresses)


@pytest.mark.parametrize("scheme", ["http", "tcp"])
def test_a_refusal_is_final_for_the_tick_and_never_waits_out_a_retry(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, scheme: str
) -> None:
    url = local_server.url("/ok") if scheme == "http" else f"tcp://127.0.0.1:{local_server.port}"
    monitor = add(conn, url, retries=2, timeout_s=20)
    guard = CountingGuard()
    report = run_tick(TickOptions(db_path, retry_delay_s=1, guard=guard))
    cause = "blocked: 127.0.0.1 is not a public address"
    cause = cause if scheme == "http" else f"tcp: {cause}"
    assert (report.refused, report.results) == ([(monitor, f"refused by --block-private: {cause}")], [])
    assert guard.asked == 1  # nothing was probed, so nothing is tried again
    assert local_server.hits.total == 0
