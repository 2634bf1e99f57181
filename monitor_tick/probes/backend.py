"""httpx's own transport (httpcore + h11) on a network backend of ours: the transport of the checks
the fast path (wire.py) does not take, and of every check under --block-private (Backend with a
guard).

httpcore's AnyIO stream closes its socket when a TLS handshake fails with an Exception, but not
when the handshake is cancelled: a probe that reaches its deadline (asyncio.timeout) or the
tick's budget in the middle of a handshake would leave its TCP socket open until the process
ends. Our streams close it on any way out of the handshake.

httpx has no public hook for the network backend: the transport's pool is rebuilt on ours, with
the transport's own settings (tests pin this down).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from monitor_tick.probes.guard import UNIX_SOCKETS, AddressGuard, BlockedAddress


class Stream(httpcore.AsyncNetworkStream):
    """An httpcore stream whose start_tls closes the connection however the handshake ends."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        try:
            return Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))
        except BaseException:  # CancelledError included: httpcore's own catches Exception only
            # the socket is closed before the first await, so a second cancellation cannot stop it
            await self._inner.aclose()
            raise

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class Backend(httpcore.AsyncNetworkBackend):
    """httpcore's AnyIO backend, its streams wrapped in Stream; with `guard` (--block-private),
    our own lookup and the guard's check of the address before each connect."""

    def __init__(self, guard: AddressGuard | None = None) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._guard = guard

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self._guard is not None:
            host = await self._guard.resolve(host, port)
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return Stream(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        if self._guard is not None:
            raise BlockedAddress(UNIX_SOCKETS)
        return Stream(await self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class Pool(httpcore.AsyncConnectionPool):
    """httpcore's pool, but closing it when it holds no connection does nothing. httpcore shields
    the close of each connection from cancellation with anyio, even of none: a large tick, whose
    checks all went on the wire (probes/wire.py), would load anyio's asyncio backend only to
    close an empty pool (about 50 ms of CPU, a tenth of a 1,000-check tick)."""

    async def aclose(self) -> None:
        if self.connections:
            await super().aclose()


def httpx_transport(
    ssl_context: ssl.SSLContext, limits: httpx.Limits, backend: httpcore.AsyncNetworkBackend | None = None
) -> httpx.AsyncHTTPTransport:
    """httpx's own transport with its connection pool on `backend` (default: Backend())."""
    transport = httpx.AsyncHTTPTransport(verify=ssl_context, limits=limits)
    transport._pool = Pool(  # noqa: SLF001
        ssl_context=ssl_context,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=Backend() if backend is None else backend,
    )
    return transport


def guarded_transport(
    guard: AddressGuard, *, ssl_context: ssl.SSLContext, limits: httpx.Limits
) -> httpx.AsyncHTTPTransport:
    """httpx's own transport on the guarded backend."""
    return httpx_transport(ssl_context, limits, Backend(guard))
