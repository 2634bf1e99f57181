"""The heartbeat receiver behind `monitor-tick serve`: a small HTTP/1.x server (stdlib asyncio)
so that jobs on other machines can signal with `curl -fsS http://HOST:PORT/ping/TOKEN`.

    GET|POST|HEAD /ping/TOKEN         the job ran and succeeded
                  /ping/TOKEN/fail    the job ran and failed
                  /ping/TOKEN/start   the job is starting (the next ping records its duration)
                  /api/push/TOKEN     Uptime Kuma's push path, so jobs moved from Kuma need no
                                      change: `?status=up` (the default) succeeded, any other
                                      status failed; `msg` and `ping` are read and dropped

It faces an open port, so:

  * Every request that is not a recorded ping -- an unknown token, another path or method,
    garbage, a request too large or too slow -- gets the same REFUSED bytes: a response never
    tells whether a token exists.
  * Tokens are compared as SHA-256 digests: the database holds only digests and the lookup is
    by the digest of the received token, so how long a lookup takes depends on that digest
    alone and reveals nothing about any real token (the digest comparison is the constant-time
    step; the token itself is never compared).
  * A request (line, headers and any body) may be at most MAX_REQUEST_BYTES and must arrive,
    be answered and be written within REQUEST_DEADLINE_S; at most MAX_CONNECTIONS are served
    at once (more are closed unanswered).
  * Nothing a client sends can raise out of a connection's handler.

A ping is one upsert into `pings` (store.record_ping), made on a worker thread, one at a time,
so a locked database never stalls the event loop.

The database may go away and come back while `serve` runs: a PostgreSQL server restarts, a
SQLite file is replaced by a restore. The connection is then opened again (Database), at the
ping that finds it lost, and that ping is still answered. While no token can be looked up,
every ping gets 503 (a client retries it; `curl --retry` does), an unknown token's too: a 404
would tell a job its token is wrong. One line on stderr says when that starts, one when it ends.
On PostgreSQL, an attempt to connect again is bounded, and a failed one is not repeated for a
moment (RECONNECT_TIMEOUT_S, RETRY_AFTER_S): a database host that drops packets, rather than
refusing them, would otherwise hold each ping, one after the other, past its client's patience.
"""

from __future__ import annotations

import asyncio
import re
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar
from urllib.parse import parse_qs

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.probes.heartbeat import token_digest

MAX_REQUEST_BYTES = 8 * 1024
REQUEST_DEADLINE_S = 10.0
MAX_CONNECTIONS = 256
METHODS = ("GET", "POST", "HEAD")
PING_PATH = re.compile(r"/ping/([A-Za-z0-9_-]{1,128})(?:/(fail|start))?/?")
# Kuma's push tokens (10 characters in 1.23, 32 in 2.0) are alphanumeric
KUMA_PUSH_PATH = re.compile(r"/api/push/([A-Za-z0-9_-]{1,128})/?")
_DIGITS = re.compile(r"[0-9]{1,9}")
# While PostgreSQL cannot be reached, a ping that tries to connect again holds the others up (one
# runs at a time): an attempt gives up after RECONNECT_TIMEOUT_S (libpq's least is 2 s), where a
# blackholed host would hold it for the 10 s the commands wait, and after a failed one the pings
# of the next RETRY_AFTER_S get 503 at once, without an attempt of their own. A SQLite file opens
# at once, found or not: it is tried at every ping.
RECONNECT_TIMEOUT_S = 3
RETRY_AFTER_S = 2.0
_T = TypeVar("_T")


def _response(status: str, body: str) -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        f"Cache-Control: no-store\r\nConnection: close\r\n\r\n{body}"
    ).encode("ascii")


OK = _response("200 OK", "OK\n")
REFUSED = _response("404 Not Found", "not found\n")
BUSY = _response("503 Service Unavailable", "busy, try again\n")


class Database:
    """The receiver's connection to its database (--db), opened again once lost (see the
    connections' `lost`). Safe to use from several threads: one runs at a time."""

    def __init__(self, db: str, conn: Any) -> None:
        self.db = db
        self._conn: Any = conn
        self._lock = threading.Lock()
        self._server = store.is_postgres_url(db)
        self._retry_at_s = 0.0  # time.monotonic() before which no attempt to connect is made
        self._failure = ""  # why the last attempt failed

    def run(self, work: Callable[[Any], _T]) -> _T:
        """`work(conn)`; if the connection turns out lost under it, `work` once more on a new one.
        Raises store.StoreError or store.DatabaseError when the database cannot be reached (the
        next call tries again; on PostgreSQL, the calls of RETRY_AFTER_S after a failed attempt
        raise at once). A database is never created here: one that is gone stays gone."""
        with self._lock:
            held = self._conn is not None and not self._conn.lost()
            try:
                return work(self._connection())
            except (store.StoreError, store.DatabaseError):
                # a connection held since an earlier ping is found dropped only when used (the
                # server restarted meanwhile): this ping is answered on a new one
                if not held or not self._conn.lost():
                    raise
            return work(self._connection())

    def _connection(self) -> Any:
        if self._conn is not None and self._conn.lost():
            self.close()
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> Any:
        if not self._server:
            return store.open_db(self.db, create=False)
        if time.monotonic() < self._retry_at_s:
            raise store.StoreError(self._failure)
        try:
            return store.open_db(self.db, create=False, connect_timeout_s=RECONNECT_TIMEOUT_S)
        except store.StoreError as exc:
            self._retry_at_s, self._failure = time.monotonic() + RETRY_AFTER_S, str(exc)
            raise

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()


class Receiver:
    """Answers ping requests, recording them in one database; `log` gets a line (for stderr)
    when the database is lost and when it is back."""

    def __init__(self, database: Database, log: Callable[[str], None]) -> None:
        self.database = database
        self.log = log
        self.active = 0
        self.unreachable = False
        self._db_lock = asyncio.Lock()

    async def start(self, host: str, port: int) -> asyncio.Server:
        # `limit` bounds what the stream buffers while looking for the end of the headers
        return await asyncio.start_server(self._on_connect, host, port, limit=MAX_REQUEST_BYTES)

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.active >= MAX_CONNECTIONS:
            writer.transport.abort()
            return
        self.active += 1
        try:
            async with asyncio.timeout(REQUEST_DEADLINE_S):
                response, head_only = await self._answer(reader)
                writer.write(response[: response.index(b"\r\n\r\n") + 4] if head_only else response)
                await writer.drain()
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            pass  # too slow or gone: close without an answer
        finally:
            self.active -= 1
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[bytes, bool]:
        """(response, whether to send only its head)."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            return REFUSED, False
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or parts[0] not in METHODS or not parts[2].startswith("HTTP/1."):
            return REFUSED, False
        method, target = parts[0], parts[1]
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        length = headers.get("content-length", "0")
        if "transfer-encoding" in headers or not _DIGITS.fullmatch(length):
            return REFUSED, False
        if len(head) + int(length) > MAX_REQUEST_BYTES:
            return REFUSED, False
        if int(length):
            await reader.readexactly(int(length))  # a body (e.g. a job's log) is read and dropped
        found = ping_of(target)
        if found is None:
            return REFUSED, method == "HEAD"
        async with self._db_lock:
            try:
                recorded = await asyncio.to_thread(self.database.run, partial(_record, *found))
            except (store.StoreError, store.DatabaseError) as exc:
                if not self.unreachable:
                    self.unreachable = True
                    reason = store.describe_error(exc, self.database.db) if isinstance(exc, sqlite3.Error) else exc
                    self.log(f"pings get 503 until the database is back: {reason}")
                return BUSY, method == "HEAD"
        if self.unreachable:
            self.unreachable = False
            self.log("the database is back: pings are recorded again")
        return (OK if recorded else REFUSED), method == "HEAD"


def _record(token: str, signal_name: str, conn: Any) -> bool:
    """Record a ping of the heartbeat with this token; False when there is none."""
    found = store.heartbeat_by_token(conn, token_digest(token))
    if found is None:
        return False
    try:
        store.record_ping(conn, found, signal_name, clock.now_ms())
    except (sqlite3.IntegrityError, store.ConstraintError):  # removed a moment ago
        return False
    return True


def ping_of(target: str) -> tuple[str, str] | None:
    """(token, signal) of a request target, or None when it is not a ping."""
    path, _, query = target.partition("?")
    match = PING_PATH.fullmatch(path)
    if match is not None:
        return match.group(1), match.group(2) or "ok"
    match = KUMA_PUSH_PATH.fullmatch(path)
    if match is None:
        return None
    # Kuma: `status` other than `up` is DOWN, and a missing one is `up`
    status = parse_qs(query).get("status", ["up"])[0]
    return match.group(1), "ok" if status == "up" else "fail"


def serve(
    database: Database, host: str, port: int, ready: Callable[[str, int], None], log: Callable[[str], None]
) -> None:
    """Serve until SIGINT or SIGTERM; `ready(host, port)` is called once listening (port 0
    picks a free port), `log(line)` when the database is lost and when it is back."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        server = await Receiver(database, log).start(host, port)
        bound_host, bound_port = server.sockets[0].getsockname()[:2]
        ready(bound_host, bound_port)
        async with server:
            await stop.wait()

    asyncio.run(main())
