"""Probe many monitors at once: `concurrency` workers start probes continuously (a slow host
holds one worker, never a batch, and a hanging one only for `slot_hold_s`), never more than
`max_in_flight` running at once, and even a bug in one probe is that monitor's failed check,
never the tick's. Every kind's probes share it, and the tick's one HTTP engine (probes/curl.py).

Workers take the next monitor as soon as they are free, so the tick's makespan is close to
max(sum of latencies / concurrency, slowest latency) when the slowest probes start first. The
tick hands them over in the order of `start_order`: the monitors that were up first (a hanging
host never keeps them waiting), then those whose previous due check was never decided (cut off
by the budget, or new), longest waiting first, so no monitor is cut off tick after tick; then
those that failed.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import queue
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from monitor_tick.core import clock
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult, Recent
from monitor_tick.core.redact import redact_url
from monitor_tick.probes import PROBES, ProbeContext, resolved
from monitor_tick.probes.guard import is_refusal
from monitor_tick.probes.request import hide_values

MIN_ATTEMPT_S = 0.1  # a retry with less time left than this is not worth starting
CUT_OFF = ProbeResult("unknown", None, None, "cut off by the tick's time budget")


_Call = tuple[concurrent.futures.Future[Any], Any, tuple[Any, ...], dict[str, Any]]


class DaemonThreads(concurrent.futures.ThreadPoolExecutor):
    """The loop's default executor, which runs DNS lookups: each call starts at once, on a
    daemon thread that is idle or else a new one (the fan-out already bounds how many run at
    once), so a slow resolver delays each probe by its own lookup only, never one queued behind
    it. A thread whose lookup ended waits for the next one: starting a thread cost a check more
    than its lookup. A lookup stuck in the resolver must not hold the tick after its probe gave
    up: asyncio.run waits for the default executor, and Python joins a ThreadPoolExecutor's
    threads at exit. Here shutdown returns at once, the idle threads end, and a stuck one dies
    with the process. (It is a ThreadPoolExecutor only because asyncio accepts nothing else;
    none of its own threads is started.)"""

    def __init__(self) -> None:
        super().__init__()
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._idle = 0  # threads waiting for a call, each to take one from _calls
        self._ended = False
        self._count_lock = threading.Lock()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        call = (future, fn, args, kwargs)
        with self._count_lock:
            idle = self._idle > 0
            if idle:
                self._idle -= 1
        if idle:  # an idle thread is sure to take it: it counted itself idle before it waited
            self._calls.put(call)
        else:
            threading.Thread(target=self._run, args=(call,), name="monitor-tick-lookup", daemon=True).start()
        return future

    def _run(self, call: _Call | None) -> None:
        while call is not None:
            future, fn, args, kwargs = call
            call = None
            if not future.set_running_or_notify_cancel():
                continue  # cancelled before it ran: wait for no other
            try:
                outcome, failed = fn(*args, **kwargs), None
            except BaseException as exc:  # noqa: BLE001 -- handed to the awaiting probe
                outcome, failed = None, exc
            with self._count_lock:  # idle before the caller hears: its next call finds this thread
                ended = self._ended
                if not ended:
                    self._idle += 1
            if failed is None:
                future.set_result(outcome)
            else:
                future.set_exception(failed)
            del future, fn, args, kwargs, outcome, failed  # nothing of a call is kept while waiting
            if ended:
                return
            call = self._calls.get()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._count_lock:
            self._ended = True
            idle, self._idle = self._idle, 0
        for _ in range(idle):
            self._calls.put(None)


async def probe_with_retries(monitor: Monitor, ctx: ProbeContext, retry_delay_s: float) -> ProbeResult:
    """Probe; on `down`, pause and try again up to monitor.retries times. All attempts share
    the monitor's one deadline (timeout_s): a probe that timed out is not retried, and no
    probe outlives its deadline, however many retries it has. A --block-private refusal is
    final: nothing was probed, and the next attempt would be refused alike. The probe gets the monitor with
    its URL's ${ENV_VAR} references resolved (the tick set aside those it cannot resolve), and
    its cause never holds their values."""
    probe = PROBES[monitor.kind].probe
    sent = resolved(monitor)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + monitor.timeout_s
    result = await probe(sent, ctx)
    for _ in range(monitor.retries):
        if result.status != "down" or is_refusal(result.cause):
            break
        left_s = deadline - loop.time() - retry_delay_s
        if left_s < MIN_ATTEMPT_S:
            break
        if retry_delay_s > 0:
            await asyncio.sleep(retry_delay_s)
        result = await probe(sent._replace(timeout_s=left_s), ctx)
    if result.cause is not None and sent is not monitor:
        result = result._replace(cause=hide_values(result.cause, monitor))
    return result


async def probe_all(
    monitors: Sequence[Monitor],
    ctx: ProbeContext,
    *,
    concurrency: int,
    retry_delay_s: float,
    budget_s: float | None = None,
    order: Iterable[int] | None = None,
    slot_hold_s: float | None = None,
    max_in_flight: int | None = None,
) -> list[ProbeResult]:
    """One result per monitor, in the order of `monitors`; `order` (indexes into `monitors`,
    each once) is the order in which probes start, default first to last. `concurrency` workers
    each start the next probe when theirs ended or has run `slot_hold_s` (None: at its end); a
    probe that gave its slot away runs on to its own deadline. At most `max_in_flight` probes
    (default `concurrency`) run at once: a worker waits for one to end before starting another.
    Probes still running, or not yet started, when `budget_s` runs out are cancelled and come
    back `unknown`: our limit, not an outage."""
    pool = Pool(
        ctx, concurrency=concurrency, retry_delay_s=retry_delay_s, slot_hold_s=slot_hold_s, max_in_flight=max_in_flight
    )
    batch = pool.submit(monitors, order)
    waiting = asyncio.ensure_future(batch.ended())
    try:
        await asyncio.wait([waiting], timeout=budget_s)
    finally:
        await pool.close()
        waiting.cancel()
    return batch.results()


class Batch:
    """Monitors handed to a Pool together: their results, once each probe has ended (CUT_OFF
    for those the pool's close cut off), and whether every probe has given its worker back."""

    def __init__(self, monitors: Sequence[Monitor]) -> None:
        self.monitors = monitors
        self._results: list[ProbeResult | None] = [None] * len(monitors)
        self._left = len(monitors)  # probes not ended
        self._ended = asyncio.get_running_loop().create_future()
        self._holding = len(monitors)  # probes not started, or holding their worker
        self.released = asyncio.Event()  # every probe ended or gave its worker away
        if not monitors:
            self._ended.set_result(None)
            self.released.set()

    async def ended(self) -> list[ProbeResult]:
        """Every result, once each probe has ended or was cut off (Pool.close)."""
        await asyncio.shield(self._ended)
        return self.results()

    def results(self) -> list[ProbeResult]:
        """The results so far: CUT_OFF for probes not ended."""
        return [CUT_OFF if result is None else result for result in self._results]

    def _record(self, index: int, result: ProbeResult) -> None:
        self._results[index] = result
        self._left -= 1
        if self._left == 0 and not self._ended.done():
            self._ended.set_result(None)

    def _cut_off(self) -> None:
        if not self._ended.done():
            self._ended.set_result(None)
        self.released.set()

    def _release_one(self) -> None:
        self._holding -= 1
        if self._holding == 0:
            self.released.set()


class _Hold:
    """A probe's hold on its worker: from `started` (the loop's time) until the probe ends or
    has run the pool's slot_hold_s."""

    __slots__ = ("batch", "started", "holding")

    def __init__(self, batch: Batch, started: float) -> None:
        self.batch, self.started, self.holding = batch, started, True


class Pool:
    """`concurrency` workers that probe the monitors of every batch handed to them (submit), in
    the order handed (a batch's own `order` within it): a tick that hands in more monitors while
    probing (a PostgreSQL tick's next share, run/shares.py) keeps its workers busy. Each worker
    starts the next probe when its own ended or has run `slot_hold_s`; at most `max_in_flight`
    probes run at once (see probe_all). Make it on the running loop; close cancels every probe
    still running or waiting (their results are CUT_OFF).

    A worker is a count, not a task: a probe that ends, or whose hold runs out, starts the next
    one itself. Holds run out in the order they began, so one timer, set for the oldest hold
    still held, serves them all: a check that ends in milliseconds makes no timer."""

    def __init__(
        self,
        ctx: ProbeContext,
        *,
        concurrency: int,
        retry_delay_s: float,
        slot_hold_s: float | None = None,
        max_in_flight: int | None = None,
    ) -> None:
        self._ctx = ctx
        self._retry_delay_s = retry_delay_s
        self._slot_hold_s = slot_hold_s
        self._loop = asyncio.get_running_loop()
        self._queue: collections.deque[tuple[Batch, int]] = collections.deque()
        self._free = concurrency  # workers with no probe holding them
        # file descriptors and the resolver's threads are finite: a probe holds both until its end
        self._in_flight = 0
        self._max_in_flight = max_in_flight or concurrency
        self._holds: collections.deque[_Hold] = collections.deque()  # in the order they began
        self._hold_timer: asyncio.TimerHandle | None = None
        self._probes: set[asyncio.Task[None]] = set()
        self._batches: list[Batch] = []
        self._closed = False
        self.changed = asyncio.Event()  # set when a worker takes a monitor or gives its worker back

    @property
    def waiting(self) -> int:
        """Monitors handed in that no worker has started yet."""
        return len(self._queue)

    def submit(self, monitors: Sequence[Monitor], order: Iterable[int] | None = None) -> Batch:
        """Hand in `monitors`, started in `order` (indexes, each once; default first to last)
        after every monitor handed in before."""
        indexes = list(range(len(monitors)) if order is None else order)
        if sorted(indexes) != list(range(len(monitors))):
            raise ValueError(f"order is not each of {len(monitors)} monitors once: {indexes[:5]}")
        batch = Batch(monitors)
        self._batches.append(batch)
        self._queue.extend((batch, index) for index in indexes)
        self._start()
        return batch

    def _start(self) -> None:
        """Start the next probes while a worker is free and fewer than max_in_flight run."""
        if self._closed:
            return
        started = False
        while self._queue and self._free and self._in_flight < self._max_in_flight:
            batch, index = self._queue.popleft()
            self._free -= 1
            self._in_flight += 1
            hold = _Hold(batch, self._loop.time())
            task = self._loop.create_task(self._probe(batch, index, hold))
            self._probes.add(task)
            if self._slot_hold_s is not None:
                # a hanging host would otherwise keep healthy monitors queued behind it until the
                # budget cuts them off; waiting on it costs a socket, not a slot
                self._holds.append(hold)
                if self._hold_timer is None:
                    self._hold_timer = self._loop.call_at(hold.started + self._slot_hold_s, self._holds_run_out)
            started = True
        if started:
            self.changed.set()

    def _give_back(self, hold: _Hold) -> None:
        """The probe of `hold` gives its worker back: at its end, or when it has held it long enough."""
        if hold.holding:
            hold.holding = False
            self._free += 1
            hold.batch._release_one()
            self.changed.set()

    def _holds_run_out(self) -> None:
        """Give back the workers of the probes that have held theirs slot_hold_s, and set the
        timer for the oldest hold still held."""
        assert self._slot_hold_s is not None
        self._hold_timer = None
        now = self._loop.time()
        holds = self._holds
        while holds and (not holds[0].holding or holds[0].started + self._slot_hold_s <= now):
            self._give_back(holds.popleft())
        if holds:
            self._hold_timer = self._loop.call_at(holds[0].started + self._slot_hold_s, self._holds_run_out)
        self._start()

    async def _probe(self, batch: Batch, index: int, hold: _Hold) -> None:
        """The monitor's check, its result in `batch`; a bug in a probe is that monitor's failed
        check. At its end it gives its worker back, if its hold had not already, and the next
        probe starts."""
        try:
            monitor = batch.monitors[index]
            try:
                result = await probe_with_retries(monitor, self._ctx, self._retry_delay_s)
            except Exception as exc:
                result = failed_inside(monitor, exc)
            batch._record(index, result)
        finally:
            self._in_flight -= 1
            self._probes.discard(asyncio.current_task())  # type: ignore[arg-type]
            self._give_back(hold)
            self._start()

    async def close(self) -> None:
        """Cancel every probe; results not in by now are CUT_OFF."""
        self._closed = True
        self._queue.clear()
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        tasks = list(self._probes)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for batch in self._batches:
            batch._cut_off()


def failed_inside(monitor: Monitor, exc: BaseException) -> ProbeResult:
    """A bug in a probe of `monitor`: that monitor's failed check, never the tick's, said in one
    line on stderr (shown: no secret)."""
    detail = shown(str(exc), monitor)
    print(
        f"monitor-tick: probe of monitor {monitor.id} failed inside monitor-tick: {type(exc).__name__}: {detail}",
        file=sys.stderr,
    )
    return ProbeResult("down", None, None, f"probe error: {type(exc).__name__}")


def shown(text: str, monitor: Monitor) -> str:
    """`text` with the monitor's URL, as stored or as its probe was sent it, redacted, and any
    other value the tick resolved for it named by its reference."""
    try:
        sent = resolved(monitor).url
    except InvalidMonitor:
        sent = monitor.url
    for url in dict.fromkeys((sent, monitor.url)):
        text = text.replace(url, redact_url(monitor.url))
    return hide_values(text, monitor)


_NEVER_CHECKED: Recent = (0, None, -1)


def start_order(monitors: Sequence[Monitor], recent: Mapping[int, Recent], minute: int) -> list[int]:
    """Indexes of `monitors` in the order their probes start in `minute`.

    `recent` maps a monitor id to its newest rollup hour (store.recent_rollups). Three groups,
    each whole before the next:
    1. monitors whose previous due check was decided and that have no failure in their newest
       hour: they were up, and cost milliseconds, so a host that hangs never keeps them waiting;
       the slowest first (longest-processing-time-first keeps the makespan near its bound);
    2. monitors whose previous due check was not decided -- no check since the start of the
       minute one interval back: cut off by the budget, never checked, or monitor-tick was not
       running -- the longest waiting first, so none is cut off for ever;
    3. monitors that failed in their newest hour (a hanging host among them): each counts as its
       whole timeout, the longest first."""
    minute_start_ms = clock.minute_start_ms(minute)

    def key(index: int) -> tuple[int, float, int]:
        monitor = monitors[index]
        failures, latency_ms_max, last_check_ms = recent.get(monitor.id, _NEVER_CHECKED)
        if last_check_ms < minute_start_ms - clock.s_to_ms(monitor.effective_interval_sec):
            return (2, last_check_ms, index)  # undecided: oldest last check first
        if failures:
            return (3, -monitor.timeout_s, index)
        return (1, -(latency_ms_max or 0), index)

    return sorted(range(len(monitors)), key=key)
