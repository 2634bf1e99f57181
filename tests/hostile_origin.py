"""An origin that misbehaves on purpose, for HTTP checks run through the tick.

Built on tests/servers.py's LocalServer: each function here registers routes on a server (or
starts one) that answer the way a hostile or broken origin does, byte for byte, so that a test
can hold what a check records against what the server sent and received. Everything listens on
127.0.0.1 only.

- `tick_check`: one monitor, one tick on a real SQLite file, through the tick's Python entry;
  the check's result.
- `scripted`: a route answering each request with the next response of a list.
- `unaccepting_port`: a port whose accept queue is full, so a connection to it times out.
- `tick_without_network`: the installed command in a network namespace of its own.

The hostile answers, each a handler for `LocalServer.route`:
- `raw`: exactly the bytes given, then the connection's close (framing of any kind, broken or not);
- `encoded`: a page compressed with gzip, deflate or br, whatever the request accepted;
And `TlsEnd`, a TLS server of its own that ends its answers with or without close_notify.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import socket
import ssl
import subprocess
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brotli

from monitor_tick import store
from monitor_tick.core.model import CheckResult
from monitor_tick.run.tick import TickOptions, run_tick
from tests.commands import MONITOR_TICK
from tests.conftest import add
from tests.servers import HOST, Handler, LocalServer, send_response

MINUTE = 29_934_720  # 2026-12-01T00:00Z: a replayed minute, so that every monitor is due


def tick_check(db_path: str | Path, url: str, **settings: object) -> CheckResult:
    """Add one monitor for `url` (with `settings`, as `add` takes them, retries 0 unless given) to
    the SQLite file at `db_path` (made when missing; one check a file), run one tick through
    run_tick, and return its check."""
    conn = store.open_db(str(db_path))
    try:
        monitor = add(conn, url, **{"retries": 0, **settings})
    finally:
        conn.close()
    report = run_tick(TickOptions(db_path=str(db_path), minute=MINUTE, retry_delay_s=0))
    [result] = [r for r in report.results if r.monitor_id == monitor]
    return result


def scripted(server: LocalServer, prefix: str, *answers: int | tuple[int, dict[str, str]] | Handler) -> list[int]:
    """Answer the requests to `prefix` in turn with `answers`: a status (its body `status N`), a
    (status, headers) pair, or a handler of the server's own; the last one answers every request
    after it. Returns the list of statuses answered so far (a handler's as 0), in order."""
    lock = threading.Lock()
    answered: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        with lock:
            turn = answers[min(len(answered), len(answers) - 1)]
            answered.append(turn if isinstance(turn, int) else turn[0] if isinstance(turn, tuple) else 0)
        if callable(turn):
            await turn(reader, writer, path, method)
            return
        status, headers = (turn, {}) if isinstance(turn, int) else turn
        await send_response(writer, status, f"status {status}\n", method=method, headers=headers)

    server.route(prefix, answer)
    return answered


@contextlib.contextmanager
def unaccepting_port() -> Iterator[int]:
    """A 127.0.0.1 port that listens but never accepts, its one-slot accept queue already full:
    the kernel drops every further SYN, so a connection to it neither succeeds nor is refused."""
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind((HOST, 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        filler.connect((HOST, port))
        yield port


def tick_without_network(db_path: str) -> subprocess.CompletedProcess[str]:
    """Run the installed command's tick with --json on `db_path` in an empty network namespace
    (`unshare -n`): no name resolves and no address is reached from it, its loopback included.
    Asserts that it exits 0."""
    done = subprocess.run(
        ["unshare", "-n", MONITOR_TICK, "--db", db_path, "--retry-delay", "0", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


# --- hostile answers ---------------------------------------------------------------------------


def raw(data: bytes) -> Handler:
    """An answer of exactly `data` (head and body as given, framing broken or not), then the
    connection's close."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        writer.write(data)
        await writer.drain()

    return answer


def head(status: int, *headers: str) -> bytes:
    """A status line and `headers` ("Name: value"), as sent, with no header added."""
    return "\r\n".join([f"HTTP/1.1 {status} Status", *headers, "", ""]).encode("latin-1")


ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,  # deflate in its zlib wrapper, as RFC 9110 8.4.1.2 names it
    "br": brotli.compress,
}


def encoded(
    body: bytes, encoding: str, content_type: str = "text/html; charset=utf-8", *, done: bool = False
) -> Handler:
    """A page whose body is compressed with `encoding` (gzip, deflate, br; `done`: `body` is
    already encoded so, as `encoding` says), sent whatever the request's Accept-Encoding said."""
    data = body if done else ENCODERS[encoding](body)
    return raw(
        head(200, f"Content-Type: {content_type}", f"Content-Encoding: {encoding}", f"Content-Length: {len(data)}")
        + data
    )


class TlsEnd:
    """A TLS server on 127.0.0.1 of its own (blocking sockets in a thread, not asyncio's, whose
    close always says close_notify): each connection gets `answer` after its request's head,
    then the connection ends with TLS's close_notify or, `close_notify` False, with the bare TCP
    close of a truncation attack. `requests` holds each request's head as received."""

    def __init__(self, context: ssl.SSLContext, answer: bytes, *, close_notify: bool) -> None:
        self._context = context
        self._answer = answer
        self._close_notify = close_notify
        self.requests: list[bytes] = []
        self._listener = socket.create_server((HOST, 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"https://{HOST}:{self.port}{path}"

    def __enter__(self) -> TlsEnd:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._listener.close()  # accept() ends with an OSError
        self._thread.join(10)

    def _serve(self) -> None:
        while True:
            try:
                raw_connection, _ = self._listener.accept()
            except OSError:
                return
            with raw_connection:
                raw_connection.settimeout(10)
                try:
                    self._one(raw_connection)
                except (OSError, ssl.SSLError):
                    pass  # a client that gave up

    def _one(self, raw_connection: socket.socket) -> None:
        with self._context.wrap_socket(raw_connection, server_side=True) as tls:
            received = b""
            while b"\r\n\r\n" not in received:
                data = tls.recv(65536)
                if not data:
                    return
                received += data
            self.requests.append(received)
            tls.sendall(self._answer)
            if self._close_notify:
                tls.unwrap()  # close_notify, then the TCP close
            # else: the ssl module's close() never sends close_notify; the socket just closes
