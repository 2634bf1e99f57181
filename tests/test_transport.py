"""A large tick's fast path (plain checks straight on the wire, probes/wire.py) against httpx's
own transport, on real misbehaving servers on 127.0.0.1: every outcome and cause must be the
same through either. And httpx's own transport as the tick builds it (probes/backend.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import os
import random
import socket
import sqlite3
import ssl
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import httpx
import pytest
import respx

from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import ProbeContext, check_monitor, latency, wire
from monitor_tick.probes.backend import httpx_transport
from monitor_tick.probes.guard import AddressGuard
from monitor_tick.probes.http import probe_http
from monitor_tick.probes.trust import DefaultTrust
from monitor_tick.run import bare, fanout
from monitor_tick.run import tick as run_tick_module
from monitor_tick.run.fanout import make_client, ssl_context
from monitor_tick.run.rounds import TickOptions, probe_context
from tests.conftest import add, respx_transport
from tests.servers import (
    LocalServer,
    TLSPair,
    expired_cert,
    refused_port,
    self_signed_cert,
    send_response,
    valid_cert,
    wrong_host_cert,
)

SHORT_S = 0.5  # deadline for the cases that must time out
MINUTE = 29_934_721  # a replayed minute: every one-minute monitor is due


def monitor(url: str, **settings: object) -> Monitor:
    return Monitor(id=1, name="m", kind="http", url=url, interval_sec=60, effective_interval_sec=60, **settings)  # type: ignore[arg-type]


def probe_both(m: Monitor, verify: object = True) -> tuple[ProbeResult, ProbeResult]:
    """(through httpx's own transport, through the fast path), without latency, on the event
    loop the tick uses; and the fast path on the bare loop, as a tick of plain checks sends it
    (run/bare.py), which must give the fast path's result."""

    async def main() -> tuple[ProbeResult, ProbeResult]:
        out = []
        context = httpx.create_ssl_context(verify=verify)  # type: ignore[arg-type]
        for fast in (False, True):
            async with make_client(10, verify=context) as client:
                result = await probe_http(m, client, 0, ProbeContext(client, 0, context, fast=fast))
            out.append(ProbeResult(result.status, None, result.http_status, result.cause))
        return out[0], out[1]

    default, fast = asyncio.run(main())
    assert probe_bare(m, verify) == fast
    return default, fast


def probe_bare(m: Monitor, verify: object = True) -> ProbeResult:
    """The check as a tick of plain checks makes it: on the bare loop, and what that hands over
    through httpx on asyncio's loop; without latency. (Its retries are tried at once.)"""
    context = httpx.create_ssl_context(verify=verify)  # type: ignore[arg-type]
    options = TickOptions("unused.db", verify=context, retry_delay_s=0, budget_s=10)
    ctx = probe_context(options, 0, {}, 1, bare=True)
    assert bare.requests([m], ctx) is not None or m.method != "GET" or m.body is not None
    [result] = run_tick_module._probe([m], options, 0, {})
    return ProbeResult(result.status, None, result.http_status, result.cause)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer(drip_interval=SHORT_S) as srv:
        yield srv


@pytest.mark.parametrize(
    ("path", "settings", "expected"),
    [
        ("/ok", {}, ("up", 200, None)),
        ("/ok", {"method": "HEAD"}, ("up", 200, None)),
        ("/status/503", {}, ("down", 503, "status 503")),
        ("/status/204", {"expect_status": "200-299"}, ("up", 204, None)),
        ("/redirect/3", {}, ("up", 200, None)),
        ("/redirect-loop", {}, ("down", None, "too many redirects")),
        ("/keyword/all%20good", {"keyword": "all good"}, ("up", 200, None)),
        ("/keyword/bad", {"keyword": "all good"}, ("down", 200, "keyword missing")),
        ("/body-size/300000", {"keyword": "b"}, ("down", 200, "keyword missing")),
        # a body that never ends is down once the deadline passes (it is read to its end)
        ("/endless-chunked", {"timeout_s": SHORT_S, "keyword": "b"}, ("down", 200, "timeout reading body")),
        ("/huge-length", {"timeout_s": SHORT_S, "keyword": "b"}, ("down", 200, "timeout reading body")),
        ("/hang", {"timeout_s": SHORT_S}, ("down", None, "timeout")),
        ("/drip", {"timeout_s": SHORT_S, "keyword": "b"}, ("down", 200, "timeout reading body")),
        ("/reset", {}, ("down", None, "connection reset")),
        ("/garbage", {}, ("down", None, "protocol error")),
        ("/close-mid-body", {"keyword": "b"}, ("down", 200, "protocol error")),
    ],
)
def test_the_fast_path_judges_each_misbehaviour_as_httpx_does(
    server: LocalServer, path: str, settings: dict[str, object], expected: tuple[str, int | None, str | None]
) -> None:
    default, fast = probe_both(monitor(server.url(path), retries=0, **settings))
    assert fast == default
    assert (fast.status, fast.http_status, fast.cause) == expected


def test_a_refused_connection_is_connect_refused_through_either_path() -> None:
    default, fast = probe_both(monitor(f"http://127.0.0.1:{refused_port()}/"))
    assert fast == default == ProbeResult("down", None, None, "connect refused")


@pytest.mark.parametrize(
    ("make_cert", "cause"),
    [
        (valid_cert, None),
        (expired_cert, "tls: certificate expired"),
        (self_signed_cert, "tls: self-signed certificate"),
        (wrong_host_cert, "tls: certificate is for another host"),
    ],
)
def test_certificates_are_judged_the_same_through_either_path(make_cert: object, cause: str | None) -> None:
    pair: TLSPair = make_cert()  # type: ignore[operator]
    with LocalServer(tls=pair.server_context) as srv:
        default, fast = probe_both(monitor(srv.url("/ok")), verify=ssl.create_default_context(cafile=pair.ca_pem))
    assert fast == default
    assert fast.cause == cause and fast.status == ("up" if cause is None else "down")


async def _answer_and_never_close(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str
) -> None:
    """A peer that answers, then neither reads our TLS close_notify (so never answers it) nor
    closes the connection (until the server stops)."""
    await send_response(writer, 200, "ok\n")
    writer.transport.pause_reading()
    await asyncio.Event().wait()


def test_the_fast_path_leaves_no_socket_open_when_a_peer_never_answers_its_tls_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closing a TLS connection politely waits for the peer's close_notify (asyncio: up to
    30 s); the fast path drops it at once, so no connection still holds its socket when the
    tick's loop ends, whatever the peer does."""
    unclosed: list[str] = []  # an unclosed socket or transport says so when it is collected
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: unclosed.append(str(unraisable.exc_value)))
    pair = valid_cert()
    with LocalServer(tls=pair.server_context) as srv:
        srv.route("/never-closes", _answer_and_never_close)

        async def main() -> ProbeResult:
            context = pair.client_context()
            async with make_client(10, verify=context) as client:
                return await probe_http(
                    monitor(srv.url("/never-closes")), client, 0, ProbeContext(client, 0, context, fast=True)
                )

        assert asyncio.run(main()).status == "up"
        gc.collect()
    assert unclosed == []


def test_plain_http_to_a_tls_port_and_tls_to_a_plain_port_fail_the_same_way(server: LocalServer) -> None:
    with LocalServer(tls=valid_cert().server_context) as tls_srv:
        plain_to_tls = probe_both(monitor(tls_srv.url("/ok").replace("https://", "http://"), timeout_s=2))
    tls_to_plain = probe_both(monitor(server.url("/ok").replace("http://", "https://")))
    assert plain_to_tls[1] == plain_to_tls[0] and plain_to_tls[1].status == "down"
    assert tls_to_plain[1] == tls_to_plain[0] and tls_to_plain[1].cause == "tls: not spoken by the server"


def test_the_fast_path_sends_httpxs_request_line_host_and_user_agent(server: LocalServer) -> None:
    url = server.url("/ok/a%2Fb?q=1%202")
    served = []
    for fast in (False, True):
        asyncio.run(_probe_once(monitor(url), fast))
        served.append(server.requests[-1])
    through_httpx, on_the_wire = served
    for request in served:
        assert request.target == "/ok/a%2Fb?q=1%202"
        assert request.headers["user-agent"].startswith("monitor-tick")
        assert request.headers["host"] == f"127.0.0.1:{server.port}"
        assert request.headers["accept"] == "*/*"
    # the fast path answered itself: it asks for the body as it is, httpx for gzip or deflate
    assert on_the_wire.headers["accept-encoding"] == "identity"
    assert "gzip" in through_httpx.headers["accept-encoding"]


async def _probe_once(m: Monitor, fast: bool) -> ProbeResult:
    context = ssl_context()
    async with make_client(10, verify=context) as client:
        return await probe_http(m, client, 0, ProbeContext(client, 0, context, fast=fast))


def test_a_transport_handed_in_is_the_one_used_so_respxs_mock_sees_requests(
    respx_mock: respx.MockRouter,
) -> None:
    route = respx_mock.get("http://site.test/").mock(return_value=httpx.Response(200))

    async def main() -> ProbeResult:
        async with make_client(10, respx_transport()) as client:
            return await probe_http(monitor("http://site.test/"), client, 0)

    assert asyncio.run(main()).status == "up" and route.call_count == 1


@pytest.mark.parametrize("fast", [False, True], ids=["httpx", "wire"])
@pytest.mark.parametrize("cut", ["deadline", "budget"])
def test_a_probe_that_ends_mid_handshake_leaves_no_socket_open(
    monkeypatch: pytest.MonkeyPatch, cut: str, fast: bool
) -> None:
    """Through httpx's own transport (a small tick's) and straight on the wire (a large tick's):
    a probe that reaches its deadline, or is cut off by the tick's budget, while the peer never
    answers the TLS handshake leaves no socket open. (httpcore closes the socket when a
    handshake fails, but not when it is cancelled.)"""
    unclosed: list[str] = []  # an unclosed socket or transport says so when it is collected
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: unclosed.append(str(unraisable.exc_value)))
    with socket.socket() as listener:  # the kernel completes the connection; nobody answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/"

        async def main() -> ProbeResult | None:
            context = ssl.create_default_context()
            transport = httpx_transport(context, httpx.Limits(max_connections=None))
            async with make_client(10, transport) as client:
                ctx = ProbeContext(client, 0, context, fast=fast)
                if cut == "deadline":
                    return await probe_http(monitor(url, timeout_s=SHORT_S, retries=0), client, 0, ctx)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(probe_http(monitor(url, timeout_s=20, retries=0), client, 0, ctx), SHORT_S)
                return None

        result = asyncio.run(main())
        gc.collect()
    assert unclosed == []
    if cut == "deadline":
        assert result is not None and (result.status, result.cause) == ("down", "timeout")


@pytest.mark.parametrize("cut", ["deadline", "budget"])
def test_on_the_bare_loop_a_probe_that_ends_mid_handshake_leaves_no_socket_open(
    monkeypatch: pytest.MonkeyPatch, cut: str
) -> None:
    """The same on the bare loop (a tick of plain checks): its deadline, or the tick's budget,
    closes the socket of a handshake that never ends, and the loop's own."""
    unclosed: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: unclosed.append(str(unraisable.exc_value)))
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        m = monitor(f"https://127.0.0.1:{listener.getsockname()[1]}/", timeout_s=SHORT_S if cut == "deadline" else 20)
        budget_s = 10 if cut == "deadline" else SHORT_S
        options = TickOptions("unused.db", verify=ssl.create_default_context(), retry_delay_s=0, budget_s=budget_s)
        [result] = run_tick_module._probe([m._replace(retries=0)], options, 0, {})
        gc.collect()
    assert unclosed == []
    if cut == "deadline":
        assert (result.status, result.cause) == ("down", "timeout")
    else:
        assert result == fanout.CUT_OFF


def test_on_the_bare_loop_a_peer_that_never_answers_its_tls_close_holds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unclosed: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: unclosed.append(str(unraisable.exc_value)))
    pair = valid_cert()
    with LocalServer(tls=pair.server_context) as srv:
        srv.route("/never-closes", _answer_and_never_close)
        options = TickOptions("unused.db", verify=pair.client_context(), retry_delay_s=0, budget_s=5)
        [result] = run_tick_module._probe([monitor(srv.url("/never-closes"), retries=0)], options, 0, {})
        gc.collect()
    assert (result.status, result.http_status) == ("up", 200)
    assert unclosed == []


def test_every_tick_takes_the_fast_path_unless_a_transport_a_guard_or_a_proxy_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [name for name in os.environ if name.lower() in wire.PROXY_VARIABLES]:
        monkeypatch.delenv(name)
    assert fanout.fast_path(1, None, None) and fanout.fast_path(1_000, None, None)
    assert not fanout.fast_path(1, respx_transport(), None)
    assert not fanout.fast_path(1, None, AddressGuard())
    monkeypatch.setenv("Https_Proxy", "http://127.0.0.1:3128")  # any case, as httpx reads it
    assert not fanout.fast_path(1, None, None)


async def _gzipped_whatever_was_asked(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str
) -> None:
    """A server that compresses even when asked for the body as it is."""
    text = path.rpartition("/")[2].replace("%20", " ")
    await send_response(
        writer, 200, gzip.compress(f"the page says {text}".encode()), headers={"Content-Encoding": "gzip"}
    )


async def _body_until_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
    """Neither Content-Length nor chunked: the body ends when the connection does."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nall good until close")
    await writer.drain()


async def _headers_without_end(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str
) -> None:
    """A status line, then one header whose value never ends (64 KiB at a time, at most 16 MiB),
    and the connection held open until the client closes it."""
    writer.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
    for _ in range(256):
        writer.write(b"a" * 65_536)
        await writer.drain()
    await reader.read()


def _raw(response: bytes) -> Callable[..., Awaitable[None]]:
    """A handler that answers with exactly these bytes, then closes."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        writer.write(response)
        await writer.drain()

    return handler


# Responses httptools and h11 (httpx's parser) read differently: the fast path hands each to httpx
SLOPPY = {
    "bare-lf": b"HTTP/1.1 200 OK\nContent-Length: 2\nConnection: close\n\nok",
    "length-twice": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
    "length-and-chunked": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "identity-coding": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nok",
    "folded-header": b"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok",
    "endless-trailer": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: " + b"t" * 300_000,
}


@pytest.mark.parametrize("name", SLOPPY)
def test_responses_the_two_parsers_read_differently_are_judged_as_httpx_judges_them(
    server: LocalServer, name: str
) -> None:
    server.route(f"/sloppy-{name}", _raw(SLOPPY[name]))
    default, fast = probe_both(monitor(server.url(f"/sloppy-{name}"), timeout_s=5, retries=0))
    assert fast == default, name


def test_only_a_get_without_a_body_goes_on_the_wire(server: LocalServer) -> None:
    """A response handed to httpx means the request is sent again: never a POST's side effect twice."""
    for method, body in (("POST", "x=1"), ("PUT", None), ("DELETE", None), ("GET", "x")):
        before = len(server.requests)
        default, fast = probe_both(monitor(server.url("/redirect/1"), method=method, body=body, retries=0))
        assert fast == default, method
        # each path (httpx, the fast path on asyncio's loop, a tick that would use the bare
        # loop): the request, then the redirected GET httpx makes
        assert [r.path for r in server.requests[before:]] == ["/redirect/1", "/ok"] * 3, method


def test_headers_without_end_are_a_protocol_error_through_either_path(server: LocalServer) -> None:
    """h11 (httpx's parser) refuses a head over 16 KiB; the fast path does too, and holds no
    more of it than that."""
    server.route("/endless-header", _headers_without_end)
    default, fast = probe_both(monitor(server.url("/endless-header"), timeout_s=5, retries=0))
    assert fast == default == ProbeResult("down", None, None, "protocol error")


def test_redirects_compressed_bodies_for_keywords_and_head_go_through_httpx(server: LocalServer) -> None:
    """What the fast path hands over is httpx's to finish: each is judged as httpx judges it.
    (And a body that ends with its connection is the fast path's own.)"""
    server.route("/gzip", _gzipped_whatever_was_asked)
    server.route("/until-close", _body_until_close)
    cases = [
        (monitor(server.url("/until-close"), keyword="until close", retries=0), ("up", 200, None)),
        (monitor(server.url("/until-close"), keyword="absent", retries=0), ("down", 200, "keyword missing")),
        (monitor(server.url("/redirect/2"), retries=0), ("up", 200, None)),
        (monitor(server.url("/ok"), method="HEAD", retries=0), ("up", 200, None)),
        (monitor(server.url("/gzip/all%20good"), keyword="all good", retries=0), ("up", 200, None)),
        (monitor(server.url("/gzip/bad"), keyword="all good", retries=0), ("down", 200, "keyword missing")),
    ]
    for m, expected in cases:
        default, fast = probe_both(m)
        assert fast == default and (fast.status, fast.http_status, fast.cause) == expected, m.url


def test_a_check_says_when_its_response_is_one_the_fast_path_hands_over(server: LocalServer) -> None:
    """handed_at_ms (the tick's time) marks a response the fast path hands over, so that the tick
    sends the monitor's next check to httpx at once: a redirect on either path (httpx's own
    exchange shows it), anything else the fast path handed over; a response it takes is not."""
    server.route("/gzip", _gzipped_whatever_was_asked)
    now_ms = 1_700_000_000_000

    async def handed(m: Monitor, fast: bool) -> int | None:
        context = ssl_context()
        async with make_client(10, verify=context) as client:
            result = await probe_http(m, client, now_ms, ProbeContext(client, now_ms, context, fast=fast))
        assert result.status == "up", m.url
        return result.handed_at_ms

    redirected = monitor(server.url("/redirect/1"), retries=0)
    zipped = monitor(server.url("/gzip/all%20good"), keyword="all good", retries=0)
    plain = monitor(server.url("/ok"), retries=0)
    seen = [(asyncio.run(handed(m, False)), asyncio.run(handed(m, True))) for m in (redirected, zipped, plain)]
    assert seen == [(now_ms, now_ms), (None, now_ms), (None, None)]


def test_no_ca_bundle_is_loaded_until_a_tls_handshake_needs_it(server: LocalServer) -> None:
    """A tick's default trust costs nothing for plain http:// checks; the first https:// one
    loads it (and so is verified against it)."""
    context = ssl_context()
    assert isinstance(context, DefaultTrust) and context.cert_store_stats()["x509_ca"] == 0

    async def main() -> ProbeResult:
        async with make_client(10, verify=context) as client:
            return await probe_http(monitor(server.url("/ok")), client, 0)

    assert asyncio.run(main()).status == "up"
    assert context.cert_store_stats()["x509_ca"] == 0
    pair = self_signed_cert()
    with LocalServer(tls=pair.server_context) as tls_srv:

        async def tls_main() -> ProbeResult:
            async with make_client(10, verify=context) as client:
                return await probe_http(monitor(tls_srv.url("/ok"), retries=0), client, 0)

        result = asyncio.run(tls_main())
    assert context.cert_store_stats()["x509_ca"] > 100  # the default bundle (SSL_CERT_FILE, or certifi's)
    assert result.cause == "tls: self-signed certificate"


@pytest.mark.parametrize(("last_path", "through_httpx"), [("/ok", False), ("/redirect/1", True)])
def test_a_tick_whose_checks_all_went_on_the_wire_closes_httpx_without_loading_anyio(
    server: LocalServer, db_path: str, conn: sqlite3.Connection, last_path: str, through_httpx: bool
) -> None:
    """Closing httpx's client shields the close of its pool's connections through anyio, whose
    asyncio backend is a large import: a tick whose checks all went on the wire has no
    connection in that pool, and loads none of it. A check handed to httpx (a redirect) does."""
    for n in range(99):
        add(conn, server.url(f"/ok?m={n}"), retries=0)
    add(conn, server.url(last_path), retries=0)
    script = (
        "import sys\n"
        "from monitor_tick.run.tick import TickOptions, run_tick\n"
        f"report = run_tick(TickOptions(db_path={db_path!r}, minute={MINUTE}, retry_delay_s=0))\n"
        "print(sorted({r.status for r in report.results}), 'anyio._backends._asyncio' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.split() == ["['up']", str(through_httpx)]


@pytest.mark.parametrize(("last_path", "imports_httpx"), [("/ok", False), ("/redirect/1", True)])
def test_a_tick_of_ten_plain_checks_never_imports_httpx(
    server: LocalServer, db_path: str, conn: sqlite3.Connection, last_path: str, imports_httpx: bool
) -> None:
    """The fast path needs no httpx, and a tick imports it only when a check does (here a
    redirect, which httpx follows): `python -X importtime` lists every module the command loads.
    Nor asyncio, on the bare loop (run/bare.py), and what it brings: a check handed to httpx
    brings them, for that check only. (httptools 0.9 imports typing.)"""
    for n in range(9):
        add(conn, server.url(f"/ok?m={n}"), retries=0)
    add(conn, server.url(last_path), retries=0)
    command = [sys.executable, "-X", "importtime", "-m", "monitor_tick", "--db", db_path, "--minute", str(MINUTE)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert done.returncode == 0 and done.stdout == "", done.stdout
    assert [line for line in done.stderr.splitlines() if not line.startswith("import time:")] == []
    assert ("httpx" in imported) is imports_httpx
    for name in ("asyncio", "concurrent.futures", "logging", "inspect"):
        assert (name in imported) is imports_httpx, name
    assert conn.execute("SELECT sum(checks), sum(failures) FROM rollups").fetchone() == (10, 0)


def test_max_latency_judges_the_exchange_that_decided_not_the_one_handed_over(server: LocalServer) -> None:
    """A response the fast path hands to httpx (here a compressed body with a keyword to find) is
    sent again: the latency judged is that of httpx's exchange, the one that decided."""
    asked = 0

    async def slow_first_time(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str
    ) -> None:
        nonlocal asked
        asked += 1
        if asked == 1:
            await asyncio.sleep(0.6)
        await _gzipped_whatever_was_asked(reader, writer, "/zipped/fine", method)

    server.route("/zipped", slow_first_time)
    m = monitor(server.url("/zipped"), keyword="fine", max_latency_ms=400, timeout_s=5, retries=0)

    async def main() -> ProbeResult:
        context = ssl_context()
        async with make_client(10, verify=context) as client:
            return await latency.judged(lambda m, ctx: probe_http(m, client, 0, ctx))(
                m, ProbeContext(client, 0, context, fast=True)
            )

    result = asyncio.run(main())
    assert asked == 2 and (result.status, result.cause) == ("up", None), result
    assert result.latency_ms is not None and result.latency_ms < 400


def test_closing_the_tick_client_still_closes_the_connections_its_pool_holds() -> None:
    """The other half of backend.Pool: a pool that holds a connection (here an idle keep-alive
    one) closes it with the client, and the server sees it end."""

    async def main() -> tuple[int, bytes, int]:
        ended: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")  # and the connection stays open
            await writer.drain()
            ended.set_result(await reader.read())  # b"" once the client closes its end
            writer.close()

        server = await asyncio.start_server(keep_alive, "127.0.0.1", 0)
        async with server:
            client = make_client(10)
            response = await client.get(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/")
            assert response.text == "ok"
            pool = client._transport._pool  # type: ignore[attr-defined]
            held = len(pool.connections)
            await client.aclose()
            return held, await asyncio.wait_for(ended, 5), len(pool.connections)

    assert asyncio.run(main()) == (1, b"", 0)


# URLs at the edges of wire.parsed's own reading (wire._PLAIN_URL) and past them
URL_EDGES = [
    "http://127.0.0.1:8080/?m=1",
    "https://example.org",
    "http://example.org/",
    "http://example.org:80/",
    "https://example.org:443/x",
    "http://example.org:443/",
    "https://example.org:80/",
    "http://example.org:0080/",
    "http://example.org:0/",
    "http://example.org:00/",
    "http://example.org:65535/",
    "http://example.org:99999/",
    "http://example.org?",
    "http://example.org/?",
    "http://example.org/a?b?c=d/e",
    "http://example.org//double//slash",
    "http://example.org/a/./b",
    "http://example.org/a/../b",
    "http://example.org/.well-known/x",
    "http://example.org/..",
    "http://example.org/a%20b",
    "http://example.org/a%zz",
    "http://example.org/a b",
    "http://example.org/a#frag",
    "http://example.org/[x]",
    "http://example.org/?q=[x]",
    "http://example.org/?q={x}",
    "http://example.org/{x}",
    "http://example.org/~user/!$&'()*+,;=:@",
    "http://Example.org/",
    "HTTP://example.org/",
    "http://example.org./",
    "http://a..b/",
    "http://-a-/",
    "http://xn--bcher-kva.example/",
    "http://bücher.example/",
    "http://user:pw@example.org/",
    "http://[::1]:8080/",
    "http://1.2.3.4/",
    "http://0.0.0.0/",
    "http://255.255.255.255/",
    "http://256.1.1.1/",
    "http://01.2.3.4/",
    "http://1.2.3/",
    "http://1.2.3.4.5/",
    "http://123/",
    "ftp://example.org/",
    "http:/example.org/",
    "http://",
    "http://example.org:/",
    "http://example.org:8a/",
    "http://example.org/" + "b" * 65_536,  # longer than httpx's MAX_URL_LENGTH: httpx refuses it
    "http://example.org/?" + "b" * 65_516,  # 65,536 in all: accepted
]


URL_CHARACTERS = "abcXYZ019.-_~/:?@!$&'()*+,;=%[]{}#\" `<>|\\^"  # for the seeded URLs' tails


def _random_urls(count: int) -> list[str]:
    """Seeded URLs near the plain shape, each with a few characters that may take it past it."""
    rng = random.Random(20261202)
    urls = []
    for _ in range(count):
        host = rng.choice(["example.org", "127.0.0.1", "a-b.c", "1.2.3.04", "h", "x.y.z", "300.1.1.1"])
        port = rng.choice(["", ":80", ":443", ":8080", ":0", ":007", ":65536"])
        tail = "".join(rng.choice(URL_CHARACTERS) for _ in range(rng.randrange(0, 12)))
        urls.append(f"{rng.choice(['http', 'https'])}://{host}{port}/{tail}")
    return urls


def _parts(url: httpx.URL | wire.Plain) -> tuple[object, ...]:
    """What the probes read of a parsed URL."""
    return (url.scheme, url.userinfo, url.raw_host, url.port, url.netloc, url.raw_path)


def _httpx_parts(url: str) -> tuple[object, ...] | str:
    try:
        return _parts(httpx.URL(url))
    except httpx.InvalidURL as exc:
        return f"invalid: {exc}"


def test_the_fast_paths_own_url_parse_gives_httpxs_parts_or_leaves_the_url_to_httpx() -> None:
    urls = URL_EDGES + _random_urls(5_000)
    read_itself = 0
    for url in urls:
        wire.parsed.cache_clear()
        try:
            mine = wire.parsed(url)
        except wire.InvalidURL as exc:
            assert _httpx_parts(url) == f"invalid: {exc}", url
            continue
        if isinstance(mine, wire.Plain):
            read_itself += 1
        assert _parts(mine) == _httpx_parts(url), url
    # not vacuous: the common shapes are read without httpx, the others are not
    assert read_itself > 500
    for url in ("http://127.0.0.1:8080/?m=1", "https://example.org", "http://example.org:443/"):
        assert isinstance(wire.parsed(url), wire.Plain), url
    for url in ("http://a/%20", "http://a/./b", "http://A/", "http://u@a/", "http://[::1]/", "http://1.2.3.4/#f"):
        assert isinstance(wire.parsed(url), httpx.URL), url
    with pytest.raises(wire.InvalidURL, match="Invalid IPv4 address"):
        wire.parsed("http://01.2.3.4/")  # httpx's to refuse


def test_a_url_too_long_for_httpx_is_still_refused_by_the_row_check() -> None:
    """The row check refuses what httpx would refuse, whoever reads the URL: past httpx's 64 KiB
    a plain-looking URL is invalid, not a check that fails inside monitor-tick every tick."""
    long_url = "http://127.0.0.1:9/" + "b" * 65_536
    wire.parsed.cache_clear()
    with pytest.raises(InvalidMonitor, match="^url is longer than 65,536 characters$"):
        check_monitor(monitor(long_url))
