"""Plain HTTP/1.1 checks straight on the wire, parsed by httptools: the fast path of every tick
(probing.fast_path), which imports no httpx. The exchange (Exchange) does no I/O of its own: a
tick whose checks are all plain carries it on bare sockets (bare.py), without asyncio; any other
on asyncio's transports (Call).

Why: per check, httpx's client (URL and header models, auth and redirect machinery, cookies)
costs about twice what the request costs on the wire, whatever transport it runs on; a tick of
thousands of checks spends most of its time there (bench/run.py, figures 2 and 9). A check
needs much less: one request, the status, the body read to its end, the peer certificate.

What it takes on is an exchange with one answer -- one GET without a body, one response, one
connection, closed after it. Everything else is httpx's, unchanged: `Call.run` (and the bare
loop's call) returns None for
a request it does not send itself (another method, a body, credentials in the URL, a header
value that is not ASCII) and for a response that httpx would take further or judge otherwise (a
redirect to follow, an informational status, a body it would have to decode for a keyword,
another transfer coding, anything httptools refuses, more than MAX_HEAD_BYTES beyond the body),
and the probe then runs through httpx, sending the request again within the same deadline (its
latency is that of httpx's exchange, the one that decided); the tick remembers such a monitor and
sends its next checks to httpx at once (run/fanout.py, to_httpx). With a proxy in the environment, no
check takes the fast path. A test holds the three (httpx, the fast path on asyncio and on the
bare loop) to the same outcome and cause against every misbehaving local server.

Failures are raised as WireError's kinds, named as httpx's own exception types, with the OS or
TLS error underneath; http.cause_of reads them as it reads httpx's, so the probe's causes read
exactly as through httpx. httpx is imported here only to parse a URL that is not plain.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import re
import socket
from collections.abc import Callable
from types import ModuleType

from monitor_tick.core.model import Monitor
from monitor_tick.core.records import NamedTuple
from monitor_tick.probes import request

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import asyncio
    import ssl
    from typing import Any

    import httpx

# what httpx's client sends unless told otherwise, but for the encoding: the fast path reads
# bodies as they come (a server that compresses anyway is handed to httpx when the body counts)
_ACCEPT = [(b"Accept", b"*/*"), (b"Accept-Encoding", b"identity"), (b"Connection", b"close")]
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")  # in any case, as urllib reads them
HAPPY_EYEBALLS_DELAY_S = 0.25  # as anyio (httpx's own transport) tries a host's next address
# The most a response may hold beyond its body (status line, headers, chunk framing, trailers)
# before it is handed to httpx, whose h11 allows a head of 100 KiB (httpcore's setting): a peer
# that sends headers or trailers without end is never held here.
MAX_HEAD_BYTES = 100 * 1024


def proxied() -> bool:
    """Whether httpx would send requests through a proxy from the environment: then only httpx
    sends them (probing.fast_path)."""
    return any(value and name.lower() in PROXY_VARIABLES for name, value in os.environ.items())


class Answer:
    """A response the fast path took on: its status, its body (the first `limit` bytes, when
    kept), whether that is all of it, and the peer certificate over TLS when asked for. Filled
    in as the response comes (a plain class: the tick defines no dataclass)."""

    __slots__ = ("status", "body", "whole", "peer_cert")

    def __init__(self, status: int, *, peer_cert: dict[str, object] | None = None) -> None:
        self.status = status
        self.body = bytearray()
        self.whole = True
        self.peer_cert = peer_cert

    def __repr__(self) -> str:
        return f"Answer(status={self.status}, body={bytes(self.body)!r}, whole={self.whole})"


class WireError(Exception):
    """A failure of the fast path's exchange (its OS or TLS error as __cause__)."""


class ConnectError(WireError):
    """As httpx.ConnectError: no connection (or no TLS session) to the host."""


class ReadError(WireError):
    """As httpx.ReadError: the connection failed while the response was read."""


class RemoteProtocolError(WireError):
    """As httpx.RemoteProtocolError: the peer closed before its response was complete."""


class InvalidURL(ValueError):
    """httpx.InvalidURL's message, for a URL httpx refuses to send."""


class Handed(Exception):
    """This response is httpx's to take further."""


class Exchange:
    """One request's response, read as it comes (httptools' callbacks), with no I/O of its own:
    the loop that carries the connection (Call on asyncio's, bare.BareCall on the bare loop)
    feeds it what arrives, the end of the stream or the connection's loss, and sets `ssl_object`
    once a TLS session is up. `finished` is called once, with the Answer or the exception the
    exchange ended with (Handed: httpx's to take further). `status` is the response's once its
    headers are in (a probe that times out says whether it was reading the body)."""

    def __init__(
        self,
        finished: Callable[[Answer | BaseException], None],
        *,
        keep: bool,
        limit: int,
        read_body: Callable[[int], bool],
        peer_cert: bool = False,
    ) -> None:
        """`keep`: keep the body's first `limit` bytes; `read_body(status)`: whether to read the
        body at all; `peer_cert`: read the peer's certificate (over TLS)."""
        self._finished = finished
        self._peer_cert = peer_cert
        self._keep = keep
        self._limit = limit
        self._read_body = read_body
        self._parser: Any = _httptools().HttpResponseParser(self)
        self._headers_done = False
        self._received = 0
        self._body_bytes = 0
        self._until_eof = True  # neither Content-Length nor chunked: the body ends with the connection
        self.status: int | None = None
        self.done = False
        self.ssl_object: ssl.SSLObject | None = None
        self._answer: Answer | None = None

    # the carrier's side
    def feed(self, data: bytes) -> None:
        if self.done or self._parser is None:
            return
        self._received += len(data)
        httptools = _httptools()
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):
            # anything httptools refuses (it is stricter than h11 here and there: a repeated
            # Content-Length, bare LF line ends), an upgrade, or a callback's hand-over: what
            # httpx makes of this response is the result
            self._fail(Handed())
            return
        if self._received - self._body_bytes > MAX_HEAD_BYTES + self._body_bytes:
            self._fail(Handed())  # headers, framing or trailers without end: httpx's limits

    def ended(self, exc: BaseException | None) -> None:
        """The stream ended: at its end (None), or lost to `exc`."""
        if self.done:
            return
        if exc is not None:
            self._fail(ReadError(str(exc) or type(exc).__name__), exc)
        elif self._headers_done and self._until_eof:
            self._finish()
        elif not self._headers_done:
            self._fail(RemoteProtocolError("Server disconnected without sending a response."))
        else:
            self._fail(RemoteProtocolError("peer closed connection without sending complete message body"))

    # httptools' side
    def on_header(self, name: bytes, value: bytes) -> None:
        lowered = name.lower()
        if lowered == b"transfer-encoding" and value.strip().lower() != b"chunked":
            raise Handed  # another transfer coding: h11 refuses it, httpx is the judge
        if lowered in (b"content-length", b"transfer-encoding"):
            self._until_eof = False
        elif lowered == b"content-encoding" and self._keep and value.strip().lower() not in (b"", b"identity"):
            raise Handed  # a body to decode for a keyword: httpx's decoders

    def on_headers_complete(self) -> None:
        status = self.status = self._parser.get_status_code()
        self._headers_done = True
        if status < 200 or 300 <= status < 400:  # informational, or (maybe) a redirect to follow
            raise Handed
        ssl_object = self.ssl_object if self._peer_cert else None
        self._answer = Answer(status, peer_cert=ssl_object.getpeercert() if ssl_object is not None else None)
        if status in (204, 304) or not self._read_body(status):  # no body, or none worth reading
            self._until_eof = False
            self._finish()

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        answer = self._answer
        if answer is None or not self._keep:
            return
        room = self._limit - len(answer.body)
        answer.whole = answer.whole and len(body) <= room
        answer.body += body[:room]

    def on_message_complete(self) -> None:
        self._finish()

    def _finish(self) -> None:
        if not self.done and self._answer is not None:
            self._end(self._answer)

    def _fail(self, exc: BaseException, cause: BaseException | None = None) -> None:
        if not self.done:
            exc.__cause__ = cause
            self._end(exc)

    def _end(self, outcome: Answer | BaseException) -> None:
        self.done = True
        self.close()
        self._finished(outcome)

    def close(self) -> None:
        """Drop the parser, which refers back to us: without it, we are freed at once. The
        exchange reads nothing more."""
        self._parser = None


class Request(NamedTuple):
    """What the fast path sends for a monitor, when it takes the request on (request_of)."""

    wire: bytes
    host: str
    port: int
    tls: bool


def request_of(monitor: Monitor) -> Request | None:
    """The request the fast path sends for `monitor`, or None when it is httpx's to send (see
    the module docstring). Raises InvalidURL for a URL httpx refuses."""
    url = parsed(monitor.url)  # what httpx would send: its percent-encoding, its IDNA host
    if not takes(monitor, url):
        return None
    try:
        wire = _request_bytes(monitor, url)
    except UnicodeEncodeError:  # a header value httpx would refuse to send: httpx says so
        return None
    tls = url.scheme == "https"
    return Request(wire, url.raw_host.decode("ascii"), url.port if url.port is not None else (443 if tls else 80), tls)


class Call:
    """One request and the response to it, on one connection of asyncio's (its protocol);
    `status` is the response's once its headers are in, and `handed` says whether run() handed
    the response to httpx (the request was sent: httpx sends it again), not just a request it
    does not send itself."""

    def __init__(
        self,
        monitor: Monitor,
        ssl_context: Callable[[], ssl.SSLContext],
        *,
        keep: bool,
        limit: int,
        read_body: Callable[[int], bool],
        peer_cert: bool = False,
    ) -> None:
        """`ssl_context()`: what an https:// URL verifies with (called only for one); the rest
        as Exchange's."""
        import asyncio

        self._monitor = monitor
        self._ssl_context = ssl_context
        self._exchange = Exchange(self._ended, keep=keep, limit=limit, read_body=read_body, peer_cert=peer_cert)
        self._transport: asyncio.Transport | None = None
        self._wire = b""
        self.handed = False
        self._done: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()

    @property
    def status(self) -> int | None:
        return self._exchange.status

    async def run(self) -> Answer | None:
        """The response when the fast path takes it on, else None (the probe goes through
        httpx). The caller's deadline bounds it; raises WireError (the OS or TLS error as
        __cause__) where httpx's own transport would raise its counterpart."""
        import asyncio

        request = request_of(self._monitor)
        if request is None:
            return None
        self._wire = request.wire
        host, tls = request.host, request.tls
        try:
            try:
                await asyncio.get_running_loop().create_connection(
                    lambda: self,  # type: ignore[arg-type,return-value]  # asyncio's protocol, duck-typed
                    host,
                    request.port,
                    ssl=self._ssl_context() if tls else None,
                    server_hostname=host if tls else None,
                    ssl_handshake_timeout=self._monitor.timeout_s if tls else None,
                    # a name may have addresses of both families; an address literal has one
                    happy_eyeballs_delay=None if is_address(host) else HAPPY_EYEBALLS_DELAY_S,
                )
            except UnicodeError:  # a name asyncio cannot encode (a..b): httpx's lookup judges it
                return None
            except OSError as exc:  # ssl.SSLError too
                raise ConnectError(str(exc)) from exc
            return await self._done
        except Handed:
            self.handed = True
            return None
        finally:
            if self._transport is not None:  # now: no TLS close_notify to wait for, no socket left
                self._transport.abort()
            self._exchange.close()
            if self._done.done() and not self._done.cancelled():
                self._done.exception()  # seen, even when a cancellation came first

    def _ended(self, outcome: Answer | BaseException) -> None:
        if self._done.done():
            return
        if isinstance(outcome, BaseException):
            self._done.set_exception(outcome)
        else:
            self._done.set_result(outcome)

    # asyncio's side
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._exchange.ssl_object = transport.get_extra_info("ssl_object")
        transport.write(self._wire)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        self._exchange.feed(data)

    def eof_received(self) -> bool | None:
        self._exchange.ended(None)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._exchange.ended(exc)


class Plain(NamedTuple):
    """httpx's parse of a plain URL (_PLAIN_URL), with the parts of httpx.URL the probes read."""

    scheme: str
    raw_host: bytes
    port: int | None
    netloc: bytes
    raw_path: bytes
    userinfo: bytes = b""


# http(s)://host[:port][/path][?query], in lowercase but for the path and query, of characters
# httpx's parser leaves as they are: nothing to percent-encode ("%" included), no IDNA, no
# userinfo, no fragment, no IPv6 literal. Most monitors' URLs are this; `parsed` reads them itself
# in a third of httpx's time (3,000 URLs: about 15 ms against 46 ms; a large tick checks them all
# before probing) and leaves every other URL to httpx.
_PLAIN_URL = re.compile(
    r"(https?)://([a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)(?::([0-9]{1,5}))?"
    r"((?:/[A-Za-z0-9._~!$&'()*+,;=:@-]*)*)(\?[A-Za-z0-9._~!$&'()*+,;=:@/?-]*)?"
)
_IPV4_STYLE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")  # httpx's IPv4_STYLE_HOSTNAME
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PLAIN_URL_MAX = 2048  # longer URLs are httpx's to read, and to refuse past its own limit (64 KiB)


@functools.lru_cache(maxsize=4096)
def parsed(url: str) -> httpx.URL | Plain:
    """httpx's parse of a monitor's URL, once per tick for the row check and the request both:
    a plain URL's read here exactly as httpx reads it (a test holds the two to the same parts),
    any other by httpx.URL (pure Python, and the one import of httpx here; raises InvalidURL)."""
    match = _PLAIN_URL.fullmatch(url) if len(url) <= _PLAIN_URL_MAX else None
    if match is None:
        return _httpx_url(url)
    scheme, host, port_text, path, query = match.groups()
    if "/." in path or (_IPV4_STYLE.fullmatch(host) and not _valid_ipv4(host)):
        return _httpx_url(url)  # dot segments httpx removes; an address httpx refuses
    port = None if port_text is None else int(port_text)
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return Plain(scheme, host.encode("ascii"), port, netloc.encode("ascii"), ((path or "/") + (query or "")).encode())


def _httpx_url(url: str) -> httpx.URL:
    import httpx  # deferred: a plain URL never needs it

    try:
        return httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InvalidURL(str(exc)) from None


def _valid_ipv4(host: str) -> bool:
    """httpx's own test of a host shaped like an IPv4 address (ipaddress: four decimal octets of
    at most 255, no leading zeros)."""
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def _httptools() -> ModuleType:
    # deferred: a tick with no HTTP check never goes on the wire, and need not load the parser
    import httptools

    return httptools


def takes(monitor: Monitor, url: httpx.URL | Plain) -> bool:
    """Whether the fast path sends this request itself (see the module docstring): a GET with
    no body, since a response handed to httpx means the request is sent again."""
    return monitor.method == "GET" and monitor.body is None and not url.userinfo and url.scheme in ("http", "https")


def is_address(host: str) -> bool:
    """Whether `host` is an address literal (IPv4 or IPv6), not a name."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return True
    return False


def _request_bytes(monitor: Monitor, url: httpx.URL | Plain) -> bytes:
    """The GET (`takes`: no body) as httpx's client would put it on the wire (see _ACCEPT).
    Raises UnicodeEncodeError for a header httpx would refuse to send."""
    headers: dict[bytes, tuple[bytes, bytes]] = {b"host": (b"Host", url.netloc)}
    for name, value in (*_ACCEPT, (b"User-Agent", request.USER_AGENT.encode("ascii"))):
        headers[name.lower()] = (name, value)
    for name, text in request.request_headers(monitor).items():
        headers[name.lower().encode("ascii")] = (name.encode("ascii"), text.encode("ascii"))
    lines = [b"GET " + url.raw_path + b" HTTP/1.1", *(name + b": " + value for name, value in headers.values())]
    return b"\r\n".join(lines) + b"\r\n\r\n"
