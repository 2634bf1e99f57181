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

MAX_BODY_BYTES = 1024 * 1024  # at most this much of a body is read, for the keyword
MAX_REDIRECTS = 5


async def probe_http(monitor: Monitor, client: httpx.AsyncClient) -> ProbeResult:
    """One attempt. Never raises for remote behaviour; returns up/down/unknown with a cause."""
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
                if keyword is not None and not await _body_contains(response, keyword):
                    return ProbeResult("down", elapsed_ms(start, time.perf_counter()), status, "keyword missing")
            finally:
                await response.aclose()
    except TimeoutError:
        return ProbeResult("down", None, status, "timeout")
    except httpx.PoolTimeout:
        return ProbeResult("unknown", None, None, "connection pool exhausted")
    except httpx.HTTPError as exc:
        return ProbeResult("down", None, status, cause_of(exc))
    except (OSError, ssl.SSLError) as exc:  # transports may leak raw socket errors
        return ProbeResult("down", None, status, _cause_of_os_error(exc))
    return ProbeResult("up", elapsed_ms(start, time.perf_counter()), status, None)


async def _body_contains(response: httpx.Response, needle: bytes) -> bool:
    """Search the first MAX_BODY_BYTES of the (decoded) body, holding no more than that."""
    seen = bytearray()
    async for chunk in response.aiter_bytes():
        seen += chunk[: MAX_BODY_BYTES - len(seen)]
        if needle in seen:
            return True
        if len(seen) >= MAX_BODY_BYTES:
            return False
    return False


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
        wrapped = seen.__cause__ or seen.__context__
        if isinstance(seen, OSError | ssl.SSLError) and not isinstance(seen, httpx.HTTPError):
            if seen.errno is None and isinstance(wrapped, OSError):
                seen = wrapped  # anyio's "All connection attempts failed" wraps the real error
                continue
            return _cause_of_os_error(seen)
        seen = wrapped
    text = str(exc).lower()
    if "name or service not known" in text or "nodename nor servname" in text or "name resolution" in text:
        return "dns"
    if "certificate" in text or "ssl" in text or "tls" in text:
        return "tls"
    if "connection refused" in text or "errno 111" in text:
        return "connect refused"
    return default


def _cause_of_os_error(exc: BaseException) -> str:
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
