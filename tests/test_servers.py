"""Self-tests for the misbehaving-server harness in tests/servers.py."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import socket
import ssl
import threading
import time

import httpx
import pytest

from tests import servers
from tests.servers import (
    LocalServer,
    cert_expiring_in,
    current_request,
    expired_cert,
    refused_port,
    self_signed_cert,
    send_response,
    valid_cert,
    wrong_host_cert,
)

local_server = servers.local_server  # the harness's own fixture, used below

T = httpx.Timeout(2.0)


@pytest.fixture(autouse=True)
def _collect_garbage():
    # Surface ResourceWarnings (unclosed sockets/transports) inside the test.
    yield
    gc.collect()


@pytest.fixture(scope="module")
def srv():
    with LocalServer(drip_interval=1.0) as s:
        yield s
    assert s.errors == []


@pytest.fixture
def client():
    with httpx.Client(timeout=T) as c:
        yield c


def raw_request(port: int, path: str, method: str = "GET", timeout: float = 2.0) -> bytes:
    """Send one request over a raw socket and read until EOF."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        chunks = []
        while data := s.recv(65536):
            chunks.append(data)
        return b"".join(chunks)


# --------------------------------------------------------------------------
# plain HTTP behaviours
# --------------------------------------------------------------------------


def test_url_and_port(srv):
    assert srv.url("/ok") == f"http://127.0.0.1:{srv.port}/ok"
    assert srv.url("ok") == srv.url("/ok")


def test_ok_and_hits(local_server, client):
    r = client.get(local_server.url("/ok"))
    assert (r.status_code, r.text, r.headers["connection"]) == (200, "ok", "close")
    client.get(local_server.url("/ok?x=1"))
    client.get(local_server.url("/status/204"))
    assert local_server.hits["/ok"] == 2
    assert local_server.hits["/nothing"] == 0
    assert local_server.hits == {"/ok": 2, "/status/204": 1}
    assert local_server.hits.total == 3
    assert local_server.requests[1].target == "/ok?x=1"
    assert local_server.requests[0].headers["host"] == f"127.0.0.1:{local_server.port}"


def test_status(srv, client):
    assert client.get(srv.url("/status/503")).status_code == 503
    r = client.get(srv.url("/status/204"))
    assert (r.status_code, r.content) == (204, b"")
    assert client.get(srv.url("/status/nope")).status_code == 400
    assert client.get(srv.url("/no-such-thing")).status_code == 404
    assert client.get(srv.url("/okay")).status_code == 404  # prefix is per segment


def test_slow(srv, client):
    t0 = time.monotonic()
    assert client.get(srv.url("/slow/150")).status_code == 200
    assert time.monotonic() - t0 >= 0.15
    with pytest.raises(httpx.ReadTimeout):
        client.get(srv.url("/slow/2000"), timeout=0.1)


def test_hang_times_out(srv, client):
    before = srv.hits["/hang"]
    with pytest.raises(httpx.ReadTimeout):
        client.get(srv.url("/hang"), timeout=0.2)
    assert srv.hits["/hang"] == before + 1  # the request was read


def test_drip(srv, client):
    with client.stream("GET", srv.url("/drip"), timeout=httpx.Timeout(2.0, read=0.3)) as r:
        assert r.status_code == 200
        assert r.headers["content-length"] == "100000"
        chunks = r.iter_raw()
        assert next(chunks) == b"x"
        with pytest.raises(httpx.ReadTimeout):
            next(chunks)  # the next byte is a second away


def test_endless_chunked(srv, client):
    with client.stream("GET", srv.url("/endless-chunked")) as r:
        assert r.headers["transfer-encoding"] == "chunked"
        got = 0
        for chunk in r.iter_bytes():
            got += len(chunk)
            if got > 1024 * 1024:
                break
    assert got > 1024 * 1024


def test_huge_length(srv, client):
    with client.stream("GET", srv.url("/huge-length")) as r:
        assert r.headers["content-length"] == "10000000000"
        got = 0
        for chunk in r.iter_bytes():
            assert chunk == bytes(len(chunk))
            got += len(chunk)
            if got > 1024 * 1024:
                break


def test_redirects(local_server, client):
    r = client.get(local_server.url("/redirect/3"), follow_redirects=True)
    assert (r.status_code, r.text, len(r.history)) == (200, "ok", 3)
    assert [h.headers["location"] for h in r.history] == ["/redirect/2", "/redirect/1", "/ok"]
    r = client.get(local_server.url("/redirect/0"))
    assert (r.status_code, r.text) == (200, "ok")

    with httpx.Client(timeout=T, max_redirects=5) as c:
        with pytest.raises(httpx.TooManyRedirects):
            c.get(local_server.url("/redirect-loop"), follow_redirects=True)
    assert local_server.hits["/redirect-loop"] == 6
    r = client.get(local_server.url("/redirect-loop"))
    assert (r.status_code, r.headers["location"]) == (302, "/redirect-loop")


def test_reset(srv, client):
    with pytest.raises(httpx.ReadError):
        client.get(srv.url("/reset"))
    with pytest.raises(ConnectionResetError):
        raw_request(srv.port, "/reset")


def test_garbage(srv, client):
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(srv.url("/garbage"))
    assert raw_request(srv.port, "/garbage") == b"this is not http\r\n\r\n"


def test_close_mid_body(srv, client):
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(srv.url("/close-mid-body"))
    assert raw_request(srv.port, "/close-mid-body").endswith(b"\r\n\r\n0123456789")


def test_keyword(srv, client):
    r = client.get(srv.url("/keyword/All%20systems%20go"))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert "<html>" in r.text and "All systems go" in r.text


def test_body_size(srv, client):
    r = client.get(srv.url("/body-size/200000"))
    assert r.content == b"a" * 200000
    assert client.get(srv.url("/body-size/0")).content == b""


def test_head(srv, client):
    r = client.head(srv.url("/body-size/12345"))
    assert (r.status_code, r.headers["content-length"], r.content) == (200, "12345", b"")
    r = client.head(srv.url("/ok"))
    assert (r.headers["content-length"], r.content) == ("2", b"")
    raw = raw_request(srv.port, "/endless-chunked", method="HEAD")
    assert raw.startswith(b"HTTP/1.1 200 ") and raw.endswith(b"\r\n\r\n")


def test_custom_route(local_server, client):
    @local_server.route("/teapot")
    async def teapot(reader, writer, path, method):
        ua = current_request.get().headers.get("user-agent", "")
        await send_response(writer, 418, f"{path} {method} {ua}", method=method)

    r = client.get(local_server.url("/teapot/x?y=1"), headers={"User-Agent": "probe"})
    assert (r.status_code, r.text) == (418, "/teapot/x?y=1 GET probe")
    # custom routes override built-ins
    local_server.route("/ok", teapot)
    assert client.get(local_server.url("/ok")).status_code == 418


def test_handler_errors_are_recorded(local_server, client):
    async def broken(reader, writer, path, method):
        raise ValueError("boom")

    local_server.route("/broken", broken)
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(local_server.url("/broken"))
    assert [type(e) for e in local_server.errors] == [ValueError]
    local_server.errors.clear()


def test_probe_from_asyncio_run(srv):
    async def probe() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        writer.write(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
        data = await asyncio.wait_for(reader.read(), 2)
        writer.close()
        await writer.wait_closed()
        return data

    data = asyncio.run(probe())
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and data.endswith(b"\r\n\r\nok")


def test_refused_port(client):
    with pytest.raises(httpx.ConnectError):
        client.get(f"http://127.0.0.1:{refused_port()}/")


def test_bad_request_line(srv):
    with socket.create_connection(("127.0.0.1", srv.port), timeout=2) as s:
        s.sendall(b"NONSENSE\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400 ")


# --------------------------------------------------------------------------
# shutdown
# --------------------------------------------------------------------------


def test_stop_is_prompt_with_hung_clients():
    srv = LocalServer().start()
    socks = []
    try:
        hung = socket.create_connection(("127.0.0.1", srv.port), timeout=2)
        socks.append(hung)
        hung.sendall(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
        idle = socket.create_connection(("127.0.0.1", srv.port), timeout=2)  # sends nothing
        socks.append(idle)
        stalled = socket.create_connection(("127.0.0.1", srv.port), timeout=2)
        socks.append(stalled)
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.sendall(b"GET /endless-chunked HTTP/1.1\r\nHost: x\r\n\r\n")  # never read
        assert srv.hits.wait_for("/hang", 1, timeout=2)
        assert srv.hits.wait_for("/endless-chunked", 1, timeout=2)

        t0 = time.monotonic()
        srv.stop()
        assert time.monotonic() - t0 < 1.0
        assert not srv._thread.is_alive()
        try:
            assert hung.recv(100) == b""  # closed by the server
        except ConnectionResetError:
            pass
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", srv.port), timeout=1).close()
    finally:
        for s in socks:
            s.close()
        srv.stop()
    assert srv.errors == []


def test_stop_without_start_and_twice():
    srv = LocalServer()
    srv.stop()
    with srv:
        pass
    srv.stop()


def test_drip_client_disconnect_then_stop():
    with LocalServer(drip_interval=10) as srv:
        with httpx.Client(timeout=T) as c, c.stream("GET", srv.url("/drip")) as r:
            assert next(r.iter_raw()) == b"x"
        t0 = time.monotonic()
    assert time.monotonic() - t0 < 1.0


# --------------------------------------------------------------------------
# TLS
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_tls():
    return valid_cert()


def test_tls_valid(good_tls):
    server_ctx, ca_pem = good_tls
    with LocalServer(tls=server_ctx) as s:
        assert s.url("/ok").startswith("https://127.0.0.1:")
        with httpx.Client(verify=good_tls.client_context(), timeout=T) as c:
            r = c.get(s.url("/ok"))
            assert (r.status_code, r.text) == (200, "ok")
            r = c.get(s.url("/redirect/2"), follow_redirects=True)
            assert (r.status_code, len(r.history)) == (200, 2)
            # OpenSSL 3 reports the RST as an unexpected EOF, which the ssl
            # module (suppress_ragged_eofs) and httpx turn into a disconnect.
            with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
                c.get(s.url("/reset"))
            with pytest.raises(httpx.ReadTimeout):
                c.get(s.url("/hang"), timeout=0.2)
        with httpx.Client(verify=ssl.create_default_context(cafile=ca_pem), timeout=T) as c:
            assert c.get(s.url("/keyword/secure")).text.count("secure") == 1
            with pytest.raises(httpx.RemoteProtocolError):
                c.get(s.url("/garbage"))
            with pytest.raises(httpx.RemoteProtocolError):
                c.get(s.url("/close-mid-body"))
            for path in ("/endless-chunked", "/huge-length", "/drip"):
                with c.stream("GET", s.url(path)) as r:
                    assert r.status_code == 200
                    assert next(r.iter_raw())  # then disconnect mid-stream
            assert c.head(s.url("/body-size/7")).headers["content-length"] == "7"
        # a client that does not trust the CA must fail
        with httpx.Client(timeout=T) as c:  # default (certifi) trust store
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                c.get(s.url("/ok"))
    assert s.errors == []


@pytest.mark.parametrize(
    "make, reason",
    [
        (self_signed_cert, "self.signed certificate"),
        (expired_cert, "certificate has expired"),
        (wrong_host_cert, "IP address mismatch"),
    ],
)
def test_tls_bad_certs_fail_verification(make, reason):
    pair = make()
    with LocalServer(tls=pair.server_context) as s:
        with httpx.Client(verify=pair.client_context(), timeout=T) as c:
            with pytest.raises(httpx.ConnectError, match=reason):
                c.get(s.url("/ok"))
            assert s.hits.total == 0
        # without verification the same server works
        with httpx.Client(verify=False, timeout=T) as c:
            assert c.get(s.url("/ok")).text == "ok"
    assert s.errors == []


def test_cert_expiring_in():
    pair = cert_expiring_in(10)
    now = dt.datetime.now(dt.UTC)
    assert dt.timedelta(days=9.9) < pair.not_after - now < dt.timedelta(days=10.1)
    with LocalServer(tls=pair.server_context) as s:
        ctx = pair.client_context()
        with socket.create_connection(("127.0.0.1", s.port), timeout=2) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                cert = tls.getpeercert()
        not_after = dt.datetime.fromtimestamp(ssl.cert_time_to_seconds(cert["notAfter"]), dt.UTC)
        assert not_after == pair.not_after
    assert s.errors == []


def test_stop_is_prompt_with_hung_tls_clients(good_tls):
    srv = LocalServer(tls=good_tls.server_context).start()
    ctx = good_tls.client_context()
    with (
        socket.create_connection(("127.0.0.1", srv.port), timeout=2) as _idle,
        socket.create_connection(("127.0.0.1", srv.port), timeout=2) as raw,
    ):
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
            assert srv.hits.wait_for("/hang", timeout=2)
            t0 = time.monotonic()
            srv.stop()
            assert time.monotonic() - t0 < 1.0
    assert srv.errors == []


def test_servers_are_independent_threads():
    with LocalServer() as a, LocalServer() as b:
        assert a.port != b.port
        assert threading.active_count() >= 3
        with httpx.Client(timeout=T) as c:
            c.get(a.url("/ok"))
        assert (a.hits.total, b.hits.total) == (1, 0)
