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
(CUT_OFF). Every step runs from the loop itself (never nested), and a bug in one is that
monitor's failed check. A check whose response the fast path hands to httpx (a redirect), or
whose request httpx must send after all (a name that cannot be encoded), goes on at once on
asyncio's loop, in a thread of its own (`elsewhere`, run/tick.py), with what was left of its
deadline, its retries and the budget; a hand-over is remembered (its result's handed_at_ms), so
that the monitor's next checks go to httpx at once, and its ticks run on asyncio's loop.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult, parse_expect, status_accepted
from monitor_tick.probes import ProbeContext, bare, http, latency, request, resolved, wire
from monitor_tick.probes.loop import Loop
from monitor_tick.run import probing

# Tests turn it off to send a plain tick's checks through asyncio's loop, as any other tick's.
BARE_LOOP = True


# How a check the bare loop hands over goes on, on asyncio's loop: (the monitor with what is left
# of its deadline and retries, whether the fast path handed its response over, what is left of
# the budget) -> its result. Called in a thread of its own (run/tick.py gives it).
Elsewhere = Callable[[Monitor, bool, float], ProbeResult]


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

    __slots__ = (
        "index",
        "monitor",
        "sent",
        "request",
        "deadline",
        "retries",
        "call",
        "started",
        "timer",
        "hold",
        "holding",
    )

    def __init__(self, index: int, monitor: Monitor, sent: Monitor, request: wire.Request, deadline: float) -> None:
        self.index = index
        self.monitor = monitor
        self.sent = sent  # as probed: its URL's references resolved
        self.request = request
        self.deadline = deadline
        self.retries = monitor.retries
        self.call: bare.BareCall | None = None
        self.started = 0.0  # perf_counter at the attempt's start
        self.timer: bare.Timer | None = None  # its deadline
        self.hold: bare.Timer | None = None  # when it gives its worker away (slot_hold_s)
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
        elsewhere: Elsewhere,
    ) -> None:
        self.loop = Loop()
        self.elsewhere = elsewhere
        self.monitors = monitors
        self.sent = sent
        self.ctx = ctx
        self.concurrency = concurrency
        self.retry_delay_s = retry_delay_s
        self.slot_hold_s = slot_hold_s
        self.max_in_flight = max_in_flight or concurrency
        self.results: list[ProbeResult | None] = [None] * len(monitors)
        self.leftovers: list[threading.Thread] = []  # checks sent to asyncio's loop (Elsewhere)
        self.running: dict[int, _Check] = {}
        self.holding = 0
        self.waiting: collections.deque[int] = collections.deque()

    def run(self, order: Iterable[int], budget_s: float | None) -> None:
        self.waiting.extend(order)
        end = self.end = self.loop.time() + (budget_s if budget_s is not None else float("inf"))
        try:
            while (self.waiting or self.running) and self.loop.time() < end:
                self._start_waiting()
                self.loop.run_once(end)
        finally:
            for check in self.running.values():  # cut off by the budget: CUT_OFF
                if check.call is not None:
                    check.call.cancel()
            self.loop.close()
        for thread in self.leftovers:  # what is left of the budget (their results: CUT_OFF until in)
            thread.join(max(end - self.loop.time(), 0.0))

    def _start_waiting(self) -> None:
        while self.waiting and self.holding < self.concurrency and len(self.running) < self.max_in_flight:
            index = self.waiting.popleft()
            monitor = self.monitors[index]
            check = _Check(index, monitor, resolved(monitor), self.sent[index], self.loop.time() + monitor.timeout_s)
            self.running[index] = check
            self.holding += 1
            if self.slot_hold_s is not None:
                check.hold = self.loop.call_at(
                    self.loop.time() + self.slot_hold_s, lambda check=check: self._release(check)
                )
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
        call: bare.BareCall
        call = check.call = bare.BareCall(
            self.loop,
            check.request,
            ctx.tls if setting is None or ctx.clients is None else lambda: ctx.clients.context(setting),  # type: ignore[union-attr]
            lambda outcome: self._safely(check, self._answered, check, call, outcome),
            keep=http.keeps_body(sent),
            limit=http.MAX_BODY_BYTES,
            read_body=lambda code: status_accepted(code, ranges),
            peer_cert=sent.expires_within_sec is not None,
        )
        check.started = time.perf_counter()
        if check.timer is None:  # the probe's one deadline, over every attempt
            check.timer = self.loop.call_at(check.deadline, lambda: self._safely(check, self._timed_out, check))
        call.start()

    def _timed_out(self, check: _Check) -> None:
        call = check.call
        status = None
        if call is not None:
            status = call.status
            call.cancel()
        self._done(check, http.failed(TimeoutError(), status))

    def _answered(self, check: _Check, call: bare.BareCall, outcome: wire.Answer | BaseException | None) -> None:
        if self.running.get(check.index) is not check or check.call is not call:
            return  # its deadline came first
        monitor = check.sent
        if outcome is None:  # httpx's to send or take further: on asyncio's loop, at once
            self._send_elsewhere(check, call.handed)
            return
        if isinstance(outcome, wire.Answer):
            result = http.answer_result(
                monitor, outcome, self.ctx.now_ms, elapsed_ms(check.started, time.perf_counter())
            )
        elif isinstance(outcome, wire.WireError | OSError):
            result = http.failed(outcome, call.status)
        else:  # a bug in the probe is that monitor's failed check
            self._failed_inside(check, outcome)
            return
        result = latency.judge(monitor, result)
        if result.status == "down" and check.retries > 0:
            left_s = check.deadline - self.loop.time() - self.retry_delay_s
            if left_s >= probing.MIN_ATTEMPT_S:
                check.retries -= 1
                check.call = None
                self.loop.call_at(
                    self.loop.time() + self.retry_delay_s, lambda: self._safely(check, self._attempt, check)
                )
                return
        self._done(check, result)

    def _send_elsewhere(self, check: _Check, handed: bool) -> None:
        """The check goes on on asyncio's loop, in a thread of its own, with what is left of its
        deadline, its retries and the budget; its worker goes to the next monitor."""
        now = self.loop.time()
        monitor = check.monitor._replace(timeout_s=max(check.deadline - now, 0.0), retries=check.retries)
        budget_s = max(self.end - now, 0.0)

        def probe() -> None:
            try:
                result = self.elsewhere(monitor, handed, budget_s)
            except Exception as exc:  # noqa: BLE001 -- as a bug in a probe: that monitor's failed check
                result = probing.failed_inside(check.monitor, exc)
            self.results[check.index] = result

        thread = threading.Thread(target=probe, name="monitor-tick-httpx", daemon=True)
        self.leftovers.append(thread)
        thread.start()
        self._end(check)

    def _safely(self, check: _Check, step: Callable[..., None], *args: object) -> None:
        """Run a step of `check`'s; a bug in it is that monitor's failed check, never the tick's."""
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001 -- the monitor's failed check
            if check.call is not None:
                check.call.cancel()
            if self.running.get(check.index) is check:
                self._failed_inside(check, exc)

    def _failed_inside(self, check: _Check, exc: BaseException) -> None:
        self._done(check, probing.failed_inside(check.monitor, exc))

    def _done(self, check: _Check, result: ProbeResult) -> None:
        if result.cause is not None and check.sent is not check.monitor:
            result = result._replace(cause=request.hide_values(result.cause, check.monitor))
        self.results[check.index] = result
        self._end(check)

    def _end(self, check: _Check) -> None:
        for timer in (check.timer, check.hold):
            if timer is not None:
                timer.cancel()
        check.call = None
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
    elsewhere: Elsewhere,
    budget_s: float | None = None,
    order: Iterable[int] | None = None,
    slot_hold_s: float | None = None,
    max_in_flight: int | None = None,
) -> list[ProbeResult]:
    """One result per monitor, in the order of `monitors`. `sent`: requests(monitors, ctx);
    `elsewhere`: how a check the bare loop hands over is probed on asyncio's loop. The rest as
    fanout.probe_all's."""
    fan_out = _FanOut(
        monitors,
        sent,
        ctx,
        concurrency=concurrency,
        retry_delay_s=retry_delay_s,
        slot_hold_s=slot_hold_s,
        max_in_flight=max_in_flight,
        elsewhere=elsewhere,
    )
    fan_out.run(range(len(monitors)) if order is None else order, budget_s)
    return [r if r is not None else probing.CUT_OFF for r in fan_out.results]
