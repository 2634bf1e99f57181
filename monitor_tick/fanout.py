"""Probe many monitors at once: at most `concurrency` in flight, continuously (a slow host
holds one slot, never a batch), all gathered with return_exceptions=True so that even a bug in
one probe is that monitor's failed check and never sinks the tick.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
from collections.abc import Sequence

import httpx

from monitor_tick.model import Monitor, ProbeResult
from monitor_tick.probes import PROBES, ProbeContext

USER_AGENT = "monitor-tick (uptime check; +https://pypi.org/project/monitor-tick/)"


def ssl_context(verify: object = True) -> ssl.SSLContext:
    """The one TLS context of a tick: what HTTPS requests and tls:// probes both trust.
    `verify`: an ssl.SSLContext (used as is), True (httpx's default CA bundle), or a CA file."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    return httpx.create_ssl_context(verify=verify)  # type: ignore[arg-type]


def make_client(
    concurrency: int, transport: httpx.AsyncBaseTransport | None = None, verify: object = True
) -> httpx.AsyncClient:
    """One client shared by the tick. The pool has no connection cap (the semaphore bounds
    concurrency), so no probe ever waits for a pool slot -- that would be our limit, not the
    site's outage."""
    return httpx.AsyncClient(
        transport=transport,
        verify=verify,  # type: ignore[arg-type]
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=concurrency),
        max_redirects=5,
        headers={"User-Agent": USER_AGENT},
    )


async def probe_with_retries(monitor: Monitor, ctx: ProbeContext, retry_delay_s: float) -> ProbeResult:
    """Probe; on `down`, pause and try again up to monitor.retries times within the tick."""
    probe = PROBES[monitor.kind].probe
    result = await probe(monitor, ctx)
    for _ in range(monitor.retries):
        if result.status != "down":
            break
        if retry_delay_s > 0:
            await asyncio.sleep(retry_delay_s)
        result = await probe(monitor, ctx)
    return result


async def probe_all(
    monitors: Sequence[Monitor], ctx: ProbeContext, *, concurrency: int, retry_delay_s: float
) -> list[ProbeResult]:
    """One result per monitor, in order."""
    slots = asyncio.Semaphore(concurrency)

    async def one(monitor: Monitor) -> ProbeResult:
        async with slots:
            return await probe_with_retries(monitor, ctx, retry_delay_s)

    gathered = await asyncio.gather(*(one(m) for m in monitors), return_exceptions=True)
    results: list[ProbeResult] = []
    for monitor, outcome in zip(monitors, gathered, strict=True):
        if isinstance(outcome, ProbeResult):
            results.append(outcome)
        else:
            print(
                f"monitor-tick: probe of monitor {monitor.id} failed inside monitor-tick: "
                f"{type(outcome).__name__}: {outcome}",
                file=sys.stderr,
            )
            results.append(ProbeResult("down", None, None, f"probe error: {type(outcome).__name__}"))
    return results
