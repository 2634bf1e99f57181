"""tcp://host:port: up when a TCP connection completes within the deadline (then closed)."""

from __future__ import annotations

from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes import latency
from monitor_tick.probes.base import Kind, ProbeContext
from monitor_tick.probes.net import address, cause_of_os_error, check_address, connect, prefixed


async def probe_tcp(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    host, port = address(monitor, None)
    try:
        latency_ms, _ = await connect(host, port, monitor.timeout_s, guard=ctx.guard)
    except TimeoutError:
        return ProbeResult("down", None, None, "tcp: timeout")
    except OSError as exc:
        return ProbeResult("down", None, None, prefixed("tcp", cause_of_os_error(exc)))
    return ProbeResult("up", latency_ms)


def _check(monitor: Monitor) -> None:
    check_address(monitor, port_required=True)
    latency.check(monitor)


KIND = Kind(
    name="tcp",
    schemes=("tcp",),
    usage="tcp://host:port",
    probe=latency.judged(probe_tcp),
    check=_check,
    options=frozenset({"timeout_s", "retries", latency.OPTION}),
)
