"""The HTTP probe's outcomes, with HTTP mocked by respx: every remote failure is a value."""

from __future__ import annotations

import asyncio
import socket
import ssl

import httpx
import pytest
import respx

from monitor_tick.core.clock import now_ms
from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes.http import MAX_BODY_BYTES, probe_http
from monitor_tick.run.fanout import make_client
from tests.conftest import respx_transport


def monitor(url: str = "http://site.test/", **settings: object) -> Monitor:
    return Monitor(id=1, name="m", kind="http", url=url, interval_sec=60, effective_interval_sec=60, **settings)  # type: ignore[arg-type]


def probe(m: Monitor) -> ProbeResult:
    async def main() -> ProbeResult:
        async with make_client(10, respx_transport()) as client:
            return await probe_http(m, client, now_ms())

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("status", "expect", "outcome", "cause"),
    [
        (200, "200-399", "up", None),
        (301, "200-399", "up", None),
        (404, "200-399", "down", "status 404"),
        (503, "200-399", "down", "status 503"),
        (204, "200,204", "up", None),
        (201, "200,204", "down", "status 201"),
        (418, "200-299,418", "up", None),
    ],
)
def test_status_codes_are_judged_by_the_expected_ranges(
    respx_mock: respx.MockRouter, status: int, expect: str, outcome: str, cause: str | None
) -> None:
    headers = {"Location": "http://site.test/"} if 300 <= status < 400 else {}
    if 300 <= status < 400:
        respx_mock.get("http://site.test/").side_effect = [httpx.Response(status, headers=headers), httpx.Response(200)]
    else:
        respx_mock.get("http://site.test/").mock(return_value=httpx.Response(status))
    result = probe(monitor(expect_status=expect))
    assert (result.status, result.cause) == (outcome, cause)
    if outcome == "up":
        assert result.latency_ms is not None and result.latency_ms >= 0


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (httpx.ConnectError("x"), "connect error"),
        (httpx.ConnectTimeout("x"), "timeout"),
        (httpx.ReadTimeout("x"), "timeout"),
        (httpx.RemoteProtocolError("x"), "protocol error"),
        (httpx.ReadError("x"), "connection reset"),
    ],
)
def test_transport_errors_become_down_results_with_a_cause(
    respx_mock: respx.MockRouter, error: Exception, cause: str
) -> None:
    respx_mock.get("http://site.test/").mock(side_effect=error)
    assert probe(monitor()) == ProbeResult("down", None, None, cause)


@pytest.mark.parametrize(
    ("root", "cause"),
    [
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "dns"),
        (ConnectionRefusedError(111, "Connection refused"), "connect refused"),
        (ssl.SSLError("wrong version number"), "tls"),
    ],
)
def test_connect_errors_are_classified_by_their_root_cause(root: BaseException, cause: str) -> None:
    # respx re-raises side effects with its own chain, so a MockTransport carries the root cause
    def fail(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("failed", request=request) from root

    async def main() -> ProbeResult:
        async with make_client(10, transport=httpx.MockTransport(fail)) as client:
            return await probe_http(monitor(), client, now_ms())

    assert asyncio.run(main()) == ProbeResult("down", None, None, cause)


def test_a_pool_timeout_is_our_limit_so_the_result_is_unknown(respx_mock: respx.MockRouter) -> None:
    respx_mock.get("http://site.test/").mock(side_effect=httpx.PoolTimeout("no slot"))
    assert probe(monitor()) == ProbeResult("unknown", None, None, "connection pool exhausted")


def test_a_keyword_is_found_across_chunk_boundaries(respx_mock: respx.MockRouter) -> None:
    body = [b"<html>all systems ", b"oper", b"ational</html>"]
    respx_mock.get("http://site.test/").mock(return_value=httpx.Response(200, stream=httpx.ByteStream(b"".join(body))))
    assert probe(monitor(keyword="operational")).status == "up"


def test_a_missing_keyword_is_down(respx_mock: respx.MockRouter) -> None:
    respx_mock.get("http://site.test/").mock(return_value=httpx.Response(200, text="maintenance"))
    result = probe(monitor(keyword="operational"))
    assert (result.status, result.http_status, result.cause) == ("down", 200, "keyword missing")


def test_a_keyword_past_the_first_mebibyte_is_not_looked_for(respx_mock: respx.MockRouter) -> None:
    respx_mock.get("http://site.test/").mock(
        return_value=httpx.Response(200, content=b"a" * MAX_BODY_BYTES + b"needle")
    )
    assert probe(monitor(keyword="needle")).cause == "keyword missing"


def test_head_requests_are_sent_as_head(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.head("http://site.test/").mock(return_value=httpx.Response(200))
    assert probe(monitor(method="HEAD")).status == "up"
    assert route.call_count == 1


def test_redirects_are_followed_at_most_five_times(respx_mock: respx.MockRouter) -> None:
    respx_mock.get("http://site.test/").mock(
        return_value=httpx.Response(302, headers={"Location": "http://site.test/"})
    )
    assert probe(monitor()).cause == "too many redirects"


def test_every_condition_the_answer_fails_is_named(respx_mock: respx.MockRouter) -> None:
    respx_mock.get("http://site.test/").mock(return_value=httpx.Response(200, text="<html>down</html>"))
    result = probe(monitor(keyword="operational", keyword_absent="down", json_field="status=UP"))
    assert (result.status, result.cause) == ("down", "keyword missing; keyword present; json: body is not JSON")


def test_a_status_not_expected_is_named_beside_the_certificate_check(respx_mock: respx.MockRouter) -> None:
    """The body of an unexpected status is never judged (an error page is not the answer its
    conditions describe); the certificate is, since it came with the answer."""
    respx_mock.get("https://site.test/").mock(return_value=httpx.Response(503, text="<html>down</html>"))
    result = probe(monitor("https://site.test/", keyword="operational", expires_within_sec=86400))
    assert (result.status, result.http_status, result.cause) == (
        "down",
        503,
        "status 503; tls: no verified certificate to read the expiry from",
    )
