"""The HTTP(S) probe: one request under one hard deadline, turned into a ProbeResult.

Options: accepted statuses (--expect), text the body must contain (--keyword) or must not
(--keyword-absent), a field of its JSON (--json-field, jsonfield.py), the longest it may take
(--max-latency, latency.py), and for https:// the certificate's expiry (--expires-within,
judged as for tls:// monitors on the final response's connection). What the request carries
(method, headers, basic auth, body, its own CA or none) is request.py's.

httpx's timeouts are per operation (a server that drips a byte a second never trips a read
timeout), so the whole attempt -- connect, headers, body -- runs under `asyncio.timeout`.
Every failure a remote end can cause becomes a `down` result with a short cause; our own
limits (a connection-pool wait) become `unknown`, never `down`.

httpx is imported only by a check that goes through it (the tick's clients are made when first
needed: fanout.Clients): a check the fast path takes on (wire.py) never loads it.
"""

from __future__ import annotations

import sys
import time

from monitor_tick.core import urls
from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import (
    InvalidMonitor,
    Monitor,
    ProbeResult,
    check_text,
    parse_expect,
    status_accepted,
)
from monitor_tick.probes import jsonfield, latency, request, wire
from monitor_tick.probes.base import Kind, ProbeContext, failed_conditions
from monitor_tick.probes.net import (
    NO_ROUTE_ERRNOS,
    cause_of_os_error,
    cert_expires_at_ms,
    check_expires_within,
    connect,
    expiry_cause,
)

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import httpx

MAX_BODY_BYTES = 1024 * 1024  # at most this much of a body is kept, to look for keywords
MAX_REDIRECTS = 5


async def probe_http(
    monitor: Monitor, client: httpx.AsyncClient | None, now_ms: int, ctx: ProbeContext | None = None
) -> ProbeResult:
    """One attempt. Never raises for remote behaviour; returns up/down/unknown with a cause.
    `client` None: ctx.clients makes the one for the monitor's TLS setting, if httpx is needed.
    `now_ms` (the tick's time) is what a certificate's days left are counted from. With --expires-within
    the certificate is read from the response's connection, or, when the transport cannot show it
    (a transport handed in), from a TLS connection of its own to the final URL's host, verified
    as the client verifies (`ctx`). With `ctx.fast`, a plain check goes straight on the wire
    (wire.py), and anything else through `client`, within the same deadline; its latency is then
    that of httpx's exchange alone (the one that decided), which --max-latency judges. A check
    whose response the fast path handed over, or whose exchange through httpx was redirected,
    says so: its result's handed_at_ms is `now_ms` (run/fanout.py remembers it).

    The body is read to its end under the same deadline (a page that never finishes loading is
    down), keeping at most MAX_BODY_BYTES of it, and only when there is a keyword to look for.
    """
    import asyncio

    ranges = parse_expect(monitor.expect_status)
    keep = keeps_body(monitor)
    start = time.perf_counter()
    status: int | None = None
    expires_at_ms: int | None = None
    call: wire.Call | None = None
    handed_at_ms: int | None = None  # now_ms once the response is one the fast path hands over
    try:
        async with asyncio.timeout(monitor.timeout_s):
            body: bytearray | None = None  # read only when the status is accepted
            whole = True
            answer = None
            if ctx is not None and ctx.fast:
                call = wire.Call(
                    monitor,
                    ctx.tls,
                    keep=keep,
                    limit=MAX_BODY_BYTES,
                    read_body=lambda code: status_accepted(code, ranges),
                    peer_cert=monitor.expires_within_sec is not None,
                )
                answer = await call.run()
                if answer is None:  # httpx's to take further: from here on its status counts
                    handed_at_ms = now_ms if call.handed else None
                    call = None
                    start = time.perf_counter()
            if answer is not None:
                return answer_result(monitor, answer, now_ms, elapsed_ms(start, time.perf_counter()))
            if client is None:
                client = _client_for(monitor, ctx)
            sent = client.build_request(
                monitor.method,
                monitor.url,
                headers=request.request_headers(monitor),
                content=request.request_body(monitor),
                timeout=monitor.timeout_s,
            )
            response = await client.send(sent, stream=True, follow_redirects=True)
            try:
                status = response.status_code
                if response.history or 300 <= status < 400:  # the fast path hands a redirect over
                    handed_at_ms = now_ms
                if monitor.expires_within_sec is not None:
                    expires_at_ms = cert_expires_at_ms(_peer_cert(response))
                    if expires_at_ms is None and ctx is not None and response.url.scheme == "https":
                        host, port = response.url.host, response.url.port or 443
                        _, cert = await connect(host, port, monitor.timeout_s, ctx.tls(), ctx.guard)
                        expires_at_ms = cert_expires_at_ms(cert)
                if status_accepted(status, ranges):
                    body, whole = await _read_body(response, keep)
            finally:
                await response.aclose()
            return judged(
                monitor,
                status,
                body,
                whole,
                expires_at_ms,
                now_ms,
                elapsed_ms(start, time.perf_counter()),
                handed_at_ms,
            )
    except _failures() as exc:  # TimeoutError is an OSError
        if status is None and call is not None:
            status = call.status  # the fast path's response had begun
        failed_result = failed(exc, status, expires_at_ms)
        if failed_result.cause == "too many redirects":  # redirected, as the fast path hands over
            handed_at_ms = now_ms
        return failed_result._replace(handed_at_ms=handed_at_ms)


def judged(
    monitor: Monitor,
    status: int,
    body: bytearray | None,
    whole: bool,
    expires_at_ms: int | None,
    now_ms: int,
    latency_ms: int,
    handed_at_ms: int | None = None,
) -> ProbeResult:
    """The result of an answer: `status`, and `body` (None: not read, as the status was not
    accepted; `whole`: all of it) and the certificate's expiry judged against the monitor's
    conditions."""
    wanted = monitor.keyword.encode("utf-8") if monitor.keyword else None
    unwanted = monitor.keyword_absent.encode("utf-8") if monitor.keyword_absent else None
    cause = failed_conditions(
        f"status {status}" if body is None else None,
        *(_body_causes(monitor, body, whole, wanted, unwanted) if body is not None else ()),
        expiry_cause(monitor, now_ms, expires_at_ms) if monitor.expires_within_sec is not None else None,
    )
    return ProbeResult("down" if cause is not None else "up", latency_ms, status, cause, expires_at_ms, handed_at_ms)


def answer_result(monitor: Monitor, answer: wire.Answer, now_ms: int, latency_ms: int) -> ProbeResult:
    """The result of a response the fast path took on (`latency_ms`: its exchange's)."""
    status = answer.status
    accepted = status_accepted(status, parse_expect(monitor.expect_status))
    body, whole = (answer.body, answer.whole) if accepted else (None, True)
    return judged(monitor, status, body, whole, cert_expires_at_ms(answer.peer_cert), now_ms, latency_ms)


def keeps_body(monitor: Monitor) -> bool:
    """Whether a check reads its body for a condition (a keyword, a JSON field)."""
    return bool(monitor.keyword or monitor.keyword_absent or monitor.json_field)


_OWN_FAILURES: tuple[type[BaseException], ...] = (wire.WireError, OSError)  # ssl.SSLError is an OSError


def _failures() -> tuple[type[BaseException], ...]:
    """What a remote end can make an attempt raise: httpx's errors too once httpx is loaded (only
    a check that went through it can raise them). Read when an exception is raised, never else."""
    httpx = sys.modules.get("httpx")
    return _OWN_FAILURES if httpx is None else (*_OWN_FAILURES, httpx.HTTPError)


def _client_for(monitor: Monitor, ctx: ProbeContext | None) -> httpx.AsyncClient:
    """The tick's client for this monitor's TLS setting, made when first needed."""
    if ctx is None or ctx.clients is None:
        raise ValueError("probe_http needs a client, or a context whose clients make one")
    return ctx.clients.client(request.tls_setting(monitor))


def _body_causes(
    monitor: Monitor, body: bytearray, whole: bool, wanted: bytes | None, unwanted: bytes | None
) -> tuple[str | None, ...]:
    """What an accepted answer's body fails: its keywords, its JSON field (None: passed)."""
    return (
        "keyword missing" if wanted and wanted not in body else None,
        "keyword present" if unwanted and unwanted in body else None,
        jsonfield.cause(monitor, bytes(body), whole) if monitor.json_field is not None else None,
    )


def failed(exc: BaseException, status: int | None, expires_at_ms: int | None = None) -> ProbeResult:
    """The result of an attempt that raised; `status` when a response had begun."""
    if isinstance(exc, TimeoutError):  # the attempt's deadline
        return ProbeResult("down", None, status, "timeout" if status is None else "timeout reading body", expires_at_ms)
    if isinstance(exc, wire.WireError):
        return ProbeResult("down", None, status, cause_of(exc), expires_at_ms)
    if not isinstance(exc, OSError):  # httpx's errors (_failures): it is loaded (TLS errors are OSErrors)
        import httpx

        if isinstance(exc, httpx.PoolTimeout):
            return ProbeResult("unknown", None, None, "connection pool exhausted")
        return ProbeResult("down", None, status, cause_of(exc), expires_at_ms)
    # transports may leak raw socket errors
    return ProbeResult("down", None, status, cause_of_os_error(exc), expires_at_ms)


async def _read_body(response: httpx.Response, keep: bool) -> tuple[bytearray, bool]:
    """Read the body to its end; (its first MAX_BODY_BYTES, decoded, whether that is all of it),
    holding no more than that in memory (nothing at all unless `keep`)."""
    seen = bytearray()
    whole = True
    if not keep:
        async for _ in response.aiter_raw():
            pass
        return seen, whole
    async for chunk in response.aiter_bytes():
        room = MAX_BODY_BYTES - len(seen)
        whole = whole and len(chunk) <= room
        seen += chunk[:room]
    return seen, whole


def _peer_cert(response: httpx.Response) -> dict[str, object] | None:
    """The verified certificate of the connection that carried `response` (None over plain HTTP)."""
    stream = response.extensions.get("network_stream")
    ssl_object = stream.get_extra_info("ssl_object") if stream is not None else None
    return ssl_object.getpeercert() if ssl_object is not None else None


def cause_of(exc: httpx.HTTPError | wire.WireError) -> str:
    """A short, stable cause for an httpx failure, or the fast path's (read as its httpx
    counterpart), never the URL: it may hold secrets."""
    if isinstance(exc, wire.ConnectError):
        return _cause_of_chain(exc, default="connect error")
    if isinstance(exc, wire.ReadError):
        return _cause_of_chain(exc, default="connection reset")
    if isinstance(exc, wire.RemoteProtocolError):
        return "protocol error"
    import httpx  # any other is httpx's own: it is loaded

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
        if isinstance(seen, OSError):  # a TLS error too; httpx's errors and the fast path's are neither
            cause = cause_of_os_error(seen)
            # anyio wraps the real error in a plain OSError; an unreachable network is the real
            # one (asyncio's text for it may name ssl, which is not a TLS failure)
            if cause != "connect error" or getattr(seen, "errno", None) in NO_ROUTE_ERRNOS:
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


async def _probe(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    setting = request.tls_setting(monitor)
    if ctx.clients is None:
        return await probe_http(monitor, ctx.client, ctx.now_ms, ctx)
    # its own CA or no verification: an SSL context (and client, made if httpx is needed) of its
    # own, which the fast path and the certificate check of --expires-within use too
    if setting is not None:
        ctx = ctx._replace(ssl_context=ctx.clients.context(setting))
    return await probe_http(monitor, None, ctx.now_ms, ctx)


def _check(monitor: Monitor) -> None:
    parts = urls.check_http(monitor.url)
    request.check(monitor)
    parse_expect(monitor.expect_status)
    check_text(monitor.keyword, "keyword")
    check_text(monitor.keyword_absent, "--keyword-absent")
    if (monitor.keyword or monitor.keyword_absent) and monitor.method == "HEAD":
        raise InvalidMonitor("a keyword needs the body: use --method GET")
    jsonfield.check(monitor)
    if monitor.json_field is not None and monitor.method == "HEAD":
        raise InvalidMonitor("--json-field needs the body: use --method GET")
    latency.check(monitor)
    if monitor.expires_within_sec is not None and parts.scheme.lower() != "https":
        raise InvalidMonitor("--expires-within needs an https:// url (or use tls://host)")
    check_expires_within(monitor)


KIND = Kind(
    name="http",
    schemes=("http", "https"),
    usage="http(s)://host/path",
    probe=latency.judged(_probe),
    check=_check,
    unusable=request.unresolved,
    options=frozenset(
        {
            "method",
            "expect_status",
            "keyword",
            "keyword_absent",
            "expires_within_sec",
            "timeout_s",
            "retries",
            latency.OPTION,
            jsonfield.OPTION,
            "headers",
            "basic_auth",
            "body",
            "ca_file",
            "insecure",
        }
    ),
)
