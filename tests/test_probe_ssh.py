"""ssh:// monitors against a real OpenSSH server (Debian's sshd, started here with a host key
made here: tests/sshd.py), and servers that say something else, through the tick and a real
SQLite file."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from monitor_tick import __version__
from monitor_tick.cli.app import app
from monitor_tick.probes.guard import AddressGuard
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import banner_server, refused_port, valid_cert
from tests.sshd import Sshd, running_sshd
from tests.test_probe_tcp import listening_port
from tests.test_probe_tls import only_result, tick

runner = CliRunner()


@pytest.fixture(scope="module")
def sshd() -> Iterator[Sshd]:
    with running_sshd() as server:
        yield server


def test_an_ssh_server_is_up_and_reads_our_identification_before_we_leave(
    sshd: Sshd, conn: sqlite3.Connection, db_path: str
) -> None:
    monitor = add(conn, f"ssh://127.0.0.1:{sshd.port}", name="sshd")
    result = only_result(tick(db_path, valid_cert()))
    assert (result["kind"], result["status"], result["cause"]) == ("ssh", "up", None)
    assert isinstance(result["latency_ms"], int) and rollup(conn, monitor) == (1, 0)
    # sshd parsed the line we sent, and saw us leave before any key exchange or login
    assert sshd.logged(f"Remote protocol version 2.0, remote software version monitor_tick_{__version__}")
    assert sshd.logged("Connection closed by 127.0.0.1")  # during the key exchange sshd began: [preauth]
    assert not any("Accepted" in line or "Failed" in line for line in sshd.log)
    listed = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)
    assert (listed[0]["kind"], listed[0]["state"]) == ("ssh", "up")


def test_an_old_protocol_a_mail_server_a_silent_port_and_a_closed_one_are_down(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with (
        banner_server(b"SSH-1.5-OpenSSH_2.9\r\n") as old,
        banner_server(b"220 mail.test ESMTP\r\n") as mail,
        listening_port() as silent,
    ):
        add(conn, f"ssh://127.0.0.1:{old}", name="old", retries=0)
        add(conn, f"ssh://127.0.0.1:{mail}", name="mail", retries=0, timeout_s=0.3)
        add(conn, f"ssh://127.0.0.1:{silent}", name="silent", retries=0, timeout_s=0.3)
        add(conn, f"ssh://127.0.0.1:{refused_port()}", name="closed", retries=0)
        report = tick(db_path, valid_cert())
    causes = {r["name"]: r["cause"] for r in report.results_json()}
    assert causes == {
        "old": "ssh: protocol 1.5, not 2.0",
        "mail": "ssh: not an SSH server",
        "silent": "ssh: timeout",
        "closed": "ssh: connect refused",
    }


def test_lines_before_the_identification_are_skipped_and_1_99_speaks_ssh_2(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with banner_server(b"Welcome to the lab\r\nno login here\r\nSSH-1.99-Legacy_1\r\n") as port:
        add(conn, f"ssh://127.0.0.1:{port}", retries=0)
        result = only_result(tick(db_path, valid_cert()))
    assert (result["status"], result["cause"]) == ("up", None)


def test_an_identification_slower_than_max_latency_is_down(conn: sqlite3.Connection, db_path: str) -> None:
    with banner_server(b"SSH-2.0-Slow_1\r\n", delay_s=0.3) as port:
        add(conn, f"ssh://127.0.0.1:{port}", retries=0, max_latency_ms=100)
        result = only_result(tick(db_path, valid_cert()))
    assert result["status"] == "down" and result["latency_ms"] >= 300
    assert result["cause"] == f"slow: {result['latency_ms']} ms > 100 ms"


def test_under_block_private_a_loopback_ssh_server_is_refused_and_never_connected_to(
    sshd: Sshd, conn: sqlite3.Connection, db_path: str
) -> None:
    monitor = add(conn, f"ssh://127.0.0.1:{sshd.port}", retries=0)
    connections = sshd.count("Connection from")
    report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0, guard=AddressGuard()))
    cause = "refused by --block-private: ssh: blocked: 127.0.0.1 is not a public address"
    assert (report.refused, report.results) == ([(monitor, cause)], [])
    assert rollup(conn, monitor) == (0, 0)
    # the same monitor without the guard, in another minute: sshd logs its one connection
    assert only_result(tick(db_path, valid_cert()))["status"] == "up"
    assert sshd.logged("Connection from", times=connections + 1)
    assert sshd.count("Connection from") == connections + 1


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ssh://user@host.test", "ssh:// takes only a host and a port"),
        ("ssh://host.test/home", "ssh:// takes only a host and a port"),
        ("ssh://host.test?cmd=uptime", "ssh:// takes only a host and a port"),
    ],
)
def test_add_refuses_a_login_a_path_or_a_command(db_path: str, url: str, error: str) -> None:
    refused = runner.invoke(app, ["add", url, "--db", db_path])
    assert refused.exit_code == 2 and error in refused.stderr
