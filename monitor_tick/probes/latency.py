"""--max-latency: an up check that took longer than the limit is down, `slow: 812 ms > 500 ms`.

The latency judged is the one the probe measured: its own request (http: connect, headers and
the whole body; tcp and tls: the connection and handshake), from when the probe started, never
the time the monitor waited for a probe slot. Only an up result is judged: a failure already
has its own cause. A slow check is down like any other, so it is retried within the deadline.
"""

from __future__ import annotations

from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes.base import Probe, ProbeContext

OPTION = "max_latency_ms"


def slow_cause(monitor: Monitor, latency_ms: int | None) -> str | None:
    """'slow: 812 ms > 500 ms' when `latency_ms` exceeds the monitor's limit, else None."""
    limit_ms = monitor.max_latency_ms
    if limit_ms is None or latency_ms is None or latency_ms <= limit_ms:
        return None
    return f"slow: {latency_ms} ms > {limit_ms} ms"


def judged(probe: Probe) -> Probe:
    """`probe`, with its up results judged against the monitor's --max-latency."""

    async def judged_probe(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
        result = await probe(monitor, ctx)
        cause = slow_cause(monitor, result.latency_ms) if result.status == "up" else None
        if cause is None:
            return result
        return ProbeResult("down", result.latency_ms, result.http_status, cause, result.cert_expires_at_ms)

    return judged_probe


def check(monitor: Monitor) -> None:
    """A limit is whole milliseconds, more than 0 and below the deadline (a longer one could
    never be reached: the probe times out first). Raises InvalidMonitor."""
    limit_ms = monitor.max_latency_ms
    if limit_ms is None:
        return
    if isinstance(limit_ms, bool) or not isinstance(limit_ms, int) or limit_ms <= 0:
        raise InvalidMonitor(f"--max-latency must be whole milliseconds, more than 0 (got {limit_ms!r})")
    if isinstance(monitor.timeout_s, int | float) and limit_ms >= monitor.timeout_s * 1000:
        raise InvalidMonitor(f"--max-latency ({limit_ms} ms) must be shorter than --timeout ({monitor.timeout_s:g}s)")
