"""ws:// and wss:// monitors against a real WebSocket server in the test process (the websockets
library's, the `test` extra), with certificates generated here, through the tick and a real
SQLite file."""

from __future__ import annotations

import asyncio
import http
import json
import sqlite3
import ssl
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from typer.testing import CliRunner
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.probes import ws
from monitor_tick.probes.guard import AddressGuard
from monitor_tick.probes.request import USER_AGENT
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import HOST, LocalServer, LoopThread, cert_expiring_in, expired_cert, refused_port, valid_cert
from tests.test_probe_tcp import listening_port
from tests.test_probe_tls import only_result, tick

DAY_S = 86_400
SLOW_S = 0.3
runner = CliRunner()


@dataclass
class Seen:
    """What the server saw of each opening handshake it completed: (path, Host, User-Agent),
    and the close code each such connection ended with."""

    handshakes: list[tuple[str, str, str]] = field(default_factory=list)
    close_codes: list[int | None] = field(default_factory=list)
    requests: int = 0


@contextmanager
def ws_server(tls: ssl.SSLContext | None = None) -> Iterator[tuple[int, Seen]]:
    """A websockets server on a free 127.0.0.1 port. By path: `/` waits for the client to
    close; `/policy` closes with 1008 at once; `/drop` drops the connection without a close
    frame; `/forbidden` answers the upgrade with 403; `/moved` with a redirect to `/`; `/slow`
    upgrades after SLOW_S."""
    seen = Seen()

    async def process_request(connection: ServerConnection, request: Request) -> Response | None:
        seen.requests += 1
        if request.path == "/forbidden":
            return connection.respond(http.HTTPStatus.FORBIDDEN, "no\n")
        if request.path == "/moved":
            moved = connection.respond(http.HTTPStatus.FOUND, "")
            moved.headers["Location"] = "/"
            return moved
        if request.path == "/slow":
            await asyncio.sleep(SLOW_S)
        return None

    async def handler(connection: ServerConnection) -> None:
        request = connection.request
        assert request is not None
        seen.handshakes.append((request.path, request.headers["Host"], request.headers["User-Agent"]))
        if request.path == "/policy":
            await connection.close(1008, "policy")
        elif request.path == "/drop":
            connection.transport.abort()
        else:
            async for _ in connection:
                pass
        await connection.wait_closed()
        seen.close_codes.append(connection.close_code)

    async def start() -> Server:  # made in the server's own loop
        return await serve(handler, HOST, 0, ssl=tls, process_request=process_request)

    with LoopThread() as thread:
        server = thread.run(start())
        try:
            yield server.sockets[0].getsockname()[1], seen
        finally:
            server.close()
            thread.run(server.wait_closed())


def test_a_websocket_that_upgrades_and_closes_cleanly_is_up(conn: sqlite3.Connection, db_path: str) -> None:
    with ws_server() as (port, seen):
        monitor = add(conn, f"ws://127.0.0.1:{port}/", name="socket")
        result = only_result(tick(db_path, valid_cert()))
    assert (result["kind"], result["status"], result["cause"], result["cert_days_left"]) == ("ws", "up", None, None)
    assert isinstance(result["latency_ms"], int) and rollup(conn, monitor) == (1, 0)
    assert seen.handshakes == [("/", f"127.0.0.1:{port}", USER_AGENT)]
    assert seen.close_codes == [1000]  # the probe closed it, and the server saw a clean close
    listed = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)
    assert (listed[0]["kind"], listed[0]["state"]) == ("ws", "up")


def test_a_refused_upgrade_a_redirect_and_an_unclean_close_are_down_with_their_causes(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with ws_server() as (port, seen), listening_port() as silent:
        for path in ("forbidden", "moved", "policy", "drop"):
            add(conn, f"ws://127.0.0.1:{port}/{path}", name=path, retries=0)
        add(conn, f"ws://127.0.0.1:{silent}/", name="silent", retries=0, timeout_s=0.3)
        add(conn, f"ws://127.0.0.1:{refused_port()}/", name="closed", retries=0)
        report = tick(db_path, valid_cert())
    causes = {r["name"]: r["cause"] for r in report.results_json()}
    assert causes == {
        "forbidden": "ws: status 403",
        "moved": "ws: status 302",  # not followed
        "policy": "ws: closed with 1008",
        "drop": "ws: closed without a close frame",
        "silent": "ws: timeout",
        "closed": "ws: connect refused",
    }
    assert seen.requests == 4  # the redirect's target was never asked for


def test_wss_is_verified_and_with_expires_within_its_certificate_is_judged(
    conn: sqlite3.Connection, db_path: str
) -> None:
    pair = cert_expiring_in(3.5)
    with ws_server(pair.server_context) as (port, _):
        plain = add(conn, f"wss://127.0.0.1:{port}/", name="plain", retries=0)
        strict = add(conn, f"wss://127.0.0.1:{port}/", name="strict", retries=0, expires_within_sec=14 * DAY_S)
        lenient = add(conn, f"wss://127.0.0.1:{port}/", name="lenient", retries=0, expires_within_sec=2 * DAY_S)
        report = tick(db_path, pair)
    results = {r["id"]: r for r in report.results_json()}
    cause = f"tls: expires in 3 days ({pair.not_after.date().isoformat()})"
    assert (results[plain]["status"], results[plain]["cert_days_left"]) == ("up", None)
    assert (results[strict]["status"], results[strict]["cause"], results[strict]["cert_days_left"]) == (
        "down",
        cause,
        3,
    )
    assert (results[lenient]["status"], results[lenient]["cert_days_left"]) == ("up", 3)


def test_an_invalid_wss_certificate_and_plain_ws_to_a_tls_port_are_down(conn: sqlite3.Connection, db_path: str) -> None:
    pair = expired_cert()
    with ws_server(pair.server_context) as (port, seen):
        add(conn, f"wss://127.0.0.1:{port}/", name="expired", retries=0)
        add(conn, f"ws://127.0.0.1:{port}/", name="plain", retries=0)
        report = tick(db_path, pair)
    causes = {r["name"]: r["cause"] for r in report.results_json()}
    assert causes == {"expired": "tls: certificate expired", "plain": "ws: connection closed"}
    assert seen.handshakes == []


async def _http_1_0_page(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
    """An HTTP/1.0 server's answer to anything: a page, then the end of the connection."""
    writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hello</p>\n")
    await writer.drain()
    writer.close()


def test_an_http_answer_without_an_upgrade_and_tls_to_a_plain_port_say_what_they_are(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with LocalServer() as old_server, ws_server() as (plain_port, _):
        old_server.route("/", _http_1_0_page)
        add(conn, f"ws://127.0.0.1:{old_server.port}/", name="http/1.0", retries=0)
        # a plain WebSocket server hangs up on a TLS hello; a plain HTTP server answers it with text
        for scheme, port in (("wss", plain_port), ("tls", plain_port), ("https", old_server.port)):
            add(conn, f"{scheme}://127.0.0.1:{port}/", name=f"{scheme} to plain", retries=0)
        add(conn, f"wss://127.0.0.1:{old_server.port}/", name="wss to plain http", retries=0)
        report = tick(db_path, valid_cert())
    causes = {r["name"]: r["cause"] for r in report.results_json()}
    assert causes == {
        "http/1.0": "ws: status 200 (HTTP/1.0, no upgrade)",  # an HTTP answer, which cannot upgrade
        "wss to plain": "tls: not spoken by the server",  # as https:// and tls:// monitors say it
        "tls to plain": "tls: not spoken by the server",
        "https to plain": "tls: not spoken by the server",
        "wss to plain http": "tls: not spoken by the server",
    }


def test_an_upgrade_slower_than_max_latency_is_down(conn: sqlite3.Connection, db_path: str) -> None:
    with ws_server() as (port, _):
        add(conn, f"ws://127.0.0.1:{port}/slow", retries=0, max_latency_ms=100)
        result = only_result(tick(db_path, valid_cert()))
    assert result["status"] == "down" and result["latency_ms"] >= SLOW_S * 1000
    assert result["cause"] == f"slow: {result['latency_ms']} ms > 100 ms"


def test_under_block_private_the_guard_checks_the_address_it_connects_to(
    conn: sqlite3.Connection, db_path: str
) -> None:
    pair = valid_cert()
    with ws_server(pair.server_context) as (port, seen):
        monitor = add(conn, f"wss://127.0.0.1:{port}/", retries=0)
        trust = ssl.create_default_context(cafile=pair.ca_pem)
        refused = run_tick(TickOptions(db_path=db_path, retry_delay_s=0, verify=trust, guard=AddressGuard()))
        assert refused.results == [] and seen.requests == 0
        assert refused.refused[0][0] == monitor and "ws: blocked: " in refused.refused[0][1]
        # a guard that allows loopback: connected to the address it checked, verified as without one
        allowed = run_tick(
            TickOptions(
                db_path=db_path, retry_delay_s=0, verify=trust, guard=AddressGuard(blocked=["192.0.2.0/24"]), force=True
            )
        )
    assert (allowed.results[0].status, allowed.results[0].cause) == ("up", None)
    assert seen.handshakes == [("/", f"127.0.0.1:{port}", USER_AGENT)]


def test_credentials_and_query_values_in_a_ws_url_are_never_printed(conn: sqlite3.Connection, db_path: str) -> None:
    added = runner.invoke(app, ["add", "wss://bot:hunter2@chat.test/socket?token=s3cret", "--db", db_path])
    assert added.exit_code == 0, added.output
    listed = runner.invoke(app, ["list", "--db", db_path])
    assert "wss://***@chat.test/socket?token=***" in listed.stdout
    assert "hunter2" not in listed.stdout and "s3cret" not in listed.stdout


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["ws://chat.test/#room"], "ws:// takes no #fragment"),
        (["ws://bot@chat.test/"], "a user in a ws:// url needs a password: ws://user:password@host/"),
        (["ws://chat.test/", "--expires-within", "30d"], "--expires-within needs a wss:// url"),
        (["wss://chat.test/", "--keyword", "ok"], "--keyword does not apply to ws monitors"),
    ],
)
def test_add_refuses_what_a_ws_monitor_cannot_use(db_path: str, args: list[str], error: str) -> None:
    refused = runner.invoke(app, ["add", *args, "--db", db_path])
    assert refused.exit_code == 2 and error in refused.stderr


def test_without_the_websockets_library_a_ws_monitor_is_a_configuration_error(
    conn: sqlite3.Connection, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on a machine without the `ws` extra: None in sys.modules is how Python marks a module
    that cannot be imported."""
    monitor = add(conn, "ws://127.0.0.1:9/", retries=0)
    hour_start = (clock.minute_of_ms(clock.now_ms()) // 60 - 1) * 60  # where an hourly line is said
    monkeypatch.setitem(sys.modules, "websockets", None)
    ws.available.cache_clear()
    try:
        ticked = runner.invoke(app, ["--db", db_path, "--minute", str(hour_start), "--retry-delay", "0"])
        listed = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)
        added = runner.invoke(app, ["add", "wss://chat.test/socket", "--db", db_path])
    finally:
        ws.available.cache_clear()
    reason = "ws:// needs the websockets library: pip install 'monitor-tick[ws]'"
    assert ticked.exit_code == 0 and f"monitor {monitor} skipped: cannot be probed here: {reason}" in ticked.stderr
    assert listed[0]["state"] == "invalid" and rollup(conn, monitor) == (0, 0)
    assert added.exit_code == 0 and f"cannot be probed here until this changes: {reason}" in added.stderr
