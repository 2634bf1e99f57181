"""Probe many monitors at once: at most `concurrency` in flight, continuously (a slow host
holds one slot, never a batch), all gathered with return_exceptions=True so that even a bug in
one probe is that monitor's failed check and never sinks the tick.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import ssl
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx

from monitor_tick.model import Monitor, ProbeResult
from monitor_tick.probes import PROBES, ProbeContext
from monitor_tick.redact import redact_url

if TYPE_CHECKING:
    from monitor_tick.probes.guard import AddressGuard

USER_AGENT = "monitor-tick (uptime check)"
MIN_ATTEMPT_S = 0.1  # a retry with less time left than this is not worth starting
CUT_OFF = ProbeResult("unknown", None, None, "cut off by the tick's time budget")


def ssl_context(verify: object = True) -> ssl.SSLContext:
    """The one TLS context of a tick: what HTTPS requests and tls:// probes both trust.
    `verify`: an ssl.SSLContext (used as is), True (httpx's default CA bundle), or a CA file."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    return httpx.create_ssl_context(verify=verify)  # type: ignore[arg-type]


class DaemonThreads(concurrent.futures.ThreadPoolExecutor):
    """The loop's default executor, which runs DNS lookups: one daemon thread per call (the
    fan-out already bounds how many run at once, so a slow resolver delays each probe by its own
    lookup only). A lookup stuck in the resolver must not hold the tick after its probe gave up:
    asyncio.run waits for the default executor, and Python joins a ThreadPoolExecutor's threads
    at exit. Here shutdown returns at once and a stuck thread dies with the process. (It is a
    ThreadPoolExecutor only because asyncio accepts nothing else; no pool thread is started.)"""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 -- handed to the awaiting probe
                future.set_exception(exc)

        threading.Thread(target=run, name="monitor-tick-lookup", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


def make_client(
    concurrency: int,
    transport: httpx.AsyncBaseTransport | None = None,
    verify: Any = True,
    guard: AddressGuard | None = None,
) -> httpx.AsyncClient:
    """One client shared by the tick. The pool has no connection cap (the semaphore bounds
    concurrency), so no probe ever waits for a pool slot -- that would be our limit, not the
    site's outage. With `guard`, every connection (redirects included) is checked against it
    on the address actually connected to."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=concurrency)
    if transport is None and guard is not None:
        from monitor_tick.probes.guard import guarded_transport

        transport = guarded_transport(guard, verify=verify, limits=limits)
    return httpx.AsyncClient(
        transport=transport,
        verify=verify,
        limits=limits,
        max_redirects=5,
        headers={"User-Agent": USER_AGENT},
    )


async def probe_with_retries(monitor: Monitor, ctx: ProbeContext, retry_delay_s: float) -> ProbeResult:
    """Probe; on `down`, pause and try again up to monitor.retries times. All attempts share
    the monitor's one deadline (timeout_s): a probe that timed out is not retried, and no
    probe outlives its deadline, however many retries it has."""
    probe = PROBES[monitor.kind].probe
    loop = asyncio.get_running_loop()
    deadline = loop.time() + monitor.timeout_s
    result = await probe(monitor, ctx)
    for _ in range(monitor.retries):
        if result.status != "down":
            break
        left_s = deadline - loop.time() - retry_delay_s
        if left_s < MIN_ATTEMPT_S:
            break
        if retry_delay_s > 0:
            await asyncio.sleep(retry_delay_s)
        result = await probe(dataclasses.replace(monitor, timeout_s=left_s), ctx)
    return result


async def probe_all(
    monitors: Sequence[Monitor],
    ctx: ProbeContext,
    *,
    concurrency: int,
    retry_delay_s: float,
    budget_s: float | None = None,
) -> list[ProbeResult]:
    """One result per monitor, in order. Probes still running (or still waiting for a slot)
    when `budget_s` runs out are cancelled and come back `unknown`: our limit, not an outage."""
    slots = asyncio.Semaphore(concurrency)

    async def one(monitor: Monitor) -> ProbeResult:
        async with slots:
            return await probe_with_retries(monitor, ctx, retry_delay_s)

    tasks = [asyncio.ensure_future(one(m)) for m in monitors]
    if budget_s is not None and tasks:
        _, pending = await asyncio.wait(tasks, timeout=budget_s)
        for task in pending:
            task.cancel()
    gathered = await asyncio.gather(*tasks, return_exceptions=True)
    results: list[ProbeResult] = []
    for monitor, outcome in zip(monitors, gathered, strict=True):
        if isinstance(outcome, ProbeResult):
            results.append(outcome)
        elif isinstance(outcome, asyncio.CancelledError):
            results.append(CUT_OFF)
        else:
            detail = str(outcome).replace(monitor.url, redact_url(monitor.url))
            print(
                f"monitor-tick: probe of monitor {monitor.id} failed inside monitor-tick: "
                f"{type(outcome).__name__}: {detail}",
                file=sys.stderr,
            )
            results.append(ProbeResult("down", None, None, f"probe error: {type(outcome).__name__}"))
    return results
