"""Misbehaving local HTTP(S) servers for integration tests.

Everything here listens on 127.0.0.1 only; nothing ever touches the network.

Each :class:`LocalServer` runs its own asyncio event loop in a background
thread, so test code (including code that calls ``asyncio.run()`` in the main
thread) can probe it like any remote server::

    with LocalServer() as srv:
        httpx.get(srv.url("/ok"))
        assert srv.hits["/ok"] == 1

Built-in behaviours (routed by path prefix, longest prefix wins):

=====================  =====================================================
``/``  ``/ok``         200, body ``ok``
``/status/NNN``        status NNN (no body for 1xx/204/304)
``/slow/MS``           wait MS milliseconds, then 200
``/hang``              read the request, never answer
``/drip``              200, Content-Length 100000, then one byte per
                       ``drip_interval`` seconds (default 1.0)
``/endless-chunked``   chunked encoding, 64 KiB chunks forever
``/huge-length``       Content-Length 10 GB, zeros forever
``/redirect-loop``     302 to itself
``/redirect/N``        302 -> /redirect/N-1 ... -> /ok (N redirects in total)
``/reset``             read the request, then RST (SO_LINGER 0); over TLS,
                       OpenSSL 3 reports the RST as an unexpected EOF, so
                       httpx raises RemoteProtocolError instead of ReadError
``/garbage``           ``this is not http\\r\\n\\r\\n`` then close
``/close-mid-body``    Content-Length 1000, 10 bytes, close
``/keyword/TEXT``      200 HTML page containing TEXT (percent-decoded)
``/body-size/N``       200 with N bytes of ``a``
anything else          404
=====================  =====================================================

HEAD requests get headers only.  Every response carries ``Connection: close``
and the connection is always closed after one request.

Custom behaviours: ``srv.route("/prefix", handler)`` (or as a decorator,
``@srv.route("/prefix")``) where ``handler`` is
``async def handler(reader, writer, path, method)``; ``path`` is the request
target as sent (including any query string).  The request body (if a small
Content-Length was given) has already been consumed.  :func:`send_response`
and :func:`response_head` help write replies; :data:`current_request` holds
the parsed :class:`Request` (with headers) while a handler runs.  The server
closes the connection when the handler returns.

TLS: ``LocalServer(tls=server_ssl_context)``; see :func:`valid_cert`,
:func:`self_signed_cert`, :func:`expired_cert`, :func:`wrong_host_cert` and
:func:`cert_expiring_in`, which return a :class:`TLSPair`
(unpackable as ``server_context, ca_pem_path``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import datetime as dt
import http
import ipaddress
import os
import shutil
import socket
import ssl
import struct
import tempfile
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar
from urllib.parse import unquote

import pytest
import trustme

__all__ = [
    "Handler",
    "HitCounter",
    "LocalServer",
    "LoopThread",
    "Request",
    "TLSPair",
    "banner_server",
    "ca_pem_path",
    "cert_expiring_in",
    "current_request",
    "default_ca",
    "expired_cert",
    "local_server",
    "make_ca",
    "refused_port",
    "reset_connection",
    "response_head",
    "self_signed_cert",
    "send_response",
    "valid_cert",
    "wrong_host_cert",
]

HOST = "127.0.0.1"
CHUNK = 64 * 1024
DRIP_LENGTH = 100_000
HUGE_LENGTH = 10_000_000_000
CLOSE_MID_BODY_LENGTH = 1000
MAX_REQUEST_BODY = 1024 * 1024
MAX_HEADERS = 100

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, str, str], Awaitable[None]]


class Request(NamedTuple):
    """One parsed request as received by a :class:`LocalServer`."""

    method: str
    target: str  # as sent, e.g. "/ok?x=1"
    path: str  # target without the query string, e.g. "/ok"
    version: str  # e.g. "HTTP/1.1"
    headers: dict[str, str]  # lower-cased names; last value wins
    body: bytes = b""  # a small declared body (Content-Length up to 1 MiB), as received


#: The request being handled (set while a route handler runs).
current_request: contextvars.ContextVar[Request] = contextvars.ContextVar("current_request")


# ---------------------------------------------------------------------------
# hit counter
# ---------------------------------------------------------------------------


class HitCounter(Mapping[str, int]):
    """Thread-safe ``path -> number of requests`` mapping.

    Missing paths read as 0.  Keys are request paths without query string
    (not percent-decoded).  Compares equal to a plain dict with the same
    counts.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._counts: dict[str, int] = {}

    def _add(self, path: str) -> None:
        with self._cond:
            self._counts[path] = self._counts.get(path, 0) + 1
            self._cond.notify_all()

    def __getitem__(self, path: str) -> int:
        with self._cond:
            return self._counts.get(path, 0)

    def __contains__(self, path: object) -> bool:
        with self._cond:
            return path in self._counts

    def __iter__(self) -> Iterator[str]:
        return iter(self.snapshot())

    def __len__(self) -> int:
        with self._cond:
            return len(self._counts)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HitCounter):
            other = other.snapshot()
        if isinstance(other, Mapping):
            return self.snapshot() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HitCounter({self.snapshot()!r})"

    def snapshot(self) -> dict[str, int]:
        with self._cond:
            return dict(self._counts)

    @property
    def total(self) -> int:
        with self._cond:
            return sum(self._counts.values())

    def clear(self) -> None:
        with self._cond:
            self._counts.clear()

    def wait_for(self, path: str | None = None, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until ``self[path] >= count`` (or ``total`` if path is None).

        Returns False on timeout.  Uses a condition variable, no polling.
        """

        def ready() -> bool:
            if path is None:
                return sum(self._counts.values()) >= count
            return self._counts.get(path, 0) >= count

        with self._cond:
            return self._cond.wait_for(ready, timeout)


# ---------------------------------------------------------------------------
# response helpers
# ---------------------------------------------------------------------------


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def response_head(status: int, headers: list[tuple[str, str]] | dict[str, str] | None = None) -> bytes:
    """Status line + headers + blank line.  Adds ``Connection: close``."""
    items = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    names = {k.lower() for k, _ in items}
    if "connection" not in names:
        items.append(("Connection", "close"))
    if "server" not in names:
        items.append(("Server", "monitor-tick-test-server"))
    lines = [f"HTTP/1.1 {status} {_reason(status)}"]
    lines += [f"{k}: {v}" for k, v in items]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _no_body_status(status: int) -> bool:
    return 100 <= status < 200 or status in (204, 304)


async def send_response(
    writer: asyncio.StreamWriter,
    status: int = 200,
    body: bytes | str = b"",
    *,
    method: str = "GET",
    headers: list[tuple[str, str]] | dict[str, str] | None = None,
    content_type: str | None = "text/plain; charset=utf-8",
) -> None:
    """Write a complete response (headers only for HEAD) and drain."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    items = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    names = {k.lower() for k, _ in items}
    if not _no_body_status(status):
        if content_type and "content-type" not in names:
            items.append(("Content-Type", content_type))
        if "content-length" not in names and "transfer-encoding" not in names:
            items.append(("Content-Length", str(len(body))))
    else:
        body = b""
    writer.write(response_head(status, items))
    if method != "HEAD" and body:
        writer.write(body)
    await writer.drain()


async def _write_forever(writer: asyncio.StreamWriter, data: bytes, limit: int | None = None) -> None:
    """Write ``data`` repeatedly (up to ``limit`` bytes) with backpressure."""
    sent = 0
    while limit is None or sent < limit:
        piece = data if limit is None else data[: limit - sent]
        writer.write(piece)
        sent += len(piece)
        await writer.drain()
        # drain() does not yield when the client keeps up; make sure the
        # loop stays responsive (other connections, stop()).
        await asyncio.sleep(0)


# ---------------------------------------------------------------------------
# built-in behaviours
# ---------------------------------------------------------------------------


def _tail(path: str, prefix: str) -> str:
    return path.split("?", 1)[0][len(prefix) :].lstrip("/")


def _int_tail(path: str, prefix: str) -> int | None:
    tail = _tail(path, prefix)
    return int(tail) if tail.isdigit() else None


async def _bad_request(writer: asyncio.StreamWriter, method: str, why: str) -> None:
    await send_response(writer, 400, why + "\n", method=method)


async def _h_ok(reader, writer, path, method):
    await send_response(writer, 200, "ok", method=method)


async def _h_not_found(reader, writer, path, method):
    await send_response(writer, 404, "not found\n", method=method)


async def _h_status(reader, writer, path, method):
    code = _int_tail(path, "/status")
    if code is None or not 100 <= code <= 999:
        return await _bad_request(writer, method, "bad status")
    await send_response(writer, code, f"status {code}\n", method=method)


async def _h_slow(reader, writer, path, method):
    ms = _int_tail(path, "/slow")
    if ms is None:
        return await _bad_request(writer, method, "bad delay")
    await asyncio.sleep(ms / 1000)
    await send_response(writer, 200, "ok", method=method)


async def _h_hang(reader, writer, path, method):
    await asyncio.get_running_loop().create_future()  # until cancelled


def _make_drip(server: LocalServer) -> Handler:
    async def _h_drip(reader, writer, path, method):
        writer.write(response_head(200, [("Content-Type", "text/plain"), ("Content-Length", str(DRIP_LENGTH))]))
        await writer.drain()
        if method == "HEAD":
            return
        for _ in range(DRIP_LENGTH):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(server.drip_interval)

    return _h_drip


async def _h_endless_chunked(reader, writer, path, method):
    writer.write(response_head(200, [("Content-Type", "application/octet-stream"), ("Transfer-Encoding", "chunked")]))
    await writer.drain()
    if method == "HEAD":
        return
    await _write_forever(writer, b"%x\r\n" % CHUNK + b"a" * CHUNK + b"\r\n")


async def _h_huge_length(reader, writer, path, method):
    writer.write(
        response_head(200, [("Content-Type", "application/octet-stream"), ("Content-Length", str(HUGE_LENGTH))])
    )
    await writer.drain()
    if method == "HEAD":
        return
    await _write_forever(writer, bytes(CHUNK), HUGE_LENGTH)


async def _h_redirect_loop(reader, writer, path, method):
    await send_response(writer, 302, "", method=method, headers=[("Location", "/redirect-loop")])


async def _h_redirect(reader, writer, path, method):
    n = _int_tail(path, "/redirect")
    if n is None:
        return await _bad_request(writer, method, "bad redirect count")
    if n == 0:
        return await send_response(writer, 200, "ok", method=method)
    location = f"/redirect/{n - 1}" if n > 1 else "/ok"
    await send_response(writer, 302, "", method=method, headers=[("Location", location)])


async def _h_reset(reader, writer, path, method):
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


reset_connection: Handler = _h_reset  # for a route of a test's own (tests/hostile_origin.py's scripted)


async def _h_garbage(reader, writer, path, method):
    writer.write(b"this is not http\r\n\r\n")
    await writer.drain()


async def _h_close_mid_body(reader, writer, path, method):
    writer.write(response_head(200, [("Content-Type", "text/plain"), ("Content-Length", str(CLOSE_MID_BODY_LENGTH))]))
    if method != "HEAD":
        writer.write(b"0123456789")
    await writer.drain()


async def _h_keyword(reader, writer, path, method):
    text = unquote(_tail(path, "/keyword"))
    body = (
        "<!DOCTYPE html>\n<html><head><title>monitor-tick test page</title></head>\n"
        f"<body><h1>Status</h1><p>The page says: {text} (end).</p></body></html>\n"
    )
    await send_response(writer, 200, body, method=method, content_type="text/html; charset=utf-8")


async def _h_body_size(reader, writer, path, method):
    n = _int_tail(path, "/body-size")
    if n is None:
        return await _bad_request(writer, method, "bad size")
    writer.write(response_head(200, [("Content-Type", "text/plain"), ("Content-Length", str(n))]))
    await writer.drain()
    if method != "HEAD" and n:
        await _write_forever(writer, b"a" * CHUNK, n)


# ---------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------


class _BadRequest(Exception):
    pass


def _match(prefix: str, path: str) -> bool:
    base = prefix.rstrip("/")
    return path == prefix or path == base or path.startswith(base + "/")


class LocalServer:
    """An HTTP/1.1 server on 127.0.0.1 (or another loopback address: ``host=``) running in a
    background thread.

    Use as a context manager, or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        tls: ssl.SSLContext | None = None,
        *,
        drip_interval: float = 1.0,
        handshake_timeout: float = 10.0,
        host: str = HOST,
    ) -> None:
        if not host.startswith("127."):
            raise ValueError("test servers listen on the loopback range 127.0.0.0/8 only")
        self._host = host
        self.tls = tls
        self.drip_interval = drip_interval
        self.handshake_timeout = handshake_timeout
        self.hits = HitCounter()
        #: Exceptions raised by handlers (client disconnects excluded) and
        #: asyncio exception-handler contexts.  Tests may assert it is empty.
        self.errors: list[Any] = []
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._routes: dict[str, Handler] = {}
        self._builtin: dict[str, Handler] = {
            "/ok": _h_ok,
            "/status": _h_status,
            "/slow": _h_slow,
            "/hang": _h_hang,
            "/drip": _make_drip(self),
            "/endless-chunked": _h_endless_chunked,
            "/huge-length": _h_huge_length,
            "/redirect-loop": _h_redirect_loop,
            "/redirect": _h_redirect,
            "/reset": _h_reset,
            "/garbage": _h_garbage,
            "/close-mid-body": _h_close_mid_body,
            "/keyword": _h_keyword,
            "/body-size": _h_body_size,
        }
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._stop_event: asyncio.Event | None = None
        self._stopping = False
        self._startup_error: BaseException | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        # Strong references: asyncio only keeps weak ones, and a handler
        # awaiting a private future would otherwise be garbage-collected
        # once the connection is lost.
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- public API ---------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def host(self) -> str:
        return self._host

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{self._host}:{self.port}"

    def url(self, path: str = "/") -> str:
        if not path.startswith("/"):
            path = "/" + path
        return self.base_url + path

    @property
    def requests(self) -> list[Request]:
        """Copy of all requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def route(self, prefix: str, handler: Handler | None = None):
        """Register ``async handler(reader, writer, path, method)`` for a prefix.

        Custom routes override built-ins with the same prefix; otherwise the
        longest matching prefix wins.  Usable as a decorator when ``handler``
        is omitted.  Returns the handler.
        """
        if not prefix.startswith("/"):
            raise ValueError("prefix must start with '/'")

        def register(h: Handler) -> Handler:
            with self._lock:
                self._routes = {**self._routes, prefix: h}
            return h

        return register(handler) if handler is not None else register

    def start(self) -> LocalServer:
        if self._thread is not None:
            raise RuntimeError("LocalServer can only be started once")
        self._thread = threading.Thread(target=self._run, name="LocalServer", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._startup_error is not None:
            self._thread.join()
            raise RuntimeError("LocalServer failed to start") from self._startup_error
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listener and all connections, cancel handlers, join."""
        thread, loop = self._thread, self._loop
        if thread is None or not thread.is_alive():
            return
        if loop is not None and self._stop_event is not None:
            try:
                loop.call_soon_threadsafe(self._stop_event.set)
            except RuntimeError:  # loop already closed
                pass
        thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError(f"LocalServer thread did not exit within {timeout}s")

    def __enter__(self) -> LocalServer:
        if self._thread is None:
            self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        port = self._port if self._port is not None else "-"
        return f"<LocalServer {self.scheme}://{self._host}:{port}>"

    # -- event loop thread --------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.set_exception_handler(lambda _loop, context: self.errors.append(context))
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # pragma: no cover - defensive
            if not self._started.is_set():
                self._startup_error = exc
            else:
                self.errors.append(exc)
        finally:
            self._started.set()
            try:
                rest = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in rest:
                    t.cancel()
                if rest:
                    loop.run_until_complete(asyncio.gather(*rest, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()

    async def _main(self) -> None:
        self._stop_event = asyncio.Event()
        try:
            server = await asyncio.start_server(self._on_connect, self._host, 0)
        except BaseException as exc:
            self._startup_error = exc
            self._started.set()
            return
        self._port = server.sockets[0].getsockname()[1]
        self._started.set()
        try:
            await self._stop_event.wait()
        finally:
            self._stopping = True
            server.close()
            # Let just-accepted connections reach their handler so that
            # their writers get registered (and closed) below.
            for _ in range(3):
                await asyncio.sleep(0)
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for writer in list(self._writers):
                writer.transport.abort()
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=2)
            try:
                await asyncio.wait_for(server.wait_closed(), 1)
            except (TimeoutError, OSError):  # pragma: no cover
                pass

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        established = self.tls is None
        try:
            if self._stopping:
                return  # accepted while shutting down; finally aborts it
            if not established:
                try:
                    await writer.start_tls(self.tls, ssl_handshake_timeout=self.handshake_timeout)
                except (TimeoutError, OSError):
                    return  # handshake failed (e.g. client rejected our cert)
                established = True
            try:
                request = await self._read_request(reader)
            except _BadRequest as exc:
                await send_response(writer, 400, f"bad request: {exc}\n")
                return
            if request is None:
                return
            with self._lock:
                self._requests.append(request)
            self.hits._add(request.path)
            handler = self._lookup(request.path)
            current_request.set(request)
            await handler(reader, writer, request.target, request.method)
        except asyncio.CancelledError:
            # Only stop() cancels handlers.  Do not let the task end
            # cancelled: asyncio's done-callback would report it as an error.
            if not self._stopping:
                raise
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # client went away; expected with misbehaving endpoints
        except OSError as exc:
            if not self._stopping:
                self.errors.append(exc)
        except Exception as exc:
            self.errors.append(exc)
        finally:
            await self._close_writer(writer, established)
            self._writers.discard(writer)
            self._tasks.discard(task)

    async def _close_writer(self, writer: asyncio.StreamWriter, established: bool) -> None:
        if not established:
            # TLS handshake never completed: the stream protocol is detached
            # from the socket transport, so wait_closed() would never fire.
            writer.transport.abort()
            await asyncio.sleep(0)  # let the transport's connection_lost run
            return
        if self._stopping:
            writer.transport.abort()
        else:
            writer.close()
        try:
            await asyncio.wait_for(writer.wait_closed(), 2)
        except asyncio.CancelledError:
            writer.transport.abort()
            if not self._stopping:
                raise
        except Exception:  # includes TimeoutError
            writer.transport.abort()

    def _lookup(self, path: str) -> Handler:
        with self._lock:
            custom = self._routes
        for table in (custom, self._builtin):
            matches = [p for p in table if _match(p, path)]
            if matches:
                return table[max(matches, key=len)]
        return _h_ok if path == "/" else _h_not_found

    async def _read_request(self, reader: asyncio.StreamReader) -> Request | None:
        async def readline() -> bytes:
            try:
                return await reader.readline()
            except ValueError:  # line longer than the stream limit
                raise _BadRequest("line too long") from None

        line = await readline()
        while line in (b"\r\n", b"\n"):  # tolerate leading empty lines
            line = await readline()
        if not line.endswith(b"\n"):
            return None  # EOF before a request line
        parts = line.decode("latin-1").strip().split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            raise _BadRequest("malformed request line")
        method, target, version = parts
        headers: dict[str, str] = {}
        while True:
            line = await readline()
            if not line.endswith(b"\n"):
                return None  # EOF inside the headers
            if line in (b"\r\n", b"\n"):
                break
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep or not name.strip():
                raise _BadRequest("malformed header")
            headers[name.strip().lower()] = value.strip()
            if len(headers) > MAX_HEADERS:
                raise _BadRequest("too many headers")
        # Consume a small declared body so closing the socket later does not
        # turn into an RST because of unread data.
        length = headers.get("content-length", "")
        body = b""
        if length.isdigit() and 0 < int(length) <= MAX_REQUEST_BODY:
            try:
                body = await asyncio.wait_for(reader.readexactly(int(length)), 5)
            except (TimeoutError, asyncio.IncompleteReadError):
                pass
        return Request(method.upper(), target, target.split("?", 1)[0], version, headers, body)


@pytest.fixture
def local_server() -> Iterator[LocalServer]:
    """A started plain-HTTP :class:`LocalServer` (import into conftest.py)."""
    with LocalServer() as srv:
        yield srv


# ---------------------------------------------------------------------------
# ports
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# servers written with asyncio libraries
# ---------------------------------------------------------------------------

T = TypeVar("T")


class LoopThread:
    """An asyncio event loop running in a daemon thread, for servers made with asyncio libraries
    (aiosmtpd, websockets, asyncio's own) that a tick in the main thread probes. On exit, the
    tasks still running there (connections being served) are cancelled and the loop closed."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="LoopThread", daemon=True)

    def __enter__(self) -> LoopThread:
        self._thread.start()
        return self

    def run(self, awaitable: Awaitable[T], timeout_s: float = 30) -> T:
        """Await `awaitable` in the loop's thread; its result."""

        async def wait() -> T:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(wait(), self.loop).result(timeout_s)

    def __exit__(self, *exc_info: object) -> None:
        async def cancel_the_rest() -> None:
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.run(cancel_the_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.loop.close()


@contextlib.contextmanager
def banner_server(banner: bytes, *, delay_s: float = 0.0) -> Iterator[int]:
    """A 127.0.0.1 port whose server writes `banner` to each connection, `delay_s` after it
    was accepted, then keeps it open until the client leaves: a server that greets first (as
    SMTP and SSH servers do), saying what a test needs."""

    async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.sleep(delay_s)
            writer.write(banner)
            await reader.read()  # to the client's end
        except ConnectionError:
            pass
        finally:
            writer.close()

    with LoopThread() as thread:
        server = thread.run(asyncio.start_server(greet, HOST, 0))
        try:
            yield server.sockets[0].getsockname()[1]
        finally:
            server.close()


@contextlib.contextmanager
def holding_server(
    greet: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]] | None = None,
    tls: ssl.SSLContext | None = None,
) -> Iterator[int]:
    """A 127.0.0.1 port whose server runs `greet` on each connection (over TLS from the start when
    given `tls`), then holds it: reads nothing more, so never answers a TLS close_notify, and
    never closes it until the block ends. A peer that never says goodbye. Without `greet`, it
    stops reading as the connection is made, before a close_notify that follows the handshake
    at once can be read."""
    stop = asyncio.Event()
    held: set[asyncio.Task[None]] = set()  # a connection nobody reads is referenced by nothing else

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if greet is not None:
                await greet(reader, writer)
                writer.transport.pause_reading()
            await stop.wait()
        finally:
            writer.transport.abort()

    def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if greet is None:  # now, as the connection is made: a task would start a turn later
            writer.transport.pause_reading()
        held.add(asyncio.ensure_future(hold(reader, writer)))

    async def release() -> None:
        stop.set()
        await asyncio.gather(*held, return_exceptions=True)

    with LoopThread() as thread:
        server = thread.run(asyncio.start_server(connected, HOST, 0, ssl=tls))
        try:
            yield server.sockets[0].getsockname()[1]
        finally:
            server.close()
            thread.run(release())


def refused_port() -> int:
    """A 127.0.0.1 port that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------
# TLS helpers
# ---------------------------------------------------------------------------

DEFAULT_IDENTITIES = ("127.0.0.1", "localhost")

_tls_lock = threading.Lock()
_default_ca: trustme.CA | None = None
_tmpdir: str | None = None
_ca_paths: weakref.WeakKeyDictionary[trustme.CA, str] = weakref.WeakKeyDictionary()


def _tls_dir() -> str:
    global _tmpdir
    with _tls_lock:
        if _tmpdir is None:
            _tmpdir = tempfile.mkdtemp(prefix="monitor-tick-tls-")
            atexit.register(shutil.rmtree, _tmpdir, True)
        return _tmpdir


def _write_temp(data: bytes, suffix: str) -> str:
    fd, path = tempfile.mkstemp(suffix=suffix, dir=_tls_dir())
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def make_ca() -> trustme.CA:
    """A fresh throw-away certificate authority."""
    return trustme.CA()


def default_ca() -> trustme.CA:
    """The shared CA used by the cert helpers when ``ca`` is not given."""
    global _default_ca
    with _tls_lock:
        if _default_ca is None:
            _default_ca = trustme.CA()
        return _default_ca


def ca_pem_path(ca: trustme.CA | None = None) -> str:
    """Path of a PEM file holding ``ca``'s certificate (cached per CA)."""
    ca = ca or default_ca()
    with _tls_lock:
        path = _ca_paths.get(ca)
    if path is None:
        path = _write_temp(ca.cert_pem.bytes(), "-ca.pem")
        with _tls_lock:
            _ca_paths[ca] = path
    return path


@dataclass(frozen=True)
class TLSPair:
    """Server-side TLS material plus what a client should trust.

    Unpacks as ``(server_context, ca_pem)``.  ``ca_pem`` is the path of the
    CA certificate a verifying client trusts; for the "bad" certificates the
    server cert does *not* verify against it.
    """

    server_context: ssl.SSLContext
    ca_pem: str
    cert_pem: bytes = field(repr=False)
    not_before: dt.datetime
    not_after: dt.datetime

    def __iter__(self) -> Iterator[Any]:
        yield self.server_context
        yield self.ca_pem

    def client_context(self) -> ssl.SSLContext:
        """A verifying client context trusting (only) ``ca_pem``."""
        return ssl.create_default_context(cafile=self.ca_pem)


def _server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    chain = _write_temp(cert_pem, "-cert.pem")
    key = _write_temp(key_pem, "-key.pem")
    ctx.load_cert_chain(chain, key)
    return ctx


def _leaf_pair(ca: trustme.CA | None, identities: tuple[str, ...], **kw: Any) -> TLSPair:
    from cryptography import x509

    ca = ca or default_ca()
    leaf = ca.issue_cert(*identities, **kw)
    chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
    cert = x509.load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())
    return TLSPair(
        server_context=_server_context(chain, leaf.private_key_pem.bytes()),
        ca_pem=ca_pem_path(ca),
        cert_pem=leaf.cert_chain_pems[0].bytes(),
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
    )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def valid_cert(ca: trustme.CA | None = None) -> TLSPair:
    """Cert for 127.0.0.1 and localhost issued by ``ca`` (default CA)."""
    return _leaf_pair(ca, DEFAULT_IDENTITIES)


def cert_expiring_in(
    days: float, ca: trustme.CA | None = None, identities: tuple[str, ...] = DEFAULT_IDENTITIES
) -> TLSPair:
    """Cert (from ``ca``) whose notAfter is now + ``days`` (may be negative)."""
    not_after = _now() + dt.timedelta(days=days)
    not_before = min(_now(), not_after) - dt.timedelta(days=30)
    return _leaf_pair(ca, identities, not_before=not_before, not_after=not_after)


def expired_cert(ca: trustme.CA | None = None) -> TLSPair:
    """Cert for 127.0.0.1/localhost from ``ca`` that expired a day ago."""
    return cert_expiring_in(-1, ca)


def wrong_host_cert(ca: trustme.CA | None = None, host: str = "wrong.example") -> TLSPair:
    """Valid cert from ``ca`` but for ``host`` only (not 127.0.0.1/localhost)."""
    return _leaf_pair(ca, (host,))


def self_signed_cert(ca: trustme.CA | None = None) -> TLSPair:
    """Self-signed cert for 127.0.0.1/localhost (not issued by any CA).

    ``ca_pem`` is the path of ``ca`` (default CA), which does not vouch for it.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "monitor-tick self-signed")])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return TLSPair(
        server_context=_server_context(cert_pem, key_pem),
        ca_pem=ca_pem_path(ca),
        cert_pem=cert_pem,
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
    )
