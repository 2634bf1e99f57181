"""tls://host[:port] (port 443 by default): a TLS handshake, verified like an HTTPS request, and
the certificate's expiry. Down when the certificate is invalid or expires within
--expires-within (14 days unless given); the cause carries the days left and the date. A CA
of its own (--ca-file) is trusted instead of the tick's."""

from __future__ import annotations

from monitor_tick.core.clock import parse_duration_s
from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes import latency, request
from monitor_tick.probes.base import Kind, ProbeContext
from monitor_tick.probes.net import (
    address,
    cause_of_os_error,
    certificate_result,
    check_address,
    check_expires_within,
    connect,
    prefixed,
)

DEFAULT_PORT = 443
DEFAULT_EXPIRES_WITHIN_SEC = int(parse_duration_s("14d"))


async def probe_tls(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    host, port = address(monitor, DEFAULT_PORT)
    try:
        latency_ms, cert = await connect(host, port, monitor.timeout_s, ctx.tls(), ctx.guard)
    except TimeoutError:
        return ProbeResult("down", None, None, "tls: timeout")
    except OSError as exc:  # ssl.SSLError too
        return ProbeResult("down", None, None, prefixed("tls", cause_of_os_error(exc)))
    return certificate_result(monitor, ctx.now_ms, latency_ms, cert)


def _check(monitor: Monitor) -> None:
    check_address(monitor, port_required=False)
    request.check_own_trust(monitor, True, "a TLS url")
    check_expires_within(monitor)
    latency.check(monitor)


KIND = Kind(
    name="tls",
    schemes=("tls",),
    usage="tls://host[:port]",
    probe=latency.judged(request.own_trust(probe_tls)),
    check=_check,
    options=frozenset({"timeout_s", "retries", "expires_within_sec", latency.OPTION, "ca_file"}),
    defaults={"expires_within_sec": DEFAULT_EXPIRES_WITHIN_SEC},
)
