"""smtp:// monitors against a real SMTP server in the test process (aiosmtpd, the `test` extra),
with and without STARTTLS, its certificates generated here with chosen expiry dates, through
the tick and a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiosmtpd.smtp import SMTP
from typer.testing import CliRunner

from monitor_tick.cli.app import app
from monitor_tick.probes import net
from monitor_tick.probes.guard import AddressGuard
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import (
    HOST,
    LoopThread,
    TLSPair,
    banner_server,
    cert_expiring_in,
    expired_cert,
    holding_server,
    refused_port,
    self_signed_cert,
    valid_cert,
    wrong_host_cert,
)
from tests.test_probe_tcp import listening_port
from tests.test_probe_tls import only_result, tick

DAY_S = 86_400
runner = CliRunner()


@dataclass
class Seen:
    """What the SMTP server was told: each command (with whether it came over TLS), and
    whether a client said QUIT."""

    commands: list[tuple[str, bool]] = field(default_factory=list)
    quit: threading.Event = field(default_factory=threading.Event)
    connections: int = 0


class Recorder:
    """aiosmtpd's handler: records, and answers as aiosmtpd does by default."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def handle_EHLO(
        self, server: SMTP, session: Any, envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        self.seen.commands.append((f"EHLO {hostname}", session.ssl is not None))
        session.host_name = hostname
        return responses

    def handle_STARTTLS(self, server: SMTP, session: Any, envelope: Any) -> bool:
        self.seen.commands.append(("STARTTLS", True))
        return True

    async def handle_QUIT(self, server: SMTP, session: Any, envelope: Any) -> str:
        self.seen.commands.append(("QUIT", session.ssl is not None))
        self.seen.quit.set()
        return "221 Bye"


@contextmanager
def smtp_server(tls: ssl.SSLContext | None = None) -> Iterator[tuple[int, Seen]]:
    """An aiosmtpd server on a free 127.0.0.1 port (offering STARTTLS when given `tls`)."""
    seen = Seen()

    def protocol() -> SMTP:
        seen.connections += 1
        return SMTP(Recorder(seen), hostname="mail.test", tls_context=tls)

    with LoopThread() as thread:
        server = thread.run(thread.loop.create_server(protocol, HOST, 0))
        try:
            yield server.sockets[0].getsockname()[1], seen
        finally:
            server.close()


def deaf_after_quit(tls: ssl.SSLContext | None, quit_said: threading.Event) -> Callable[..., Awaitable[None]]:
    """An SMTP server's dialogue (for servers.holding_server): a greeting, STARTTLS offered when
    given `tls`, and on QUIT no answer (`quit_said` is set), the connection held."""

    async def dialogue(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 mail.test ESMTP\r\n")
        while line := await reader.readline():
            command = line.strip().upper()
            if command.startswith(b"EHLO"):
                writer.write(b"250-mail.test\r\n250 STARTTLS\r\n")
            elif command == b"STARTTLS" and tls is not None:
                writer.write(b"220 ready\r\n")
                await writer.start_tls(tls)
            elif command == b"QUIT":
                quit_said.set()
                return
            else:
                writer.write(b"502 not here\r\n")

    return dialogue


async def _starttls_then_plain_text(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A server that offers and accepts STARTTLS, then answers the TLS hello in plain text."""
    writer.write(b"220 mail.test ESMTP\r\n")
    await reader.readline()  # EHLO
    writer.write(b"250-mail.test\r\n250 STARTTLS\r\n")
    await reader.readline()  # STARTTLS
    writer.write(b"220 go ahead\r\n")
    await reader.read(1)  # the client's TLS hello has begun
    writer.write(b"500 5.5.1 command unrecognized\r\n")


def test_a_starttls_upgrade_the_server_does_not_speak_is_down_saying_so(conn: sqlite3.Connection, db_path: str) -> None:
    with holding_server(_starttls_then_plain_text) as port:
        add(conn, f"smtp://127.0.0.1:{port}?starttls=1", retries=0)
        result = only_result(tick(db_path, valid_cert()))
    assert (result["status"], result["cause"]) == ("down", "tls: not spoken by the server")


@pytest.mark.parametrize("upgrade", [False, True], ids=["plain", "starttls"])
def test_a_server_that_never_answers_quit_holds_the_check_no_longer_than_its_timeout(
    conn: sqlite3.Connection, db_path: str, monkeypatch: pytest.MonkeyPatch, upgrade: bool
) -> None:
    """QUIT's answer and the close (TLS close_notify) wait within the check's one deadline,
    however long a goodbye may wait otherwise: a tick whose budget is shorter than those waits,
    but longer than the timeout, records the check, and the server was still told QUIT."""
    monkeypatch.setattr(net, "CLOSE_WAIT_S", 60.0)  # a goodbye's own limit, beyond the budget
    pair = valid_cert()
    quit_said = threading.Event()
    with holding_server(deaf_after_quit(pair.server_context if upgrade else None, quit_said)) as port:
        monitor = add(conn, f"smtp://127.0.0.1:{port}{'?starttls=1' if upgrade else ''}", retries=0, timeout_s=1)
        result = only_result(tick(db_path, pair, budget_s=5))
        assert quit_said.wait(10)
    assert (result["status"], result["cause"]) == ("up", None) and rollup(conn, monitor) == (1, 0)


def test_a_server_that_greets_with_220_is_up_and_is_told_quit(conn: sqlite3.Connection, db_path: str) -> None:
    with smtp_server() as (port, seen):
        monitor = add(conn, f"smtp://127.0.0.1:{port}", name="mail")
        result = only_result(tick(db_path, valid_cert()))
        assert seen.quit.wait(10)
    assert (result["kind"], result["status"], result["cause"], result["cert_days_left"]) == ("smtp", "up", None, None)
    assert isinstance(result["latency_ms"], int) and rollup(conn, monitor) == (1, 0)
    assert seen.commands == [("QUIT", False)]  # no mail, no login: a greeting and goodbye
    listed = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)
    assert (listed[0]["kind"], listed[0]["state"]) == ("smtp", "up")


def test_starttls_upgrades_and_the_certificate_with_time_to_spare_is_up_with_its_days_left(
    conn: sqlite3.Connection, db_path: str
) -> None:
    pair = cert_expiring_in(200.5)
    with smtp_server(pair.server_context) as (port, seen):
        add(conn, f"smtp://127.0.0.1:{port}?starttls=1", name="mail", expires_within_sec=30 * DAY_S)
        result = only_result(tick(db_path, pair))
        assert seen.quit.wait(10)
    assert (result["status"], result["cause"], result["cert_days_left"]) == ("up", None, 200)
    assert seen.commands == [("EHLO [127.0.0.1]", False), ("STARTTLS", True), ("QUIT", True)]
    listed = runner.invoke(app, ["list", "--db", db_path])
    assert listed.exit_code == 0
    assert f"cert expires in 200 days ({pair.not_after.date().isoformat()})" in listed.stdout
    assert "smtp://127.0.0.1:" in listed.stdout and "?starttls=1" in listed.stdout  # a setting, shown whole


def test_a_starttls_certificate_expiring_within_the_threshold_is_down_as_a_tls_monitor_says(
    conn: sqlite3.Connection, db_path: str
) -> None:
    pair = cert_expiring_in(3.5)
    with smtp_server(pair.server_context) as (port, _):
        strict = add(conn, f"smtp://127.0.0.1:{port}?starttls=1", name="strict", retries=0)  # 14 days by default
        lenient = add(conn, f"smtp://127.0.0.1:{port}?starttls=1", name="lenient", expires_within_sec=2 * DAY_S)
        report = tick(db_path, pair)
    results = {r["id"]: r for r in report.results_json()}
    cause = f"tls: expires in 3 days ({pair.not_after.date().isoformat()})"
    assert (results[strict]["status"], results[strict]["cause"], results[strict]["cert_days_left"]) == (
        "down",
        cause,
        3,
    )
    assert (results[lenient]["status"], results[lenient]["cert_days_left"]) == ("up", 3)
    (stored,) = conn.execute("SELECT cert_expires_at_ms FROM rollups WHERE monitor_id = ?", (strict,)).fetchone()
    assert stored == int(pair.not_after.timestamp()) * 1000


@pytest.mark.parametrize(
    ("make", "cause"),
    [
        (expired_cert, "tls: certificate expired"),
        (wrong_host_cert, "tls: certificate is for another host"),
        (self_signed_cert, "tls: self-signed certificate"),
    ],
)
def test_an_invalid_starttls_certificate_is_down_with_its_reason(
    conn: sqlite3.Connection, db_path: str, make: Callable[[], TLSPair], cause: str
) -> None:
    pair = make()
    with smtp_server(pair.server_context) as (port, _):
        add(conn, f"smtp://127.0.0.1:{port}?starttls=1", retries=0)
        result = only_result(tick(db_path, pair))
    assert (result["status"], result["cause"], result["cert_days_left"]) == ("down", cause, None)


def test_a_server_without_starttls_is_down_only_for_a_monitor_that_asks_for_it(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with smtp_server() as (port, seen):
        add(conn, f"smtp://127.0.0.1:{port}", name="plain")
        add(conn, f"smtp://127.0.0.1:{port}?starttls=1", name="upgraded", retries=0)
        report = tick(db_path, valid_cert())
    causes = {r["name"]: (r["status"], r["cause"]) for r in report.results_json()}
    assert causes == {"plain": ("up", None), "upgraded": ("down", "smtp: STARTTLS not offered")}


def test_a_refusing_greeting_a_closed_port_a_silent_server_and_another_protocol_are_down(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with (
        banner_server(b"421-mail.test busy\r\n421 try again later\r\n") as busy,
        banner_server(b"SSH-2.0-OpenSSH_9.2\r\n") as ssh,
        listening_port() as silent,
    ):
        add(conn, f"smtp://127.0.0.1:{busy}", name="busy", retries=0)
        add(conn, f"smtp://127.0.0.1:{ssh}", name="ssh", retries=0)
        add(conn, f"smtp://127.0.0.1:{silent}", name="silent", retries=0, timeout_s=0.3)
        add(conn, f"smtp://127.0.0.1:{refused_port()}", name="closed", retries=0)
        report = tick(db_path, valid_cert())
    causes = {r["name"]: r["cause"] for r in report.results_json()}
    assert causes == {
        "busy": "smtp: greeting 421, not 220",
        "ssh": "smtp: not an SMTP server",
        "silent": "smtp: timeout",
        "closed": "smtp: connect refused",
    }


def test_a_greeting_slower_than_max_latency_is_down_with_both_times(conn: sqlite3.Connection, db_path: str) -> None:
    with banner_server(b"220 mail.test ESMTP\r\n", delay_s=0.3) as port:
        add(conn, f"smtp://127.0.0.1:{port}", retries=0, max_latency_ms=100)
        result = only_result(tick(db_path, valid_cert()))
    assert result["status"] == "down" and result["latency_ms"] >= 300
    assert result["cause"] == f"slow: {result['latency_ms']} ms > 100 ms"


def test_under_block_private_a_loopback_mail_server_is_refused_and_never_connected_to(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with smtp_server() as (port, seen):
        monitor = add(conn, f"smtp://127.0.0.1:{port}?starttls=1", retries=0)
        report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0, guard=AddressGuard()))
    cause = "refused by --block-private: smtp: blocked: 127.0.0.1 is not a public address"
    assert (report.refused, report.results) == ([(monitor, cause)], [])
    assert seen.connections == 0 and rollup(conn, monitor) == (0, 0)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["smtp://mail.test?starttls=yes"], "smtp:// takes only ?starttls=1: smtp://host[:port][?starttls=1]"),
        (["smtp://mail.test?tls=1"], "smtp:// takes only ?starttls=1: smtp://host[:port][?starttls=1]"),
        (["smtp://mail.test/inbox"], "smtp:// takes only a host and a port"),
        (["smtp://user@mail.test"], "smtp:// takes only a host and a port"),
        (
            ["smtp://mail.test", "--expires-within", "30d"],
            "--expires-within needs ?starttls=1: smtp://host[:port]?starttls=1",
        ),
        (["smtp://mail.test", "--keyword", "ok"], "--keyword does not apply to smtp monitors"),
    ],
)
def test_add_refuses_what_an_smtp_monitor_cannot_use(db_path: str, args: list[str], error: str) -> None:
    refused = runner.invoke(app, ["add", *args, "--db", db_path])
    assert refused.exit_code == 2 and error in refused.stderr
    accepted = runner.invoke(
        app, ["add", "smtp://mail.test:587?starttls=1", "--expires-within", "30d", "--db", db_path]
    )
    assert accepted.exit_code == 0, accepted.output
