"""The machine's clock steps: backwards, or forwards for one tick and back. Catch-up stays
bounded, the gap is recorded as missed ("no data"), and the live ticks at the real time go on
probing, so an outage after the step is still reported: a live tick takes over any minute
claimed by a clock that read later than its own by more than a tick can run. (So after a step
back, the minutes between are run a second time: see docs/troubleshooting.md, "The clock steps".)

The installed command runs under a clock moved by MONITOR_TICK_TEST_CLOCK_OFFSET_MS (clock.py's
test-only offset); in-process ticks use freezegun."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from freezegun import freeze_time

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.integration.test_tick_end_to_end import Switch
from tests.servers import LocalServer

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
B = 29_934_720  # 2026-12-01T00:00Z
HOUR = 60


def live_tick(db: str, minute: int) -> dict[str, Any]:
    """One live tick of the installed command, its clock reading 20 s into `minute`."""
    offset_ms = clock.minute_start_ms(minute) + 20_000 - clock.now_ms()
    env = {**os.environ, "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(offset_ms)}
    done = subprocess.run(
        [MONITOR_TICK, "--db", db, "--json", "--retry-delay", "0", "--budget", "5s"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_clock_stepped_back_10_minutes_and_forward_3_hours_keeps_probing_with_catch_up_bounded(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    ok = add(conn, local_server.url("/ok"), created_at_ms=0, timeout_s=3)
    site = Switch(local_server, "/site")
    watched = add(
        conn, local_server.url("/site"), retries=0, created_at_ms=0, timeout_s=3
    )  # confirmed after 2 down checks
    runs = [live_tick(db_path, minute) for minute in (B, B + 1, B + 12)]
    assert [(r["claimed"], r["caught_up"], r["missed"]) for r in runs] == [(True, 0, 0), (True, 0, 0), (True, 10, 0)]

    # 10 minutes back: B + 12 caught those minutes up, but a clock 10 minutes ahead of ours
    # looks the same; the live ticks probe what is due rather than go blind for 10 minutes
    for minute in (B + 2, B + 3):
        back = live_tick(db_path, minute)
        assert (back["claimed"], back["due"], back["caught_up"]) == (True, 2, 0)
    assert live_tick(db_path, B + 13)["due"] == 2

    # one tick under a clock 3 hours ahead: it catches up 15 minutes, the rest is missed
    ahead = live_tick(db_path, B + 13 + 3 * HOUR)
    assert (ahead["claimed"], ahead["caught_up"], ahead["missed"]) == (True, 15, 3 * HOUR - 16)

    # back at the real time, the site goes down: the live ticks probe it, and it is reported
    site.status = 503
    first, second = live_tick(db_path, B + 14), live_tick(db_path, B + 15)
    assert (first["claimed"], first["due"], first["down"], first["opened"]) == (True, 2, 1, 1)
    assert (second["claimed"], second["down"], second["confirmed"]) == (True, 1, 1)
    assert conn.execute("SELECT state FROM incidents WHERE monitor_id = ?", (watched,)).fetchall() == [("confirmed",)]

    # every run that probed counted one check
    probing_runs = 9  # B, B+1, B+12, B+2, B+3, B+13, the run 3 hours ahead, B+14, B+15
    assert rollup(conn, ok) == (probing_runs, 0) and local_server.hits["/ok"] == probing_runs
    assert rollup(conn, watched) == (probing_runs, 2)
    # the minutes nobody probed are "no data" (not downtime) on the report and status page
    assert store.tick_gaps(conn, B, B + 13 + 3 * HOUR + 1) == [(B + 16, B + 13 + 3 * HOUR - 15)]

    # when the real time reaches the minutes the ahead run caught up, they are probed again
    reached = live_tick(db_path, B + 13 + 3 * HOUR - 10)
    assert (reached["claimed"], reached["due"], reached["down"]) == (True, 2, 1)


def test_after_a_tick_40_minutes_ahead_within_the_hour_an_outage_still_opens_an_incident(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    site = Switch(local_server, "/site")
    watched = add(conn, local_server.url("/site"), retries=0, created_at_ms=0, timeout_s=3)
    options = TickOptions(db_path=db_path, retry_delay_s=0)
    with freeze_time(clock.iso_from_ms(clock.minute_start_ms(B) + 5_000), real_asyncio=True) as frozen:
        run_tick(options)
        frozen.move_to(clock.iso_from_ms(clock.minute_start_ms(B + 40) + 5_000))  # the clock jumps ahead
        run_tick(options)
        site.status = 503
        reports = []
        for minute in (B + 1, B + 2):  # and back to the real time, in the same hour
            frozen.move_to(clock.iso_from_ms(clock.minute_start_ms(minute) + 5_000))
            reports.append(run_tick(options))
    assert [r.claimed for r in reports] == [True, True]
    assert [(r.summary.opened, r.summary.confirmed, r.summary.stale) for r in reports if r.summary] == [
        ([watched], [], 0),
        ([], [watched], 0),
    ]


def test_after_a_tick_16_minutes_ahead_the_minutes_it_caught_up_are_probed_at_the_real_time(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    site = Switch(local_server, "/site")
    watched = add(conn, local_server.url("/site"), retries=0, created_at_ms=0, timeout_s=3)
    live_tick(db_path, B)
    ahead = live_tick(db_path, B + 16)  # it catches up B+1 .. B+15: none is missed
    assert (ahead["claimed"], ahead["caught_up"], ahead["missed"]) == (True, 15, 0)
    site.status = 503
    runs = [live_tick(db_path, minute) for minute in (B + 1, B + 2)]
    assert [(r["claimed"], r["due"], r["down"], r["caught_up"]) for r in runs] == [(True, 1, 1, 0), (True, 1, 1, 0)]
    assert conn.execute("SELECT state FROM incidents WHERE monitor_id = ?", (watched,)).fetchall() == [("confirmed",)]
