"""Endpoints that misbehave: each gives a down result with a clear cause, within its deadline,
and none of them holds up the rest of the tick."""

from __future__ import annotations

import sqlite3
import ssl
import tracemalloc

import pytest

from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.run import tick as run_tick_module
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import (
    LocalServer,
    TLSPair,
    expired_cert,
    refused_port,
    self_signed_cert,
    valid_cert,
    wrong_host_cert,
)

MINUTE = 29_934_720


def probe_one(url: str, verify: object = True, **settings: object) -> ProbeResult:
    monitor = Monitor(id=1, name="m", kind="http", url=url, interval_sec=60, effective_interval_sec=60, **settings)  # type: ignore[arg-type]

    options = TickOptions("unused.db", verify=verify, retry_delay_s=0)
    return run_tick_module._probe([monitor], options, 0, {})[0]


@pytest.mark.parametrize(
    ("path", "cause"),
    [
        ("/hang", "timeout"),  # accepts, never answers
        ("/drip", "timeout reading body"),  # headers, then a byte a second
        ("/endless-chunked", "timeout reading body"),
        ("/huge-length", "timeout reading body"),
        ("/redirect-loop", "too many redirects"),
        ("/reset", "connection reset"),
        ("/garbage", "protocol error"),
        ("/close-mid-body", "protocol error"),
    ],
)
def test_a_misbehaving_endpoint_is_down_with_a_clear_cause(local_server: LocalServer, path: str, cause: str) -> None:
    result = probe_one(local_server.url(path), timeout_s=1.0)
    assert (result.status, result.cause) == ("down", cause)


def test_a_refused_connection_is_down(local_server: LocalServer) -> None:
    assert probe_one(f"http://127.0.0.1:{refused_port()}/", timeout_s=2.0).cause == "connect refused"


def test_a_name_that_does_not_resolve_is_down_with_dns(unresolvable: str) -> None:
    assert probe_one(f"http://{unresolvable}/", timeout_s=2.0).cause == "dns"


@pytest.mark.parametrize(
    ("make_cert", "cause"),
    [
        (self_signed_cert, "tls: self-signed certificate"),
        (expired_cert, "tls: certificate expired"),
        (wrong_host_cert, "tls: certificate is for another host"),
    ],
)
def test_bad_certificates_are_down_with_a_tls_cause(make_cert: object, cause: str) -> None:
    pair: TLSPair = make_cert()  # type: ignore[operator]
    trusted = valid_cert()  # the client trusts the test CA, so only the defect itself fails
    with LocalServer(tls=pair.server_context) as server:
        result = probe_one(server.url("/ok"), verify=trusted.client_context(), timeout_s=3.0)
    assert (result.status, result.cause) == ("down", cause)


def test_a_valid_certificate_is_up() -> None:
    pair = valid_cert()
    with LocalServer(tls=pair.server_context) as server:
        result = probe_one(server.url("/ok"), verify=pair.client_context(), timeout_s=3.0)
    assert result.status == "up"


def test_an_endless_body_does_not_grow_memory(local_server: LocalServer) -> None:
    tracemalloc.start()
    try:
        result = probe_one(local_server.url("/endless-chunked"), timeout_s=1.5, keyword="never-there")
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.cause == "keyword missing"  # looked for in the first mebibyte, and no further
    assert peak_bytes < 8 * 1024 * 1024  # the 1 MiB we keep, plus the client's own buffers


def test_hanging_hosts_hold_their_own_slots_only(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    """200 due, 20 of them hang: the tick ends within one deadline (plus a margin) of the time
    it takes without them, and the other 180 are recorded correctly."""
    healthy = [add(conn, local_server.url(f"/slow/20?n={n}"), name=f"ok{n}", timeout_s=3.0) for n in range(180)]
    baseline = run_tick(TickOptions(db_path=db_path, minute=MINUTE, retry_delay_s=0.2))
    hanging = [add(conn, local_server.url(f"/hang?n={n}"), name=f"hang{n}", timeout_s=3.0) for n in range(20)]
    report = run_tick(TickOptions(db_path=db_path, minute=MINUTE + 1, retry_delay_s=0.2))
    assert report.summary is not None and (report.summary.up, report.summary.down) == (180, 20)
    assert all(rollup(conn, m) == (2, 0) for m in healthy)
    assert all(rollup(conn, m) == (1, 1) for m in hanging)
    causes = {r.cause for r in report.results if r.monitor_id in hanging}
    assert causes == {"timeout"}
    # one deadline (3 s), not two: a timed-out attempt is not retried, and no hang holds a batch
    assert report.duration_ms < baseline.duration_ms + 3_000 + 2_000, (baseline.duration_ms, report.duration_ms)
    assert local_server.hits["/hang"] == 20  # each hanging host was tried once


def test_a_probe_cut_off_by_the_ticks_budget_is_unknown_not_down(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    fine = add(conn, local_server.url("/ok"))
    stuck = add(conn, local_server.url("/hang"), timeout_s=25.0)
    report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, retry_delay_s=0, budget_s=1.0))
    by_id = {r.monitor_id: r for r in report.results}
    assert by_id[fine].status == "up"
    assert (by_id[stuck].status, by_id[stuck].cause) == ("unknown", "cut off by the tick's time budget")
    assert rollup(conn, stuck) == (0, 0)
    assert conn.execute("SELECT count(*) FROM incidents").fetchone()[0] == 0
    assert conn.execute("SELECT unknown FROM ticks WHERE minute = ?", (MINUTE,)).fetchone() == (1,)


def test_tls_trust_failures_are_never_silently_accepted() -> None:
    pair = self_signed_cert()
    with LocalServer(tls=pair.server_context) as server:
        result = probe_one(server.url("/ok"), verify=ssl.create_default_context(), timeout_s=3.0)
    assert result.status == "down" and result.cause is not None and result.cause.startswith("tls")
