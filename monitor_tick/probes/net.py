"""Shared by the kinds that open connections (http, tls, tcp, smtp, ssh, ws): what a socket or TLS
error means, one connection attempt under one deadline, and the peer certificate's expiry."""

from __future__ import annotations

import errno
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import SplitResult, urlsplit

from monitor_tick.core.clock import MS_PER_S, elapsed_ms, s_to_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult, check_seconds, expiry_text
from monitor_tick.probes.guard import AddressGuard, BlockedAddress

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import asyncio
    import ssl

CLOSE_WAIT_S = 1.0  # how long a polite close may take before the connection is dropped
# A TLS handshake with a server that speaks something else there: it hung up on our hello, or
# answered it in plain text (a plain HTTP port), which OpenSSL reads as a record of no TLS version
NOT_TLS = "tls: not spoken by the server"
_PLAIN_TEXT_REASONS = frozenset({"WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG"})
# No route to the host: nothing answered, the failure is on the way (our own network, often)
NO_ROUTE_ERRNOS = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.EHOSTDOWN})


class NotTls(OSError):
    """The peer hung up during the TLS handshake: what listens there does not speak TLS (a
    plain port, whose server gave up on our ClientHello), not a working connection reset."""


@contextmanager
def tls_handshake() -> Iterator[None]:
    """Around a TLS handshake: a connection reset or closed before it ends raises NotTls."""
    try:
        yield
    except (ConnectionResetError, BrokenPipeError) as exc:
        raise NotTls("the peer hung up during the TLS handshake") from exc


def cause_of_os_error(exc: BaseException) -> str:
    """A short, stable cause for a socket or TLS error (never an address: it may be private)."""
    if isinstance(exc, BlockedAddress):
        return str(exc)
    if isinstance(exc, NotTls):
        return NOT_TLS
    ssl = sys.modules.get("ssl")  # a TLS error can be raised only once ssl is loaded
    if ssl is not None and isinstance(exc, ssl.SSLCertVerificationError):
        reason = (exc.verify_message or "").lower()
        if "expired" in reason:
            return "tls: certificate expired"
        if "hostname" in reason or "ip address mismatch" in reason:
            return "tls: certificate is for another host"
        if "self-signed" in reason or "self signed" in reason:
            return "tls: self-signed certificate"
        return "tls: certificate not trusted"
    if ssl is not None and isinstance(exc, ssl.SSLError):
        return NOT_TLS if getattr(exc, "reason", None) in _PLAIN_TEXT_REASONS else "tls"
    if isinstance(exc, socket.gaierror):
        return "dns"
    if isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED:
        return "connect refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, TimeoutError):
        return "timeout"
    # asyncio tries every address of a host and, when they all fail differently (::1 and
    # 127.0.0.1), raises a plain OSError('Multiple exceptions: [Errno 111] ...')
    if f"[errno {errno.ECONNREFUSED}]" in str(exc).lower():
        return "connect refused"
    return "connect error"


def prefixed(kind: str, cause: str) -> str:
    """'tcp: connect refused'; a cause that already names the kind is kept ('tls: ...')."""
    if cause == kind:
        return f"{kind}: handshake failed"
    return cause if cause.startswith(f"{kind}: ") else f"{kind}: {cause}"


def upgraded_cause(kind: str, exc: BaseException) -> str:
    """The cause of a failed connection of a kind that judges its TLS as tls:// does (smtp's
    STARTTLS, wss): the certificate's and the handshake's failures as tls:// names them
    ('tls: certificate expired'), the others the kind's own ('smtp: connect refused')."""
    cause = cause_of_os_error(exc)
    if cause == "tls":
        return "tls: handshake failed"
    return cause if cause.startswith("tls: ") else prefixed(kind, cause)


def address(monitor: Monitor, default_port: int | None) -> tuple[str, int]:
    """(host, port) of a scheme://host[:port] monitor (checked by check_address)."""
    parts = urlsplit(monitor.url)
    port = parts.port or default_port
    assert parts.hostname is not None and port is not None  # checked when the monitor was loaded
    return parts.hostname, port


def check_address(monitor: Monitor, *, port_required: bool, query: bool = False) -> SplitResult:
    """A scheme://host[:port] URL with nothing else (but a query, which the caller checks, when
    `query`). Raises InvalidMonitor."""
    parts = urlsplit(monitor.url)
    scheme = parts.scheme.lower()
    if not parts.hostname:
        raise InvalidMonitor("url has no host")
    if port_required and parts.port is None:
        raise InvalidMonitor(f"{scheme}:// needs a port: {scheme}://host:port")
    if parts.port == 0:
        raise InvalidMonitor("port 0 cannot be connected to")
    if parts.username is not None or parts.path not in ("", "/") or (parts.query and not query) or parts.fragment:
        raise InvalidMonitor(f"{scheme}:// takes only a host and a port")
    return parts


def check_expires_within(monitor: Monitor) -> None:
    check_seconds(monitor.expires_within_sec, "--expires-within", minimum=1)


async def connect(
    host: str, port: int, timeout_s: float, tls: ssl.SSLContext | None = None, guard: AddressGuard | None = None
) -> tuple[int, dict[str, object] | None]:
    """Open one connection (with a TLS handshake when `tls` is given) and close it, both under
    one deadline. Returns (latency_ms, the verified peer certificate or None). With `guard`, the
    name is resolved here and the address checked and connected to (guard.BlockedAddress).
    Raises TimeoutError, OSError or ssl.SSLError."""
    import asyncio

    start = time.perf_counter()
    deadline = asyncio.get_running_loop().time() + timeout_s
    async with asyncio.timeout_at(deadline):
        _, writer = await open_stream(host, port, guard, tls, ssl_handshake_timeout=timeout_s if tls else None)
    latency_ms = elapsed_ms(start, time.perf_counter())
    cert = writer.get_extra_info("peercert") if tls else None
    await close_stream(writer, deadline)
    return latency_ms, cert


async def open_stream(
    host: str,
    port: int,
    guard: AddressGuard | None,
    tls: ssl.SSLContext | None = None,
    ssl_handshake_timeout: float | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to host:port (TLS from the start when `tls` is given), under the caller's
    deadline. With `guard`, the name is resolved here and the address checked and connected to,
    the name kept for TLS (guard.BlockedAddress). Raises OSError (NotTls for a peer that hangs
    up during the TLS handshake) or ssl.SSLError."""
    import asyncio

    target = host if guard is None else await guard.resolve(host, port)
    if tls is None:
        return await asyncio.open_connection(target, port)
    with tls_handshake():
        return await asyncio.open_connection(
            target, port, ssl=tls, server_hostname=host, ssl_handshake_timeout=ssl_handshake_timeout
        )


def goodbye(deadline: float) -> asyncio.Timeout:
    """The time a connection's goodbye may wait for its peer (an SMTP QUIT's answer, TLS
    close_notify): CLOSE_WAIT_S at most, and never past the check's `deadline` (the loop's
    time), which covers every step of a check. A goodbye cut short changes no result."""
    import asyncio

    return asyncio.timeout_at(min(deadline, asyncio.get_running_loop().time() + CLOSE_WAIT_S))


async def close_stream(writer: asyncio.StreamWriter, deadline: float) -> None:
    """Close a connection within its goodbye (by the check's `deadline`, CLOSE_WAIT_S at most),
    then drop it: a peer that never answers TLS close_notify must not hold the probe."""
    writer.close()
    try:
        async with goodbye(deadline):
            await writer.wait_closed()
    except OSError:  # TimeoutError and ssl.SSLError are OSErrors
        writer.transport.abort()


def cert_expires_at_ms(cert: dict[str, object] | None) -> int | None:
    """notAfter of a verified peer certificate (ssl's dict form) as epoch ms; None when absent."""
    not_after = (cert or {}).get("notAfter")
    if not isinstance(not_after, str):
        return None
    import ssl  # loaded: the certificate came from it

    return ssl.cert_time_to_seconds(not_after) * MS_PER_S


def certificate_result(monitor: Monitor, now_ms: int, latency_ms: int, cert: dict[str, object] | None) -> ProbeResult:
    """The result of a verified TLS handshake: up, or down when the certificate expires within
    monitor.expires_within_sec; unknown when verification is off (there is no certificate to
    judge)."""
    expires_at_ms = cert_expires_at_ms(cert)
    cause = expiry_cause(monitor, now_ms, expires_at_ms)
    if expires_at_ms is None:
        return ProbeResult("unknown", latency_ms, None, cause)
    return ProbeResult("down" if cause else "up", latency_ms, None, cause, expires_at_ms)


def expiry_cause(monitor: Monitor, now_ms: int, expires_at_ms: int | None) -> str | None:
    """Why the certificate fails monitor.expires_within_sec at `now_ms`, or None when it passes."""
    if expires_at_ms is None:
        return "tls: no verified certificate to read the expiry from"
    if expires_at_ms - now_ms <= s_to_ms(monitor.expires_within_sec or 0):
        return f"tls: {expiry_text(expires_at_ms, now_ms)}"
    return None
