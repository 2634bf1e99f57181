"""Our own limits are not their outage: a slow resolver, a full pool or the tick's budget
never turn into down results."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from monitor_tick.alerts import notify
from monitor_tick.publish import ping
from monitor_tick.run import tick
from monitor_tick.run.tick import TickOptions, run_tick
from tests.dns_server import SILENT, DnsServer
from tests.servers import LocalServer

MINUTE = 29_934_720
MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
DNS_DELAY_S = 0.2


@pytest.fixture
def slow_resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Names `*.slowdns.test` resolve to 127.0.0.1 after DNS_DELAY_S, as a slow resolver
    would; no real resolver is asked. Counts lookups per name."""
    real = socket.getaddrinfo
    lookups: dict[str, int] = {}
    lock = threading.Lock()

    def slow(host: object, port: object, *args: object, **kwargs: object) -> object:
        if isinstance(host, bytes):  # anyio passes IDNA-encoded names
            host = host.decode("ascii")
        if isinstance(host, str) and host.endswith(".slowdns.test"):
            with lock:
                lookups[host] = lookups.get(host, 0) + 1
            time.sleep(DNS_DELAY_S)  # the resolver's own latency, in its worker thread
            return real("127.0.0.1", port, *args, **kwargs)  # type: ignore[arg-type]
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    return lookups


def test_a_thousand_checks_behind_a_slow_resolver_produce_no_down_result(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, slow_resolver: dict[str, int]
) -> None:
    # 1,000 checks of 200 distinct hosts at 50 in flight, 1 s deadline. Behind asyncio's
    # default resolver pool (min(32, cores + 4) threads: 6 on 2 cores) a probe's lookup queues
    # behind up to 49 others (~1.7 s) and nearly all time out (972 of 1,000 when this test was
    # run without the fix); with the pool sized to the fan-out each waits for its own lookup.
    conn.execute("BEGIN")
    for n in range(1000):
        conn.execute(
            "INSERT INTO monitors (name, url, interval_sec, timeout_s, retries, created_at_ms) "
            "VALUES (?, ?, 60, 1, 0, 0)",
            (f"m{n}", f"http://host{n % 200}.slowdns.test:{local_server.port}/ok"),
        )
    conn.execute("COMMIT")
    report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, retry_delay_s=0, concurrency=50))
    assert report.summary is not None
    assert (report.summary.up, report.summary.down, report.summary.unknown) == (1000, 0, 0), {
        r.cause for r in report.results if r.status != "up"
    }
    assert local_server.hits["/ok"] == 1000
    assert len(slow_resolver) == 200


def test_the_connection_pool_never_makes_a_probe_wait(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    # 150 slow answers at 150 in flight: more than httpx's default pool (100 connections) would
    # allow at once, so with its default limits 50 probes would wait for a slot.
    conn.execute("BEGIN")
    for n in range(150):
        conn.execute(
            "INSERT INTO monitors (name, url, interval_sec, timeout_s, retries, created_at_ms) "
            "VALUES (?, ?, 60, 5, 0, 0)",
            (f"m{n}", local_server.url(f"/slow/300?n={n}")),
        )
    conn.execute("COMMIT")
    report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, retry_delay_s=0, concurrency=150))
    assert report.summary is not None and report.summary.up == 150


def test_a_resolver_that_never_answers_does_not_hold_the_tick(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = socket.getaddrinfo

    def stuck(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode("ascii") if isinstance(host, bytes) else host
        if name == "stuck.test":
            release.wait(60)  # a resolver that does not answer until the test ends
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", stuck)
    conn.execute(
        "INSERT INTO monitors (name, url, interval_sec, timeout_s, retries, created_at_ms) VALUES (?, ?, 60, 1, 0, 0)",
        ("stuck", "http://stuck.test/"),
    )
    ok = conn.execute(
        "INSERT INTO monitors (name, url, interval_sec, timeout_s, retries, created_at_ms) VALUES (?, ?, 60, 5, 0, 0)",
        ("ok", local_server.url("/ok")),
    ).lastrowid
    reports: list[object] = []
    tick = threading.Thread(target=lambda: reports.append(run_tick(TickOptions(db_path=db_path, minute=MINUTE))))
    try:
        tick.start()
        tick.join(30)  # bounded: without the fix the tick waits for the stuck lookup (60 s here)
        assert not tick.is_alive(), "the tick waited for a lookup its probe had given up on"
    finally:
        release.set()
        tick.join(60)
    (report,) = reports
    causes = {r.monitor_id: (r.status, r.cause) for r in report.results}  # type: ignore[attr-defined]
    assert causes[ok] == ("up", None)
    assert [c for m, c in causes.items() if m != ok] == [("down", "timeout")]


def test_a_resolver_that_never_answers_leaves_the_tick_and_its_process_at_once(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, tmp_path: Path
) -> None:
    """The installed command, whose system resolver asks a DNS server that never answers
    (tests/dns_server.py on a loopback address of its own, port 53, made this process's resolver
    by a resolv.conf bound over /etc/resolv.conf in a mount namespace of its own): the check of
    that name is down at its deadline, the other is up, and the process exits then, not when the
    resolver gives up (30 s)."""
    conn.execute(
        "INSERT INTO monitors (name, url, interval_sec, timeout_s, retries, created_at_ms) VALUES (?, ?, 60, 1, 0, 0)",
        ("silent", f"http://{SILENT.rstrip('.')}/"),
    )
    ok = conn.execute(
        "INSERT INTO monitors (name, url, interval_sec, timeout_s, retries, created_at_ms) VALUES (?, ?, 60, 5, 0, 0)",
        ("ok", local_server.url("/ok")),
    ).lastrowid
    resolver = "127.83.0.1"  # a loopback address of its own: its port 53 is free
    resolv_conf = tmp_path / "resolv.conf"
    resolv_conf.write_text(f"nameserver {resolver}\noptions timeout:30 attempts:1\n")
    with DnsServer({}, host=resolver, port=53) as dns:
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/resolv.conf && exec "$@"', str(resolv_conf)]
            + [MONITOR_TICK, "--db", db_path, "--minute", str(MINUTE), "--json", "--retry-delay", "0"],
            capture_output=True,
            text=True,
            timeout=20,  # bounded: a process that waited for the lookup would take 30 s
        )
    assert (done.returncode, done.stderr) == (0, "")
    causes = {r["id"]: (r["status"], r["cause"]) for r in json.loads(done.stdout)["results"]}
    assert causes == {ok: ("up", None), ok - 1: ("down", "timeout")}
    assert (SILENT, "A") in dns.queries or (SILENT, "AAAA") in dns.queries  # the lookup went there


def test_a_tick_ends_inside_its_minute_by_arithmetic() -> None:
    # the network phases share one deadline from the tick's start: the largest budget and the
    # canary fit it, and notifications take what is left of it (MIN_PHASE_S at least, or none)
    assert tick.MAX_BUDGET_S + tick.CANARY_TIMEOUT_S <= tick.NETWORK_DEADLINE_S
    assert notify.DELIVERY_BUDGET_S <= tick.NETWORK_DEADLINE_S
    # writes after probing wait for the lock until WRITE_DEADLINE_S; then the ping
    assert tick.NETWORK_DEADLINE_S <= tick.WRITE_DEADLINE_S
    assert tick.WRITE_DEADLINE_S + ping.PING_TIMEOUT_S < 60
