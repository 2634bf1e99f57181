"""The fast path's exchange (wire.Exchange) on a loop of its own, without asyncio: non-blocking
sockets on one selectors loop, name lookups in daemon threads, TLS through ssl.MemoryBIO.

Why: importing asyncio is the largest part of a small tick's cost (ssl, inspect, logging and
concurrent.futures come with it), more than its checks' own (docs/performance.md, figure 8). A
tick whose checks are all plain HTTP ones the fast path sends itself needs none of it
(run/bare.py).

What it does is what asyncio does for wire.Call, step by step, so that a check's outcome and
cause are the same on either loop (tests/test_transport.py holds the two to it): an address
literal is connected to at once, a name is looked up in a thread of its own (as
fanout.DaemonThreads runs asyncio's lookups) and its addresses are tried by happy eyeballs,
interleaved by family, the next one HAPPY_EYEBALLS_DELAY_S after the last or at once when it
failed; the failures are raised as asyncio raises them ("Connect call failed", "Multiple
exceptions"); TLS runs as asyncio's SSL protocol runs it (a handshake ended by the peer is a
reset, an end of stream after it the response's end), and the response goes to the Exchange.

A check (BareCall) is started on the Loop and calls `finished` once: with wire.Answer, with None
(httpx's to send, or to take further: `handed` says which), or with the exception that ended it
(wire.ConnectError and the Exchange's own, as Call raises them; any other is a bug, the
monitor's failed check). `cancel` ends it without a call (its deadline), closing its sockets.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from types import ModuleType

from monitor_tick.probes import wire
from monitor_tick.probes.loop import READ, WRITE, Loop, Timer

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import ssl

MAX_READ = 256 * 1024  # what asyncio's transports read at once


def _again(ssl: ModuleType) -> tuple[type[BaseException], ...]:
    """What asyncio's SSL protocol reads as "not yet" (sslproto.SSLAgainErrors)."""
    return (ssl.SSLWantReadError, ssl.SSLSyscallError)


def _ipaddr_info(host: str, port: int) -> tuple[int, int, int, str, tuple[object, ...]] | None:
    """The one address of an address literal, as asyncio reads it without a lookup
    (base_events._ipaddr_info); None for a name."""
    if "%" in host:  # a zone index: looked up
        return None
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        address = (host, port) if family == socket.AF_INET else (host, port, 0, 0)
        return family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address
    return None


def _interleaved(infos: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Addresses alternating by family, each family's in its order (asyncio's
    _interleave_addrinfos, as happy eyeballs orders them)."""
    by_family: dict[object, list[tuple[object, ...]]] = {}
    for info in infos:
        by_family.setdefault(info[0], []).append(info)
    lists = list(by_family.values())
    return [lists[j][i] for i in range(max(map(len, lists))) for j in range(len(lists)) if i < len(lists[j])]


def _one_of(errors: list[OSError]) -> OSError:
    """What asyncio's create_connection raises when every address failed: the one error, the
    first when all read the same, else one naming them all."""
    if len(errors) == 1 or all(str(exc) == str(errors[0]) for exc in errors):
        return errors[0]
    return OSError("Multiple exceptions: {}".format(", ".join(str(exc) for exc in errors)))


class _Attempt:
    """One address being connected to."""

    __slots__ = ("sock", "address", "errors", "next_started", "timer")

    def __init__(self, address: object) -> None:
        self.sock: socket.socket | None = None
        self.address = address
        self.errors: list[OSError] = []
        self.next_started = False
        self.timer: Timer | None = None


class BareCall:
    """One request (wire.request_of) and its response, on `loop`; see the module docstring."""

    def __init__(
        self,
        loop: Loop,
        request: wire.Request,
        ssl_context: Callable[[], ssl.SSLContext],
        finished: Callable[[wire.Answer | BaseException | None], None],
        *,
        keep: bool,
        limit: int,
        read_body: Callable[[int], bool],
        peer_cert: bool = False,
    ) -> None:
        """`ssl_context()`: what an https:// URL verifies with (called only for one); the rest
        as wire.Exchange's."""
        self._loop = loop
        self._request = request
        self._ssl_context = ssl_context
        self._finished = finished
        self.exchange = wire.Exchange(self._ended, keep=keep, limit=limit, read_body=read_body, peer_cert=peer_cert)
        self.handed = False
        self._over = False
        self._infos: list[tuple[object, ...]] = []
        self._happy = False
        self._attempts: list[_Attempt] = []
        self._sock: socket.socket | None = None
        self._context: ssl.SSLContext | None = None
        self._tls: ssl.SSLObject | None = None
        self._incoming = self._outgoing = None  # ssl.MemoryBIO, over TLS
        self._handshaking = False
        self._out = bytearray()

    @property
    def status(self) -> int | None:
        """The response's status once its headers are in."""
        return self.exchange.status

    def start(self) -> None:
        self._guarded(self._start)

    def cancel(self) -> None:
        """End the exchange now, with no call to `finished`, closing every socket."""
        self._over = True
        self._close()

    # the steps, each run on the loop
    def _start(self) -> None:
        request = self._request
        try:
            if request.tls:
                self._context = self._ssl_context()
        except OSError as exc:  # ssl.SSLError too
            raise wire.ConnectError(str(exc)) from exc
        literal = _ipaddr_info(request.host, request.port)
        if literal is not None:
            self._connect([literal], happy=False)
            return

        def look_up() -> None:  # in a thread of its own: a stuck resolver holds no other check
            try:
                outcome: object = socket.getaddrinfo(request.host, request.port, 0, socket.SOCK_STREAM, 0, 0)
            except BaseException as exc:  # noqa: BLE001 -- handed to the loop's thread
                outcome = exc
            self._loop.call_soon_threadsafe(lambda: self._guarded(self._looked_up, outcome))

        threading.Thread(target=look_up, name="monitor-tick-lookup", daemon=True).start()

    def _looked_up(self, outcome: object) -> None:
        if isinstance(outcome, UnicodeError):  # a name that cannot be encoded (a..b): httpx's lookup judges it
            self._finish(None)
            return
        if isinstance(outcome, OSError):
            raise wire.ConnectError(str(outcome)) from outcome
        if isinstance(outcome, BaseException):
            raise outcome
        if not outcome:
            empty = OSError("getaddrinfo() returned empty list")
            raise wire.ConnectError(str(empty)) from empty
        self._connect(_interleaved(outcome), happy=True)  # type: ignore[arg-type]

    def _connect(self, infos: list[tuple[object, ...]], *, happy: bool) -> None:
        self._infos = list(infos)
        self._happy = happy
        self._start_next()

    def _start_next(self) -> None:
        """Start connecting to the next address, if there is one (asyncio's staggered race)."""
        while not self._over and self._sock is None and len(self._attempts) < len(self._infos):
            family, type_, proto, _, address = self._infos[len(self._attempts)]
            attempt = _Attempt(address)
            self._attempts.append(attempt)
            try:
                sock = attempt.sock = socket.socket(family, type_, proto)  # type: ignore[arg-type]
                sock.setblocking(False)
                try:
                    sock.connect(address)  # type: ignore[arg-type]
                except (BlockingIOError, InterruptedError):
                    pass
                else:
                    self._won(attempt)
                    return
            except OSError as exc:  # this address failed at once: the next now
                attempt.errors.append(exc)
                self._lost_attempt(attempt, start_next=False)
                continue
            self._loop.watch(sock, WRITE, lambda _, attempt=attempt: self._guarded(self._connect_ready, attempt))
            if self._happy and len(self._attempts) < len(self._infos):
                attempt.timer = self._loop.call_at(
                    self._loop.time() + wire.HAPPY_EYEBALLS_DELAY_S, lambda attempt=attempt: self._next_of(attempt)
                )
            return
        self._if_all_failed()

    def _next_of(self, attempt: _Attempt) -> None:
        """`attempt` failed or took HAPPY_EYEBALLS_DELAY_S: the next address, unless it has begun."""
        if not attempt.next_started:
            attempt.next_started = True
            if attempt.timer is not None:
                attempt.timer.cancel()
            self._guarded(self._start_next)

    def _connect_ready(self, attempt: _Attempt) -> None:
        sock = attempt.sock
        if sock is None or self._sock is not None:  # closed by another attempt's win, in the same select
            return
        error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if error:
            attempt.errors.append(OSError(error, f"Connect call failed {attempt.address}"))
            self._lost_attempt(attempt, start_next=True)
            return
        self._won(attempt)

    def _lost_attempt(self, attempt: _Attempt, *, start_next: bool) -> None:
        self._close_attempt(attempt)
        if start_next:
            self._next_of(attempt)
        else:
            attempt.next_started = True
        self._if_all_failed()

    def _if_all_failed(self) -> None:
        if self._over or self._sock is not None or len(self._attempts) < len(self._infos):
            return
        if any(attempt.sock is not None for attempt in self._attempts):
            return  # some still connecting
        error = _one_of([exc for attempt in self._attempts for exc in attempt.errors])
        raise wire.ConnectError(str(error)) from error

    def _won(self, attempt: _Attempt) -> None:
        sock = attempt.sock
        assert sock is not None
        attempt.sock = None
        self._loop.unwatch(sock)
        self._sock = sock
        self._close_attempts()  # the race's losers
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio's transports set it
        except OSError:
            pass
        if self._context is None:
            self._send(self._request.wire)
            return
        import ssl  # loaded: the context is its

        try:
            self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            self._tls = self._context.wrap_bio(
                self._incoming, self._outgoing, server_side=False, server_hostname=self._request.host
            )
        except OSError as exc:  # ssl.SSLError too: the trust could not be loaded (trust.DefaultTrust)
            raise wire.ConnectError(str(exc)) from exc
        self._handshaking = True
        self._handshake()

    def _handshake(self) -> None:
        import ssl

        assert self._tls is not None
        try:
            self._tls.do_handshake()
        except _again(ssl):
            self._flush_tls()
            return
        except ssl.SSLError as exc:
            raise wire.ConnectError(str(exc)) from exc
        self._handshaking = False
        self.exchange.ssl_object = self._tls
        self._tls.write(self._request.wire)
        self._read_tls(eof=False)  # what came with the handshake, as asyncio's SSL protocol reads it; and sends

    def _flush_tls(self) -> None:
        assert self._outgoing is not None
        data = self._outgoing.read()
        self._send(data)

    def _send(self, data: bytes) -> None:
        self._out += data
        sock = self._sock
        assert sock is not None
        while self._out:
            try:
                sent = sock.send(self._out)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self._lost(exc)
                return
            del self._out[:sent]
        self._loop.watch(sock, READ | (WRITE if self._out else 0), lambda events: self._guarded(self._ready, events))

    def _ready(self, events: int) -> None:
        if events & WRITE:
            self._send(b"")
        if events & READ and not self._over:
            self._read()

    def _read(self) -> None:
        assert self._sock is not None
        try:
            data = self._sock.recv(MAX_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(exc)
            return
        if self._tls is None:
            if data:
                self.exchange.feed(data)
            else:
                self.exchange.ended(None)
            return
        assert self._incoming is not None
        if not data:
            if self._handshaking:  # as asyncio's SSL protocol says it
                reset = ConnectionResetError()
                raise wire.ConnectError(str(reset)) from reset
            self._read_tls(eof=True)
            return
        self._incoming.write(data)
        if self._handshaking:
            self._handshake()
        else:
            self._read_tls(eof=False)

    def _read_tls(self, *, eof: bool) -> None:
        """What the TLS session has for the response; `eof`: the stream has ended (its end is
        the response's, as asyncio's SSL protocol reads it)."""
        import ssl

        assert self._tls is not None
        chunks = []
        closed = False
        try:
            while chunk := self._tls.read(MAX_READ):
                chunks.append(chunk)
            closed = True  # close_notify
        except _again(ssl):
            pass
        except ssl.SSLError as exc:
            self._lost(exc)
            return
        if chunks:
            self.exchange.feed(b"".join(chunks))
        if closed or eof:
            self.exchange.ended(None)
        elif not self._over:
            self._flush_tls()

    def _lost(self, exc: OSError | ssl.SSLError) -> None:
        """The connection failed: during the handshake, no connection; after it, a read error."""
        if self._handshaking:
            raise wire.ConnectError(str(exc)) from exc
        self.exchange.ended(exc)

    # the ends
    def _ended(self, outcome: wire.Answer | BaseException) -> None:
        if isinstance(outcome, wire.Handed):
            self.handed = True
            self._finish(None)
        else:
            self._finish(outcome)

    def _finish(self, outcome: wire.Answer | BaseException | None) -> None:
        if self._over:
            return
        self._over = True
        self._close()
        finished = self._finished
        self._loop.call_soon(lambda: finished(outcome))  # from the loop: a run of checks that end at once never nests

    def _close(self) -> None:
        """Close every socket now (no TLS close_notify to wait for), as Call's transport.abort."""
        self._close_attempts()
        if self._sock is not None:
            self._loop.unwatch(self._sock)
            self._sock.close()
            self._sock = None
        self.exchange.close()

    def _close_attempts(self) -> None:
        """Stop connecting: every attempt's timer cancelled, its socket closed."""
        for attempt in self._attempts:
            if attempt.timer is not None:
                attempt.timer.cancel()
            self._close_attempt(attempt)

    def _close_attempt(self, attempt: _Attempt) -> None:
        if attempt.sock is not None:
            self._loop.unwatch(attempt.sock)
            attempt.sock.close()
            attempt.sock = None

    def _guarded(self, step: Callable[..., None], *args: object) -> None:
        """Run a step; what it raises ends the exchange (a bug included: the monitor's failed check)."""
        if self._over:
            return
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001 -- the check's outcome
            self._finish(exc)
