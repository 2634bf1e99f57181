"""A tick whose checks are all plain HTTP, on the bare loop (probes/bare.py): asyncio is never
imported, the largest part of a small tick's cost (docs/performance.md, figure 8).

The bare loop takes a tick (`requests`) when the fast path is on (probing.fast_path) and every
due monitor is an HTTP check whose request the fast path sends itself (wire.request_of: a GET
with no body) and that is not remembered as handed over (probing.to_httpx). Any other tick runs
on asyncio's loop (fanout.py), as every PostgreSQL tick does, so that no check waits for another
loop.

The fan-out is fanout.probe_all's: probes start in `order`, `concurrency` at a time; one that has
run `slot_hold_s` gives its place to the next and runs on to its deadline; at most `max_in_flight`
run at once; a check that is down is tried again after `retry_delay_s` while its one deadline
(timeout_s) leaves MIN_ATTEMPT_S; what is still running when `budget_s` has passed is cut off
(CUT_OFF). A check whose response the fast path hands to httpx (a redirect), or whose request
httpx must send after all (a name that cannot be encoded), is left to asyncio's fan-out
(`Leftover`) with what was left of its deadline and its retries: the tick sends it there when
this loop is done, and remembers a hand-over (its result's handed_at_ms), so that the monitor's
next checks go to httpx at once, on asyncio's loop.
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Iterable, Mapping, Sequence

from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult, parse_expect, status_accepted
from monitor_tick.core.records import NamedTuple
from monitor_tick.probes import ProbeContext, bare, http, latency, request, resolved, wire
from monitor_tick.run import probing

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
# Tests turn it off to send a plain tick's checks through asyncio's loop, as any other tick's.
BARE_LOOP = True


class Leftover(NamedTuple):
    """A check the bare loop leaves to asyncio's fan-out: the monitor with what was left of its
    deadline and retries, and whether the fast path handed its response over."""

    index: int
    monitor: Monitor
    handed: bool


def requests(monitors: Sequence[Monitor], ctx: ProbeContext) -> list[wire.Request] | None:
    """The request of each monitor (their URLs' references resolved) when the bare loop takes
    the tick (see the module docstring), else None."""
    if not BARE_LOOP or not ctx.fast:
        return None
    sent = []
    for monitor in monitors:
        if monitor.kind != "http" or probing.to_httpx(monitor, ctx.handed.get(monitor.id), ctx.now_ms):
            return None
        try:
            one = wire.request_of(resolved(monitor))
        except (InvalidMonitor, ValueError):  # the probe says so, on asyncio's loop
            return None
        if one is None:
            return None
        sent.append(one)
    return sent


class _Check:
    """One monitor's probe: its attempts, under one deadline."""

    __slots__ = ("index", "monitor", "sent", "request", "deadline", "retries", "call", "started", "timer", "holding")

    def __init__(self, index: int, monitor: Monitor, sent: Monitor, request: wire.Request, deadline: float) -> None:
        self.index = index
        self.monitor = monitor
        self.sent = sent  # as probed: its URL's references resolved
        self.request = request
        self.deadline = deadline
        self.retries = monitor.retries
        self.call: bare.BareCall | None = None
        self.started = 0.0  # perf_counter at the attempt's start
        self.timer: bare.Timer | None = None
        self.holding = True  # holds a worker (fanout.Pool's slot)


class _FanOut:
    def __init__(
        self,
        monitors: Sequence[Monitor],
        sent: list[wire.Request],
        ctx: ProbeContext,
        *,
        concurrency: int,
        retry_delay_s: float,
        slot_hold_s: float | None,
        max_in_flight: int | None,
    ) -> None:
        self.loop = bare.Loop()
        self.monitors = monitors
        self.sent = sent
        self.ctx = ctx
        self.concurrency = concurrency
        self.retry_delay_s = retry_delay_s
        self.slot_hold_s = slot_hold_s
        self.max_in_flight = max_in_flight or concurrency
        self.results: list[ProbeResult | None] = [None] * len(monitors)
        self.leftovers: list[Leftover] = []
        self.running: dict[int, _Check] = {}
        self.holding = 0
        self.waiting: collections.deque[int] = collections.deque()

    def run(self, order: Iterable[int], budget_s: float | None) -> None:
        self.waiting.extend(order)
        end = self.loop.time() + (budget_s if budget_s is not None else float("inf"))
        try:
            self._start_waiting()
            while (self.waiting or self.running) and self.loop.time() < end:
                self.loop.run_once(end)
        finally:
            for check in self.running.values():  # cut off by the budget: CUT_OFF
                if check.call is not None:
                    check.call.cancel()
            self.loop.close()

    def _start_waiting(self) -> None:
        while self.waiting and self.holding < self.concurrency and len(self.running) < self.max_in_flight:
            index = self.waiting.popleft()
            monitor = self.monitors[index]
            check = _Check(index, monitor, resolved(monitor), self.sent[index], self.loop.time() + monitor.timeout_s)
            self.running[index] = check
            self.holding += 1
            if self.slot_hold_s is not None:
                self.loop.call_at(self.loop.time() + self.slot_hold_s, lambda check=check: self._release(check))
            self._attempt(check)

    def _release(self, check: _Check) -> None:
        """`check` gives its worker to the next monitor (it ended, or has held it slot_hold_s)."""
        if check.holding:
            check.holding = False
            self.holding -= 1
            self._start_waiting()

    def _attempt(self, check: _Check) -> None:
        ctx, sent = self.ctx, check.sent
        setting = request.tls_setting(sent)
        ranges = parse_expect(sent.expect_status)
        call = check.call = bare.BareCall(
            self.loop,
            check.request,
            ctx.tls if setting is None or ctx.clients is None else lambda: ctx.clients.context(setting),  # type: ignore[union-attr]
            lambda outcome: self._answered(check, outcome),
            keep=http.keeps_body(sent),
            limit=http.MAX_BODY_BYTES,
            read_body=lambda code: status_accepted(code, ranges),
            peer_cert=sent.expires_within_sec is not None,
        )
        check.started = time.perf_counter()
        if check.timer is None:  # the probe's one deadline, over every attempt
            check.timer = self.loop.call_at(check.deadline, lambda: self._timed_out(check))
        call.start()

    def _timed_out(self, check: _Check) -> None:
        call = check.call
        status = None
        if call is not None:
            status = call.status
            call.cancel()
        self._done(check, http.failed(TimeoutError(), status))

    def _answered(self, check: _Check, outcome: wire.Answer | BaseException | None) -> None:
        monitor, call = check.sent, check.call
        assert call is not None
        if outcome is None:  # httpx's to send or take further: on asyncio's loop, when this one is done
            left_s = check.deadline - self.loop.time()
            leftover = check.monitor._replace(timeout_s=left_s, retries=check.retries)
            self.leftovers.append(Leftover(check.index, leftover, call.handed))
            self._end(check)
            return
        if isinstance(outcome, wire.Answer):
            result = http.answer_result(
                monitor, outcome, self.ctx.now_ms, elapsed_ms(check.started, time.perf_counter())
            )
        elif isinstance(outcome, wire.WireError | OSError):
            result = http.failed(outcome, call.status)
        else:  # a bug in the probe is that monitor's failed check
            detail = probing.shown(str(outcome), check.monitor)
            print(
                f"monitor-tick: probe of monitor {monitor.id} failed inside monitor-tick: "
                f"{type(outcome).__name__}: {detail}",
                file=sys.stderr,
            )
            self._done(check, ProbeResult("down", None, None, f"probe error: {type(outcome).__name__}"))
            return
        result = latency.judge(monitor, result)
        if result.status == "down" and check.retries > 0:
            left_s = check.deadline - self.loop.time() - self.retry_delay_s
            if left_s >= probing.MIN_ATTEMPT_S:
                check.retries -= 1
                check.call = None
                self.loop.call_at(self.loop.time() + self.retry_delay_s, lambda: self._attempt(check))
                return
        self._done(check, result)

    def _done(self, check: _Check, result: ProbeResult) -> None:
        if result.cause is not None and check.sent is not check.monitor:
            result = result._replace(cause=request.hide_values(result.cause, check.monitor))
        self.results[check.index] = result
        self._end(check)

    def _end(self, check: _Check) -> None:
        if check.timer is not None:
            check.timer.cancel()
        del self.running[check.index]
        self._release(check)
        self._start_waiting()


def probe_all(
    monitors: Sequence[Monitor],
    sent: list[wire.Request],
    ctx: ProbeContext,
    *,
    concurrency: int,
    retry_delay_s: float,
    budget_s: float | None = None,
    order: Iterable[int] | None = None,
    slot_hold_s: float | None = None,
    max_in_flight: int | None = None,
) -> tuple[list[ProbeResult], list[Leftover]]:
    """(one result per monitor, in the order of `monitors`; the checks left to asyncio's loop),
    the results of those being CUT_OFF until the caller probes them. `sent`: requests(monitors,
    ctx). The rest as fanout.probe_all's."""
    fan_out = _FanOut(
        monitors,
        sent,
        ctx,
        concurrency=concurrency,
        retry_delay_s=retry_delay_s,
        slot_hold_s=slot_hold_s,
        max_in_flight=max_in_flight,
    )
    fan_out.run(range(len(monitors)) if order is None else order, budget_s)
    return [r if r is not None else probing.CUT_OFF for r in fan_out.results], fan_out.leftovers


def handed_over(leftovers: Sequence[Leftover], now_ms: int) -> Mapping[int, int]:
    """ProbeContext.handed for the leftovers' probes on asyncio's loop: those the fast path handed
    over go to httpx at once."""
    return {leftover.monitor.id: now_ms for leftover in leftovers if leftover.handed}
