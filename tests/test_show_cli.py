"""`show NAME|ID [--json]`: one monitor in full, through the installed command, after live ticks
against a real server and a real notification receiver on 127.0.0.1 (the clock moved by the test
offset)."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg

from monitor_tick.core import clock
from tests.commands import ok_at as ok
from tests.commands import run_at as cli
from tests.receivers import JsonReceiver
from tests.servers import LocalServer

T0_MS = clock.parse_iso_ms("2026-11-30T10:00:20Z")
M0 = clock.minute_of_ms(T0_MS)


def tick(db: str, minute: int) -> None:
    ok(db, clock.minute_start_ms(minute) + 1_000, "--retry-delay", "0")


def test_show_gives_settings_state_hours_incidents_and_deliveries(any_db: str, local_server: LocalServer) -> None:
    db = any_db  # a SQLite file, then a PostgreSQL database
    with JsonReceiver() as receiver:
        url = local_server.url("/status/503?token=s3cret")
        ok(db, T0_MS, "add", url, "--name", "api", "--every", "1m", "--retries", "0", "--alert-after", "1")
        ok(db, T0_MS, "notify", "add", receiver.apprise_url("/hook/secret-path"), "--monitor", "api")
        for minute in range(M0 + 1, M0 + 4):
            tick(db, minute)
        ok(db, clock.minute_start_ms(M0 + 3) + 30_000, "edit", "api", "--url", local_server.url("/ok"))
        tick(db, M0 + 4)
        assert receiver.titles() == ["DOWN: api", "UP: api"]
    now_ms = clock.minute_start_ms(M0 + 5) + 10_000
    detail = json.loads(ok(db, now_ms, "show", "api", "--json"))
    monitor = detail["monitor"]
    assert (monitor["id"], monitor["name"], monitor["state"], monitor["interval_sec"]) == (1, "api", "up", 60)
    assert monitor["next_check_ms"] == clock.minute_start_ms(M0 + 6)
    assert (monitor["expect_status"], monitor["retries"], monitor["alert_after_checks"]) == ("200-399", 0, 1)
    assert "grace_sec" not in monitor  # not an option of http monitors
    hours = detail["hours"]
    assert len(hours) == 24 and hours[-1]["hour_start_ms"] == clock.hour_start_ms(now_ms)
    assert (hours[-1]["checks"], hours[-1]["failures"]) == (4, 3)
    assert sum(h["checks"] for h in hours[:-1]) == 0
    (incident,) = detail["incidents"]
    assert (incident["cause"], incident["state"]) == ("status 503", "confirmed")
    # from the first down check to the up check: three minutes, give or take the ticks' start-up
    assert incident["started_at_ms"] // 60_000 == M0 + 1 and round(incident["duration_ms"] / 60_000) == 3
    assert [(d["kind"], d["state"], d["channel_id"]) for d in detail["deliveries"]] == [
        ("up", "sent", 1),
        ("down", "sent", 1),
    ]
    text = ok(db, now_ms, "show", "1")
    lines = text.splitlines()
    assert lines[0] == "monitor 1 (api)"
    assert "  every      1m" in lines
    assert "  alerts     --alert-after 1, --resolve-after 1, --remind none" in lines
    assert "  state      up; last check 2026-11-30 10:04 UTC" in lines
    # "in 50s", less the time the command took to start (the clock runs on in the subprocess)
    assert any(re.fullmatch(r"  next check 2026-11-30 10:06 UTC \(in (4\d|50)s\)", line) for line in lines), lines
    assert "  10:00     4 checks  3 failed" in lines
    duration = clock.format_duration_ms(incident["duration_ms"])
    assert f"  2026-11-30 10:01 UTC  for {duration}  confirmed  status 503" in lines
    assert any(line.startswith("  2026-11-30 10:04 UTC  up       channel 1 json://127.0.0.1:") for line in lines)
    assert "s3cret" not in text + json.dumps(detail) and "secret-path" not in text + json.dumps(detail)


def test_show_of_an_unknown_monitor_or_a_missing_database_is_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    run = cli(db, T0_MS, "show", "api")
    assert (run.returncode, run.stdout, run.stderr) == (1, "", f"monitor-tick: no database at {db}\n")
    assert not Path(db).exists()
    ok(db, T0_MS, "add", "http://127.0.0.1:9/", "--name", "web")
    run = cli(db, T0_MS, "show", "api")
    assert (run.returncode, run.stdout, run.stderr) == (1, "", "monitor-tick: no monitor 'api'\n")


def test_list_and_show_give_the_next_check_after_the_maintenance_windows(
    tmp_path: Path, local_server: LocalServer
) -> None:
    """The next check is the first minute the due query will select: not one held by a one-off
    window, a recurring one, or the owner's (2026-11-30 is a Monday)."""
    db = str(tmp_path / "m.db")
    url = local_server.url("/ok")
    ok(db, T0_MS, "owner", "add", "alice")
    ok(db, T0_MS, "add", url, "--name", "api", "--every", "1m")
    ok(db, T0_MS, "add", url, "--name", "web", "--every", "1m", "--owner", "alice")
    ok(db, T0_MS, "add", url, "--name", "closed", "--every", "1m")
    ok(
        db,
        T0_MS,
        "maintenance",
        "add",
        "--monitor",
        "api",
        "--from",
        "2026-11-30T09:00Z",
        "--until",
        "2026-11-30T10:10Z",
    )
    ok(db, T0_MS, "maintenance", "add", "--monitor", "api", "--daily", "10:10", "--for", "5m")
    ok(db, T0_MS, "maintenance", "add", "--owner", "alice", "--weekly", "mon@10:00", "--for", "1h")
    ok(db, T0_MS, "maintenance", "add", "--monitor", "closed", "--daily", "00:00", "--for", "24h")
    api_ms, web_ms = clock.parse_iso_ms("2026-11-30T10:15Z"), clock.parse_iso_ms("2026-11-30T11:00Z")
    listed = {row["name"]: row["next_check_ms"] for row in json.loads(ok(db, T0_MS, "list", "--json"))}
    assert listed == {"api": api_ms, "web": web_ms, "closed": None}
    assert json.loads(ok(db, T0_MS, "show", "api", "--json"))["monitor"]["next_check_ms"] == api_ms
    lines = ok(db, T0_MS, "show", "api").splitlines()
    assert any(line.startswith("  next check 2026-11-30 10:15 UTC (in 14m") for line in lines), lines
    assert "  next check none (every minute it is due falls in maintenance)" in ok(db, T0_MS, "show", "closed")
    # the ticks agree: api is first probed at 10:15
    due = [m for m in range(M0 + 1, M0 + 16) if json.loads(ok(db, clock.minute_start_ms(m) + 1_000, "--json"))["due"]]
    assert due == [clock.minute_of_ms(api_ms)]


def test_a_monitor_checked_from_one_location_shows_its_figures_derived_from_its_own_rollups(
    any_db: str, local_server: LocalServer
) -> None:
    db = any_db  # a SQLite file, then a PostgreSQL database
    for name, path in (("api", "/ok"), ("bad", "/status/503")):
        # (on PostgreSQL it warns that no host has ticked from home yet)
        assert (
            cli(
                db, T0_MS, "add", local_server.url(path), "--name", name, "--every", "1m", "--locations", "home"
            ).returncode
            == 0
        )
    for minute in range(M0 + 1, M0 + 4):
        ok(db, clock.minute_start_ms(minute) + 1_000, "--retry-delay", "0", "--location", "home")
    now_ms = clock.minute_start_ms(M0 + 5) + 10_000
    for name, failed in (("api", 0), ("bad", 3)):
        (place,) = json.loads(ok(db, now_ms, "show", name, "--json"))["locations"]
        assert (place["location"], place["checks"], place["failures"]) == ("home", 3, failed), name
        assert (place["latency_ms_avg"] is None) == (failed == 3), name
    # one named location: its hourly figures are its verdicts', derived, never stored twice
    assert _count(db, "SELECT count(*) FROM location_rollups") == 0
    assert _count(db, "SELECT count(*) FROM rollups") == 2


def _count(db: str, sql: str) -> int:
    if db.startswith("postgresql://"):
        with psycopg.connect(db) as raw:
            return int(raw.execute(sql).fetchone()[0])
    with closing(sqlite3.connect(db)) as conn:
        return int(conn.execute(sql).fetchone()[0])
