"""Fan-out: bounded workers, results in monitor order, slowest expected probes first."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest
from freezegun import freeze_time

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import CheckResult, Monitor, ProbeResult
from monitor_tick.probes import PROBES, ProbeContext
from monitor_tick.run.fanout import DaemonThreads, probe_all, start_order
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add
from tests.servers import LocalServer

MINUTE = 29_934_720  # 2026-12-01T00:00Z


def monitor(monitor_id: int, timeout_s: float = 10.0) -> Monitor:
    return Monitor(
        id=monitor_id,
        name=f"m{monitor_id}",
        kind="http",
        url=f"http://m{monitor_id}.test/",
        interval_sec=60,
        effective_interval_sec=60,
        timeout_s=timeout_s,
        retries=0,
    )


LAST_MINUTE_MS = clock.minute_start_ms(MINUTE - 1)  # checked in the previous due minute (every 1m)


def test_monitors_that_were_up_start_first_slowest_first_and_those_that_failed_last() -> None:
    monitors = [monitor(1), monitor(2), monitor(3, timeout_s=7), monitor(4), monitor(5), monitor(6, timeout_s=3)]
    recent = {1: (0, 40), 2: (0, 5_000), 3: (1, None), 4: (0, None), 5: (0, 60), 6: (2, 20)}
    recent = {m: (*values, LAST_MINUTE_MS) for m, values in recent.items()}
    # 4 has no latency (0): last of those that were up. 3 and 6 failed last hour (a hanging host
    # may take its whole deadline): after every monitor that was up, the longest timeout first
    assert [monitors[i].id for i in start_order(monitors, recent, MINUTE)] == [2, 5, 1, 4, 3, 6]


def test_without_history_probes_start_in_monitor_order() -> None:
    monitors = [monitor(i) for i in range(1, 6)]
    assert start_order(monitors, {}, MINUTE) == [0, 1, 2, 3, 4]


def test_monitors_whose_previous_due_check_was_not_decided_start_next_longest_waiting_first() -> None:
    monitors = [monitor(i) for i in range(1, 7)]
    recent = {
        1: (0, 5_000, LAST_MINUTE_MS),  # slow, checked in its previous due minute
        2: (1, None, LAST_MINUTE_MS - 60_000),  # cut off last minute, checked the one before
        3: (0, 10, LAST_MINUTE_MS - 120_000),  # cut off the last two minutes
        5: (0, 10, LAST_MINUTE_MS + 5_000),  # checked during the previous minute
    }
    # 1 and 5 were decided (up) and start first; 4 and 6 were never checked (new, or cut off
    # every time so far): of the undecided, they wait longest
    assert [monitors[i].id for i in start_order(monitors, recent, MINUTE)] == [1, 5, 4, 6, 3, 2]


def test_probe_all_keeps_at_most_concurrency_in_flight_starts_in_order_and_returns_in_monitor_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[int] = []
    in_flight = 0
    most = 0

    async def fake(m: Monitor, ctx: ProbeContext) -> ProbeResult:
        nonlocal in_flight, most
        started.append(m.id)
        in_flight += 1
        most = max(most, in_flight)
        for _ in range(m.id % 4 + 1):  # finish in a different order than started
            await asyncio.sleep(0)
        in_flight -= 1
        return ProbeResult("up", m.id, 200, None)

    monkeypatch.setitem(PROBES, "http", PROBES["http"]._replace(probe=fake))
    monitors = [monitor(i) for i in range(1, 21)]
    order = list(reversed(range(20)))
    results = asyncio.run(
        probe_all(monitors, ProbeContext(None, 0, None), concurrency=3, retry_delay_s=0, order=order)  # type: ignore[arg-type]
    )
    assert most == 3
    assert started == [monitors[i].id for i in order]
    assert [r.latency_ms for r in results] == [m.id for m in monitors]


def test_a_bug_in_one_probe_is_its_failure_and_the_worker_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fake(m: Monitor, ctx: ProbeContext) -> ProbeResult:
        if m.id == 2:
            raise KeyError("bug")
        return ProbeResult("up", 1, 200, None)

    monkeypatch.setitem(PROBES, "http", PROBES["http"]._replace(probe=fake))
    results = asyncio.run(
        probe_all([monitor(i) for i in (1, 2, 3)], ProbeContext(None, 0, None), concurrency=1, retry_delay_s=0)
    )  # type: ignore[arg-type]
    assert [r.status for r in results] == ["up", "down", "up"]
    assert results[1].cause == "probe error: KeyError"


def test_a_probe_is_sent_its_url_resolved_and_a_bug_quoting_it_prints_neither_values_nor_secrets(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sent: list[str] = []

    async def fake(m: Monitor, ctx: ProbeContext) -> ProbeResult:
        sent.append(m.url)
        raise KeyError(f"bug while sending {m.url}")

    monkeypatch.setitem(PROBES, "http", PROBES["http"]._replace(probe=fake))
    monkeypatch.setenv("MT_TEST_HOST", "internal.example.test")
    monkeypatch.setenv("MT_TEST_KEY", "k-0123456789")
    template = monitor(1)._replace(url="http://${MT_TEST_HOST}/x?key=${MT_TEST_KEY}&kind=typed-in")
    results = asyncio.run(probe_all([template], ProbeContext(None, 0, None), concurrency=1, retry_delay_s=0))  # type: ignore[arg-type]
    assert sent == ["http://internal.example.test/x?key=k-0123456789&kind=typed-in"]
    assert results[0].cause == "probe error: KeyError"
    err = capsys.readouterr().err
    assert err == (
        "monitor-tick: probe of monitor 1 failed inside monitor-tick: KeyError: "
        "'bug while sending http://${MT_TEST_HOST}/x?key=***&kind=***'\n"
    )


def test_recent_rollups_reads_each_monitors_newest_hour(any_db: str) -> None:
    """On both engines (PostgreSQL writes a round's rollups in one statement)."""
    conn = store.open_db(any_db)
    a, b, c = add(conn, "http://a.test/"), add(conn, "http://b.test/"), add(conn, "http://c.test/")
    hour_ms = clock.minute_start_ms(MINUTE)
    for minute in (MINUTE - 60, MINUTE - 59):  # the previous hour: a slow, b down
        at_ms = clock.minute_start_ms(minute)
        results = [CheckResult(a, "up", 900), CheckResult(b, "down", None, None, "timeout")]
        store.write_results(conn, [], at_ms, results, at_ms)
    store.write_results(conn, [], hour_ms, [CheckResult(a, "up", 30)], hour_ms)  # this hour: a fast
    last_ms = clock.minute_start_ms(MINUTE - 59)
    assert store.recent_rollups(conn, [a, b, c]) == {a: (0, 30, hour_ms), b: (2, None, last_ms)}
    # a late tick's older check, counted after a newer one, leaves the newest check's time
    newer_ms = hour_ms + 60_000
    store.write_results(conn, [], newer_ms, [CheckResult(b, "up", 10)], newer_ms)
    store.write_results(conn, [], hour_ms, [CheckResult(b, "up", 10)], hour_ms)
    assert store.recent_rollups(conn, [b])[b] == (0, 10, newer_ms)
    conn.close()
    assert store.recent_rollups(conn, []) == {}


def test_a_tick_probes_last_hours_slowest_monitor_first(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    fast, slow = add(conn, local_server.url("/ok?fast")), add(conn, local_server.url("/ok?slow"))
    at_ms = clock.minute_start_ms(MINUTE - 1)
    store.write_results(conn, [], at_ms, [CheckResult(fast, "up", 20), CheckResult(slow, "up", 4_000)], at_ms)
    with freeze_time("2026-12-01 00:00:05", real_asyncio=True):
        run_tick(TickOptions(db_path=db_path, retry_delay_s=0, concurrency=1))
    assert [r.target for r in local_server.requests] == ["/ok?slow", "/ok?fast"]


def test_hanging_probes_give_their_worker_away_but_never_more_than_max_in_flight_run_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    in_flight = 0
    most = 0
    never = asyncio.Event()

    async def hang(m: Monitor, ctx: ProbeContext) -> ProbeResult:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await never.wait()  # a host that never answers; the budget ends the test
        raise AssertionError("unreachable")

    monkeypatch.setitem(PROBES, "http", PROBES["http"]._replace(probe=hang))
    results = asyncio.run(
        probe_all(
            [monitor(i) for i in range(1, 41)],
            ProbeContext(None, 0, None),  # type: ignore[arg-type]
            concurrency=2,
            retry_delay_s=0,
            budget_s=0.5,
            slot_hold_s=0.01,  # 50 holds fit the budget: uncapped, all 40 would start
            max_in_flight=8,
        )
    )
    assert most == 8
    assert {r.status for r in results} == {"unknown"}


def test_a_lookup_never_waits_behind_a_stuck_one_and_a_finished_ones_thread_takes_the_next() -> None:
    """The lookups' executor: a call stuck in the resolver holds its own thread only; the calls
    after it each start at once, one after another on the one thread that is idle; shutdown
    ends the idle threads, and the stuck one ends when its call does."""

    def lookup_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "monitor-tick-lookup"]

    before = set(lookup_threads())
    threads = DaemonThreads()
    stuck = threading.Event()
    first = threads.submit(stuck.wait)
    answers = [threads.submit(lambda n=n: n * n).result(timeout=10) for n in range(5)]
    assert answers == [0, 1, 4, 9, 16]
    assert not first.done()
    mine = set(lookup_threads()) - before
    assert len(mine) == 2  # the stuck call's, and one more for the five that followed it
    threads.shutdown(wait=False)
    stuck.set()
    assert first.result(timeout=10) is True
    for thread in mine:
        thread.join(timeout=10)
        assert not thread.is_alive()
