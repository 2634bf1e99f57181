"""icmp://host: one ICMP echo (ping) per attempt, up when the reply comes within the deadline.

Only unprivileged ICMP sockets (SOCK_DGRAM, IPPROTO_ICMP; the standard library's socket): Linux
lets a process open one when its group is inside `net.ipv4.ping_group_range` (the same setting
covers IPv6). No raw sockets: monitor-tick never needs root or CAP_NET_RAW, and a ping that
works only because cron happens to run as root would stop when it is not. The kernel picks the
echo identifier and fills the checksum; a reply is matched by its sequence number and payload.

Where such a socket cannot be opened, ping is not available on this machine: every icmp://
monitor is a configuration error (`available`, Kind.host_check), never down and never `new`
in silence: the tick says why on stderr once an hour and `list` shows it `invalid`.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import struct
import time

from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import latency
from monitor_tick.probes.base import Kind, ProbeContext
from monitor_tick.probes.net import cause_of_os_error, check_address, prefixed

PING_GROUP_RANGE = "/proc/sys/net/ipv4/ping_group_range"
# (family, protocol, echo request type, echo reply type)
_ICMP = {
    socket.AF_INET: (socket.IPPROTO_ICMP, 8, 0),
    socket.AF_INET6: (socket.IPPROTO_ICMPV6, 128, 129),
}


def unavailable_reason(open_error: OSError | None, group_range: str | None, gid: int) -> str | None:
    """Why ping is not available, from what opening an ICMP socket raised (None: it opened), the
    text of net.ipv4.ping_group_range (None: unreadable) and this process's group."""
    if open_error is None:
        return None
    if open_error.errno in (errno.EACCES, errno.EPERM):
        allowed = " ".join((group_range or "").split())
        setting = f"net.ipv4.ping_group_range is '{allowed}'" if allowed else "net.ipv4.ping_group_range"
        return (
            f"ping is not available: group {gid} may not open ICMP sockets ({setting}); "
            f"allow it with: sysctl -w net.ipv4.ping_group_range='{gid} {gid}'"
        )
    return f"ping is not available: cannot open an ICMP socket ({os.strerror(open_error.errno or 0) or open_error})"


@functools.cache
def available() -> str | None:
    """None when this process may ping; else why not (asked of the kernel once per process)."""
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP).close()
        error = None
    except OSError as exc:
        error = exc
    try:
        with open(PING_GROUP_RANGE, encoding="ascii") as file:
            group_range: str | None = file.read()
    except OSError:
        group_range = None
    return unavailable_reason(error, group_range, os.getgid())


async def probe_icmp(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    host = check_address(monitor, port_required=False).hostname
    assert host is not None
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    sock: socket.socket | None = None
    try:
        async with asyncio.timeout(monitor.timeout_s):
            if ctx.guard is not None:
                address = await ctx.guard.resolve(host, 0)  # raises BlockedAddress
                family = socket.AF_INET6 if ":" in address else socket.AF_INET
            else:
                family, _, _, _, sockaddr = (await loop.getaddrinfo(host, None, type=socket.SOCK_DGRAM))[0]
                address = str(sockaddr[0])
            protocol, request, reply = _ICMP[family]
            sock = socket.socket(family, socket.SOCK_DGRAM, protocol)
            sock.setblocking(False)
            import secrets  # deferred: it loads OpenSSL's hashes (0.9 MB), which only a ping needs

            sequence, payload = secrets.randbelow(0x10000), secrets.token_bytes(16)
            await loop.sock_sendto(sock, struct.pack("!BBHHH", request, 0, 0, 0, sequence) + payload, (address, 0))
            while True:  # other replies may reach this socket: wait for ours
                data, _ = await loop.sock_recvfrom(sock, 2048)
                if data[:1] == bytes([reply]) and data[6:8] == struct.pack("!H", sequence) and data[8:] == payload:
                    break
    except TimeoutError:
        return ProbeResult("down", None, None, "icmp: timeout")
    except OSError as exc:
        return ProbeResult("down", None, None, prefixed("icmp", cause_of_os_error(exc)))
    finally:
        if sock is not None:
            sock.close()
    return ProbeResult("up", elapsed_ms(start, time.perf_counter()))


def _check(monitor: Monitor) -> None:
    parts = check_address(monitor, port_required=False)
    if parts.port is not None:
        raise InvalidMonitor("icmp:// takes only a host: icmp://host")
    latency.check(monitor)


KIND = Kind(
    name="icmp",
    schemes=("icmp",),
    usage="icmp://host",
    probe=latency.judged(probe_icmp),
    check=_check,
    options=frozenset({"timeout_s", "retries", latency.OPTION}),
    host_check=available,
)
