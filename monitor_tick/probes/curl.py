"""libcurl's multi interface, driven by the tick's asyncio loop: the HTTP engine of every http(s)://
and docker:// check.

One Engine a tick. curl says which sockets to watch (SOCKETFUNCTION) and when to wake it
(TIMERFUNCTION); the loop watches them (add_reader, add_writer, call_later) and hands each event
back (socket_action); a finished transfer resolves its check's future (info_read). Two of
libcurl's traps, as Tornado's curl client records them: a socket closed and reopened on the same
fd without notice (so a watch is removed and added, never updated), and an event curl forgot to
report (so a periodic socket_all while transfers run).

curl never resolves a name itself: every handle is given the addresses our own lookup found
(CURLOPT_RESOLVE), so no lookup of curl's can hold the tick or its exit, and closing the multi
never waits for one.

pycurl is imported when the first transfer starts: a tick without HTTP checks never loads it.
"""

from __future__ import annotations

from monitor_tick.core.model import Phases

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import asyncio

    import pycurl

FORCE_EVERY_S = 1.0  # how often curl is asked for events it may have forgotten to report

# libcurl's multi-interface values (curl/multi.h, part of its ABI; tests compare them with
# pycurl's), named here so that the loop's callbacks, run several times a check, import nothing
POLL_IN, POLL_OUT, POLL_INOUT, POLL_REMOVE = 1, 2, 3, 4  # CURL_POLL_*: what to watch a socket for
CSELECT_IN, CSELECT_OUT = 1, 2  # CURL_CSELECT_*: what a socket is ready for
SOCKET_TIMEOUT = -1  # CURL_SOCKET_TIMEOUT: socket_action's "no socket: curl's timer expired"
CALL_MULTI_PERFORM = -1  # CURLM_CALL_MULTI_PERFORM: call again at once
# CURLINFO_CONNECT_TIME, _APPCONNECT_TIME, _STARTTRANSFER_TIME (curl/curl.h: CURLINFO_DOUBLE + 5,
# + 33, + 17), as the loop's values above: named here, not looked up in pycurl on every check
CONNECT_TIME, APPCONNECT_TIME, STARTTRANSFER_TIME = 0x300005, 0x300021, 0x300011


class Engine:
    """One CurlMulti on the running loop: `perform` runs a handle to its end. Close it when the
    tick's probes end (close), or let a cancelled check take its own handle out."""

    def __init__(self) -> None:
        self._multi: pycurl.CurlMulti | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watched: dict[int, int] = {}  # fd -> curl's POLL_* event
        self._timer: asyncio.TimerHandle | None = None
        self._force: asyncio.TimerHandle | None = None
        self._waiting: dict[pycurl.Curl, asyncio.Future[int]] = {}
        # transfers curl ran after its last call, plus those added since: a call that leaves
        # fewer ended one, and only then are its messages read (info_read)
        self._running = 0

    def _start(self) -> pycurl.CurlMulti:
        import asyncio

        import pycurl

        self._loop = asyncio.get_running_loop()
        multi = pycurl.CurlMulti()
        multi.setopt(pycurl.M_SOCKETFUNCTION, self._on_socket)
        multi.setopt(pycurl.M_TIMERFUNCTION, self._on_timer)
        self._multi = multi
        return multi

    async def perform(self, handle: pycurl.Curl) -> int:
        """Run `handle` to its end; curl's result code (0: done). A cancelled wait takes the
        handle out of the multi, which closes its connection."""
        multi = self._multi or self._start()
        assert self._loop is not None
        future: asyncio.Future[int] = self._loop.create_future()
        self._waiting[handle] = future
        multi.add_handle(handle)
        self._running += 1
        if self._force is None:
            self._force = self._loop.call_later(FORCE_EVERY_S, self._on_force)
        try:
            return await future
        finally:
            if self._waiting.pop(handle, None) is not None:  # cancelled: not finished by curl
                multi.remove_handle(handle)
                self._running -= 1

    def close(self) -> None:
        """Take every handle out, stop watching, and close the multi (it has no lookup to wait for)."""
        if self._multi is None:
            return
        for handle, future in list(self._waiting.items()):
            self._multi.remove_handle(handle)
            future.cancel()
        self._waiting.clear()
        self._running = 0
        for fd in list(self._watched):
            self._unwatch(fd)
        for timer in (self._timer, self._force):
            if timer is not None:
                timer.cancel()
        self._timer = self._force = None
        self._multi.close()
        self._multi = None

    # curl's callbacks: never call back into curl from inside them

    def _on_socket(self, event: int, fd: int, multi: object, data: object) -> None:
        loop = self._loop
        assert loop is not None
        self._unwatch(fd)
        if event == POLL_REMOVE:
            return
        if event & POLL_IN:
            loop.add_reader(fd, self._act, fd, CSELECT_IN)
        if event & POLL_OUT:
            loop.add_writer(fd, self._act, fd, CSELECT_OUT)
        self._watched[fd] = event

    def _unwatch(self, fd: int) -> None:
        event = self._watched.pop(fd, 0)
        if event and self._loop is not None:
            if event & POLL_IN:
                self._loop.remove_reader(fd)
            if event & POLL_OUT:
                self._loop.remove_writer(fd)

    def _on_timer(self, timeout_ms: int) -> None:
        loop = self._loop
        assert loop is not None
        when = loop.time() + timeout_ms / 1000
        if self._timer is not None:
            if timeout_ms >= 0 and abs(self._timer.when() - when) < 0.001:
                return  # the wake-up curl asks for is the one set (it asks again on most events)
            self._timer.cancel()
            self._timer = None
        if timeout_ms >= 0:
            self._timer = loop.call_at(when, self._on_timeout)

    # the loop's callbacks

    def _on_timeout(self) -> None:
        self._timer = None
        self._act(SOCKET_TIMEOUT, 0)

    def _on_force(self) -> None:
        self._force = None
        if self._multi is None or not self._waiting:
            return
        while True:
            code, running = self._multi.socket_all()
            if code != CALL_MULTI_PERFORM:
                break
        self._finish(running, drain=True)  # and any message a miscount would have left
        if self._waiting and self._loop is not None:
            self._force = self._loop.call_later(FORCE_EVERY_S, self._on_force)

    def _act(self, fd: int, what: int) -> None:
        """Hand curl an event: `fd` is ready for `what` (CSELECT_*), or its timer expired."""
        multi = self._multi
        if multi is None:
            return
        while True:
            code, running = multi.socket_action(fd, what)
            if code != CALL_MULTI_PERFORM:
                break
        self._finish(running)

    def _finish(self, running: int, *, drain: bool = False) -> None:
        """Resolve the checks of the transfers that ended, when curl now runs fewer (`running`)
        than it did (or always: `drain`)."""
        assert self._multi is not None
        ended = drain or running < self._running
        self._running = running
        while ended:
            queued, done, failed = self._multi.info_read()
            for handle in done:
                self._done(handle, 0)
            for handle, code, _message in failed:  # the code only: never a cause from curl's text
                self._done(handle, code)
            ended = queued > 0

    def _done(self, handle: pycurl.Curl, code: int) -> None:
        assert self._multi is not None
        self._multi.remove_handle(handle)
        future = self._waiting.pop(handle, None)
        if future is not None and not future.done():
            future.set_result(code)


def phases_ms(answer: Exchange, looked_up_ms: float, total_ms: int) -> Phases:
    """The phases of a whole answer's check, each in ms from the check's start: our lookup
    ended at `looked_up_ms`, and curl's times count from there (its transfer began after it);
    `total_ms` is the check's latency, which none of them exceeds."""
    connect_s, tls_s, first_byte_s = answer.times
    return Phases(
        min(round(looked_up_ms), total_ms),
        min(round(looked_up_ms + connect_s * 1000), total_ms),
        min(round(looked_up_ms + tls_s * 1000), total_ms) if tls_s else None,
        min(round(looked_up_ms + first_byte_s * 1000), total_ms),
        total_ms,
    )


# ---------------------------------------------------------------------------------------------
# One exchange: a request on a connection of its own, and what came back.

TIMED_OUT = 28  # CURLE_OPERATION_TIMEDOUT: the transfer's timeout, a check's deadline, passed

# curl's result codes -> a check's cause: the one table of them. A code not here is a
# "protocol error". 7 (no connection) says "connect refused" when the last address was refused
# (cause_of); 35 (handshake failed) says the server does not speak TLS when it sent no TLS
# record; 60 (not verified) is named from the verify result (VERIFY_CAUSES).
CAUSES: dict[int, str] = {
    # CURLE_UNSUPPORTED_PROTOCOL: every URL handed to curl is http(s) (a redirect elsewhere is
    # refused before it), so this is an answer in no HTTP version curl speaks
    1: "protocol error",
    5: "dns",  # CURLE_COULDNT_RESOLVE_PROXY (never: names are pinned)
    6: "dns",  # CURLE_COULDNT_RESOLVE_HOST (never: names are pinned)
    7: "connect error",  # CURLE_COULDNT_CONNECT
    8: "protocol error",  # CURLE_WEIRD_SERVER_REPLY
    18: "protocol error",  # CURLE_PARTIAL_FILE: the body ended before its framing's end
    28: "timeout",  # CURLE_OPERATION_TIMEDOUT
    35: "tls",  # CURLE_SSL_CONNECT_ERROR
    47: "too many redirects",  # CURLE_TOO_MANY_REDIRECTS
    52: "protocol error",  # CURLE_GOT_NOTHING: closed without an answer
    55: "connection reset",  # CURLE_SEND_ERROR
    # CURLE_RECV_ERROR: before an answer, the connection was reset; after its head, the body
    # did not end as framed (a bad chunk, a TLS stream cut without close_notify): cause_of
    56: "connection reset",
    58: "tls",  # CURLE_SSL_CERTPROBLEM
    59: "tls",  # CURLE_SSL_CIPHER
    60: "tls: certificate not trusted",  # CURLE_PEER_FAILED_VERIFICATION
    61: "undecodable body",  # CURLE_BAD_CONTENT_ENCODING
    77: "tls: certificate not trusted",  # CURLE_SSL_CACERT_BADFILE
    80: "tls",  # CURLE_SSL_SHUTDOWN_FAILED
    83: "tls: certificate not trusted",  # CURLE_SSL_ISSUER_ERROR
    91: "tls: certificate not trusted",  # CURLE_SSL_INVALIDCERTSTATUS
}
# OpenSSL's verify results (X509_V_ERR_*) behind code 60; 0: the chain verified, the name did not
VERIFY_CAUSES: dict[int, str] = {
    0: "tls: certificate is for another host",
    # X509_V_ERR_UNSPECIFIED: what this libcurl records when its own check of the name fails
    1: "tls: certificate is for another host",
    10: "tls: certificate expired",  # CERT_HAS_EXPIRED
    18: "tls: self-signed certificate",  # DEPTH_ZERO_SELF_SIGNED_CERT
    19: "tls: self-signed certificate",  # SELF_SIGNED_CERT_IN_CHAIN
    62: "tls: certificate is for another host",  # HOSTNAME_MISMATCH
    64: "tls: certificate is for another host",  # IP_ADDRESS_MISMATCH
}
_TLS_RECORD_TYPES = frozenset(range(20, 24))  # change cipher spec, alert, handshake, application data
_DEBUG_SSL_DATA_IN = 5  # CURLINFO_SSL_DATA_IN
_HTTP_VERSION_1_1 = 2  # CURL_HTTP_VERSION_1_1: checks speak HTTP/1.1, as they always have


class Request:
    """What one exchange sends, and how it reads the answer.

    url        the URL, its host in ASCII (urls.http_host); a unix socket's requests name any host
    pinned     "host:port:address[,address...]" entries (CURLOPT_RESOLVE): where each name goes
    proxy      the proxy's URL, or "" for none
    trust      curl options for TLS (request.curl_trust_options)
    keep       how many decoded body bytes to keep (0: none, and the body is not decoded)
    read_body  (status, whether it has a Location) -> whether the body is read at all
    timeout_s  the transfer's timeout (curl's code 28): what is left of the check's deadline
    """

    __slots__ = (
        "url",
        "method",
        "headers",
        "body",
        "pinned",
        "proxy",
        "trust",
        "keep",
        "read_body",
        "unix_socket",
        "certinfo",
        "timeout_s",
    )

    def __init__(
        self,
        url: str,
        method: str,
        headers: list[str],
        body: bytes | None,
        *,
        pinned: list[str],
        proxy: str,
        trust: dict[int, object],
        keep: int,
        read_body: object,
        unix_socket: str | None = None,
        certinfo: bool = False,
        timeout_s: float,
    ) -> None:
        self.url, self.method, self.headers, self.body = url, method, headers, body
        self.pinned, self.proxy, self.trust, self.keep, self.read_body = pinned, proxy, trust, keep, read_body
        self.unix_socket, self.certinfo, self.timeout_s = unix_socket, certinfo, timeout_s


class Exchange:
    """What came back: curl's code (0: a whole answer), the status (0: none), the Location as
    sent (relative to the request's URL), the Content-Type, the body kept and whether that is
    all of it, the certificate list (CERTINFO), when a whole answer's connection, TLS and first
    byte were done (s from the transfer's start; TLS 0: none), and the cause when the exchange
    failed."""

    __slots__ = (
        "code",
        "status",
        "location",
        "content_type",
        "body",
        "whole",
        "certs",
        "times",
        "cause",
        "os_errno",
        "__weakref__",  # a test shows an Exchange is freed with its check, without the collector
    )

    def __init__(self) -> None:
        self.code = 0
        self.status = 0
        self.location: str | None = None
        self.content_type: str | None = None
        self.body = bytearray()
        self.whole = True
        self.certs: list[list[tuple[str, str]]] = []
        self.times = (0.0, 0.0, 0.0)
        self.cause: str | None = None
        self.os_errno = 0  # of a connection that failed (code 7) only: see cause_of


class _Sink:
    """The body's reader: keeps the first `keep` decoded bytes, and stops the transfer once it
    has enough, or when the answer's body is not wanted (a status not accepted, a redirect)."""

    __slots__ = ("exchange", "keep", "read_body", "stopped", "decided", "status", "location", "tls_in")

    def __init__(self, exchange: Exchange, keep: int, read_body: object) -> None:
        self.exchange, self.keep, self.read_body = exchange, keep, read_body
        self.stopped = False
        self.decided = False
        # the head being read (curl's handle cannot be asked while it runs): its status, and
        # whether it has a Location
        self.status = 0
        self.location = False
        self.tls_in: bytes | None = None  # the first TLS bytes the server sent

    def header(self, line: bytes) -> None:
        if line[:5] == b"HTTP/":  # a new head (after a 100 Continue, or a proxy's CONNECT)
            code = line.split(None, 2)[1:2]
            self.status = self.exchange.status = int(code[0]) if code and code[0].isdigit() else 0
            self.location = False
        elif line[:9].lower() == b"location:":
            self.location = True
            self.exchange.location = line[9:].strip().decode("latin-1") or None

    def write(self, data: bytes) -> int | None:
        if not self.decided:
            self.decided = True
            if not self.read_body(self.status, self.location):  # type: ignore[operator]
                self.stopped = True
                return 0
        if not self.keep:
            return None
        body = self.exchange.body
        room = self.keep - len(body)
        if len(data) > room:  # enough: the rest is never read (a gzip bomb stays small)
            body += data[:room]
            self.exchange.whole = False
            self.stopped = True
            return 0
        body += data
        return None

    def debug(self, kind: int, data: bytes) -> None:
        if kind == _DEBUG_SSL_DATA_IN and self.tls_in is None:
            self.tls_in = bytes(data[:1])


def handle_for(request: Request, exchange: Exchange) -> tuple[pycurl.Curl, _Sink]:
    """A curl handle for `request`, sharing nothing with any other: a fresh connection closed
    after use, no DNS cache, no TLS session reuse; names pinned to our lookup's addresses."""
    import math

    import pycurl

    c = pycurl.Curl()
    sink = _Sink(exchange, request.keep, request.read_body)
    c.setopt(pycurl.URL, request.url)
    c.setopt(pycurl.NOSIGNAL, 1)
    c.setopt(pycurl.FRESH_CONNECT, 1)
    c.setopt(pycurl.FORBID_REUSE, 1)
    c.setopt(pycurl.DNS_CACHE_TIMEOUT, 0)
    c.setopt(pycurl.SSL_SESSIONID_CACHE, 0)
    c.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
    c.setopt(pycurl.HTTP_VERSION, _HTTP_VERSION_1_1)
    # what is left of the check's deadline; at least 1 ms, as 0 would be no timeout at all
    c.setopt(pycurl.TIMEOUT_MS, max(1, math.ceil(request.timeout_s * 1000)))
    c.setopt(pycurl.RESOLVE, request.pinned)
    c.setopt(pycurl.PROXY, request.proxy)  # "": none, and curl reads no proxy of its own
    if request.unix_socket is not None:
        c.setopt(pycurl.UNIX_SOCKET_PATH, request.unix_socket)
    # an Expect: 100-continue and a form's Content-Type are curl's, not the monitor's
    headers = [*request.headers, "Expect:"]
    if request.body is not None and not any(h.lower().startswith("content-type:") for h in request.headers):
        headers.append("Content-Type:")
    c.setopt(pycurl.HTTPHEADER, headers)
    if request.method == "HEAD":
        c.setopt(pycurl.NOBODY, 1)
    elif request.body is not None:
        c.setopt(pycurl.POSTFIELDS, request.body)
        if request.method != "POST":
            c.setopt(pycurl.CUSTOMREQUEST, request.method)
    elif request.method != "GET":
        c.setopt(pycurl.CUSTOMREQUEST, request.method)
    # what httpx offered (gzip, deflate, br); decoded only when the body is kept
    c.setopt(pycurl.ACCEPT_ENCODING, "")
    if not request.keep:
        c.setopt(pycurl.HTTP_CONTENT_DECODING, 0)
    c.setopt(pycurl.WRITEFUNCTION, sink.write)
    c.setopt(pycurl.HEADERFUNCTION, sink.header)
    for option, value in request.trust.items():
        c.setopt(option, value)  # type: ignore[arg-type]
    if request.url[:6].lower() == "https:":
        # what the server first sent in the handshake, to tell a server that does not speak TLS
        c.setopt(pycurl.VERBOSE, 1)
        c.setopt(pycurl.DEBUGFUNCTION, sink.debug)
        if request.certinfo:
            c.setopt(pycurl.OPT_CERTINFO, 1)
    return c, sink


async def exchange(engine: Engine, request: Request, result: Exchange) -> Exchange:
    """Send `request` and read its answer into `result` (see Request). Never raises for the
    remote end's doing: the Exchange's cause says what failed."""
    import pycurl

    # the handle holds the sink's methods, and the sink this Exchange, which holds neither: all
    # three are freed with the check, never left to the garbage collector (whose passes over
    # thousands of them cost a tick's time)
    handle, sink = handle_for(request, result)
    code = await engine.perform(handle)
    if code == pycurl.E_WRITE_ERROR and sink.stopped:  # we stopped reading: not a failure
        code = 0
    result.code = code
    result.status = handle.getinfo(pycurl.RESPONSE_CODE)
    if code == 0:
        result.content_type = handle.getinfo(pycurl.CONTENT_TYPE)
        info = handle.getinfo
        result.times = (info(CONNECT_TIME), info(APPCONNECT_TIME), info(STARTTRANSFER_TIME))
        if request.certinfo:
            result.certs = handle.getinfo(pycurl.INFO_CERTINFO) or []
    else:
        if code == pycurl.E_COULDNT_CONNECT:
            result.os_errno = handle.getinfo(pycurl.OS_ERRNO)
        result.cause = cause_of(code, handle, sink.tls_in, result.os_errno, result.status)
    return result


def cause_of(code: int, handle: pycurl.Curl, tls_in: bytes | None, os_errno: int = 0, status: int = 0) -> str:
    """The cause of a failed exchange, from curl's code (CAUSES), never from its message.
    `os_errno`: the errno of a connection that failed (code 7), read only then: every address
    was tried and failed, and it is the last one's. Refused when that one was refused. `status`:
    of the head read before the failure (0: none)."""
    import pycurl

    if code == pycurl.E_COULDNT_CONNECT:
        import errno

        return "connect refused" if os_errno == errno.ECONNREFUSED else "connect error"
    if code == pycurl.E_SSL_CONNECT_ERROR and (tls_in is None or tls_in[0] not in _TLS_RECORD_TYPES):
        from monitor_tick.probes.net import NOT_TLS

        return NOT_TLS  # it hung up on our hello, or answered it in something else
    if code == pycurl.E_RECV_ERROR and status:
        return "protocol error"
    if code == pycurl.E_OPERATION_TIMEDOUT and status:
        return "timeout reading body"
    if code == pycurl.E_PEER_FAILED_VERIFICATION:
        return VERIFY_CAUSES.get(handle.getinfo(pycurl.SSL_VERIFYRESULT), CAUSES[code])
    return CAUSES.get(code, "protocol error")


def expires_at_ms(certs: list[list[tuple[str, str]]]) -> int | None:
    """The leaf certificate's notAfter (CERTINFO's first certificate) as epoch ms, or None."""
    import calendar
    import time

    for name, value in certs[0] if certs else ():
        if name.lower() == "expire date":
            try:
                return calendar.timegm(time.strptime(" ".join(value.split()), "%b %d %H:%M:%S %Y GMT")) * 1000
            except ValueError:
                return None
    return None
