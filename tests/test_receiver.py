"""`monitor-tick serve`, the heartbeat receiver, over real HTTP on 127.0.0.1: the installed
command runs in a subprocess for the whole module, and every test talks to it over sockets. The
tests that take its database away (a PostgreSQL server restarted and stopped, a file moved)
start their own."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.probes.heartbeat import new_token, token_digest
from monitor_tick.receiver import MAX_REQUEST_BYTES, REFUSED
from monitor_tick.run.tick import TickOptions, run_tick
from tests.commands import serving
from tests.conftest import add
from tests.postgres import Server

MONITOR_TICK = Path(sys.executable).parent / "monitor-tick"
# the manual's page with a heartbeat's curl line
HEARTBEATS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "monitors.md"
LOST = re.compile(r"monitor-tick: pings get 503 until the database is back: .+\n")
BACK = "monitor-tick: the database is back: pings are recorded again\n"
UNKNOWN_TOKEN = "A" * 43
KUMA_TOKEN = "uK7x2Qm9Lp"  # Uptime Kuma 1.23's push tokens: 10 alphanumeric characters


@dataclass
class Receiver:
    db_path: str
    port: int
    tokens: dict[str, str]  # monitor name -> token
    ids: dict[str, int]
    process: subprocess.Popen[str]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def pings(self) -> list[tuple[object, ...]]:
        conn = store.open_db(self.db_path)
        try:
            return conn.execute("SELECT * FROM pings ORDER BY monitor_id").fetchall()
        finally:
            conn.close()

    def ping_row(self, name: str) -> tuple[object, ...]:
        return next(row for row in self.pings() if row[0] == self.ids[name])


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    db_path = str(tmp_path_factory.mktemp("receiver") / "monitor-tick.db")
    tokens, ids = {}, {}
    conn = store.open_db(db_path)
    for name in ("backups", "reports", "gone"):
        tokens[name], digest = new_token()
        ids[name] = add(conn, "heartbeat", name=name, every_s=86_400, token_sha256=digest)
    tokens["kuma-job"] = KUMA_TOKEN  # a heartbeat imported from Kuma keeps its token
    ids["kuma-job"] = add(conn, "heartbeat", name="kuma-job", every_s=3600, token_sha256=token_digest(KUMA_TOKEN))
    add(conn, "http://127.0.0.1/site", name="site", every_s=86_400)
    store.remove_monitor(conn, "gone")  # its token must now be as unknown as any other
    conn.close()
    with serving(db_path) as served:
        yield Receiver(db_path, served.port, tokens, ids, served.process)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, timeout=10) as c:
        yield c


def exchange(port: int, data: bytes, *, linger_reset: bool = False) -> bytes:
    """Send raw bytes, half-close, and read the whole answer (b'' when the server just closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        if linger_reset:  # leave with an RST instead of a FIN
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return b""
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def flood(port: int, data: bytes) -> bytes:
    """Like exchange, for more than the receiver reads: it may answer, or reset the connection."""
    try:
        return exchange(port, data)
    except OSError as exc:  # a reset, or a connection the receiver already dropped
        assert not isinstance(exc, TimeoutError), "the receiver neither answered nor closed"
        return b""


def test_pings_over_http_are_recorded_like_local_ones(receiver: Receiver, client: httpx.Client) -> None:
    token = receiver.tokens["backups"]
    ok = client.get(receiver.url(f"/ping/{token}"))
    assert (ok.status_code, ok.text) == (200, "OK\n")
    _, last_ping_ms, failed, started, _ = receiver.ping_row("backups")
    assert isinstance(last_ping_ms, int) and (failed, started) == (0, None)

    assert client.get(receiver.url(f"/ping/{token}/fail")).status_code == 200
    assert receiver.ping_row("backups")[2] == 1
    # a job may POST its log as the body, and add a query string; both are dropped
    posted = client.post(receiver.url(f"/ping/{token}/start?run=7"), content=b"starting backup\n" * 20)
    assert posted.status_code == 200 and receiver.ping_row("backups")[3] is not None
    head = client.head(receiver.url(f"/ping/{token}"))
    assert (head.status_code, head.content) == (200, b"")
    _, _, failed, started, duration_ms = receiver.ping_row("backups")
    assert (failed, started) == (0, None) and isinstance(duration_ms, int)


def test_kumas_push_path_records_pings_so_jobs_moved_from_kuma_need_no_change(
    receiver: Receiver, client: httpx.Client
) -> None:
    # the URL Kuma shows for a push monitor: /api/push/TOKEN?status=up&msg=OK&ping=
    ok = client.get(receiver.url(f"/api/push/{KUMA_TOKEN}?status=up&msg=OK&ping="))
    assert (ok.status_code, ok.text) == (200, "OK\n")
    _, first_ms, failed, _, _ = receiver.ping_row("kuma-job")
    assert isinstance(first_ms, int) and failed == 0
    # any status but `up` is Kuma's DOWN: a failure ping
    assert client.get(receiver.url(f"/api/push/{KUMA_TOKEN}?status=down&msg=disk%20full&ping=12.5")).status_code == 200
    assert receiver.ping_row("kuma-job")[2] == 1
    # without a status Kuma counts it up; 2.0 takes any method
    assert client.post(receiver.url(f"/api/push/{KUMA_TOKEN}"), content=b"").status_code == 200
    assert receiver.ping_row("kuma-job")[2] == 0
    before = receiver.pings()
    for path in (f"/api/push/{KUMA_TOKEN[:-1]}", f"/api/push/{KUMA_TOKEN}/fail", "/api/push/", f"/api/{KUMA_TOKEN}"):
        assert client.get(receiver.url(path)).content == REFUSED.split(b"\r\n\r\n", 1)[1], path
    assert receiver.pings() == before


def test_every_refusal_is_the_same_404_so_the_receiver_never_tells_which_tokens_exist(
    receiver: Receiver, client: httpx.Client
) -> None:
    before = receiver.pings()
    known = receiver.tokens["reports"]
    requests = [
        b"GET /ping/%s HTTP/1.1\r\nHost: x\r\n\r\n" % UNKNOWN_TOKEN.encode(),
        b"GET /ping/%s HTTP/1.1\r\nHost: x\r\n\r\n" % receiver.tokens["gone"].encode(),  # removed monitor
        b"GET /ping/%s/fail HTTP/1.1\r\n\r\n" % known[:-1].encode(),  # one character short
        b"GET /ping/ HTTP/1.1\r\n\r\n",
        b"GET /ping/%s/other HTTP/1.1\r\n\r\n" % known.encode(),
        b"GET / HTTP/1.1\r\n\r\n",
        b"DELETE /ping/%s HTTP/1.1\r\n\r\n" % known.encode(),  # a known token, a wrong method
        b"GET /ping/%s HTTP/2.0\r\n\r\n" % known.encode(),
        b"this is not http\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",  # a TLS ClientHello's start
        b"GET /ping/%s HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" % known.encode(),  # body too large
        b"POST /ping/%s HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % known.encode(),
        b"POST /ping/%s HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n" % known.encode(),  # a non-ASCII digit
        b"GET /ping/%s HTTP/1.1\r\nX-Big: %s\r\n\r\n" % (known.encode(), b"a" * MAX_REQUEST_BYTES),  # head too large
    ]
    for request in requests:
        assert exchange(receiver.port, request) == REFUSED, request[:60]
    assert client.get(receiver.url(f"/ping/{UNKNOWN_TOKEN}")).status_code == 404
    assert receiver.pings() == before


def test_the_receiver_survives_garbage_floods_resets_and_slow_clients(receiver: Receiver, client: httpx.Client) -> None:
    before = receiver.pings()
    assert flood(receiver.port, os.urandom(64 * 1024)) in (REFUSED, b"")
    assert flood(receiver.port, b"GET /ping/" + b"x" * (1024 * 1024)) in (REFUSED, b"")
    exchange(receiver.port, b"GET /ping/%s HTT" % receiver.tokens["reports"].encode(), linger_reset=True)
    exchange(receiver.port, b"")
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as slow:
        slow.sendall(b"GET /ping/")  # and nothing more, for now
        answered = client.get(receiver.url(f"/ping/{receiver.tokens['reports']}"))
        assert answered.status_code == 200  # one stalled client holds no one else up
        assert receiver.ping_row("reports")[1] is not None
    assert receiver.pings() != before
    assert receiver.process.poll() is None


def test_serve_on_a_port_in_use_fails_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", "--port", str(port), "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"monitor-tick: cannot listen on 127.0.0.1:{port}: ")
    assert result.stderr.count("\n") == 1


def test_the_tick_sees_pings_received_over_http(receiver: Receiver, client: httpx.Client) -> None:
    assert client.get(receiver.url(f"/ping/{receiver.tokens['reports']}/fail")).status_code == 200
    # replay the last minute of this daily heartbeat (phase = id) that has come: the failure is
    # its newest ping (in the day's first minutes, today's has not come yet: yesterday's)
    now_minute = clock.minute_of_ms(clock.now_ms())
    due_minute = now_minute // 1440 * 1440 + receiver.ids["reports"]
    due_minute -= 1440 if due_minute > now_minute else 0
    report = run_tick(TickOptions(db_path=receiver.db_path, minute=due_minute, retry_delay_s=0))
    causes = {r["name"]: r["cause"] for r in report.results_json()}
    assert causes["reports"] == "heartbeat: job reported failure"
    conn = sqlite3.connect(receiver.db_path)
    try:
        assert conn.execute("SELECT cause FROM incidents").fetchall() == [("heartbeat: job reported failure",)]
    finally:
        conn.close()


def manual_ping(base_url: str, token: str) -> list[str]:
    """The manual's curl line for a heartbeat's ping (docs/monitors.md), as written, sent to `base_url`."""
    assert shutil.which("curl"), "curl is missing: `apt-get install -y curl` (the README's test command does)"
    line = next(
        line
        for line in HEARTBEATS_PAGE.read_text(encoding="utf-8").splitlines()
        if line.lstrip().startswith("curl ") and "/ping/TOKEN" in line
    )
    return [
        word.replace("http://monitor-host:8700", base_url).replace("TOKEN", token)
        for word in shlex.split(line.partition("#")[0])
    ]


def test_serve_reconnects_after_postgresql_restarts_and_says_503_while_it_is_down(
    pg_server: Server, client: httpx.Client
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    token, digest = new_token()
    add(conn, "heartbeat", name="job", every_s=3600, token_sha256=digest)
    conn.close()

    def last_ping_failed() -> object:
        with psycopg.connect(url) as raw:
            return raw.execute("SELECT last_ping_failed FROM pings").fetchone()[0]

    with serving(url) as served:

        def status(path: str) -> int:
            return client.get(served.url(path)).status_code

        assert status(f"/ping/{token}") == 200
        pg_server.restart()
        # the restart dropped serve's connection: the next ping connects again and is recorded
        assert status(f"/ping/{token}/fail") == 200
        assert last_ping_failed() == 1
        # while the server is down no token can be looked up: every ping gets 503, an unknown
        # token's too, and serve says so in one line, not one a ping
        curl_env = {name: value for name, value in os.environ.items() if not name.lower().endswith("_proxy")}
        with pg_server.outage():
            ping = manual_ping(served.url(""), token)
            assert "--retry" in ping
            with subprocess.Popen(ping, env=curl_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as curl:
                assert LOST.fullmatch(served.next_stderr_line())  # said when curl's first try got 503
                paths = (f"/ping/{token}", f"/ping/{UNKNOWN_TOKEN}", f"/api/push/{token}")
                assert [status(path) for path in paths] == [503, 503, 503]
                pg_server.start()
                # the manual's curl line retries: its ping, sent during the outage, is recorded
                assert curl.wait(timeout=60) == 0, curl.communicate()
        assert last_ping_failed() == 0
        assert status(f"/ping/{UNKNOWN_TOKEN}") == 404
        assert served.next_stderr_line() == BACK


class Relay:
    """A TCP relay on 127.0.0.1 to a local port, which can turn into a blackhole: a database host
    whose packets are dropped. It then accepts connections but answers nothing on them (a client
    waits as for a host that drops its SYN), and the connections it relayed are gone. `accepted`
    counts the connections made to it."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.accepted = 0
        self.forwarding = True
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            with self._lock:
                self.accepted += 1
                self._sockets.append(client)
                if not self.forwarding:
                    continue  # held open and never read
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
                self._sockets.append(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            _drop(source)
            _drop(sink)

    def _drop_all(self) -> None:
        with self._lock:
            for sock in self._sockets:
                _drop(sock)
            self._sockets.clear()

    def blackhole(self) -> None:
        with self._lock:
            self.forwarding = False
        self._drop_all()

    def forward(self) -> None:
        with self._lock:
            self.forwarding = True
        self._drop_all()

    def close(self) -> None:
        _drop(self._listener)
        self._drop_all()


def _drop(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv() or accept() on it
    except OSError:
        pass
    sock.close()


def test_serve_answers_503_at_once_while_its_postgresql_host_is_blackholed(pg_server: Server) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    token, digest = new_token()
    add(conn, "heartbeat", name="job", every_s=3600, token_sha256=digest)
    conn.close()
    relay = Relay(pg_server.port)
    # patient enough for one reconnect attempt of serve's, and less than libpq's usual 10 s
    with (
        serving(url.replace(f":{pg_server.port}/", f":{relay.port}/")) as served,
        httpx.Client(trust_env=False, timeout=8) as client,
    ):
        try:

            def status(path: str) -> int | str:
                try:
                    return client.get(served.url(path)).status_code
                except httpx.TimeoutException:
                    return "timed out"

            assert status(f"/ping/{token}") == 200
            relay.blackhole()
            before = relay.accepted
            # the first ping finds the connection lost, and its attempt to connect again hangs
            # until serve gives up; the pings after it do not wait for attempts of their own
            paths = [f"/ping/{token}", f"/ping/{UNKNOWN_TOKEN}"] * 4
            assert [status(path) for path in paths] == [503] * 8
            assert relay.accepted - before <= 2
            assert LOST.fullmatch(served.next_stderr_line())
            relay.forward()
            # once serve tries again, pings are recorded: poll until then, within bounds
            for _ in range(200):
                if (answered := status(f"/ping/{token}/fail")) != 503:
                    break
                time.sleep(0.05)
            assert answered == 200
            assert served.next_stderr_line() == BACK
            assert status(f"/ping/{UNKNOWN_TOKEN}") == 404
        finally:
            relay.close()
    with psycopg.connect(url) as raw:
        assert raw.execute("SELECT last_ping_failed FROM pings").fetchone() == (1,)


def test_serve_says_503_while_its_database_file_is_gone_and_records_pings_once_it_is_back(tmp_path: Path) -> None:
    db = tmp_path / "monitor-tick.db"
    conn = store.open_db(str(db))
    token, digest = new_token()
    job = add(conn, "heartbeat", name="job", every_s=3600, token_sha256=digest)
    conn.close()
    with serving(str(db)) as served, httpx.Client(trust_env=False, timeout=10) as client:
        assert client.get(served.url(f"/ping/{token}")).status_code == 200
        db.rename(tmp_path / "moved.db")
        # no database to look a token up in: 503, never 404, and a new empty file is never made
        assert [client.get(served.url(f"/ping/{t}")).status_code for t in (token, UNKNOWN_TOKEN, token)] == [503] * 3
        assert LOST.fullmatch(served.next_stderr_line())
        assert not db.exists()
        (tmp_path / "moved.db").rename(db)
        assert client.get(served.url(f"/ping/{token}/fail")).status_code == 200
        assert served.next_stderr_line() == BACK
        assert client.get(served.url(f"/ping/{UNKNOWN_TOKEN}")).status_code == 404
    raw = sqlite3.connect(db)
    try:
        assert raw.execute("SELECT monitor_id, last_ping_failed FROM pings").fetchall() == [(job, 1)]
    finally:
        raw.close()
