"""A real outage of every monitor at once is reported; only positive evidence that our own
network is down -- a failed canary -- sets checks aside."""

from __future__ import annotations

import json
import socket
import sqlite3
import sys
from pathlib import Path

import pytest
from freezegun import freeze_time

from monitor_tick import store
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add
from tests.hostile_origin import tick_without_network
from tests.receivers import JsonReceiver
from tests.servers import LocalServer

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")


def test_when_the_one_domain_of_all_monitors_stops_resolving_incidents_open_and_alerts_go_out(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten services on one home server, all under one domain: the domain's DNS breaks (a cause
    that also looks like our own lost network) and there is no canary to tell otherwise."""
    real = socket.getaddrinfo
    broken = False

    def lookup(host: object, *args: object, **kwargs: object) -> object:
        name = host.decode("ascii") if isinstance(host, bytes) else host  # anyio passes IDNA bytes
        if isinstance(name, str) and name.endswith(".home.test"):
            if broken:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return real("127.0.0.1", *args, **kwargs)  # type: ignore[arg-type]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    monitors = [
        add(conn, f"http://app{n}.home.test:{local_server.port}/ok", name=f"app{n}", retries=0) for n in range(10)
    ]
    with JsonReceiver() as rx:
        store.add_channel(conn, rx.apprise_url(), monitor_ref=None, owner_name=None, created_at_ms=0)
        for n, when in enumerate(("00:00:05", "00:01:05", "00:02:05")):
            broken = n > 0
            with freeze_time(f"2026-12-01T{when}Z", real_asyncio=True):
                report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0))
            assert not report.network_lost
        assert rx.titles() == ["DOWN: 10 monitors"]
    incidents = conn.execute("SELECT monitor_id, state, cause FROM incidents ORDER BY monitor_id").fetchall()
    assert incidents == [(m, "confirmed", "dns") for m in monitors]


def test_a_lost_network_with_a_failing_canary_is_still_set_aside(db_path: str, local_server: LocalServer) -> None:
    """The tick runs in an empty network namespace: no name resolves and no address is reached
    from it, so every probe and the canary fail to reach their host. A check of this host itself
    (127.0.0.1, whose loopback is down there too) never crossed a network: it stays down."""
    conn = store.open_db(db_path)
    try:
        for n in range(10):
            add(conn, f"http://app{n}.lost.invalid/", name=f"app{n}", retries=0)
        local = add(conn, local_server.url("/ok?local"), name="local", retries=0)
        store.set_setting(conn, store.CANARY_SETTING, "http://router.lost.invalid/")
    finally:
        conn.close()
    done = tick_without_network(db_path)
    summary = json.loads(done.stdout)
    assert (summary["network_lost"], summary["down"], summary["unknown"], summary["opened"]) == (True, 1, 10, 1)
    assert [(r["name"], r["status"], r["cause"]) for r in summary["results"] if r["status"] == "down"] == [
        ("local", "down", "connect error")
    ]
    assert done.stderr == (
        "monitor-tick: network looks down from here: 10 of 11 checks failed to reach their host "
        "(dns, connect error); counted as unknown, no incidents opened for them, nobody notified\n"
    )
    assert local_server.hits.total == 0  # nothing left the namespace
    conn = store.open_db(db_path)
    try:
        assert conn.execute("SELECT monitor_id FROM incidents").fetchall() == [(local,)]
    finally:
        conn.close()


def invalid_names_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names under .invalid fail to resolve (no real resolver is asked)."""
    real = socket.getaddrinfo

    def lookup(host: object, *args: object, **kwargs: object) -> object:
        name = host.decode("ascii") if isinstance(host, bytes) else host
        if isinstance(name, str) and name.endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)


@pytest.mark.parametrize("canary_status", [404, 503])
def test_a_canary_that_answers_with_an_error_proves_the_network_works(
    conn: sqlite3.Connection,
    db_path: str,
    local_server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    canary_status: int,
) -> None:
    """The canary answered (an error page, but an answer): our network works, so a name that
    does not resolve and a page that answers 503 are both the sites' own outages."""
    invalid_names_fail(monkeypatch)
    broken_page = add(conn, local_server.url("/status/503"), name="page", retries=0)
    no_name = add(conn, "http://nonexistent.invalid/", name="name", retries=0)
    store.set_setting(conn, store.CANARY_SETTING, local_server.url(f"/status/{canary_status}?canary"))
    with freeze_time("2026-12-01T00:00:05Z", real_asyncio=True):
        report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0))
    assert not report.network_lost
    assert [r.target for r in local_server.requests if "?" in r.target] == [f"/status/{canary_status}?canary"]
    assert {(r.monitor_id, r.status, r.cause) for r in report.results} == {
        (broken_page, "down", "status 503"),
        (no_name, "down", "dns"),
    }


def test_a_lost_network_sets_aside_only_the_checks_that_never_reached_their_host(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The canary's name does not resolve (our resolver is gone), and so does one site's; a
    site that answered 503 all the same was reached: its outage is real and stays down."""
    invalid_names_fail(monkeypatch)
    broken_page = add(conn, local_server.url("/status/503"), name="page", retries=0)
    no_name = add(conn, "http://site.invalid/", name="name", retries=0)
    store.set_setting(conn, store.CANARY_SETTING, "http://router.invalid/")
    with freeze_time("2026-12-01T00:00:05Z", real_asyncio=True):
        report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0))
    assert report.network_lost
    assert {(r.monitor_id, r.status, r.cause) for r in report.results} == {
        (broken_page, "down", "status 503"),
        (no_name, "unknown", "network lost (dns)"),
    }
    assert conn.execute("SELECT monitor_id, cause FROM incidents").fetchall() == [(broken_page, "status 503")]


@pytest.mark.parametrize(
    "url", ["postgresql://app@db.invalid/app", "mysql://app@db.invalid/shop", "redis://:pw@cache.invalid/1"]
)
def test_a_lost_network_sets_aside_a_database_check_that_never_reached_its_host(
    conn: sqlite3.Connection, db_path: str, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    """A database's name does not resolve, nor does the canary's: the check is set aside like
    an http one, whatever its kind's prefix (`redis: dns`)."""
    invalid_names_fail(monkeypatch)
    monitor = add(conn, url, retries=0)
    store.set_setting(conn, store.CANARY_SETTING, "http://router.invalid/")
    with freeze_time("2026-12-01T00:00:05Z", real_asyncio=True):
        report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0))
    assert report.network_lost
    kind = url.partition(":")[0]
    assert [(r.monitor_id, r.status, r.cause) for r in report.results] == [
        (monitor, "unknown", f"network lost ({kind}: dns)")
    ]
    assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (0,)


def test_when_the_one_home_server_dies_incidents_open_and_alerts_go_out(conn: sqlite3.Connection, db_path: str) -> None:
    """Ten services on one host, no canary: the host goes away (its connections are refused)."""
    home = LocalServer().start()
    monitors = [add(conn, home.url(f"/ok?n={n}"), name=f"app{n}", retries=0) for n in range(10)]
    with JsonReceiver() as rx:
        store.add_channel(conn, rx.apprise_url(), monitor_ref=None, owner_name=None, created_at_ms=0)
        for n, when in enumerate(("00:00:05", "00:01:05", "00:02:05")):
            if n == 1:
                home.stop()
            with freeze_time(f"2026-12-01T{when}Z", real_asyncio=True):
                report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0))
            assert not report.network_lost
        assert rx.titles() == ["DOWN: 10 monitors"]
    incidents = conn.execute("SELECT monitor_id, state, cause FROM incidents ORDER BY monitor_id").fetchall()
    assert incidents == [(m, "confirmed", "connect refused") for m in monitors]
