"""The fast transport (aiohttp under httpx) against httpx's default, on real misbehaving servers
on 127.0.0.1: every outcome and cause must be the same through either."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import ssl
import sys
from collections.abc import Iterator

import httpx
import pytest
import respx

from monitor_tick.core.fanout import FAST_TRANSPORT_FROM, make_client, ssl_context
from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes.backend import httpx_transport
from monitor_tick.probes.http import probe_http
from monitor_tick.probes.request import DefaultTrust
from monitor_tick.probes.transport import AiohttpTransport
from tests.conftest import respx_transport
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


def monitor(url: str, **settings: object) -> Monitor:
    return Monitor(id=1, name="m", kind="http", url=url, interval_sec=60, effective_interval_sec=60, **settings)  # type: ignore[arg-type]


def probe_both(m: Monitor, verify: object = True) -> tuple[ProbeResult, ProbeResult]:
    """(through httpx's default transport, through the fast one), without latency, on the event
    loop the tick uses."""

    async def main() -> tuple[ProbeResult, ProbeResult]:
        out = []
        context = httpx.create_ssl_context(verify=verify)  # type: ignore[arg-type]
        for transport in (httpx.AsyncHTTPTransport(verify=context), AiohttpTransport(context)):
            async with make_client(10, transport) as client:
                result = await probe_http(m, client, 0)
            out.append(ProbeResult(result.status, None, result.http_status, result.cause))
        return out[0], out[1]

    return asyncio.run(main())


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
def test_the_fast_transport_judges_each_misbehaviour_as_httpx_does(
    server: LocalServer, path: str, settings: dict[str, object], expected: tuple[str, int | None, str | None]
) -> None:
    default, fast = probe_both(monitor(server.url(path), retries=0, **settings))
    assert fast == default
    assert (fast.status, fast.http_status, fast.cause) == expected


def test_a_refused_connection_is_connect_refused_through_either_transport() -> None:
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
def test_certificates_are_judged_the_same_through_either_transport(make_cert: object, cause: str | None) -> None:
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


def test_the_fast_transport_leaves_no_socket_open_when_a_peer_never_answers_its_tls_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closing a TLS connection waits for the peer's close_notify (asyncio: up to 30 s); once the
    client is closed, no connection it opened may still hold its socket, whatever the peer does."""
    unclosed: list[str] = []  # an unclosed socket or transport says so when it is collected
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: unclosed.append(str(unraisable.exc_value)))
    pair = valid_cert()
    with LocalServer(tls=pair.server_context) as srv:
        srv.route("/never-closes", _answer_and_never_close)

        async def main() -> ProbeResult:
            async with make_client(10, AiohttpTransport(pair.client_context())) as client:
                return await probe_http(monitor(srv.url("/never-closes")), client, 0)

        assert asyncio.run(main()).status == "up"
        gc.collect()
    assert unclosed == []


def test_plain_http_to_a_tls_port_and_tls_to_a_plain_port_fail_the_same_way(server: LocalServer) -> None:
    with LocalServer(tls=valid_cert().server_context) as tls_srv:
        plain_to_tls = probe_both(monitor(tls_srv.url("/ok").replace("https://", "http://"), timeout_s=2))
    tls_to_plain = probe_both(monitor(server.url("/ok").replace("http://", "https://")))
    assert plain_to_tls[1] == plain_to_tls[0] and plain_to_tls[1].status == "down"
    assert tls_to_plain[1] == tls_to_plain[0] and tls_to_plain[1].cause == "tls"


def test_the_fast_transport_sends_httpxs_headers_and_percent_encoded_path(server: LocalServer) -> None:
    url = server.url("/ok/a%2Fb?q=1%202")

    async def main() -> None:
        async with make_client(10) as client:  # no transport handed in: the fast one
            assert isinstance(client._transport, AiohttpTransport)
            await probe_http(monitor(url), client, 0)

    asyncio.run(main())
    request = server.requests[-1]
    assert request.target == "/ok/a%2Fb?q=1%202"
    assert request.headers["user-agent"].startswith("monitor-tick")
    assert request.headers["host"] == f"127.0.0.1:{server.port}"


def test_a_transport_handed_in_is_the_one_used_so_respxs_mock_sees_requests(
    respx_mock: respx.MockRouter,
) -> None:
    route = respx_mock.get("http://site.test/").mock(return_value=httpx.Response(200))

    async def main() -> ProbeResult:
        async with make_client(10, respx_transport()) as client:
            assert not isinstance(client._transport, AiohttpTransport)
            return await probe_http(monitor("http://site.test/"), client, 0)

    assert asyncio.run(main()).status == "up" and route.call_count == 1


@pytest.mark.parametrize("cut", ["deadline", "budget"])
def test_httpxs_own_transport_closes_its_socket_when_a_probe_ends_mid_handshake(
    monkeypatch: pytest.MonkeyPatch, cut: str
) -> None:
    """A small tick's transport (httpx's own): a probe that reaches its deadline, or is cut off by
    the tick's budget, while the peer never answers the TLS handshake leaves no socket open.
    (httpcore closes the socket when a handshake fails, but not when it is cancelled.)"""
    unclosed: list[str] = []  # an unclosed socket or transport says so when it is collected
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: unclosed.append(str(unraisable.exc_value)))
    with socket.socket() as listener:  # the kernel completes the connection; nobody answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/"

        async def main() -> ProbeResult | None:
            transport = httpx_transport(ssl.create_default_context(), httpx.Limits(max_connections=None))
            async with make_client(10, transport) as client:
                if cut == "deadline":
                    return await probe_http(monitor(url, timeout_s=SHORT_S, retries=0), client, 0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(probe_http(monitor(url, timeout_s=20, retries=0), client, 0), SHORT_S)
                return None

        result = asyncio.run(main())
        gc.collect()
    assert unclosed == []
    if cut == "deadline":
        assert result is not None and (result.status, result.cause) == ("down", "timeout")


def test_a_small_tick_goes_through_httpxs_own_transport_and_a_large_one_through_aiohttp() -> None:
    async def transports() -> list[type]:
        kinds = []
        for checks in (1, FAST_TRANSPORT_FROM - 1, FAST_TRANSPORT_FROM, None):
            async with make_client(10, checks=checks) as client:
                kinds.append(type(client._transport))
        return kinds

    small, below, at, unknown = asyncio.run(transports())
    assert small is below is httpx.AsyncHTTPTransport
    assert at is unknown is AiohttpTransport


def test_no_ca_bundle_is_loaded_until_a_tls_handshake_needs_it(server: LocalServer) -> None:
    """A tick's default trust costs nothing for plain http:// checks; the first https:// one
    loads it (and so is verified against it)."""
    context = ssl_context()
    assert isinstance(context, DefaultTrust) and context.cert_store_stats()["x509_ca"] == 0

    async def main() -> ProbeResult:
        async with make_client(10, verify=context, checks=1) as client:
            return await probe_http(monitor(server.url("/ok")), client, 0)

    assert asyncio.run(main()).status == "up"
    assert context.cert_store_stats()["x509_ca"] == 0
    pair = self_signed_cert()
    with LocalServer(tls=pair.server_context) as tls_srv:

        async def tls_main() -> ProbeResult:
            async with make_client(10, verify=context, checks=1) as client:
                return await probe_http(monitor(tls_srv.url("/ok"), retries=0), client, 0)

        result = asyncio.run(tls_main())
    assert context.cert_store_stats()["x509_ca"] > 100  # certifi's bundle
    assert result.cause == "tls: self-signed certificate"
