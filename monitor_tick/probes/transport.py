"""A faster httpx transport: aiohttp's connections and C HTTP parser under httpx's API.

Why: per check, httpx's default transport (httpcore + h11 + anyio, all pure Python) costs
several times what the request itself costs on loopback; with this transport a whole tick
probes about 1.5x as many fresh-connection checks per second (bench/run.py, figure 2). httpx stays
the API: redirects, cookies, header handling, content decoding and the Response the probes
read are all httpx's; only the bytes on the wire go through aiohttp.

Every request gets a fresh connection that is closed after its response (force_close): the
checks of a tick are of distinct hosts, and an idle keep-alive pool would hold a socket per
host for the whole tick. Closing such a connection over TLS sends close_notify and then waits
(asyncio: up to 30 s) for the peer's, which nothing in aiohttp awaits; closing the transport cuts
off every connection still waiting and waits until each has closed its socket, so none outlives
the event loop (an unclosed socket, whatever the peer does).

Errors become httpx's exception types with the underlying OS or TLS error as __cause__, so the
probe classifies them exactly as it does httpx's own transport's (a test holds the two
transports to the same outcome and cause against misbehaving local servers).
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
from multidict import CIMultiDict
from yarl import URL

_HOP_BY_HOP = (b"connection", b"keep-alive")


class _Connector(aiohttp.TCPConnector):
    """A TCPConnector that can finish closing every connection it opened."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # the transport of each connection not yet lost (weak: a lost one is nobody's)
        self._opened: weakref.WeakKeyDictionary[Any, asyncio.BaseTransport] = weakref.WeakKeyDictionary()

    async def connect(self, req: Any, traces: Any, timeout: Any) -> aiohttp.connector.Connection:
        connection = await super().connect(req, traces, timeout)
        if connection.protocol is not None and connection.transport is not None:
            self._opened[connection.protocol] = connection.transport
        return connection

    async def finish_closing(self) -> None:
        """Abort the connections still closing (a TLS close waiting for the peer's close_notify)
        and wait until each has let go of its socket. Call after close()."""
        waiting = []
        for protocol, transport in list(self._opened.items()):
            closed = protocol.closed  # None once the connection is lost
            if closed is not None:
                transport.abort()
                waiting.append(closed)
        await asyncio.gather(*waiting, return_exceptions=True)


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx.AsyncBaseTransport over one aiohttp session (created on first use, inside the loop)."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._ssl_context = ssl_context
        self._session: aiohttp.ClientSession | None = None
        self._connector: _Connector | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = self._connector = _Connector(limit=0, ssl=self._ssl_context, force_close=True)
        # httpx keeps the cookies (its jar sees every response); aiohttp must not keep its own
        self._session = aiohttp.ClientSession(
            connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
        )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._session or self._open()
        timeout = request.extensions.get("timeout", {})
        headers = CIMultiDict(
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in request.headers.raw
            if name.lower() not in _HOP_BY_HOP
        )
        body = await request.aread()
        try:
            response = await session.request(
                request.method,
                # httpx has already percent-encoded it, and turned its credentials into the
                # Authorization header (aiohttp refuses both at once)
                URL(str(request.url.copy_with(userinfo=b"") if request.url.userinfo else request.url), encoded=True),
                headers=headers,
                data=body or None,
                allow_redirects=False,  # httpx follows redirects itself
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=timeout.get("connect"), sock_read=timeout.get("read")
                ),
                server_hostname=request.extensions.get("sni_hostname"),
            )
        except aiohttp.ClientError as exc:
            raise as_httpx_error(exc) from root_cause(exc)
        version = response.version
        return httpx.Response(
            response.status,
            headers=list(response.raw_headers),
            stream=_ResponseBody(response),
            extensions={
                "http_version": f"HTTP/{version.major}.{version.minor}".encode() if version else b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
                # as httpx's own transport offers it: the peer certificate for --expires-within
                "network_stream": _Connection(response),
            },
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._connector is not None:
            await self._connector.finish_closing()
            self._connector = None


class _Connection:
    """The connection that carried a response, as far as probes ask: get_extra_info('ssl_object')."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    def get_extra_info(self, name: str) -> object:
        connection = self._response.connection
        transport = connection.transport if connection is not None else None
        return transport.get_extra_info(name) if transport is not None else None


class _ResponseBody(httpx.AsyncByteStream):
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except aiohttp.ClientError as exc:
            raise as_httpx_error(exc) from root_cause(exc)

    async def aclose(self) -> None:
        self._response.close()


def root_cause(exc: BaseException) -> BaseException:
    """The OS or TLS error under an aiohttp error (what httpx's own transport would chain), else
    the error itself."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return exc.certificate_error
    if isinstance(exc, aiohttp.ClientConnectorError):
        return exc.os_error
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        visited.add(id(seen))
        if isinstance(seen, OSError | ssl.SSLError) and not isinstance(seen, aiohttp.ClientError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return exc


def as_httpx_error(exc: aiohttp.ClientError) -> httpx.TransportError:
    """The httpx exception httpx's default transport raises for the same failure."""
    message = str(exc)
    if isinstance(exc, aiohttp.ClientConnectorError):  # refused, DNS, TLS handshake, certificate
        return httpx.ConnectError(message)
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(message)
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return httpx.ReadTimeout(message)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientResponseError):
        return httpx.RemoteProtocolError(message)  # closed before a response, or not HTTP
    if isinstance(exc, aiohttp.ClientPayloadError):
        if isinstance(root_cause(exc), ConnectionResetError):
            return httpx.ReadError(message)
        return httpx.RemoteProtocolError(message)  # body shorter than announced, bad chunking
    if isinstance(exc, aiohttp.NonHttpUrlClientError | aiohttp.InvalidUrlClientError):
        return httpx.UnsupportedProtocol(message)
    return httpx.ReadError(message)  # ClientOSError and the rest: the connection broke
