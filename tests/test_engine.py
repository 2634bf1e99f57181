"""The HTTP engine (probes/curl.py) on real misbehaving servers on 127.0.0.1, through the tick's
own probing (run/tick.py): every outcome and cause, the sockets it leaves (none), what the
server receives, and what checks share (nothing)."""

from __future__ import annotations

import asyncio
import gc
import socket
import sqlite3
import ssl
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator

import pytest

from monitor_tick.core.model import CheckResult, Monitor, ProbeResult
from monitor_tick.probes import curl
from monitor_tick.run import tick as run_tick_module
from monitor_tick.run.rounds import TickOptions
from monitor_tick.run.tick import run_tick
from tests import servers
from tests.conftest import add
from tests.hostile_origin import TlsEnd, encoded, head, raw, tick_check
from tests.servers import LocalServer, refused_port, valid_cert

SHORT_S = 0.5  # deadline for the cases that must time out
MINUTE = 29_934_721  # a replayed minute: every one-minute monitor is due


def monitor(url: str, monitor_id: int = 1, **settings: object) -> Monitor:
    return Monitor(
        id=monitor_id, name="m", kind="http", url=url, interval_sec=60, effective_interval_sec=60, **settings
    )  # type: ignore[arg-type]


def probe(*monitors: Monitor, verify: object = True, budget_s: float = 10) -> list[ProbeResult]:
    """The checks as the tick probes them (its fan-out and engine), without latency."""
    options = TickOptions("unused.db", verify=verify, retry_delay_s=0, budget_s=budget_s)
    results = run_tick_module._probe(list(monitors), options, 0, {})
    return [ProbeResult(r.status, None, r.http_status, r.cause) for r in results]


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
        # a body that never ends is down once the deadline passes (it is read to its end), but
        # a keyword is looked for in its first mebibyte, and no further
        ("/endless-chunked", {"timeout_s": SHORT_S}, ("down", 200, "timeout reading body")),
        ("/huge-length", {"timeout_s": SHORT_S}, ("down", 200, "timeout reading body")),
        ("/endless-chunked", {"timeout_s": SHORT_S, "keyword": "b"}, ("down", 200, "keyword missing")),
        ("/huge-length", {"timeout_s": SHORT_S, "keyword": "b"}, ("down", 200, "keyword missing")),
        ("/hang", {"timeout_s": SHORT_S}, ("down", None, "timeout")),
        ("/drip", {"timeout_s": SHORT_S, "keyword": "b"}, ("down", 200, "timeout reading body")),
        ("/reset", {}, ("down", None, "connection reset")),
        ("/garbage", {}, ("down", None, "protocol error")),
        ("/close-mid-body", {"keyword": "b"}, ("down", 200, "protocol error")),
        ("/close-mid-body", {}, ("down", 200, "protocol error")),
    ],
)
def test_each_misbehaviour_is_judged(
    server: LocalServer, path: str, settings: dict[str, object], expected: tuple[str, int | None, str | None]
) -> None:
    [result] = probe(monitor(server.url(path), retries=0, **settings))
    assert (result.status, result.http_status, result.cause) == expected


def test_a_refused_connection_is_connect_refused() -> None:
    assert probe(monitor(f"http://127.0.0.1:{refused_port()}/")) == [ProbeResult("down", None, None, "connect refused")]


@pytest.mark.parametrize(
    ("make_cert", "cause"),
    [
        (valid_cert, None),
        (servers.expired_cert, "tls: certificate expired"),
        (servers.self_signed_cert, "tls: self-signed certificate"),
        (servers.wrong_host_cert, "tls: certificate is for another host"),
    ],
)
def test_certificates_are_judged_from_the_verify_result(make_cert: object, cause: str | None) -> None:
    pair: servers.TLSPair = make_cert()  # type: ignore[operator]
    with LocalServer(tls=pair.server_context) as srv:
        [result] = probe(monitor(srv.url("/ok")), verify=ssl.create_default_context(cafile=pair.ca_pem))
    assert result.cause == cause and result.status == ("up" if cause is None else "down")


def test_plain_http_to_a_tls_port_is_down_and_tls_to_a_plain_port_is_not_spoken(server: LocalServer) -> None:
    with LocalServer(tls=valid_cert().server_context) as tls_srv:
        [plain_to_tls] = probe(monitor(tls_srv.url("/ok").replace("https://", "http://"), timeout_s=2))
    [tls_to_plain] = probe(monitor(server.url("/ok").replace("http://", "https://")))
    assert plain_to_tls.status == "down"
    assert tls_to_plain.cause == "tls: not spoken by the server"


def test_the_request_line_host_user_agent_and_encodings_sent(server: LocalServer) -> None:
    probe(monitor(server.url("/ok/a%2Fb?q=1%202")))
    request = server.requests[-1]
    assert request.target == "/ok/a%2Fb?q=1%202"
    assert request.headers["user-agent"].startswith("monitor-tick")
    assert request.headers["host"] == f"127.0.0.1:{server.port}"
    assert request.headers["accept"] == "*/*"
    assert {"gzip", "deflate", "br"} <= {e.strip() for e in request.headers["accept-encoding"].split(",")}
    assert "expect" not in request.headers and "content-type" not in request.headers


def test_a_body_goes_without_a_content_type_or_expect_curl_would_add(server: LocalServer) -> None:
    probe(monitor(server.url("/ok"), method="POST", body="x" * 2048))
    request = server.requests[-1]
    assert (request.method, request.body) == ("POST", b"x" * 2048)
    assert "expect" not in request.headers and "content-type" not in request.headers


@pytest.mark.parametrize("cut", ["deadline", "budget"])
def test_a_probe_that_ends_mid_handshake_leaves_no_socket_open(monkeypatch: pytest.MonkeyPatch, cut: str) -> None:
    """A probe that reaches its deadline, or is cut off by the tick's budget, while the peer
    never answers the TLS handshake leaves no socket open, and the tick ends."""
    unclosed: list[str] = []  # an unclosed socket says so when it is collected
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: unclosed.append(str(unraisable.exc_value)))
    with socket.socket() as listener:  # the kernel completes the connection; nobody answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/"
        if cut == "deadline":
            [result] = probe(monitor(url, timeout_s=SHORT_S, retries=0))
            assert (result.status, result.cause) == ("down", "timeout")
        else:
            [result] = probe(monitor(url, timeout_s=20, retries=0), budget_s=SHORT_S)
            assert result.status == "unknown"
        gc.collect()
    assert unclosed == []


def _raw(response: bytes) -> Callable[..., Awaitable[None]]:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        writer.write(response)
        await writer.drain()

    return handler


# Responses whose reading is libcurl's where the RFCs leave a choice
SLOPPY = {
    "bare-lf": (b"HTTP/1.1 200 OK\nContent-Length: 2\nConnection: close\n\nok", ("up", 200, None)),
    "length-twice": (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", ("up", 200, None)),
    "folded-header": (b"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok", ("up", 200, None)),
    "length-and-chunked": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        ("up", 200, None),
    ),
    "identity-coding": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nok", ("up", 200, None)),
    "endless-trailer": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: " + b"t" * 300_000,
        ("down", 200, "protocol error"),
    ),
    "http-1.2": (b"HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\nok", ("down", None, "protocol error")),
}


@pytest.mark.parametrize("name", SLOPPY)
def test_responses_the_rfcs_leave_to_the_client_are_read_as_libcurl_reads_them(server: LocalServer, name: str) -> None:
    answer, expected = SLOPPY[name]
    server.route(f"/sloppy-{name}", _raw(answer))
    [result] = probe(monitor(server.url(f"/sloppy-{name}"), timeout_s=5, retries=0))
    assert (result.status, result.http_status, result.cause) == expected


async def _headers_without_end(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str
) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
    for _ in range(256):
        writer.write(b"a" * 65_536)
        await writer.drain()
    await reader.read()


def test_headers_without_end_are_down(server: LocalServer) -> None:
    server.route("/endless-header", _headers_without_end)
    [result] = probe(monitor(server.url("/endless-header"), timeout_s=5, retries=0))
    assert (result.status, result.cause) == ("down", "protocol error")


# --- what checks share: nothing ----------------------------------------------------------------


class KeepAlive:
    """A server on 127.0.0.1 that keeps every connection open for more requests (HTTP/1.1's
    default) and records which connection carried which request: (connection number, target)."""

    def __init__(self) -> None:
        self.carried: list[tuple[int, str]] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        number = 0
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            number += 1
            threading.Thread(target=self._one, args=(connection, number), daemon=True).start()

    def _one(self, connection: socket.socket, number: int) -> None:
        with connection:
            received = b""
            while True:
                while b"\r\n\r\n" not in received:
                    data = connection.recv(65536)
                    if not data:
                        return
                    received += data
                head, _, received = received.partition(b"\r\n\r\n")
                with self._lock:
                    self.carried.append((number, head.split(b" ")[1].decode()))
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    def close(self) -> None:
        self._listener.close()


def test_each_check_gets_a_connection_of_its_own() -> None:
    """Ten checks of one server that would keep connections open: ten connections, one request
    each; no monitor's request rides a connection another's check opened."""
    server = KeepAlive()
    try:
        results = probe(*(monitor(f"http://127.0.0.1:{server.port}/m{n}", monitor_id=n + 1) for n in range(10)))
    finally:
        server.close()
    assert {r.status for r in results} == {"up"}
    assert len(server.carried) == 10
    assert len({number for number, _ in server.carried}) == 10
    assert sorted(target for _, target in server.carried) == sorted(f"/m{n}" for n in range(10))


def test_a_hanging_monitor_does_not_hold_another_monitors_request(server: LocalServer) -> None:
    results = probe(
        monitor(server.url("/hang"), monitor_id=1, timeout_s=SHORT_S, retries=0),
        monitor(server.url("/ok?other"), monitor_id=2, timeout_s=5, retries=0),
    )
    assert [(r.status, r.cause) for r in results] == [("down", "timeout"), ("up", None)]
    assert "/ok?other" in [r.target for r in server.requests]


# --- keywords in other charsets, TLS's end, compression -------------------------------------------


@pytest.mark.parametrize("charset", ["latin-1", "utf-16"])
def test_a_keyword_is_found_in_the_charset_the_page_declares(
    db_path: str, local_server: LocalServer, charset: str
) -> None:
    body = "<html><p>Le café est ouvert.</p></html>".encode(charset)
    local_server.route(
        "/page", raw(head(200, f"Content-Type: text/html; charset={charset}", f"Content-Length: {len(body)}") + body)
    )
    result = tick_check(db_path, local_server.url("/page"), keyword="café")
    assert (result.status, result.cause) == ("up", None)
    assert local_server.hits == {"/page": 1}


def test_a_body_delimited_by_the_close_over_tls_without_close_notify_is_down(db_path: str) -> None:
    pair = valid_cert()
    answer = head(200, "Content-Type: text/html") + b"<html>status ok</html>"
    with TlsEnd(pair.server_context, answer, close_notify=False) as server:
        result = tick_check(db_path, server.url("/page"), keyword="status ok", ca_file=pair.ca_pem, timeout_s=5.0)
    assert result.status == "down" and result.http_status == 200, result
    assert server.requests and server.requests[0].startswith(b"GET /page HTTP/1.1\r\n")


def test_a_gzip_bomb_is_read_no_further_than_the_keywords_mebibyte(db_path: str, local_server: LocalServer) -> None:
    """64 MiB of zeros squeezed to 64 KiB: the check reads the first mebibyte decoded and stops,
    so the tick's memory stays small (measured in bench/); here, the check's verdict."""
    local_server.route("/bomb", encoded(b"\0" * (64 * 1024 * 1024), "gzip"))
    result = tick_check(db_path, local_server.url("/bomb"), keyword="needle")
    assert (result.status, result.http_status, result.cause) == ("down", 200, "keyword missing")
    assert local_server.hits == {"/bomb": 1}


def test_the_engines_names_for_libcurls_values_are_pycurls() -> None:
    import pycurl

    assert (curl.POLL_IN, curl.POLL_OUT, curl.POLL_INOUT, curl.POLL_REMOVE) == (
        pycurl.POLL_IN,
        pycurl.POLL_OUT,
        pycurl.POLL_INOUT,
        pycurl.POLL_REMOVE,
    )
    assert (curl.CSELECT_IN, curl.CSELECT_OUT) == (pycurl.CSELECT_IN, pycurl.CSELECT_OUT)
    assert (curl.SOCKET_TIMEOUT, curl.CALL_MULTI_PERFORM) == (pycurl.SOCKET_TIMEOUT, pycurl.E_CALL_MULTI_PERFORM)
    assert (curl.CONNECT_TIME, curl.APPCONNECT_TIME, curl.STARTTRANSFER_TIME) == (
        pycurl.CONNECT_TIME,
        pycurl.APPCONNECT_TIME,
        pycurl.STARTTRANSFER_TIME,
    )


def test_a_finished_exchange_is_freed_without_the_garbage_collector(server: LocalServer) -> None:
    """Its handle, body reader and Exchange hold no cycle: a tick's thousands of them are freed
    as each check ends, not by the collector's passes. (The handle holds the body reader's
    methods, and the reader the Exchange.)"""

    async def one() -> weakref.ref[object]:
        engine = curl.Engine()
        try:
            answer = curl.Exchange()
            sent = curl.Request(
                server.url("/ok"),
                "GET",
                [],
                None,
                pinned=[],
                proxy="",
                trust={},
                keep=100,
                read_body=lambda status, location: True,
                timeout_s=5,
            )
            await curl.exchange(engine, sent, answer)
            assert (answer.code, answer.status, bytes(answer.body)) == (0, 200, b"ok")
            return weakref.ref(answer)
        finally:
            engine.close()

    gc.disable()
    try:
        freed = asyncio.run(one())
        assert freed() is None
    finally:
        gc.enable()


def phases(*monitors: Monitor, verify: object = True) -> list[CheckResult]:
    options = TickOptions("unused.db", verify=verify, retry_delay_s=0)
    return run_tick_module._probe(list(monitors), options, 0, {})


def test_a_check_records_where_its_time_went(server: LocalServer) -> None:
    """Its phases, each from the check's start: looked up, connected, TLS (none over plain
    HTTP), first byte, and the total, which is its latency. An answer that waits 300 ms before
    its head spends them between the connect and the first byte."""
    [slow, redirected, refused] = phases(
        monitor(server.url("/slow/300"), 1),
        monitor(server.url("/redirect/2"), 2),
        monitor(f"http://127.0.0.1:{refused_port()}/", 3),
    )
    assert slow.status == "up" and slow.phases is not None, slow
    lookup, connect, tls, first_byte, total = slow.phases
    assert tls is None and lookup <= connect <= first_byte <= total == slow.latency_ms
    assert first_byte - connect >= 300 > connect
    # a redirect's hops are in the final hop's phases
    assert redirected.phases is not None and redirected.phases.total_ms == redirected.latency_ms
    assert redirected.phases.lookup_ms <= redirected.phases.connect_ms <= redirected.phases.first_byte_ms
    assert refused.phases is None  # no answer: nothing to say where the time went


def test_a_tls_check_records_its_handshake() -> None:
    pair = valid_cert()
    with LocalServer(tls=pair.server_context) as srv:
        [result] = phases(monitor(srv.url("/ok")), verify=ssl.create_default_context(cafile=pair.ca_pem))
    assert result.status == "up" and result.phases is not None, result
    lookup, connect, tls, first_byte, total = result.phases
    assert tls is not None and lookup <= connect <= tls <= first_byte <= total == result.latency_ms


def test_fifty_checks_at_once_are_judged_by_their_own_latency(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    """Fifty monitors at once, each answered after 50 ms, each allowed 1,000 ms (--max-latency):
    all up. A check's latency starts with its own request, not with the engine's set-up or the
    other checks' (a loop that charged them had 41 of 50 such monitors down as slow)."""
    ids = [add(conn, local_server.url(f"/slow/50?n={n}"), max_latency_ms=1000, retries=0) for n in range(50)]
    report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, retry_delay_s=0, concurrency=50))
    causes = {r.monitor_id: (r.status, r.cause) for r in report.results}
    assert causes == dict.fromkeys(ids, ("up", None))
    assert local_server.hits["/slow/50"] == 50


def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy"])
def test_a_proxy_from_the_environment_carries_the_request(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    """Either case of the variable (curl itself reads only the lowercase one); the site's name is
    the proxy's to look up, never ours."""
    _no_proxies(monkeypatch)
    proxy = KeepAlive()
    try:
        monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.port}")
        [result] = probe(monitor("http://site.example.test/page"))
    finally:
        proxy.close()
    assert (result.status, result.http_status) == ("up", 200)
    assert [target for _, target in proxy.carried] == ["http://site.example.test/page"]


def test_no_proxy_sends_the_request_straight_to_the_site(monkeypatch: pytest.MonkeyPatch, server: LocalServer) -> None:
    _no_proxies(monkeypatch)
    proxy = KeepAlive()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        [result] = probe(monitor(server.url("/ok?straight")))
    finally:
        proxy.close()
    assert (result.status, result.http_status) == ("up", 200)
    assert proxy.carried == [] and "/ok?straight" in [r.target for r in server.requests]


def test_a_non_ascii_host_is_sent_in_idna_2008(monkeypatch: pytest.MonkeyPatch) -> None:
    """As httpx encoded it ('straße' stays 'straße', not IDNA 2003's 'strasse'); seen through a
    proxy, which is handed the name to look up."""
    _no_proxies(monkeypatch)
    proxy = KeepAlive()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        [result] = probe(monitor("http://straße.example.test/page"))
    finally:
        proxy.close()
    assert result.status == "up"
    assert [target for _, target in proxy.carried] == ["http://xn--strae-oqa.example.test/page"]
