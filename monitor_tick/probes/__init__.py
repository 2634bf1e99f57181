"""Probe kinds. A probe is `async (monitor, ctx) -> ProbeResult`; it never raises for anything a
remote end does. Adding a kind is one module and one line in PROBES (plus its scheme in
model.KIND_OF_SCHEME).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from monitor_tick.model import Monitor, ProbeResult
from monitor_tick.probes.http import probe_http


@dataclass(frozen=True)
class ProbeContext:
    """What probes share within one tick."""

    client: httpx.AsyncClient


Probe = Callable[[Monitor, ProbeContext], Awaitable[ProbeResult]]


async def _http(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    return await probe_http(monitor, ctx.client)


PROBES: dict[str, Probe] = {
    "http": _http,
}
