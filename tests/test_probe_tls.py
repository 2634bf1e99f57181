"""tls:// monitors and https:// --expires-within, against real TLS servers on 127.0.0.1 whose
certificates are generated here with chosen expiry dates, through the tick and a real SQLite file."""

from __future__ import annotations

import itertools
import json
import sqlite3
import ssl
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.probes import net
from monitor_tick.run.report import TickReport
from monitor_tick.run.rounds import DEFAULT_BUDGET_S
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import (
    LocalServer,
    TLSPair,
    cert_expiring_in,
    expired_cert,
    holding_server,
    refused_port,
    self_signed_cert,
    valid_cert,
    wrong_host_cert,
)
from tests.test_probe_tcp import listening_port

DAY_S = 86_400
runner = CliRunner()


_MINUTES = itertools.count()


def tick(db_path: str, pair: TLSPair, budget_s: float = DEFAULT_BUDGET_S) -> TickReport:
    """One tick of a recent minute, a later one each time (tests tick more than once a minute,
    and a forced rerun would record nothing twice), trusting the test CA."""
    trust = ssl.create_default_context(cafile=pair.ca_pem)
    minute = clock.minute_of_ms(clock.now_ms()) - 100 + next(_MINUTES)
    return run_tick(TickOptions(db_path=db_path, minute=minute, retry_delay_s=0, verify=trust, budget_s=budget_s))


def only_result(report: TickReport) -> dict[str, object]:
    (result,) = report.results_json()
    return result


def tls_url(server: LocalServer) -> str:
    return f"tls://127.0.0.1:{server.port}"


def test_a_certificate_expiring_within_the_threshold_is_down_with_days_left_and_date(
    conn: sqlite3.Connection, db_path: str
) -> None:
    pair = cert_expiring_in(3.5)
    with LocalServer(tls=pair.server_context) as server:
        monitor = add(conn, tls_url(server), retries=0)  # --expires-within defaults to 14 days
        result = only_result(tick(db_path, pair))
    cause = f"tls: expires in 3 days ({pair.not_after.date().isoformat()})"
    assert (result["kind"], result["status"], result["cause"], result["cert_days_left"]) == ("tls", "down", cause, 3)
    [(_, resolved_at_ms, incident_cause)] = store.incidents_for(conn, monitor)
    assert (resolved_at_ms, incident_cause) == (None, cause)
    (stored,) = conn.execute("SELECT cert_expires_at_ms FROM rollups WHERE monitor_id = ?", (monitor,)).fetchone()
    assert stored == int(pair.not_after.timestamp()) * 1000


def test_a_certificate_with_time_to_spare_is_up_and_list_and_report_show_its_days_left(
    conn: sqlite3.Connection, db_path: str
) -> None:
    pair = cert_expiring_in(200.5)
    with LocalServer(tls=pair.server_context) as server:
        monitor = add(conn, tls_url(server), name="cert", expires_within_sec=30 * DAY_S)
        result = only_result(tick(db_path, pair))
    assert (result["status"], result["cause"], result["cert_days_left"]) == ("up", None, 200)
    assert isinstance(result["latency_ms"], int) and rollup(conn, monitor) == (1, 0)
    date = pair.not_after.date().isoformat()

    listed = runner.invoke(app, ["list", "--db", db_path])
    assert listed.exit_code == 0
    assert f"cert expires in 200 days ({date})" in listed.stdout
    assert json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)[0]["cert_days_left"] == 200
    reported = json.loads(runner.invoke(app, ["report", "--json", "--db", db_path]).stdout)
    assert (reported[0]["name"], reported[0]["kind"], reported[0]["cert_days_left"]) == ("cert", "tls", 200)
    assert f"cert expires in 200 days ({date})" in runner.invoke(app, ["report", "--db", db_path]).stdout


def test_the_newest_check_decides_the_days_left_and_a_renewed_certificate_resolves_the_outage(
    conn: sqlite3.Connection, db_path: str
) -> None:
    soon, renewed = cert_expiring_in(2.5), cert_expiring_in(89.5)
    with LocalServer(tls=soon.server_context) as server:
        monitor = add(conn, tls_url(server), retries=0)
        assert only_result(tick(db_path, soon))["status"] == "down"
    with LocalServer(tls=renewed.server_context) as server:
        conn.execute("UPDATE monitors SET url = ? WHERE id = ?", (tls_url(server), monitor))
        assert only_result(tick(db_path, renewed))["cert_days_left"] == 89
    assert [resolved is not None for _, resolved, _ in store.incidents_for(conn, monitor)] == [True]
    listed = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)
    assert (listed[0]["state"], listed[0]["cert_days_left"]) == ("up", 89)


@pytest.mark.parametrize(
    ("make", "cause"),
    [
        (expired_cert, "tls: certificate expired"),
        (wrong_host_cert, "tls: certificate is for another host"),
        (self_signed_cert, "tls: self-signed certificate"),
    ],
)
def test_an_invalid_certificate_is_down_with_its_reason(
    conn: sqlite3.Connection, db_path: str, make: Callable[[], TLSPair], cause: str
) -> None:
    pair = make()
    with LocalServer(tls=pair.server_context) as server:
        add(conn, tls_url(server), retries=0)
        result = only_result(tick(db_path, pair))
    assert (result["status"], result["cause"], result["cert_days_left"]) == ("down", cause, None)


def test_a_closed_port_and_a_server_that_does_not_speak_tls_are_down(conn: sqlite3.Connection, db_path: str) -> None:
    with LocalServer() as plain_http:
        add(conn, f"tls://127.0.0.1:{refused_port()}", name="closed", retries=0)
        add(conn, tls_url(plain_http), name="plain", retries=0)
        report = tick(db_path, valid_cert())
    causes = {r["name"]: r["cause"] for r in report.results_json()}
    assert causes == {"closed": "tls: connect refused", "plain": "tls: not spoken by the server"}


def test_a_handshake_that_never_completes_is_down_at_the_monitors_deadline(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with listening_port() as port:
        add(conn, f"tls://127.0.0.1:{port}", retries=0, timeout_s=0.3)
        result = only_result(tick(db_path, valid_cert()))
    assert (result["status"], result["cause"]) == ("down", "tls: timeout")


def test_a_server_that_never_answers_the_close_holds_the_check_no_longer_than_its_timeout(
    conn: sqlite3.Connection, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The close (TLS close_notify, which a polite peer answers) waits within the check's one
    deadline, however long a goodbye may wait otherwise: a tick whose budget is shorter than
    that wait, but longer than the timeout, records the check."""
    monkeypatch.setattr(net, "CLOSE_WAIT_S", 60.0)  # a goodbye's own limit, beyond the budget
    pair = valid_cert()
    with holding_server(tls=pair.server_context) as port:
        monitor = add(conn, f"tls://127.0.0.1:{port}", retries=0, timeout_s=1)
        result = only_result(tick(db_path, pair, budget_s=5))
    assert (result["status"], result["cause"]) == ("up", None) and rollup(conn, monitor) == (1, 0)


def test_an_https_monitor_with_expires_within_is_down_only_when_its_certificate_is_too_close(
    conn: sqlite3.Connection, db_path: str
) -> None:
    pair = cert_expiring_in(3.5)
    with LocalServer(tls=pair.server_context) as server:
        strict = add(conn, server.url("/ok"), name="strict", retries=0, expires_within_sec=14 * DAY_S)
        lenient = add(conn, server.url("/ok"), name="lenient", retries=0, expires_within_sec=2 * DAY_S)
        failing = add(conn, server.url("/status/503"), name="failing", retries=0, expires_within_sec=2 * DAY_S)
        plain = add(conn, server.url("/ok"), name="plain", retries=0)
        report = tick(db_path, pair)
    results = {r["id"]: r for r in report.results_json()}
    assert results[strict]["cause"] == f"tls: expires in 3 days ({pair.not_after.date().isoformat()})"
    assert (results[strict]["status"], results[strict]["http_status"]) == ("down", 200)
    assert (results[lenient]["status"], results[lenient]["cert_days_left"]) == ("up", 3)
    # a failed status is the cause, and the certificate's days left are still recorded
    assert (results[failing]["cause"], results[failing]["cert_days_left"]) == ("status 503", 3)
    assert (results[plain]["status"], results[plain]["cert_days_left"]) == ("up", None)


def test_a_certificate_too_close_is_named_beside_the_other_failed_conditions(
    conn: sqlite3.Connection, db_path: str
) -> None:
    pair = cert_expiring_in(3.5)
    with LocalServer(tls=pair.server_context) as server:
        slow = add(
            conn, server.url("/slow/400"), name="slow", retries=0, max_latency_ms=150, expires_within_sec=14 * DAY_S
        )
        failing = add(conn, server.url("/status/503"), name="failing", retries=0, expires_within_sec=14 * DAY_S)
        report = tick(db_path, pair)
    results = {r["id"]: r for r in report.results_json()}
    expiry = f"tls: expires in 3 days ({pair.not_after.date().isoformat()})"
    assert results[slow]["cause"] == f"slow: {results[slow]['latency_ms']} ms > 150 ms; {expiry}"
    assert (results[failing]["cause"], results[failing]["cert_days_left"]) == (f"status 503; {expiry}", 3)
    listed = runner.invoke(app, ["list", "--db", db_path])
    assert listed.exit_code == 0 and listed.stdout.count(expiry) == 2
    assert "cert expires in" not in listed.stdout  # named once, in the cause
