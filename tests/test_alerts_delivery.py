"""Alerts end to end: real sites and real notification receivers on 127.0.0.1 (Apprise's json://
target), a real SQLite file, the tick as cron runs it. Time moves with freezegun, never sleeps."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from freezegun import freeze_time

from monitor_tick import store
from monitor_tick.alerts import notify
from monitor_tick.core import clock
from monitor_tick.core.model import AlertSettings, Monitor
from monitor_tick.run import tick as tick_module
from monitor_tick.run.report import TickReport
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup, traced_writes
from tests.receivers import JsonReceiver
from tests.servers import LocalServer, refused_port, send_response


@pytest.fixture
def db_path(any_db: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return any_db


class Site:
    """A LocalServer whose paths answer with a status the test sets (200 by default)."""

    def __init__(self, server: LocalServer) -> None:
        self.server = server
        self.status: dict[str, int] = {}

        async def answer(reader: object, writer: object, path: str, method: str) -> None:
            await send_response(writer, self.status.get(path.split("?")[0], 200), "hello")  # type: ignore[arg-type]

        server.route("/app", answer)

    def url(self, name: str) -> str:
        return self.server.url(f"/app/{name}")

    def set(self, name: str, status: int) -> None:
        self.status[f"/app/{name}"] = status


@pytest.fixture
def site() -> Iterator[Site]:
    with LocalServer() as server:
        yield Site(server)


@pytest.fixture
def rx() -> Iterator[JsonReceiver]:
    with JsonReceiver() as receiver:
        yield receiver


def tick(db_path: str, when: str, **overrides: object) -> TickReport:
    with freeze_time(when, real_asyncio=True):
        return run_tick(TickOptions(db_path=db_path, retry_delay_s=0, **overrides))  # type: ignore[arg-type]


def minutes(start_minute: int, count: int) -> list[str]:
    """ISO times 5 s into `count` consecutive minutes of 2026-12-01, from 00:`start_minute`."""
    return [f"2026-12-01T00:{m:02d}:05Z" for m in range(start_minute, start_minute + count)]


def channel(conn: sqlite3.Connection, url: str, *, monitor: str | None = None, owner: str | None = None) -> int:
    return store.add_channel(conn, url, monitor_ref=monitor, owner_name=owner, created_at_ms=0)


def add_alerting(conn: sqlite3.Connection, url: str, name: str, **alert_settings: int) -> int:
    """An every-minute monitor, no retries, with these alert settings."""
    monitor = Monitor(id=0, name=name, kind="http", url=url, interval_sec=60, effective_interval_sec=60, retries=0)
    return store.add_monitor(conn, monitor, None, 0, AlertSettings(**alert_settings))


def deliveries(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    return conn.execute("SELECT state, attempts FROM deliveries ORDER BY event_id, channel_id").fetchall()


# --- confirmation and content -----------------------------------------------------------------


def test_a_stopped_service_gets_exactly_one_down_after_confirmation_and_one_up_when_it_returns(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    shop_url = site.url("shop").replace("http://", "http://admin:hunter2@") + "?key=s3cret"
    shop = add(conn, shop_url, name="shop", retries=0)
    channel(conn, rx.apprise_url("/hook/t0ken"))
    titles_after = []
    for when, status in zip(minutes(0, 7), [200, 503, 503, 503, 503, 200, 200], strict=True):
        site.set("shop", status)
        tick(db_path, when)
        titles_after.append(rx.titles())
    # told nothing at the first failed check; DOWN at the second; UP at the first up check
    assert titles_after[1] == [] and titles_after[2] == ["DOWN: shop"]
    assert titles_after[5] == titles_after[6] == ["DOWN: shop", "UP: shop"]
    down, up = rx.messages
    assert (down["type"], up["type"]) == ("failure", "success")
    assert down["message"].splitlines() == [
        "shop is down.",
        "",
        f"URL: {site.server.base_url.replace('http://', 'http://***@')}/app/shop?key=***",
        "Cause: status 503",
        "HTTP status: 503",
        "Down since: 2026-12-01T00:01:05Z",  # the first failed check, not the confirmation
    ]
    assert up["message"].splitlines()[0] == "shop is up again after 4m down."
    assert up["message"].splitlines()[-2:] == ["Up since: 2026-12-01T00:05:05Z", "Down for: 4m"]
    assert "hunter2" not in str(rx.messages) and "s3cret" not in str(rx.messages)
    assert rx.paths == ["/hook/t0ken", "/hook/t0ken"]
    assert store.incidents_for(conn, shop) == [
        (clock.parse_iso_ms("2026-12-01T00:01:05Z"), clock.parse_iso_ms("2026-12-01T00:05:05Z"), "status 503")
    ]


def test_a_refused_connection_says_so_and_that_no_http_status_came_back(
    rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    add(conn, f"http://127.0.0.1:{refused_port()}/", name="gone", retries=0)
    channel(conn, rx.apprise_url())
    for when in minutes(0, 2):
        tick(db_path, when)
    (down,) = rx.messages
    assert down["message"].splitlines()[3] in ("Cause: connect refused", "Cause: connect error")
    assert "HTTP status: none (no answer)" in down["message"].splitlines()


def test_a_blip_shorter_than_the_confirmation_tells_no_one_and_leaves_a_quiet_record(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    blip = add(conn, site.url("blip"), name="blip", retries=0)
    channel(conn, rx.apprise_url())
    for when, status in zip(minutes(0, 4), [503, 200, 503, 200], strict=True):
        site.set("blip", status)
        report = tick(db_path, when)
        assert report.summary is not None and report.summary.confirmed == []
    assert rx.posts == 0
    assert conn.execute(
        "SELECT state, resolved_at_ms IS NOT NULL FROM incidents WHERE monitor_id = ?", (blip,)
    ).fetchall() == [
        ("suspected", 1),
        ("suspected", 1),
    ]
    assert conn.execute("SELECT count(*) FROM incident_events").fetchone() == (0,)


def test_per_monitor_thresholds_confirm_and_resolve_later(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    monitor = add_alerting(conn, site.url("slow"), "slow", alert_after_checks=3, resolve_after_checks=2)
    channel(conn, rx.apprise_url())
    seen = []
    for when, status in zip(minutes(0, 7), [503, 503, 503, 200, 503, 200, 200], strict=True):
        site.set("slow", status)
        tick(db_path, when)
        seen.append(len(rx.messages))
    assert seen == [0, 0, 1, 1, 1, 1, 2]
    assert rx.titles() == ["DOWN: slow", "UP: slow"]
    assert store.incidents_for(conn, monitor)[0][:2] == (
        clock.parse_iso_ms("2026-12-01T00:00:05Z"),
        clock.parse_iso_ms("2026-12-01T00:06:05Z"),
    )


# --- never lost, never twice ------------------------------------------------------------------


def test_a_receiver_that_fails_twice_then_recovers_gets_exactly_one_delivery(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    add(conn, site.url("api"), name="api", retries=0)
    channel(conn, rx.apprise_url())
    site.set("api", 503)
    rx.fail_next(2)
    tick(db_path, "2026-12-01T00:00:05Z")
    tick(db_path, "2026-12-01T00:01:05Z")  # confirmed; first attempt fails
    assert (rx.posts, deliveries(conn)) == (1, [("pending", 1)])
    tick(db_path, "2026-12-01T00:01:45Z", force=True)  # before its retry time: not tried
    assert rx.posts == 1
    tick(db_path, "2026-12-01T00:02:05Z")  # retry after 1 minute fails
    assert (rx.posts, deliveries(conn)) == (2, [("pending", 2)])
    tick(db_path, "2026-12-01T00:03:05Z")  # backing off 2 minutes: not yet
    assert rx.posts == 2
    tick(db_path, "2026-12-01T00:04:05Z")  # delivered
    for when in minutes(5, 3):
        tick(db_path, when)
    assert rx.posts == 3 and rx.titles() == ["DOWN: api"]
    assert deliveries(conn) == [("sent", 3)]


def test_a_channel_down_for_longer_than_six_hours_is_given_up_with_one_warning(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    add(conn, site.url("api"), name="api", every_s=3600, aligned=True, retries=0)
    channel(conn, rx.apprise_url("/hook/secret-path"))
    site.set("api", 503)
    rx.fail_next(1000)
    warnings: list[str] = []
    for hour in range(9):
        report = tick(db_path, f"2026-12-01T{hour:02d}:00:05Z")
        # (a tick with nothing to send does not load the sender: delivery is None then)
        warnings += report.delivery.warnings if report.delivery else []
    assert len(warnings) == 1
    assert warnings[0].startswith("gave up notifying json://127.0.0.1:")
    assert "secret-path" not in warnings[0] and "of 'DOWN: api' after 7 attempts" in warnings[0]
    assert deliveries(conn) == [("failed", 7)]
    rx.fail_next(0)
    tick(db_path, "2026-12-01T09:00:05Z")
    assert rx.messages == []  # given up means given up


def test_overlapping_runs_never_send_the_same_event_twice(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    add_alerting(conn, site.url("api"), "api", alert_after_checks=1)
    add_alerting(conn, site.url("web"), "web", alert_after_checks=1)
    channel(conn, rx.apprise_url(), monitor="api")
    site.set("api", 503)
    # The first run writes api's event and starts sending it; the receiver holds the post open
    # while the next minute's run (web now down too) has deliveries of its own to claim.
    rx.hold()
    first: list[TickReport] = []
    runner = threading.Thread(target=lambda: first.append(tick(db_path, "2026-12-01T00:00:05Z")))
    runner.start()
    with JsonReceiver() as web_rx:
        channel(conn, web_rx.apprise_url(), monitor="web")
        assert rx.wait_for_posts(1)
        site.set("web", 503)
        second = tick(db_path, "2026-12-01T00:01:05Z", notify_timeout_s=2)
        rx.release()
        runner.join(30)
        assert web_rx.titles() == ["DOWN: web"]
    assert second.delivery is not None and second.delivery.sent == 1
    assert first[0].delivery is not None and first[0].delivery.sent == 1
    assert rx.posts == 1 and rx.titles() == ["DOWN: api"]
    assert deliveries(conn) == [("sent", 1), ("sent", 1)]


def test_a_hanging_channel_is_cut_off_at_its_deadline_and_the_message_retried(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    add_alerting(conn, site.url("api"), "api", alert_after_checks=1)
    channel(conn, rx.apprise_url())
    site.set("api", 503)
    rx.hang()
    report = tick(db_path, "2026-12-01T00:00:05Z", notify_timeout_s=0.3)
    assert report.delivery is not None and (report.delivery.sent, report.delivery.failed) == (0, 1)
    assert conn.execute("SELECT state, last_error FROM deliveries").fetchall() == [("pending", notify.TIMED_OUT)]
    rx.release()
    tick(db_path, "2026-12-01T00:01:05Z")
    assert rx.titles() == ["DOWN: api"] and deliveries(conn) == [("sent", 2)]


def test_pending_deliveries_go_out_on_a_tick_with_nothing_due(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    add(conn, site.url("api"), name="api", every_s=3600, aligned=True, retries=0)
    channel(conn, rx.apprise_url())
    site.set("api", 503)
    rx.fail_next(1)
    tick(db_path, "2026-12-01T00:00:05Z")
    tick(db_path, "2026-12-01T01:00:05Z")  # confirmed; the first attempt fails
    report = tick(db_path, "2026-12-01T01:01:05Z")  # nothing due this minute
    assert report.due == [] and report.delivery is not None and report.delivery.sent == 1
    assert rx.titles() == ["DOWN: api"]


def test_a_channel_hears_its_events_in_order_after_it_recovers(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    add_alerting(conn, site.url("api"), "api", alert_after_checks=1)
    channel(conn, rx.apprise_url())
    rx.fail_next(1)
    site.set("api", 503)
    tick(db_path, "2026-12-01T00:00:05Z")  # DOWN fails, waits a minute
    site.set("api", 200)
    tick(db_path, "2026-12-01T00:00:35Z", force=True)  # resolved: UP waits behind the DOWN
    assert rx.messages == []
    tick(db_path, "2026-12-01T00:01:05Z")
    assert rx.titles() == ["DOWN: api", "UP: api"]


# --- reminders, scope, storms -----------------------------------------------------------------


def test_reminders_repeat_every_period_while_the_incident_stays_open(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str
) -> None:
    add_alerting(conn, site.url("api"), "api", alert_after_checks=1, remind_every_sec=600)
    channel(conn, rx.apprise_url())
    site.set("api", 503)
    for minute in range(0, 31):
        if minute == 25:
            site.set("api", 200)
        tick(db_path, f"2026-12-01T00:{minute:02d}:05Z")
    assert rx.titles() == ["DOWN: api", "STILL DOWN: api", "STILL DOWN: api", "UP: api"]
    assert rx.messages[1]["message"].splitlines()[0] == "api is still down, for 10m now."


def test_channels_for_a_monitor_or_an_owner_hear_only_of_theirs(
    site: Site, conn: sqlite3.Connection, db_path: str
) -> None:
    store.add_owner(conn, "alice", "default", None)
    add(conn, site.url("a"), name="a", retries=0, owner="alice")
    add(conn, site.url("b"), name="b", retries=0)
    with JsonReceiver() as everyone, JsonReceiver() as alices, JsonReceiver() as b_only:
        channel(conn, everyone.apprise_url())
        channel(conn, alices.apprise_url(), owner="alice")
        channel(conn, b_only.apprise_url(), monitor="b")
        site.set("a", 503)
        site.set("b", 503)
        for when in minutes(0, 2):
            tick(db_path, when)
        assert sorted(everyone.titles()) == ["DOWN: a", "DOWN: b"]
        assert alices.titles() == ["DOWN: a"]
        assert b_only.titles() == ["DOWN: b"]


def test_a_storm_gives_each_channel_one_summary(site: Site, conn: sqlite3.Connection, db_path: str) -> None:
    names = [f"svc{i}" for i in range(7)]
    for name in names:
        add(conn, site.url(name), name=name, retries=0)
        site.set(name, 503)
    with JsonReceiver() as everyone, JsonReceiver() as one:
        channel(conn, everyone.apprise_url())
        channel(conn, one.apprise_url(), monitor="svc3")
        for when in minutes(0, 2):
            tick(db_path, when)
        assert everyone.titles() == ["DOWN: 7 monitors"]
        body = everyone.messages[0]["message"].splitlines()
        listed = [line.split(":")[0] for line in body[1:]]
        if store.is_postgres_url(db_path):  # in the order the minute's shares were written
            listed.sort()
        assert body[0] == "7 monitors are down:" and listed == [f"- {name}" for name in names]
        assert one.titles() == ["DOWN: svc3"]
        for name in names:
            site.set(name, 200)
        tick(db_path, "2026-12-01T00:02:05Z")
        assert everyone.titles() == ["DOWN: 7 monitors", "UP: 7 monitors"]
    assert conn.execute("SELECT DISTINCT state FROM deliveries").fetchall() == [("sent",)]


# --- our own outage is not theirs ---------------------------------------------------------------


@pytest.fixture
def offline_dns(monkeypatch: pytest.MonkeyPatch) -> str:
    """Names under .offline.test fail to resolve, as every name does from a host whose network is
    gone (no real resolver is asked). Returns the suffix."""
    real = socket.getaddrinfo

    def lookup(host: object, *args: object, **kwargs: object) -> object:
        name = host.decode("ascii") if isinstance(host, bytes) else host  # anyio passes IDNA bytes
        if isinstance(name, str) and name.endswith(".offline.test"):
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return ".offline.test"


def test_a_lost_network_opens_no_incident_and_tells_no_one(
    rx: JsonReceiver, conn: sqlite3.Connection, db_path: str, offline_dns: str
) -> None:
    # No name resolves, the canary's neither: as seen from a host whose network is gone.
    monitors = [add(conn, f"http://site{i}{offline_dns}/", name=f"m{i}", retries=0) for i in range(6)]
    channel(conn, rx.apprise_url())
    store.set_setting(conn, store.CANARY_SETTING, f"http://router{offline_dns}/")
    for when in minutes(0, 3):
        report = tick(db_path, when)
        assert report.network_lost and report.delivery is None
        assert report.summary is not None and (report.summary.down, report.summary.unknown) == (0, 6)
    assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (0,)
    assert conn.execute("SELECT count(*), sum(network_lost) FROM ticks").fetchone() == (3, 3)
    assert sum(store.report(conn, 0, 0)[i]["checks"] for i in range(len(monitors))) == 0
    assert rx.posts == 0


def test_a_refusing_site_is_the_sites_outage_not_ours(rx: JsonReceiver, conn: sqlite3.Connection, db_path: str) -> None:
    # A refused connection is an answer from the remote host: our network works.
    for i in range(6):
        add(conn, f"http://127.0.0.1:{refused_port()}/", name=f"m{i}", retries=0)
    channel(conn, rx.apprise_url())
    for when in minutes(0, 2):
        assert not tick(db_path, when).network_lost
    assert rx.titles() == ["DOWN: 6 monitors"]


def test_a_canary_that_answers_says_the_sites_really_are_down(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str, offline_dns: str
) -> None:
    for i in range(6):
        add(conn, f"http://site{i}{offline_dns}/", name=f"m{i}", retries=0)
    channel(conn, rx.apprise_url())
    store.set_setting(conn, store.CANARY_SETTING, site.url("canary"))
    for when in minutes(0, 2):
        assert not tick(db_path, when).network_lost
    assert rx.titles() == ["DOWN: 6 monitors"]


def test_a_failing_canary_marks_even_one_failed_check_as_our_own_outage(
    conn: sqlite3.Connection, db_path: str, offline_dns: str
) -> None:
    add(conn, f"http://only{offline_dns}/", name="only", retries=0)
    store.set_setting(conn, store.CANARY_SETTING, f"http://router{offline_dns}/")
    assert tick(db_path, "2026-12-01T00:00:05Z").network_lost
    assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (0,)


def test_a_failing_canary_never_sets_aside_a_check_of_this_host_itself(
    conn: sqlite3.Connection, db_path: str, offline_dns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This host's resolver is broken: `localhost` does not resolve either. A check of this host
    # never crossed a network, so its failure is this host's: down, whatever the canary says.
    lookup = socket.getaddrinfo

    def broken(host: object, *args: object, **kwargs: object) -> object:
        if host in ("localhost", b"localhost"):
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return lookup(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", broken)
    remote = add(conn, f"http://site{offline_dns}/", name="remote", retries=0)
    local = add(conn, f"http://localhost:{refused_port()}/", name="local", retries=0)
    # the host a reference names, as the tick resolved it
    monkeypatch.setenv("MT_TEST_LOCAL_HOST", "localhost")
    referenced = add(conn, f"http://${{MT_TEST_LOCAL_HOST}}:{refused_port()}/", name="referenced", retries=0)
    store.set_setting(conn, store.CANARY_SETTING, f"http://router{offline_dns}/")
    report = tick(db_path, "2026-12-01T00:00:05Z")
    assert report.network_lost
    assert {r.monitor_id: (r.status, r.cause) for r in report.results} == {
        remote: ("unknown", "network lost (dns)"),
        local: ("down", "dns"),
        referenced: ("down", "dns"),
    }
    assert rollup(conn, local) == (1, 1) and rollup(conn, remote) == (0, 0)


def test_each_host_may_have_its_own_canary_before_the_shared_one(
    site: Site, conn: sqlite3.Connection, db_path: str, offline_dns: str
) -> None:
    # one host's network is down (its own canary fails), another's is up (the shared one answers)
    add(conn, f"http://only{offline_dns}/", name="only", retries=0)
    store.set_setting(conn, store.CANARY_SETTING, site.url("canary"))
    store.set_setting(conn, store.canary_setting("cut-off"), f"http://router{offline_dns}/")
    assert tick(db_path, "2026-12-01T00:00:05Z", host_name="cut-off").network_lost
    assert not tick(db_path, "2026-12-01T00:01:05Z", host_name="connected").network_lost
    assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (1,)


# --- the cost of alerts when nothing happens ----------------------------------------------------


# SQLite only: it counts statements with SQLite's trace callback
@pytest.mark.parametrize("any_db", ["sqlite"], indirect=True)
def test_a_healthy_monitor_costs_one_rollup_upsert_and_nothing_else(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b", "c"):
        add(conn, site.url(name), name=name, retries=0)
    channel(conn, rx.apprise_url())
    tick(db_path, "2026-12-01T00:00:05Z")
    writes = traced_writes(monkeypatch)
    tick(db_path, "2026-12-01T00:01:05Z")
    assert writes == [("INSERT INTO", "ticks")] + [("INSERT INTO", "rollups")] * 3 + [("UPDATE", "ticks")]


@pytest.mark.parametrize(("status", "imported"), [(200, False), (503, True)])
def test_apprise_is_imported_only_when_there_is_something_to_send(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str, status: int, imported: bool
) -> None:
    add_alerting(conn, site.url("api"), "api", alert_after_checks=1)
    channel(conn, rx.apprise_url())
    site.set("api", status)
    script = (
        "import sys\n"
        "from monitor_tick.run.tick import TickOptions, run_tick\n"
        f"report = run_tick(TickOptions(db_path={db_path!r}, retry_delay_s=0))\n"
        "print(report.due and report.results[0].status, 'apprise' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent.parent
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["up" if status == 200 else "down", str(imported)]
    assert done.stderr == ""
    assert len(rx.messages) == int(imported)


def test_notifications_that_do_not_fit_the_ticks_network_deadline_wait_for_the_next_tick(
    site: Site, rx: JsonReceiver, conn: sqlite3.Connection, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_alerting(conn, site.url("api"), "api", alert_after_checks=1)
    channel(conn, rx.apprise_url())
    site.set("api", 503)
    with monkeypatch.context() as late:
        late.setattr(tick_module, "MIN_PHASE_S", tick_module.NETWORK_DEADLINE_S + 1)  # never that much left
        report = tick(db_path, "2026-12-01T00:00:05Z")
    assert report.summary is not None and len(report.summary.confirmed) == 1
    assert report.delivery is None and rx.posts == 0 and deliveries(conn) == [("pending", 0)]
    tick(db_path, "2026-12-01T00:01:05Z")
    assert rx.titles() == ["DOWN: api"]
