"""Several locations over one PostgreSQL database: one shared simulation of 3
locations with 2 hosts each over 12 minutes, their clocks skewed by up to 20 s, against an
origin on 127.0.0.1 that fails by the location its User-Agent names. Each case below is
checked against that one run (a module-scoped fixture): the hosts tick in-process (run_tick
under a frozen clock), but for the host killed mid-probe, a real `monitor-tick` process.

The plan, minute by minute (M + n):
- every minute: /all (checked from all), /free (no locations) are up everywhere;
- n >= 2: /partial and /notify fail from eu only (one location: partial);
- n 2..4: /two fails from eu and us (an outage), up again from n = 5;
- /var has a header ${SIM_TOKEN} that home's hosts lack; it fails from eu and us from n = 2;
- n 4..5: home's network is lost (its canary and *.lost.test do not resolve); /c503 answers 503
  from home and eu then (answered failures count);
- home's hosts are dead for n 7..10; /dead (checked from eu and home) fails from eu from n = 8;
- n = 10: eu-1 is killed while probing /slow; eu-2 takes its share over;
- n = 11: every host (home back) ticks in the same second; /same fails everywhere.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick import __version__, store
from monitor_tick.alerts import policy
from monitor_tick.cli.app import app
from monitor_tick.core import clock, quorum
from monitor_tick.core.model import monitor_state
from monitor_tick.publish import metrics, statuspage
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.postgres import Server
from tests.reliability.test_fleet import MONITOR_TICK
from tests.servers import LocalServer

MINUTE = 29_934_720  # 2026-12-01T00:00Z
MINUTES = 12
HOSTS = {
    "eu-1": ("eu", -15),
    "eu-2": ("eu", 5),
    "us-1": ("us", -5),
    "us-2": ("us", 10),
    "home-1": ("home", -20),
    "home-2": ("home", 0),
}
DEAD = range(7, 11)  # minutes home's hosts do not tick
LOST = (4, 5)  # minutes home's network is lost
KILLED = 10  # the minute eu-1 is killed mid-probe


@dataclass
class Origin:
    """The site: answers by path, minute (set by the driver) and the User-Agent's location."""

    minute: int = 0
    hits: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    agents: set[str] = field(default_factory=set)
    slow_started: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def status(self, path: str, where: str) -> int:
        n = self.minute
        failing = {
            "/partial": n >= 2 and where == "eu",
            "/notify": n >= 2 and where == "eu",
            "/two": 2 <= n <= 4 and where in ("eu", "us"),
            "/var": n >= 2 and where in ("eu", "us"),
            "/c503": n in LOST and where in ("home", "eu"),
            "/dead": n >= 8 and where == "eu",
            "/same": n == 11,
        }
        return 503 if failing.get(path, False) else 200


def _location(agent: str) -> str:
    marker = "(location "
    return agent[agent.index(marker) + len(marker) : -1] if marker in agent else quorum.DEFAULT


def _serve(origin: Origin) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 -- http.server's name
            agent = self.headers.get("User-Agent", "")
            where, path = _location(agent), self.path.split("?")[0]
            with origin.lock:
                origin.hits[(path, where, origin.minute)] += 1
                origin.agents.add(agent)
                first_slow = (
                    path == "/slow" and where == "eu" and origin.minute == KILLED and not origin.slow_started.is_set()
                )
                if first_slow:
                    origin.slow_started.set()
            if first_slow:
                time.sleep(8)  # eu-1 is killed meanwhile
            status = origin.status(path, where)
            try:
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:  # the host killed mid-probe is gone: nobody to answer
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@dataclass
class Simulation:
    url: str
    origin: Origin
    monitors: dict[str, int]
    orphaned: set[int]  # eu's buckets of KILLED that eu-1 held when it was killed
    same_second: list[int]  # the minute each host's tick in the same second reported
    canaries: dict[str, int]  # host -> network_lost, as `locations` read it after home's network was lost


def _at(minute: int, skew_s: float) -> dt.datetime:
    ms = clock.minute_start_ms(MINUTE + minute) + clock.s_to_ms(25 + skew_s)
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _options(url: str, host: str) -> TickOptions:
    return TickOptions(db_path=url, host_name=host, location=HOSTS[host][0], retry_delay_s=0, budget_s=5, lease_s=10)


def _tick(url: str, host: str, minute: int, monkeypatch: pytest.MonkeyPatch) -> None:
    if host.startswith("home"):
        monkeypatch.delenv("SIM_TOKEN", raising=False)
    else:
        monkeypatch.setenv("SIM_TOKEN", "secret")
    with freeze_time(_at(minute, HOSTS[host][1]), real_asyncio=True):
        run_tick(_options(url, host))


@pytest.fixture(scope="module")
def sim(pg_server: Server) -> Iterator[Simulation]:
    origin = Origin()
    server = _serve(origin)
    port = server.server_address[1]
    url = pg_server.fresh_database()
    base = f"http://127.0.0.1:{port}"
    conn = store.open_db(url)
    plans: dict[str, dict[str, Any]] = {
        "all": {},
        "free": {"locations": None},
        "partial": {},
        "notify": {"notify_partial": 1},
        "two": {},
        "var": {"headers": "X-Token: ${SIM_TOKEN}"},
        "c503": {},
        "lostnet": {"url": f"http://site.lost.test:{port}/lostnet", "locations": "home,us"},
        "dead": {"locations": "eu,home"},
        "slow": {},
        "same": {"alert_after_checks": 1},
    }
    monitors = {}
    for name, plan in plans.items():
        places = {k: plan.pop(k) for k in ("locations", "notify_partial") if k in plan}
        alert_after = plan.pop("alert_after_checks", 2)
        monitors[name] = add(conn, plan.pop("url", f"{base}/{name}"), name=name, timeout_s=6.0, **plan)
        conn.execute(
            "UPDATE monitors SET locations = ?, notify_partial = ?, alert_after_checks = ?, first_check_minute = NULL "
            "WHERE id = ?",
            (places.get("locations", quorum.ALL), places.get("notify_partial", 0), alert_after, monitors[name]),
        )
    for host in ("home-1", "home-2"):  # home's own canary: it fails while home's network is lost
        store.set_setting(conn, store.canary_setting(host), f"http://canary.lost.test:{port}/all")
    conn.close()
    real = socket.getaddrinfo
    lost = threading.Event()

    def lookup(host: object, *args: Any, **kwargs: Any) -> Any:
        name = host.decode("ascii") if isinstance(host, bytes) else host
        if isinstance(name, str) and name.endswith(".lost.test"):
            if lost.is_set():
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    orphaned: set[int] = set()
    same_second: list[int] = []
    canaries: dict[str, int] = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(socket, "getaddrinfo", lookup)
        for n in range(MINUTES):
            origin.minute = n
            hosts = sorted(HOSTS, key=lambda h: HOSTS[h][1])  # in the order their clocks read the minute
            if n in DEAD:
                hosts = [h for h in hosts if not h.startswith("home")]
            if n == KILLED:
                orphaned = _kill_eu_1(url, origin)
                hosts.remove("eu-1")
            if n == MINUTES - 1:
                same_second = _same_second(url, n, monkeypatch)
                continue
            for host in hosts:
                if host.startswith("home") and n in LOST:
                    lost.set()
                _tick(url, host, n, monkeypatch)
                lost.clear()
            if n == LOST[-1]:
                canaries = {
                    h["host"]: h["network_lost"] for p in _read(url, store.places.list_locations) for h in p.hosts
                }
    yield Simulation(url, origin, monitors, orphaned, same_second, canaries)
    server.shutdown()
    server.server_close()


def _kill_eu_1(url: str, origin: Origin) -> set[int]:
    """eu-1, a real process, killed while it probes /slow; then its leases run out."""
    offset_ms = clock.minute_start_ms(MINUTE + KILLED) + clock.s_to_ms(25 + HOSTS["eu-1"][1]) - clock.now_ms()
    env = {**os.environ, "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(offset_ms), "SIM_TOKEN": "secret"}
    command = [MONITOR_TICK, "--db", url, "--host-name", "eu-1", "--location", "eu"]
    process = subprocess.Popen([*command, "--budget", "5s", "--lease", "7s", "--retry-delay", "0"], env=env)
    try:
        assert origin.slow_started.wait(timeout=30)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    held = {
        int(bucket)
        for (bucket,) in _query(
            url,
            "SELECT bucket FROM location_claims WHERE minute = ? AND host = 'eu-1' AND finished_at_ms IS NULL",
            MINUTE + KILLED,
        )
    }
    # until PostgreSQL's clock (the one that judges leases) is past every lease eu-1 held
    assert _wait(
        lambda: (
            not _query(
                url,
                "SELECT 1 FROM location_claims WHERE finished_at_ms IS NULL "
                "AND lease_until_ms >= CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)",
            )
        ),
        30,
    )
    return held


def _read(url: str, read: Any) -> Any:
    conn = store.open_db(url)
    try:
        return read(conn)
    finally:
        conn.close()


def _query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = store.open_db(url)
    try:
        return [tuple(row) for row in conn.execute(sql, params).fetchall()]
    finally:
        conn.close()


def _wait(ready: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _same_second(url: str, n: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every host ticks minute n in the same second, released together by a barrier."""
    monkeypatch.setenv("SIM_TOKEN", "secret")  # home's hosts have it now: one environment for the threads
    barrier = threading.Barrier(len(HOSTS))
    minutes: list[int] = []
    errors: list[BaseException] = []

    def host(name: str) -> None:
        try:
            barrier.wait(timeout=30)
            minutes.append(run_tick(_options(url, name)).minute)
        except BaseException as exc:  # noqa: BLE001 -- said by the caller
            errors.append(exc)

    # freezegun leaves threads on the real clock: the clock module's test offset moves them all
    at_ms = int(_at(n, 0).timestamp() * 1000)
    monkeypatch.setattr(clock, "_TEST_OFFSET_MS", 0)
    monkeypatch.setattr(clock, "_TEST_OFFSET_MS", at_ms - clock.now_ms())
    threads = [threading.Thread(target=host, args=(name,)) for name in HOSTS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return minutes


def _rows(sim: Simulation, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return _query(sim.url, sql, *params)


def _incidents(sim: Simulation, name: str) -> list[tuple[Any, ...]]:
    """(kind, state, started minute offset, resolved?, cause) of a monitor's incidents."""
    return [
        (kind, state, clock.minute_of_ms(started) - MINUTE, resolved is not None, cause)
        for kind, state, started, resolved, cause in _rows(
            sim,
            "SELECT kind, state, started_at_ms, resolved_at_ms, cause FROM incidents WHERE monitor_id = ? ORDER BY id",
            sim.monitors[name],
        )
    ]


def _events(sim: Simulation, name: str) -> list[tuple[str, str]]:
    """(event kind, incident kind) of a monitor's events: what is notified."""
    return _rows(
        sim,
        "SELECT e.kind, i.kind FROM incident_events e JOIN incidents i ON i.id = e.incident_id "
        "WHERE i.monitor_id = ? ORDER BY e.id",
        sim.monitors[name],
    )


def _location_checks(sim: Simulation, name: str) -> dict[str, tuple[int, int]]:
    """location -> (checks, failures) of a monitor, from its hourly figures."""
    return _figures(sim.url, sim.monitors[name])


def _figures(url: str, monitor: int) -> dict[str, tuple[int, int]]:
    places = _read(url, lambda conn: store.locationsql.location_figures(conn, monitor, 0))
    return {place["location"]: (place["checks"], place["failures"]) for place in places}


def _alive(location: str) -> list[int]:
    return [n for n in range(MINUTES) if not (location == "home" and n in DEAD)]


# ---------------------------------------------------------------------------------------------
# The cases


def test_a_monitor_checked_from_all_is_checked_once_per_due_minute_in_each_location(sim: Simulation) -> None:
    for where in ("eu", "us", "home"):
        for n in _alive(where):
            # eu-1 was killed probing its share of KILLED: eu-2 probed it again (and recorded it once)
            expected = {1} if not (where == "eu" and n == KILLED) else {1, 2}
            assert sim.origin.hits[("/all", where, n)] in expected, (where, n)
        assert _location_checks(sim, "all")[where] == (len(_alive(where)), 0)
    assert sum(sim.origin.hits[("/all", "home", n)] for n in DEAD) == 0  # a dead location records nothing
    assert rollup_of(sim, "all") == (MINUTES, 0)  # one verdict a minute


def rollup_of(sim: Simulation, name: str) -> tuple[int, int]:
    conn = store.open_db(sim.url)
    try:
        return rollup(conn, sim.monitors[name])
    finally:
        conn.close()


def test_a_monitor_without_locations_is_checked_once_by_the_whole_fleet(sim: Simulation) -> None:
    for n in range(MINUTES):
        assert sum(sim.origin.hits[("/free", where, n)] for where in ("eu", "us", "home")) == 1, n
    assert rollup_of(sim, "free") == (MINUTES, 0)
    assert _location_checks(sim, "free") == {}  # today's path: no per-location rows


def test_requests_from_a_named_location_say_where_they_come_from(sim: Simulation) -> None:
    assert {f"monitor-tick/{__version__} (location {where})" for where in ("eu", "us", "home")} <= sim.origin.agents
    assert all(agent.startswith("monitor-tick/") for agent in sim.origin.agents)


def test_one_location_failing_gives_partial_with_no_incident_and_no_notification(sim: Simulation) -> None:
    assert [i[:4] for i in _incidents(sim, "partial")] == [("partial", "confirmed", 2, False)]
    assert _incidents(sim, "partial")[0][4].startswith("down from eu (")
    assert _events(sim, "partial") == []
    rows = _state_rows(sim)
    assert rows[sim.monitors["partial"]] == "partial"
    assert rollup_of(sim, "partial") == (MINUTES, 0)  # up by the quorum rule...
    assert _location_checks(sim, "partial")["eu"] == (MINUTES, MINUTES - 2)  # ...and down from eu


def test_a_partial_episode_is_notified_once_with_notify_partial(sim: Simulation) -> None:
    assert _events(sim, "notify") == [("down", "partial")]
    conn = store.open_db(sim.url)
    try:
        kinds = [
            row[0]
            for row in conn.execute(
                "SELECT CASE WHEN i.kind = 'partial' THEN 'partial' ELSE e.kind END FROM incident_events e "
                "JOIN incidents i ON i.id = e.incident_id WHERE i.monitor_id = ?",
                (sim.monitors["notify"],),
            )
        ]
    finally:
        conn.close()
    assert kinds == ["partial"] and policy.TITLES["partial"] == "PARTIAL"


def _state_rows(sim: Simulation) -> dict[int, str]:
    conn = store.open_db(sim.url)
    try:
        rows = store.list_monitors(conn, clock.minute_start_ms(MINUTE + MINUTES))
    finally:
        conn.close()
    return {row["id"]: monitor_state(row) for row in rows}


def test_two_locations_failing_give_one_incident_and_one_notification_naming_both(sim: Simulation) -> None:
    incidents = _incidents(sim, "two")
    assert [i[:4] for i in incidents] == [("down", "confirmed", 2, True)]
    cause = incidents[0][4]
    assert cause.startswith("down from eu (") and ", us (" in cause and cause.endswith("; home sees it up"), cause
    assert _events(sim, "two") == [("down", "down"), ("up", "down")]  # and recovery: one notification
    assert rollup_of(sim, "two") == (MINUTES, 3)


def test_a_dead_location_then_a_second_failing_opens_the_outage_naming_who_did_not_check(sim: Simulation) -> None:
    incidents = _incidents(sim, "dead")
    assert incidents and incidents[0][:3] == ("down", "confirmed", 8)
    assert incidents[0][4].endswith("; seen from 1 of 2 locations; home did not check it"), incidents[0][4]
    assert _events(sim, "dead")[0] == ("down", "down")


def test_a_location_that_cannot_probe_does_not_hold_back_an_outage_the_others_see(sim: Simulation) -> None:
    incidents = _incidents(sim, "var")
    # opened by the minute's second write from a failing location, before home's tick closed it
    assert incidents[0][:3] == ("down", "confirmed", 2)
    # home could not probe it until minute 11, when its hosts share the others' environment
    assert _location_checks(sim, "var")["home"] == (1, 0)
    assert _rows(
        sim,
        "SELECT count(*) FROM incident_events e JOIN incidents i ON i.id = e.incident_id "
        "WHERE i.monitor_id = ? AND e.kind = 'down'",
        sim.monitors["var"],
    ) == [(1,)]


def test_a_host_killed_mid_probe_has_its_share_taken_over_within_its_own_location_only(sim: Simulation) -> None:
    assert sim.orphaned  # eu-1 died holding eu's buckets
    claims = _rows(
        sim, "SELECT location, bucket, host, finished_at_ms FROM location_claims WHERE minute = ?", MINUTE + KILLED
    )
    for location, bucket, host, finished in claims:
        assert host.startswith(location), (location, bucket, host)
        assert finished is not None
        if location == "eu" and bucket in sim.orphaned:
            assert host == "eu-2"
    assert sim.origin.hits[("/slow", "eu", KILLED)] == 2 and sim.origin.hits[("/slow", "us", KILLED)] == 1
    assert _location_checks(sim, "slow")["eu"] == (MINUTES, 0)  # eu's check of it recorded once


def test_a_failed_canary_in_one_location_sets_aside_only_its_network_failures(sim: Simulation) -> None:
    # home's 503s were answers: they count (down from eu and home: an outage)
    assert _location_checks(sim, "c503")["home"] == (len(_alive("home")), len(LOST))
    assert _incidents(sim, "c503")[0][:3] == ("down", "confirmed", LOST[0])
    # its checks that never reached the site while its network was lost are set aside
    assert _location_checks(sim, "lostnet") == {
        "us": (MINUTES, 0),
        "home": (len(_alive("home")) - len(LOST), 0),
    }
    assert _incidents(sim, "lostnet") == []


def test_every_host_writing_the_same_minute_in_the_same_second_decides_the_transition_once(sim: Simulation) -> None:
    assert len(sim.same_second) == len(HOSTS) and set(sim.same_second) == {MINUTE + MINUTES - 1}
    assert [i[:4] for i in _incidents(sim, "same")] == [("down", "confirmed", MINUTES - 1, False)]
    assert _events(sim, "same") == [("down", "down")]
    assert rollup_of(sim, "same") == (MINUTES, 1)
    assert _rows(
        sim,
        "SELECT closed, verdict FROM quorum_minutes WHERE monitor_id = ? AND minute = ?",
        sim.monitors["same"],
        MINUTE + MINUTES - 1,
    ) == [(1, "down")]


def test_locations_lists_each_location_with_its_hosts(sim: Simulation) -> None:
    conn = store.open_db(sim.url)
    try:
        found = store.places.list_locations(conn)
    finally:
        conn.close()
    assert [(p.name, [h["host"] for h in p.hosts]) for p in found] == [
        ("eu", ["eu-1", "eu-2"]),
        ("home", ["home-1", "home-2"]),
        ("us", ["us-1", "us-2"]),
    ]
    last = {h["host"]: h["last_minute"] for p in found for h in p.hosts}
    assert last["eu-1"] == MINUTE + MINUTES - 1 and last["home-2"] == MINUTE + MINUTES - 1
    # while home's network was lost, its hosts' canary said so (the host of home's share asked it)
    assert sim.canaries["home-1"] == 1 and sim.canaries["eu-1"] == sim.canaries["us-1"] == 0
    assert {h["network_lost"] for p in found for h in p.hosts} == {0}  # and no longer
    listed = CliRunner().invoke(app, ["locations", "--db", sim.url, "--json"])
    assert listed.exit_code == 0, listed.output
    eu, home = json.loads(listed.stdout)[:2]
    assert (home["location"], home["last_minute"]) == ("home", MINUTE + MINUTES - 1)
    assert {h["canary"] for h in eu["hosts"]} == {"none"}  # eu's hosts have no canary
    # the minute of the newest tick of home-1 that had checks to judge its network by
    assert MINUTE + LOST[-1] < home["hosts"][0].pop("canary_minute") <= MINUTE + MINUTES - 1
    assert home["hosts"][0] == {
        "host": "home-1",
        "last_minute": MINUTE + MINUTES - 1,
        "last_tick": "2026-12-01T00:11:00Z",
        "canary": "ok",
    }
    table = CliRunner().invoke(app, ["locations", "--db", sim.url]).output.splitlines()
    assert table[0].split() == ["LOCATION", "HOST", "LAST", "MINUTE", "(UTC)", "CANARY"]
    assert [line.split()[:2] for line in table[1:]] == [[h.split("-")[0], h] for h in sorted(HOSTS)]


def test_partial_is_a_state_of_its_own_on_the_status_page_and_in_the_metrics(sim: Simulation) -> None:
    now_ms = clock.minute_start_ms(MINUTE + MINUTES) + 5_000
    page = _read(sim.url, lambda conn: statuspage.collect(conn, now_ms))
    states = {m.name: m.state for m in page.monitors}
    assert states["partial"] == "partial" and states["all"] == "up"
    html = statuspage.render_html(page)
    assert 'data-state="partial"' in html and ">Partial outage<" in html
    # uptime by the quorum's verdicts, and each location's own figures beside them
    (partial_page,) = [m for m in page.monitors if m.name == "partial"]
    assert [place[:3] for place in partial_page.places] == [("eu", 12, 10), ("home", 8, 0), ("us", 12, 0)]
    assert '<span data-location="eu">eu: 2 of 12 up, ' in html
    facts = metrics.TickFacts(now_ms, 0, 0, 0, 0, 0)
    text = _read(sim.url, lambda conn: metrics.collect(conn, facts))
    partial = sim.monitors["partial"]
    # monitor_tick_up stays the quorum's verdict; each location's own is beside it
    assert f'monitor_tick_up{{id="{partial}",monitor="partial"}} 1\n' in text
    assert f'monitor_tick_location_up{{id="{partial}",monitor="partial",location="eu"}} 0\n' in text
    assert f'monitor_tick_location_up{{id="{partial}",monitor="partial",location="us"}} 1\n' in text
    partials = sum(state == "partial" for state in states.values())
    assert partials >= 2 and f'monitor_tick_monitors{{state="partial"}} {partials}\n' in text


def test_show_gives_each_location_s_figures_and_the_partial_episode(
    sim: Simulation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clock, "_TEST_OFFSET_MS", 0)
    monkeypatch.setattr(clock, "_TEST_OFFSET_MS", clock.minute_start_ms(MINUTE + MINUTES) - clock.now_ms())
    shown = CliRunner().invoke(app, ["show", "partial", "--db", sim.url])
    assert shown.exit_code == 0, shown.output
    assert "  locations  all, quorum 2 of 3\n" in shown.output
    # (whether home's first minute back counted depends on which location wrote last in that second)
    assert "  state      partial: down from eu (status 503); " in shown.output
    # per location: checks, failures and the latency of its up checks (in ms; frozen clocks measure 0)
    assert re.search(r"\n  eu +12 checks  10 failed  \d+ms\n", shown.output), shown.output
    assert re.search(r"\n  home +8 checks  0 failed  \d+ms\n", shown.output), shown.output
    assert "  partial confirmed  down from eu (status 503); " in shown.output


def test_report_gives_uptime_by_the_quorum_and_each_location_s_latency(
    sim: Simulation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clock, "_TEST_OFFSET_MS", 0)
    monkeypatch.setattr(clock, "_TEST_OFFSET_MS", clock.minute_start_ms(MINUTE + MINUTES) - clock.now_ms())
    shown = CliRunner().invoke(app, ["report", "--since", "1d", "--db", sim.url, "--json"])
    assert shown.exit_code == 0, shown.output
    rows = {row["name"]: row for row in json.loads(shown.output)}
    partial = rows["partial"]
    # the monitor's own figures are the quorum's verdicts: partial minutes count as up
    assert partial["failures"] == 0 and partial["checks"] > 0
    places = {place["location"]: place for place in partial["locations"]}
    assert places["eu"]["checks"] == 12 and places["eu"]["failures"] == 10
    assert places["home"]["checks"] == 8 and places["home"]["failures"] == 0
    assert all(isinstance(place["avg_latency_ms"], float) for name, place in places.items() if name != "eu")
    assert "locations" not in rows["free"]  # a monitor without locations: today's figures alone
    table = CliRunner().invoke(app, ["report", "--since", "1d", "--db", sim.url])
    assert re.search(r"\n +from eu +12 checks +10 failed +\d+ ms\n", table.output), table.output


def test_a_force_rerun_records_only_the_checks_its_location_could_not_decide(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    quick = add(conn, local_server.url("/ok/quick"), name="quick", timeout_s=5.0)
    slow = add(conn, local_server.url("/slow/1500"), name="slow", timeout_s=5.0)
    conn.execute("UPDATE monitors SET locations = 'eu', first_check_minute = NULL")
    conn.close()

    def eu_1(*, force: bool, budget_s: float) -> None:
        with freeze_time(_at(0, 0), real_asyncio=True):
            options = TickOptions(db_path=url, host_name="eu-1", location="eu", retry_delay_s=0, budget_s=budget_s)
            run_tick(options._replace(force=force, lease_s=10))

    eu_1(force=False, budget_s=0.5)  # the budget cuts /slow off: unknown, not recorded
    assert _location_rollups(url) == {quick: (1, 0)}
    eu_1(force=True, budget_s=5)  # the rerun probes both, and records only /slow's check
    assert _location_rollups(url) == {quick: (1, 0), slow: (1, 0)}
    eu_1(force=True, budget_s=5)  # and a second rerun nothing
    assert _location_rollups(url) == {quick: (1, 0), slow: (1, 0)}
    # the minute nobody could decide is decided by the rerun's check, once
    assert _query(url, "SELECT monitor_id, checks FROM rollups ORDER BY monitor_id") == [(quick, 1), (slow, 1)]
    assert local_server.hits["/ok/quick"] == 3 and local_server.hits["/slow/1500"] == 3


def _location_rollups(url: str) -> dict[int, tuple[int, int]]:
    """monitor -> (checks, failures) from location eu, the one location of the test (its figures
    are its verdicts': location_figures derives them from its rollups)."""
    monitors = [int(m) for (m,) in _query(url, "SELECT id FROM monitors")]
    return {monitor: _figures(url, monitor)["eu"] for monitor in monitors if _figures(url, monitor)}
