"""The HTTP check's outcomes, against servers on 127.0.0.1 through the tick: every remote failure
is a value."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import time
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import expiry_text
from monitor_tick.probes.http import MAX_BODY_BYTES, MAX_REDIRECTS
from tests.conftest import add
from tests.hostile_origin import (
    MINUTE,
    scripted,
    tick_check,
    tick_without_network,
    unaccepting_port,
)
from tests.servers import LocalServer, cert_expiring_in, refused_port, response_head, send_response


def recorded(result: object) -> tuple[object, ...]:
    """(status, latency_ms, http_status, cause) of a check."""
    return result.status, result.latency_ms, result.http_status, result.cause  # type: ignore[attr-defined]


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
    db_path: str, local_server: LocalServer, status: int, expect: str, outcome: str, cause: str | None
) -> None:
    redirected = 300 <= status < 400
    scripted(local_server, "/site", (status, {"Location": "/ok"}) if redirected else status)
    result = tick_check(db_path, local_server.url("/site"), expect_status=expect)
    assert (result.status, result.cause) == (outcome, cause)
    if outcome == "up":
        assert result.latency_ms is not None and result.latency_ms >= 0
    # a redirect is followed to its end, once; any other answer is the last
    if redirected:
        assert set(local_server.hits) == {"/site", "/ok"} and local_server.hits["/ok"] == 1
    else:
        assert local_server.hits == {"/site": 1}


@pytest.mark.parametrize(
    ("path", "cause"),
    [
        ("/hang", "timeout"),  # connected, the request read, never answered
        ("/garbage", "protocol error"),
        ("/reset", "connection reset"),
    ],
)
def test_remote_failures_become_down_results_with_a_cause(
    db_path: str, local_server: LocalServer, path: str, cause: str
) -> None:
    result = tick_check(db_path, local_server.url(path), timeout_s=1.0)
    assert recorded(result) == ("down", None, None, cause)
    assert set(local_server.hits) == {path}


def test_a_connection_never_accepted_is_a_timeout(db_path: str) -> None:
    with unaccepting_port() as port:
        result = tick_check(db_path, f"http://127.0.0.1:{port}/", timeout_s=1.0)
    assert recorded(result) == ("down", None, None, "timeout")


def test_an_unreachable_network_is_a_connect_error(db_path: str, local_server: LocalServer) -> None:
    """The installed command in a network namespace of its own: even its loopback is down, so
    connecting fails with no route (neither refused nor timed out)."""
    conn = store.open_db(db_path)
    try:
        add(conn, local_server.url("/ok"), retries=0)
    finally:
        conn.close()
    assert json.loads(tick_without_network(db_path).stdout)["down"] == 1
    row = sqlite3.connect(db_path).execute("SELECT cause FROM incidents").fetchone()
    assert row == ("connect error",)
    assert local_server.hits.total == 0


def test_a_name_that_does_not_resolve_is_dns(db_path: str, unresolvable: str) -> None:
    assert recorded(tick_check(db_path, f"http://{unresolvable}/")) == ("down", None, None, "dns")


def test_a_refused_connection_is_connect_refused(db_path: str) -> None:
    result = tick_check(db_path, f"http://127.0.0.1:{refused_port()}/")
    assert recorded(result) == ("down", None, None, "connect refused")


def test_tls_to_a_server_that_speaks_plain_http_is_not_spoken(db_path: str, local_server: LocalServer) -> None:
    result = tick_check(db_path, local_server.url("/ok").replace("http://", "https://"))
    assert recorded(result) == ("down", None, None, "tls: not spoken by the server")
    assert local_server.hits.total == 0  # the handshake never became a request


def test_a_keyword_is_found_across_chunk_boundaries(db_path: str, local_server: LocalServer) -> None:
    async def chunks(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        writer.write(response_head(200, [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]))
        for piece in (b"<html>all systems ", b"oper", b"ational</html>"):
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    local_server.route("/page", chunks)
    assert tick_check(db_path, local_server.url("/page"), keyword="operational").status == "up"
    assert local_server.hits == {"/page": 1}


def test_a_missing_keyword_is_down(db_path: str, local_server: LocalServer) -> None:
    result = tick_check(db_path, local_server.url("/keyword/maintenance"), keyword="operational")
    assert (result.status, result.http_status, result.cause) == ("down", 200, "keyword missing")
    assert local_server.hits == {"/keyword/maintenance": 1}


def test_a_keyword_past_the_first_mebibyte_is_not_looked_for(db_path: str, local_server: LocalServer) -> None:
    async def long_page(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        await send_response(writer, 200, b"a" * MAX_BODY_BYTES + b"needle", method=method)

    local_server.route("/long", long_page)
    assert tick_check(db_path, local_server.url("/long"), keyword="needle").cause == "keyword missing"
    assert local_server.hits == {"/long": 1}


def test_head_requests_are_sent_as_head(db_path: str, local_server: LocalServer) -> None:
    assert tick_check(db_path, local_server.url("/ok"), method="HEAD").status == "up"
    assert [r.method for r in local_server.requests] == ["HEAD"]


def test_redirects_are_followed_at_most_five_times(tmp_path: Path, local_server: LocalServer) -> None:
    assert MAX_REDIRECTS == 5
    assert tick_check(tmp_path / "five.db", local_server.url("/redirect/5")).status == "up"
    assert local_server.hits["/ok"] == 1  # five redirects led there
    local_server.hits.clear()
    assert tick_check(tmp_path / "six.db", local_server.url("/redirect/6")).cause == "too many redirects"
    assert local_server.hits["/redirect/1"] >= 1 and local_server.hits["/ok"] == 0  # the sixth was not followed


def test_the_deadline_is_the_whole_checks_not_each_redirects(db_path: str, local_server: LocalServer) -> None:
    """Two hops of 0.6 s each, under a 1 s timeout: each would fit on its own, the check does not."""

    async def slow_hop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        await asyncio.sleep(0.6)
        if path == "/slow-hop/first":
            await send_response(writer, 302, "", method=method, headers=[("Location", "/slow-hop/last")])
        else:
            await send_response(writer, 200, "ok", method=method)

    local_server.route("/slow-hop", slow_hop)
    result = tick_check(db_path, local_server.url("/slow-hop/first"), timeout_s=1.0)
    assert recorded(result) == ("down", None, None, "timeout")
    assert local_server.hits["/slow-hop/first"] == 1 and local_server.hits["/slow-hop/last"] == 1


def test_a_slow_lookup_counts_against_the_checks_deadline(
    db_path: str, local_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resolver that takes 0.6 s, then an answer 0.6 s later, under a 1 s timeout: a timeout,
    never up after 1.2 s (the lookup's time is not given to curl again)."""
    real = socket.getaddrinfo

    def slow_resolver(host: object, *args: object, **kwargs: object) -> object:
        if host == "slow.test":
            time.sleep(0.6)  # the resolver's own delay, in the lookup's thread
            return real("127.0.0.1", *args, **kwargs)  # type: ignore[arg-type]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", slow_resolver)

    async def late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        await asyncio.sleep(0.6)
        await send_response(writer, 200, "ok", method=method)

    local_server.route("/late", late)
    result = tick_check(db_path, local_server.url("/late").replace("127.0.0.1", "slow.test"), timeout_s=1.0)
    assert recorded(result) == ("down", None, None, "timeout")
    assert local_server.hits["/late"] == 1


def test_every_condition_the_answer_fails_is_named(db_path: str, local_server: LocalServer) -> None:
    result = tick_check(
        db_path,
        local_server.url("/keyword/down"),
        keyword="operational",
        keyword_absent="down",
        json_field="status=UP",
    )
    assert (result.status, result.cause) == ("down", "keyword missing; keyword present; json: body is not JSON")


def test_a_status_not_expected_is_named_beside_the_certificate_check(db_path: str) -> None:
    """The body of an unexpected status is never judged (an error page is not the answer its
    conditions describe); the certificate is, since it came with the answer."""
    pair = cert_expiring_in(10)
    with LocalServer(tls=pair.server_context) as server:

        async def down(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
            await send_response(writer, 503, "<html>down</html>", method=method, content_type="text/html")

        server.route("/", down)
        result = tick_check(
            db_path, server.url("/"), keyword="operational", expires_within_sec=30 * 86400, ca_file=pair.ca_pem
        )
        assert [r.target for r in server.requests] == ["/"]
    expires_at_ms = int(pair.not_after.timestamp() * 1000)
    assert result.cert_expires_at_ms == expires_at_ms
    assert (result.status, result.http_status, result.cause) == (
        "down",
        503,
        f"status 503; tls: {expiry_text(expires_at_ms, clock.minute_start_ms(MINUTE))}",
    )
