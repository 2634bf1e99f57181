"""Several hosts, one PostgreSQL database, no coordinator: the same cron line on three hosts
probes every monitor exactly as its schedule says, shares the work, survives a host killed or
stopped mid-probe. Each host is an installed `monitor-tick` process whose clock is moved with
the clock module's test offset (skewed by up to 20 s), against a counting server. Scaled down:
a short budget and lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from monitor_tick import store
from monitor_tick.core import clock, schedule
from tests.conftest import add, rollup
from tests.postgres import Server
from tests.servers import LocalServer

MINUTE = 29_934_720  # 2026-12-01T00:00Z
MONITOR_TICK = os.path.join(os.path.dirname(sys.executable), "monitor-tick")
FAST = ["--budget", "3s", "--lease", "5s", "--retry-delay", "0"]


def host(url: str, name: str, minute: int, *, skew_s: float = 0, settings: list[str] = FAST) -> subprocess.Popen[str]:
    """One host's cron line for `minute`: its clock reads 25 s into the minute, plus `skew_s`."""
    offset_ms = clock.minute_start_ms(minute) + clock.s_to_ms(25 + skew_s) - clock.now_ms()
    env = {**os.environ, "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(offset_ms)}
    command = [MONITOR_TICK, "--db", url, "--host-name", name, *settings]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def hosts_json(url: str) -> list[dict[str, object]]:
    env = {**os.environ, "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(clock.minute_start_ms(MINUTE + 30) - clock.now_ms())}
    done = subprocess.run(
        [MONITOR_TICK, "hosts", "--db", url, "--since", "1h", "--json"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def recorded(url: str, monitors: list[int]) -> dict[int, tuple[int, int]]:
    """monitor -> (checks, failures) recorded."""
    conn = store.open_db(url)
    try:
        return {monitor: rollup(conn, monitor) for monitor in monitors}
    finally:
        conn.close()


def claimed_by(url: str, name: str, *, unfinished: bool = False) -> set[int]:
    """The buckets of MINUTE whose claim `name` holds or finished (only holds: `unfinished`).
    (A run finishes buckets with nothing due in them at once: 16 monitors fill 16 of 64.)"""
    conn = store.open_db(url)
    try:
        rows = conn.execute(
            "SELECT bucket FROM claims WHERE minute = ? AND host = ? AND (finished_at_ms IS NULL OR ? = 0)",
            (MINUTE, name, unfinished),
        ).fetchall()
    finally:
        conn.close()
    return {int(row[0]) for row in rows}


def wait_for_leases_to_expire(url: str, table: str = "claims") -> None:
    """Until PostgreSQL's clock (the one that judges leases) is past every lease held (in `table`:
    claims, or location_claims)."""
    conn = store.open_db(url)
    try:
        deadline = time.monotonic() + 30
        while conn.execute(
            f"SELECT count(*) FROM {table} WHERE finished_at_ms IS NULL "
            "AND lease_until_ms >= CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)"
        ).fetchone()[0]:
            assert time.monotonic() < deadline, "a lease never expired"
            time.sleep(0.1)
    finally:
        conn.close()


def test_three_hosts_over_22_minutes_probe_every_monitor_exactly_per_schedule(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    intervals = [60, 60, 60, 120, 120, 180, 300, 300, 600]
    monitors = {}
    for n, every in enumerate(intervals * 3):
        monitor = add(
            conn, local_server.url(f"/ok/m{n}"), name=f"m{n}", every_s=every, aligned=n % 4 == 0, timeout_s=2.0
        )
        monitors[monitor] = (f"/ok/m{n}", every // 60, n % 4 == 0)
    conn.close()
    minutes = range(MINUTE, MINUTE + 22)
    # h1 stops half way, h3 starts half way; their clocks are 20 s and 10 s behind h2's
    plan = {"h1": (minutes[:11], -20), "h2": (minutes, 0), "h3": (minutes[11:], -10)}
    for minute in minutes:
        running = [host(url, name, minute, skew_s=skew) for name, (when, skew) in plan.items() if minute in when]
        for code, out, err in map(finish, running):
            assert code == 0 and out == "" and err == "", (minute, err)
    counted = recorded(url, list(monitors))
    for monitor, (path, period, aligned) in monitors.items():
        expected = sum(schedule.is_due(m, monitor, period, aligned) for m in minutes)
        assert expected > 0
        assert local_server.hits[path] == expected, (monitor, path)
        assert counted[monitor] == (expected, 0)
    ran = Counter(row["host"] for row in hosts_json(url))
    assert set(ran) == {"h1", "h2", "h3"} and ran["h1"] <= 11 and ran["h3"] <= 11


def test_three_hosts_started_together_share_a_minute_whose_probes_take_seconds(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    for n in range(store.BUCKETS):  # one monitor in each bucket
        add(conn, local_server.url(f"/slow/400?m={n}"), name=f"m{n}", timeout_s=3.0)
    conn.close()
    # a budget long enough that no host reaches the end game (taking all that is left) while
    # the others still claim: about 15 rounds of 400 ms between them
    settings = ["--budget", "10s", "--lease", "15s", "--retry-delay", "0"]
    running = [host(url, name, MINUTE, skew_s=-n, settings=settings) for n, name in enumerate(("a", "b", "c"))]
    for code, _, err in map(finish, running):
        assert code == 0 and err == ""
    assert local_server.hits["/slow/400"] == store.BUCKETS  # 64 probes of 400 ms: about 9 s for one host
    checks = {row["host"]: row["checks"] for row in hosts_json(url)}
    assert sum(checks.values()) == store.BUCKETS
    assert all(checks.get(name, 0) >= 0.2 * store.BUCKETS for name in ("a", "b", "c")), checks
    env = {**os.environ, "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(clock.minute_start_ms(MINUTE + 5) - clock.now_ms())}
    table = subprocess.run([MONITOR_TICK, "hosts", "--db", url], capture_output=True, text=True, env=env).stdout
    lines = table.splitlines()
    heading = ["MINUTE", "(UTC)", "HOST", "SHARE", "BUCKETS", "UNFINISHED", "TOOK", "OVER", "CHECKS", "SECONDS"]
    assert lines[0].split() == heading
    assert [line.split()[3] for line in lines[1:]] == ["a", "b", "c"]
    assert all(line.startswith("2026-12-01 00:00 UTC") for line in lines[1:])


def _slow_minute(pg_server: Server, local_server: LocalServer) -> tuple[str, list[int]]:
    url = pg_server.fresh_database()
    conn = store.open_db(url)
    monitors = [add(conn, local_server.url(f"/slow/400?m={n}"), name=f"m{n}", timeout_s=2.0) for n in range(16)]
    conn.close()
    return url, monitors


def test_a_host_killed_mid_probe_has_its_buckets_taken_over_once_its_lease_is_over(
    pg_server: Server, local_server: LocalServer
) -> None:
    url, monitors = _slow_minute(pg_server, local_server)
    doomed = host(url, "doomed", MINUTE)
    assert local_server.hits.wait_for("/slow/400", timeout=20)  # it has claimed buckets and is probing
    doomed.send_signal(signal.SIGKILL)
    assert finish(doomed)[0] == -signal.SIGKILL
    orphaned = claimed_by(url, "doomed", unfinished=True)
    assert orphaned  # it died holding buckets it was probing
    wait_for_leases_to_expire(url)
    code, out, err = finish(host(url, "survivor", MINUTE, skew_s=3))
    assert code == 0 and err == ""
    assert orphaned <= claimed_by(url, "survivor")  # taken over
    assert set(recorded(url, monitors).values()) == {(1, 0)}  # each recorded once
    rows = {r["host"]: r for r in hosts_json(url)}
    # the buckets taken over count for both: the host that never finished them, and the survivor
    assert (rows["doomed"]["unfinished"], rows["survivor"]["took_over"]) == (len(orphaned), len(orphaned))
    assert rows["survivor"]["unfinished"] == 0 and rows["doomed"]["took_over"] == 0
    assert rows["doomed"]["buckets"] + rows["survivor"]["buckets"] == store.BUCKETS + len(orphaned)


def test_a_host_stopped_past_its_lease_writes_nothing_for_the_buckets_taken_over(
    pg_server: Server, local_server: LocalServer
) -> None:
    url, monitors = _slow_minute(pg_server, local_server)
    paused = host(url, "paused", MINUTE)
    try:
        assert local_server.hits.wait_for("/slow/400", timeout=20)
        paused.send_signal(signal.SIGSTOP)
        wait_for_leases_to_expire(url)
        held = claimed_by(url, "paused", unfinished=True)
        assert held
        code, _, err = finish(host(url, "other", MINUTE, skew_s=3))
        assert code == 0 and err == ""
    finally:
        paused.send_signal(signal.SIGCONT)
    code, out, err = finish(paused)
    assert code == 0 and out == "", err
    assert held <= claimed_by(url, "other")  # taken over, every one...
    assert set(recorded(url, monitors).values()) == {(1, 0)}  # ...and the stopped host's results for them dropped
    rows = {r["host"]: r for r in hosts_json(url)}
    assert (rows["paused"]["unfinished"], rows["other"]["took_over"]) == (len(held), len(held))
    assert rows["paused"]["buckets"] + rows["other"]["buckets"] == store.BUCKETS + len(held)
