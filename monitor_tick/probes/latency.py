"""--max-latency: an up check that took longer than the limit is down, `slow: 812 ms > 500 ms`.

The latency judged is the one the probe measured: its own request (http: connect, headers and
the whole body; tcp and tls: the connection and handshake), from when the probe started, never
the time the monitor waited for a probe slot. Any answer is judged: one that also failed another
condition (a status, a keyword) names both, `slow: 812 ms > 500 ms; status 503`; a failure with
no answer has no latency to judge. A slow check is down like any other, so it is retried within
the deadline.
"""

from __future__ import annotations

from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes.base import Probe, ProbeContext, failed_conditions

OPTION = "max_latency_ms"


def slow_cause(monitor: Monitor, latency_ms: int | None) -> str | None:
    """'slow: 812 ms > 500 ms' when `latency_ms` exceeds the monitor's limit, else None."""
    limit_ms = monitor.max_latency_ms
    if limit_ms is None or latency_ms is None or latency_ms <= limit_ms:
        return None
    return f"slow: {latency_ms} ms > {limit_ms} ms"


def judge(monitor: Monitor, result: ProbeResult) -> ProbeResult:
    """`result`, judged against the monitor's --max-latency: a slow answer is down, and its
    cause names the latency before any other condition the answer failed."""
    if result.status == "unknown":
        return result
    cause = slow_cause(monitor, result.latency_ms)
    if cause is None:
        return result
    return result._replace(status="down", cause=failed_conditions(cause, result.cause))


def judged(probe: Probe) -> Probe:
    """`probe`, with its results judged against the monitor's --max-latency."""

    async def judged_probe(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
        return judge(monitor, await probe(monitor, ctx))

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
