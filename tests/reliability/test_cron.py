"""Cron misbehaves: doubled, overlapping and missed minutes. Every monitor is probed exactly
as often as its schedule says, never twice for a minute, and "monitor-tick was not running"
stays distinguishable from "the site was down"."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from freezegun import freeze_time

from monitor_tick import store
from monitor_tick.core import clock, schedule
from monitor_tick.run.report import TickReport
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import LocalServer, send_response

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
DAY_START = 29_934_720  # 2026-12-01T00:00Z


def at(minute: int, second: int = 7) -> str:
    return clock.iso_from_ms(clock.minute_start_ms(minute) + second * 1000)


class Gate:
    """A route that holds its answer until the test opens the gate; answers `status`.
    Armed with `hold_next()`, it holds only the next request and lets later ones through."""

    def __init__(self, server: LocalServer, path: str) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()
        self.status = 200
        self._hold_only_next = False
        server.route(path, self.handle)

    def hold_next(self) -> None:
        self.entered.clear()
        self.open.clear()
        self._hold_only_next = True

    async def handle(self, reader: object, writer: object, path: str, method: str) -> None:
        status = self.status  # decided when the request arrives
        held = not self.open.is_set()
        if self._hold_only_next:
            self._hold_only_next = False
        elif held and self.entered.is_set():
            held = False  # armed for one request only: later ones pass
        self.entered.set()
        if held:
            await asyncio.to_thread(self.open.wait, 30)
        await send_response(writer, status, b"gate", method=method)  # type: ignore[arg-type]


# --- doubled ---------------------------------------------------------------------------------


def test_two_ticks_racing_for_the_same_minute_probe_once_many_times_over(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    monitors = [add(conn, local_server.url(f"/ok?m={n}"), name=f"m{n}") for n in range(3)]
    rounds = 40
    for round_ in range(rounds):
        start = threading.Barrier(2)
        reports: list[TickReport] = []

        def tick(
            minute: int = DAY_START + round_, start: threading.Barrier = start, reports: list[TickReport] = reports
        ) -> None:
            start.wait()
            reports.append(run_tick(TickOptions(db_path=db_path, minute=minute, verify=False)))

        threads = [threading.Thread(target=tick) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert sorted(r.claimed for r in reports) == [False, True], round_
    assert local_server.hits["/ok"] == rounds * len(monitors)
    assert all(rollup(conn, m) == (rounds, 0) for m in monitors)


def test_two_processes_started_together_for_one_minute_probe_once(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    # Two cron lines, or two hosts sharing the file: the same claim decides.
    monitor = add(conn, local_server.url("/ok"))
    for round_ in range(4):
        minute = str(DAY_START + round_)
        procs = [
            subprocess.Popen(
                [MONITOR_TICK, "--db", db_path, "--minute", minute, "--json"], stdout=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        outputs = [p.communicate(timeout=60)[0] for p in procs]
        assert sorted('"claimed":true' in out for out in outputs) == [False, True], outputs
    assert local_server.hits["/ok"] == 4 and rollup(conn, monitor) == (4, 0)


# --- overlapping -----------------------------------------------------------------------------


def test_an_overlapping_older_tick_that_commits_last_does_not_flip_state_back(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    gate = Gate(local_server, "/gate")
    monitor = add(conn, local_server.url("/gate"), retries=0)
    gate.hold_next()
    gate.status = 503  # tick M sees the site down, but its answer is held...
    older: list[TickReport | BaseException] = []
    thread = threading.Thread(
        target=lambda: older.append(_run_catching(TickOptions(db_path=db_path, minute=DAY_START)))
    )
    thread.start()
    assert gate.entered.wait(10)
    gate.status = 200  # ...while tick M+1 sees it up and commits first
    newer = run_tick(TickOptions(db_path=db_path, minute=DAY_START + 1))
    assert newer.summary is not None and newer.summary.up == 1
    gate.open.set()
    thread.join(30)
    report = older[0]
    assert isinstance(report, TickReport) and report.summary is not None
    assert (report.summary.down, report.summary.stale, report.summary.opened) == (1, 1, [])
    assert rollup(conn, monitor) == (2, 1)  # both checks counted...
    assert store.incidents_for(conn, monitor) == []  # ...but the newest (up) decides the state


def test_an_overlapping_newer_down_result_is_kept_when_the_older_up_result_commits_last(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    ok_first = Gate(local_server, "/slow-ok")
    monitor = add(conn, local_server.url("/slow-ok"), retries=0)
    reports: list[TickReport] = []
    older = threading.Thread(target=lambda: reports.append(run_tick(TickOptions(db_path=db_path, minute=DAY_START))))
    older.start()
    assert ok_first.entered.wait(10)  # tick M is waiting for an answer that will be 200
    conn.execute("UPDATE monitors SET url = ? WHERE id = ?", (local_server.url("/status/503"), monitor))
    newer = run_tick(TickOptions(db_path=db_path, minute=DAY_START + 1))  # M+1: down, commits first
    assert newer.summary is not None and newer.summary.opened == [monitor]
    ok_first.open.set()
    older.join(30)
    assert reports[0].summary is not None and reports[0].summary.stale == 1
    assert [resolved for _, resolved, _ in store.incidents_for(conn, monitor)] == [None]  # still down


# --- missed ----------------------------------------------------------------------------------


def test_a_live_tick_catches_up_skipped_minutes_probing_each_due_monitor_once(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    every_minute = add(conn, local_server.url("/ok?every=1"))
    five = add(conn, local_server.url("/ok?every=5"), every_s=300)  # id 2: due at minute % 5 == 2
    options = TickOptions(db_path=db_path, retry_delay_s=0)
    with freeze_time(at(DAY_START), real_asyncio=True) as frozen:
        run_tick(options)
        frozen.move_to(at(DAY_START + 4))  # cron skipped 1, 2 and 3; five was due in 2
        report = run_tick(options)
    assert report.covered == [DAY_START + 1, DAY_START + 2, DAY_START + 3] and report.missed == 0
    assert rollup(conn, every_minute) == (2, 0)  # once per run, not once per minute
    assert rollup(conn, five) == (1, 0)
    covered = conn.execute("SELECT minute FROM ticks WHERE covered_by = ? ORDER BY minute", (DAY_START + 4,)).fetchall()
    assert covered == [(DAY_START + 1,), (DAY_START + 2,), (DAY_START + 3,)]


def test_minutes_older_than_the_window_are_recorded_as_missed(conn: sqlite3.Connection, db_path: str) -> None:
    options = TickOptions(db_path=db_path, catch_up_minutes=15)
    with freeze_time(at(DAY_START), real_asyncio=True) as frozen:
        run_tick(options)
        frozen.move_to(at(DAY_START + 30))
        report = run_tick(options)
    assert (len(report.covered), report.missed) == (15, 14)
    rows = conn.execute("SELECT missed, count(*), min(minute), max(minute) FROM ticks GROUP BY missed").fetchall()
    assert rows == [(0, 17, DAY_START, DAY_START + 30), (1, 14, DAY_START + 1, DAY_START + 14)]


def test_a_replayed_minute_never_catches_up(conn: sqlite3.Connection, db_path: str) -> None:
    run_tick(TickOptions(db_path=db_path, minute=DAY_START))
    report = run_tick(TickOptions(db_path=db_path, minute=DAY_START + 10))
    assert (report.covered, report.missed) == ([], 0)
    assert conn.execute("SELECT count(*) FROM ticks").fetchone() == (2,)


def test_the_first_tick_ever_does_not_invent_a_history(conn: sqlite3.Connection, db_path: str) -> None:
    with freeze_time(at(DAY_START), real_asyncio=True):
        report = run_tick(TickOptions(db_path=db_path))
    assert (report.covered, report.missed) == ([], 0)


# --- exactly once over a day -----------------------------------------------------------------


def _run_catching(options: TickOptions) -> TickReport | BaseException:
    try:
        return run_tick(options)
    except BaseException as exc:  # noqa: BLE001 -- handed to the test thread
        return exc


def _expected_probes(conn: sqlite3.Connection, groups: list[list[int]]) -> dict[int, int]:
    """Per monitor: the runs (each a group of minutes it covered, its own minute first) in which
    it was due, by the pure schedule, with plans and maintenance judged at the run's time."""
    default_floor = conn.execute("SELECT min_interval_sec FROM plans WHERE id = 1").fetchone()[0]
    rows = conn.execute(
        "SELECT m.id, m.interval_sec, m.aligned, m.owner_id, p.min_interval_sec, o.plan_expires_at_ms "
        "FROM monitors m LEFT JOIN owners o ON o.id = m.owner_id LEFT JOIN plans p ON p.id = o.plan_id"
    ).fetchall()
    windows = conn.execute("SELECT monitor_id, starts_at_ms, ends_at_ms FROM maintenance_windows").fetchall()
    expected = {}
    for monitor_id, interval_sec, aligned, _, plan_floor, expires in rows:

        def due(
            minute: int,
            at_ms: int,
            monitor_id: int = monitor_id,
            row: tuple[int, int, int | None, int | None] = (interval_sec, aligned, plan_floor, expires),
        ) -> bool:
            interval, is_aligned, floor_sec, expires_ms = row
            if any(w == monitor_id and schedule.in_window(at_ms, s, e) for w, s, e in windows):
                return False
            floor = schedule.plan_floor_sec(floor_sec, expires_ms, default_floor, at_ms)
            period = schedule.effective_interval_min(interval, floor)
            return schedule.is_due(minute, monitor_id, period, bool(is_aligned))

        expected[monitor_id] = sum(
            1 for group in groups if any(due(m, clock.minute_start_ms(group[0]) + 7_000) for m in group)
        )
    return expected


def test_a_day_of_doubled_skipped_and_overlapping_minutes_probes_exactly_per_schedule(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    intervals = [60, 60, 120, 300, 300, 600, 900, 1800, 3600, 3600, 7200, 21600, 86400]
    store.add_plan(conn, "floor10", 600)
    store.add_owner(conn, "capped", "floor10", None)
    store.add_owner(conn, "lapsing", "floor10", clock.minute_start_ms(DAY_START + 700))
    ids = []
    for n, interval in enumerate(intervals * 2):
        owner = "capped" if n % 7 == 3 else "lapsing" if n % 7 == 5 else None
        ids.append(add(conn, local_server.url(f"/m{n}"), every_s=interval, aligned=n % 3 == 0, owner=owner, retries=0))
    store.add_maintenance(
        conn,
        monitor_ref=str(ids[0]),
        owner_name=None,
        starts_at_ms=clock.minute_start_ms(DAY_START + 100),
        ends_at_ms=clock.minute_start_ms(DAY_START + 160),
    )
    gate = Gate(local_server, "/gated")
    gated = add(conn, local_server.url("/gated"), retries=0)  # 1-minute: due in every run
    ids.append(gated)
    gate.open.set()  # open: requests pass until hold_next() arms it

    skipped = {m for m in range(DAY_START, DAY_START + 1440) if m % 97 in (5, 6, 7) or m % 331 == 20}
    doubled = {m for m in range(DAY_START, DAY_START + 1440) if m % 53 == 11} - skipped
    overlapped = {m for m in range(DAY_START, DAY_START + 1440) if m % 211 == 100} - skipped - doubled
    groups: list[list[int]] = []
    pending_skipped: list[int] = []
    options = TickOptions(db_path=db_path, retry_delay_s=0, verify=False)
    with freeze_time(at(DAY_START), real_asyncio=True) as frozen:
        minute = DAY_START
        while minute < DAY_START + 1440:
            if minute in skipped:
                pending_skipped.append(minute)
                minute += 1
                continue
            frozen.move_to(at(minute))
            if minute in overlapped and minute + 1 not in skipped:
                # tick `minute` is still probing when tick `minute + 1` runs and finishes
                gate.hold_next()
                slow: list[TickReport | BaseException] = []
                thread = threading.Thread(target=lambda slow=slow: slow.append(_run_catching(options)))
                thread.start()
                assert gate.entered.wait(10), slow
                frozen.move_to(at(minute + 1))
                assert run_tick(options).claimed  # answered at once: only M's request is held
                gate.open.set()
                thread.join(30)
                assert isinstance(slow[0], TickReport) and slow[0].claimed, slow
                groups.append([minute, *pending_skipped])
                groups.append([minute + 1])
                pending_skipped = []
                minute += 2
                continue
            report = run_tick(options)
            assert report.claimed and sorted(report.covered) == sorted(pending_skipped), minute
            groups.append([minute, *pending_skipped])
            pending_skipped = []
            if minute in doubled:
                assert not run_tick(options).claimed
            minute += 1

    expected = _expected_probes(conn, groups)
    hits = local_server.hits
    for n, monitor in enumerate(ids[:-1]):
        assert hits[f"/m{n}"] == expected[monitor], (n, monitor)
    assert hits["/gated"] == expected[gated] == len(groups)
    assert sum(expected.values()) > 3_000  # a real day's work, not a trivial one
    ledger = conn.execute("SELECT count(*), count(finished_at_ms), sum(missed) FROM ticks").fetchone()
    assert ledger == (1440, 1440, 0)


def test_catching_up_skips_a_monitor_that_is_in_maintenance_now(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    monitor = add(conn, local_server.url("/ok"))
    store.add_maintenance(
        conn,
        monitor_ref=str(monitor),
        owner_name=None,
        starts_at_ms=clock.minute_start_ms(DAY_START + 10),
        ends_at_ms=clock.minute_start_ms(DAY_START + 70),
    )
    with freeze_time(at(DAY_START), real_asyncio=True) as frozen:
        run_tick(TickOptions(db_path=db_path))
        frozen.move_to(at(DAY_START + 10))  # cron missed 1..9, before the window; it is in force now
        report = run_tick(TickOptions(db_path=db_path))
    assert len(report.covered) == 9 and report.due == []
    assert local_server.hits["/ok"] == 1 and rollup(conn, monitor) == (1, 0)
