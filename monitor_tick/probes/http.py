"""The HTTP(S) probe: one request under one hard deadline, turned into a ProbeResult.

httpx's timeouts are per operation (a server that drips a byte a second never trips a read
timeout), so the whole attempt -- connect, headers, body -- runs under `asyncio.timeout`.
Every failure a remote end can cause becomes a `down` result with a short cause; our own
limits (a connection-pool wait) become `unknown`, never `down`.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time

import httpx

from monitor_tick.clock import elapsed_ms
from monitor_tick.model import Monitor, ProbeResult, parse_expect, status_accepted

MAX_BODY_BYTES = 1024 * 1024  # at most this much of a body is kept, to look for the keyword
MAX_REDIRECTS = 5


async def probe_http(monitor: Monitor, client: httpx.AsyncClient) -> ProbeResult:
    """One attempt. Never raises for remote behaviour; returns up/down/unknown with a cause.

    The body is read to its end under the same deadline (a page that never finishes loading is
    down), keeping at most MAX_BODY_BYTES of it, only when there is a keyword to look for.
    """
    ranges = parse_expect(monitor.expect_status)
    keyword = monitor.keyword.encode("utf-8") if monitor.keyword else None
    start = time.perf_counter()
    status: int | None = None
    try:
        async with asyncio.timeout(monitor.timeout_s):
            request = client.build_request(monitor.method, monitor.url, timeout=monitor.timeout_s)
            response = await client.send(request, stream=True, follow_redirects=True)
            try:
                status = response.status_code
                if not status_accepted(status, ranges):
                    return ProbeResult("down", elapsed_ms(start, time.perf_counter()), status, f"status {status}")
                found = await _read_body(response, keyword)
            finally:
                await response.aclose()
    except TimeoutError:
        return ProbeResult("down", None, status, "timeout" if status is None else "timeout reading body")
    except httpx.PoolTimeout:
        return ProbeResult("unknown", None, None, "connection pool exhausted")
    except httpx.HTTPError as exc:
        return ProbeResult("down", None, status, cause_of(exc))
    except (OSError, ssl.SSLError) as exc:  # transports may leak raw socket errors
        return ProbeResult("down", None, status, _cause_of_os_error(exc))
    if found is False:
        return ProbeResult("down", elapsed_ms(start, time.perf_counter()), status, "keyword missing")
    return ProbeResult("up", elapsed_ms(start, time.perf_counter()), status, None)


async def _read_body(response: httpx.Response, needle: bytes | None) -> bool | None:
    """Read the body to its end. With a needle: whether the first MAX_BODY_BYTES (decoded)
    contain it, holding no more than that in memory; without one, None (nothing is kept)."""
    if needle is None:
        async for _ in response.aiter_raw():
            pass
        return None
    seen = bytearray()
    found = False
    async for chunk in response.aiter_bytes():
        if found or len(seen) >= MAX_BODY_BYTES:
            continue
        searched_to = max(0, len(seen) - len(needle) + 1)
        seen += chunk[: MAX_BODY_BYTES - len(seen)]
        found = seen.find(needle, searched_to) >= 0
    return found


def cause_of(exc: httpx.HTTPError) -> str:
    """A short, stable cause for an httpx failure (never the URL: it may hold secrets)."""
    if isinstance(exc, httpx.TooManyRedirects):
        return "too many redirects"
    if isinstance(exc, httpx.ConnectTimeout):
        return "timeout"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        return _cause_of_chain(exc, default="connect error")
    if isinstance(exc, httpx.RemoteProtocolError):
        return "protocol error"
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        return _cause_of_chain(exc, default="connection reset")
    if isinstance(exc, httpx.UnsupportedProtocol):
        return "unsupported protocol"
    if isinstance(exc, httpx.DecodingError):
        return "undecodable body"
    return type(exc).__name__


def _cause_of_chain(exc: BaseException, default: str) -> str:
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:  # chains can loop
        visited.add(id(seen))
        if isinstance(seen, OSError | ssl.SSLError) and not isinstance(seen, httpx.HTTPError):
            cause = _cause_of_os_error(seen)
            if cause != "connect error":  # anyio wraps the real error in a plain OSError
                return cause
        seen = seen.__cause__ or seen.__context__
    text = str(exc).lower()
    if "name or service not known" in text or "nodename nor servname" in text or "name resolution" in text:
        return "dns"
    if "certificate" in text or "ssl" in text or "tls" in text:
        return "tls"
    if "connection refused" in text or "errno 111" in text:
        return "connect refused"
    return default


def _cause_of_os_error(exc: BaseException) -> str:
    from monitor_tick.probes.guard import BlockedAddress

    if isinstance(exc, BlockedAddress):
        return str(exc)
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = (exc.verify_message or "").lower()
        if "expired" in reason:
            return "tls: certificate expired"
        if "hostname" in reason or "ip address mismatch" in reason:
            return "tls: certificate is for another host"
        if "self-signed" in reason or "self signed" in reason:
            return "tls: self-signed certificate"
        return "tls: certificate not trusted"
    if isinstance(exc, ssl.SSLError):
        return "tls"
    if isinstance(exc, socket.gaierror):
        return "dns"
    if isinstance(exc, ConnectionRefusedError):
        return "connect refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, TimeoutError):
        return "timeout"
    return "connect error"
