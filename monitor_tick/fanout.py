"""Probe many monitors at once: at most `concurrency` in flight, continuously (a slow host
holds one slot, never a batch), and even a bug in one probe is that monitor's failed check,
never the tick's.

`concurrency` workers take the next monitor as soon as they are free, so the tick's makespan
is close to max(sum of latencies / concurrency, slowest latency) when the slowest probes start
first: the tick hands them over in that order (`slowest_first`, from the last hour's rollups).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable, Sequence

import httpx

from monitor_tick.model import Monitor, ProbeResult
from monitor_tick.probes import PROBES, ProbeContext

USER_AGENT = "monitor-tick (uptime check; +https://pypi.org/project/monitor-tick/)"


def make_client(
    concurrency: int, transport: httpx.AsyncBaseTransport | None = None, verify: object = True
) -> httpx.AsyncClient:
    """One client shared by the tick. The pool has no connection cap (the workers bound
    concurrency), so no probe ever waits for a pool slot -- that would be our limit, not the
    site's outage.

    Without an injected transport the bytes go through monitor_tick.transport (aiohttp), about
    1.5x the checks per second of httpx's default -- unless httpcore is mocked (respx), whose
    mock only sees httpx's default transport."""
    if transport is None and not httpcore_is_mocked():
        from monitor_tick.transport import AiohttpTransport

        transport = AiohttpTransport(httpx.create_ssl_context(verify=verify))  # type: ignore[arg-type]
    return httpx.AsyncClient(
        transport=transport,
        verify=verify,  # type: ignore[arg-type]
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=concurrency),
        max_redirects=5,
        headers={"User-Agent": USER_AGENT},
    )


def httpcore_is_mocked() -> bool:
    """True while a test double (respx's default mocker) has replaced httpcore's pool."""
    import httpcore

    send = httpcore.AsyncConnectionPool.handle_async_request
    return not str(getattr(send, "__module__", "")).startswith("httpcore.")


async def probe_with_retries(monitor: Monitor, ctx: ProbeContext, retry_delay_s: float) -> ProbeResult:
    """Probe; on `down`, pause and try again up to monitor.retries times within the tick."""
    probe = PROBES[monitor.kind]
    result = await probe(monitor, ctx)
    for _ in range(monitor.retries):
        if result.status != "down":
            break
        if retry_delay_s > 0:
            await asyncio.sleep(retry_delay_s)
        result = await probe(monitor, ctx)
    return result


async def probe_all(
    monitors: Sequence[Monitor],
    ctx: ProbeContext,
    *,
    concurrency: int,
    retry_delay_s: float,
    order: Iterable[int] | None = None,
) -> list[ProbeResult]:
    """One result per monitor, in the order of `monitors`; `order` (indexes into `monitors`,
    each once) is the order in which probes start, default first to last."""
    results: list[ProbeResult | None] = [None] * len(monitors)
    pending = iter(range(len(monitors)) if order is None else order)

    async def worker() -> None:
        for index in pending:  # shared: each index is taken by exactly one worker
            results[index] = await _probe_one(monitors[index], ctx, retry_delay_s)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(monitors)))))
    missing = [m.id for m, r in zip(monitors, results, strict=True) if r is None]
    if missing:
        raise ValueError(f"order left monitors unprobed: {missing[:5]}")
    return results  # type: ignore[return-value]


async def _probe_one(monitor: Monitor, ctx: ProbeContext, retry_delay_s: float) -> ProbeResult:
    try:
        return await probe_with_retries(monitor, ctx, retry_delay_s)
    except Exception as exc:  # a bug in a probe is that monitor's failed check
        print(
            f"monitor-tick: probe of monitor {monitor.id} failed inside monitor-tick: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return ProbeResult("down", None, None, f"probe error: {type(exc).__name__}")


def slowest_first(monitors: Sequence[Monitor], recent: dict[int, tuple[int, int | None]]) -> list[int]:
    """Indexes of `monitors`, the probes expected to take longest first (longest-processing-
    time-first keeps the makespan near its lower bound).

    `recent` maps a monitor id to (failures, latency_ms_max) of its newest rollup hour. A
    monitor that failed then may take its whole deadline (a hanging host), so it counts as
    its timeout; one without history counts as 0 and keeps its place among the rest."""

    def expected_ms(index: int) -> float:
        monitor = monitors[index]
        failures, latency_ms_max = recent.get(monitor.id, (0, None))
        if failures:
            return monitor.timeout_s * 1000
        return float(latency_ms_max or 0)

    return sorted(range(len(monitors)), key=expected_ms, reverse=True)
