"""dns:// monitors: real ticks through the installed `monitor-tick` against a small
DNS server on 127.0.0.1 that answers from a table (tests/dns_server.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dns_server import DnsServer, dns_server  # noqa: F401 -- the fixture

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60)


def closed_udp_port() -> int:
    """A UDP port on 127.0.0.1 with nothing listening (the kernel answers port unreachable)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_answers_rcodes_and_expected_values_decide_up_and_down(tmp_path: Path, dns_server: DnsServer) -> None:  # noqa: F811
    db = str(tmp_path / "m.db")
    server = f"127.0.0.1:{dns_server.port}"
    checks = {
        "a": ("app.test?type=A", "up", None),
        "default-type": ("app.test?", "up", None),
        "expected": ("app.test?type=A&expect=192.0.2.11", "up", None),
        "unexpected": (
            "app.test?type=A&expect=192.0.2.99",
            "down",
            "dns: expected 192.0.2.99, got 192.0.2.10, 192.0.2.11",
        ),
        "aaaa": ("app.test?type=AAAA&expect=2001:db8::10", "up", None),
        "mx": ("app.test?type=mx&expect=10%20MAIL.app.test", "up", None),
        "txt": ("app.test?type=TXT&expect=v%3Dspf1%20-all", "up", None),
        "no-record": ("app.test?type=CNAME", "down", "dns: no CNAME record"),
        "nxdomain": ("missing.test?type=A", "down", "dns: NXDOMAIN"),
        "servfail": ("servfail.test?type=A", "down", "dns: SERVFAIL"),
        "silent": ("silent.test?type=A", "down", "dns: timeout"),
    }
    for name, (query, _, _) in checks.items():
        url = f"dns://{query}{'' if query.endswith('?') else '&'}server={server}"
        added = cli(db, "add", url, "--name", name, "--every", "1m", "--timeout", "1s", "--retries", "0")
        assert added.returncode == 0, (name, added.stderr)
    refused = cli(
        db,
        "add",
        f"dns://app.test?server=127.0.0.1:{closed_udp_port()}",
        "--name",
        "refused",
        "--every",
        "1m",
        "--timeout",
        "1s",
    )
    assert refused.returncode == 0, refused.stderr
    run = cli(db, "--json", "--budget", "5s", "--retry-delay", "0")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    results = {r["name"]: (r["kind"], r["status"], r["cause"]) for r in json.loads(run.stdout)["results"]}
    expected = {name: ("dns", status, cause) for name, (_, status, cause) in checks.items()}
    # (dnspython waits out its deadline past the kernel's port-unreachable over UDP)
    assert results == {**expected, "refused": ("dns", "down", "dns: timeout")}
    assert ("app.test.", "MX") in dns_server.queries and ("silent.test.", "A") in dns_server.queries
    # the query is settings, not secrets: list shows it whole
    listed = {row["name"]: row["url"] for row in json.loads(cli(db, "list", "--json").stdout)}
    assert listed["expected"] == f"dns://app.test?type=A&expect=192.0.2.11&server={server}"


def test_references_in_the_url_are_resolved_by_the_tick_and_its_cause_names_them_never_their_values(
    tmp_path: Path,
    dns_server: DnsServer,  # noqa: F811
) -> None:
    db = str(tmp_path / "m.db")
    url = f"dns://${{MT_TEST_NAME}}?type=A&server=127.0.0.1:{dns_server.port}&expect=${{MT_TEST_EXPECT}}"
    assert cli(db, "add", url, "--name", "app", "--every", "1m", "--retries", "0").returncode == 0
    env = {**os.environ, "MT_TEST_NAME": "app.test", "MT_TEST_EXPECT": "192.0.2.99"}
    run = subprocess.run(
        [MONITOR_TICK, "--json", "--retry-delay", "0", "--db", db], capture_output=True, text=True, timeout=60, env=env
    )
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert [(r["status"], r["cause"]) for r in json.loads(run.stdout)["results"]] == [
        ("down", "dns: expected ${MT_TEST_EXPECT}, got 192.0.2.10, 192.0.2.11")
    ]
    assert dns_server.queries == [("app.test.", "A")]
    listed = subprocess.run(
        [MONITOR_TICK, "list", "--db", db], capture_output=True, text=True, timeout=60, env=env
    ).stdout
    assert "dns: expected ${MT_TEST_EXPECT}" in listed and "192.0.2.99" not in run.stdout + listed


def test_a_slow_dns_answer_is_judged_by_max_latency_too(tmp_path: Path, dns_server: DnsServer) -> None:  # noqa: F811
    db = str(tmp_path / "m.db")
    url = f"dns://app.test?type=A&server=127.0.0.1:{dns_server.port}"
    assert cli(db, "add", url, "--name", "fast", "--every", "1m", "--max-latency", "2s").returncode == 0
    run = cli(db, "--json", "--budget", "5s")
    assert [(r["status"], r["cause"]) for r in json.loads(run.stdout)["results"]] == [("up", None)]


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        ("dns://app.test?type=A", "dns:// needs server=IP[:PORT], e.g. dns://example.org?type=A&server=1.1.1.1"),
        (
            "dns://app.test?server=ns1.example.org",
            "dns:// server is not an address: it needs server=IP[:PORT], e.g. server=1.1.1.1",
        ),
        ("dns://app.test?server=127.0.0.1:99999", "dns:// server port must be 1 to 65535"),
        ("dns://app.test?server=1.1.1.1&type=BOGUS", "dns:// name or type is not valid: UnknownRdatatype"),
        (
            "dns://app.test?server=1.1.1.1&type=ANY",
            "dns:// type must be a record type such as A, AAAA, MX or TXT, not a query type",
        ),
        ("dns://app.test?server=1.1.1.1&class=CH", "dns:// takes only type, server and expect in its query"),
        ("dns://app.test?server=1.1.1.1&expect=", "dns:// expect is empty"),
        (
            "dns://app.test:53?server=1.1.1.1",
            "dns:// takes a name and a query: dns://name?type=A&server=IP[:PORT][&expect=VALUE]",
        ),
        (
            "dns://app.test/path?server=1.1.1.1",
            "dns:// takes a name and a query: dns://name?type=A&server=IP[:PORT][&expect=VALUE]",
        ),
    ],
)
def test_add_refuses_a_dns_query_it_cannot_ask(tmp_path: Path, url: str, refusal: str) -> None:
    refused = cli(str(tmp_path / "m.db"), "add", url)
    assert (refused.returncode, refused.stderr) == (2, f"monitor-tick: {refusal}\n")
