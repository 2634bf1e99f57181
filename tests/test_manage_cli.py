"""Changing what is monitored without losing history, through the installed `monitor-tick`
command against real servers on 127.0.0.1 and a real SQLite file: `edit`, `plan`/`owner`
`list/edit/remove`, `maintenance list/remove`, ids never given twice, `remove` saying what went."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from monitor_tick import store
from monitor_tick.core import clock
from tests.commands import created_or_nothing
from tests.servers import LocalServer

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
START = 29_934_720  # 2026-12-01T00:00Z


def cli(db: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )


def ok(db: str, *args: str, **env: str) -> str:
    run = cli(db, *args, **env)
    assert run.returncode == 0 and created_or_nothing(run.stderr, db), (args, run.stderr)
    return run.stdout


def date_back(db: str, minute: int = START) -> None:
    """Replayed minutes come before the monitors were added: date them back to `minute`."""
    conn = store.open_db(db)
    conn.execute("UPDATE monitors SET created_at_ms = ?", (clock.minute_start_ms(minute),))
    conn.close()


def test_edit_changes_settings_in_place_keeps_the_history_and_says_what_changed(
    any_db: str, local_server: LocalServer
) -> None:
    db = any_db  # a SQLite file, then a PostgreSQL database
    assert ok(db, "add", local_server.url("/status/503"), "--name", "api", "--every", "1m", "--retries", "0") == "1\n"
    date_back(db)
    for minute in range(START, START + 3):
        ok(db, "--minute", str(minute))
    out = ok(db, "edit", "api", "--url", local_server.url("/keyword/hello"), "--keyword", "hello", "--every", "2m")
    assert out == (
        f"monitor 1 (api): --url {local_server.url('/status/503')} -> {local_server.url('/keyword/hello')}, "
        "--every 1m -> 2m, --keyword none -> hello\n"
    )
    for minute in range(START + 3, START + 7):
        ok(db, "--minute", str(minute))
    assert local_server.hits["/keyword/hello"] == 2  # every 2 minutes now (phase 1 % 2: odd minutes)
    conn = store.open_db(db)
    assert conn.execute("SELECT sum(checks), sum(failures) FROM rollups WHERE monitor_id = 1").fetchone() == (5, 3)
    incident = conn.execute("SELECT cause, resolved_at_ms IS NOT NULL FROM incidents WHERE monitor_id = 1").fetchall()
    conn.close()
    assert incident == [("status 503", 1)]  # the outage before the edit, resolved by the edited check
    listed = json.loads(ok(db, "list", "--json"))
    assert [(m["id"], m["name"], m["interval_sec"], m["keyword"]) for m in listed] == [(1, "api", 120, "hello")]

    assert ok(db, "edit", "1", "--keyword", "", "--not-aligned") == "monitor 1 (api): --keyword hello -> none\n"
    assert ok(db, "edit", "api") == "monitor 1 (api): unchanged\n"


def test_edit_help_shows_no_default_for_an_option_left_unchanged() -> None:
    """An option `edit` is not given keeps the monitor's value: add's defaults would mislead."""
    shown = {
        command: subprocess.run([MONITOR_TICK, command, "--help"], capture_output=True, text=True, timeout=60)
        for command in ("add", "edit")
    }
    assert [run.returncode for run in shown.values()] == [0, 0]
    description, _, options = shown["edit"].stdout.partition("\nOptions:\n")
    entries = {entry.split()[0]: " ".join(entry.split()) for entry in re.split(r"\n(?=  -)", options) if entry.strip()}
    assert {"--expect", "--timeout", "--name", "--remind", "--expires-within", "--db"} <= set(entries)
    with_default = {flag for flag, text in entries.items() if "default" in text.lower()}
    assert with_default == {"--db"}  # the one option whose default edit does use
    assert re.search(r"\S {2,}\S", description.partition("Arguments:")[0]) is None  # one paragraph, evenly spaced
    # add's help keeps them
    add_help = " ".join(shown["add"].stdout.split())
    assert "[default: 200-399]" in add_help and "[default: 10s]" in add_help and "[default: 5m]" in add_help


def test_edit_refuses_bad_values_with_one_line_and_changes_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", "http://127.0.0.1:9/", "--name", "api")
    ok(db, "add", "http://127.0.0.1:9/b", "--name", "other")
    before = _settings(ok(db, "list", "--json"))
    cases = [
        (
            ["edit", "api", "--every", "90s"],
            2,
            "monitor-tick: interval must be a whole number of minutes, at least 1m (got 90s)\n",
        ),
        (["edit", "api", "--grace", "1h"], 2, "monitor-tick: --grace does not apply to http monitors\n"),
        (
            ["edit", "api", "--name", "other"],
            1,
            "monitor-tick: a monitor named 'other' exists; choose another with --name\n",
        ),
        (["edit", "api", "--owner", "nobody"], 1, "monitor-tick: no owner named 'nobody'\n"),
        (
            ["edit", "api", "--url", "heartbeat"],
            2,
            "monitor-tick: a heartbeat cannot become a probed monitor or the other way; add a new monitor\n",
        ),
        (["edit", "nope", "--every", "1m"], 1, "monitor-tick: no monitor 'nope'\n"),
    ]
    for args, code, err in cases:
        run = cli(db, *args)
        assert (run.returncode, run.stdout, run.stderr) == (code, "", err), args
    assert _settings(ok(db, "list", "--json")) == before


def _settings(listed: str) -> list[dict[str, object]]:
    """The monitors as listed, less the next check's time: the clock may pass a minute between
    two reads, and that moves it without any change to the monitor."""
    return [{k: v for k, v in row.items() if k != "next_check_ms"} for row in json.loads(listed)]


def test_ids_are_never_given_twice_and_remove_says_what_it_removed(tmp_path: Path, local_server: LocalServer) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", local_server.url("/ok"), "--name", "a", "--every", "1m")
    ok(db, "add", local_server.url("/status/503"), "--name", "b", "--every", "1m", "--retries", "0")
    date_back(db)
    ok(db, "--minute", str(START))
    ok(db, "maintenance", "add", "--monitor", "b", "--from", "2026-12-02T00:00Z", "--until", "2026-12-02T01:00Z")
    out = ok(db, "remove", "b")
    assert out == "removed monitor 2 (b) with 1 rollup hour, 1 incident, 1 maintenance window, 0 channels\n"
    assert ok(db, "add", local_server.url("/ok"), "--name", "c") == "3\n"  # not 2: b's badge and series stay b's
    ok(db, "owner", "add", "alice")
    assert ok(db, "owner", "remove", "alice").startswith("removed owner 1 (alice)")
    ok(db, "owner", "add", "bob")
    assert json.loads(ok(db, "owner", "list", "--json"))[0]["id"] == 2
    ok(db, "plan", "add", "pro", "--min-interval", "1m")
    ok(db, "plan", "remove", "pro")
    ok(db, "plan", "add", "team", "--min-interval", "1m")
    assert [p["id"] for p in json.loads(ok(db, "plan", "list", "--json"))] == [1, 3]


def test_an_owner_moves_plans_and_the_floor_follows_from_the_next_tick(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "plan", "add", "free", "--min-interval", "5m")
    ok(db, "plan", "add", "pro", "--min-interval", "1m")
    ok(db, "owner", "add", "alice", "--plan", "free")
    ok(db, "add", "http://127.0.0.1:9/", "--name", "api", "--every", "1m", "--owner", "alice")
    assert json.loads(ok(db, "list", "--json"))[0]["effective_interval_sec"] == 300
    out = ok(db, "owner", "edit", "alice", "--plan", "pro", "--expires", "2099-01-01T00:00Z")
    assert out == "owner alice: plan free -> pro, expires never -> 2099-01-01T00:00:00Z\n"
    assert json.loads(ok(db, "list", "--json"))[0]["effective_interval_sec"] == 60
    assert ok(db, "owner", "list").splitlines() == [
        "  ID  NAME                 PLAN          FLOOR  EXPIRES               MONITORS",
        "   1  alice                pro              1m  2099-01-01T00:00:00Z  1",
    ]
    assert ok(db, "owner", "edit", "alice", "--expires", "never") == (
        "owner alice: expires 2099-01-01T00:00:00Z -> never\n"
    )
    run = cli(db, "plan", "remove", "pro")
    assert (run.returncode, run.stderr) == (
        1,
        "monitor-tick: plan 'pro' has owners (alice); move them first with `owner edit NAME --plan`\n",
    )
    # the default plan's floor: monitors without an owner follow it
    assert ok(db, "plan", "edit", "default", "--min-interval", "10m") == "plan default: floor 1m -> 10m\n"
    assert ok(db, "owner", "remove", "alice") == (
        "removed owner 1 (alice); 1 monitors now without an owner, 0 maintenance windows and 0 channels removed\n"
    )
    assert json.loads(ok(db, "list", "--json"))[0]["effective_interval_sec"] == 600
    assert ok(db, "plan", "list").splitlines() == [
        "  ID  NAME                  FLOOR  OWNERS",
        "   1  default                 10m  0  (default)",
        "   2  free                     5m  0",
        "   3  pro                      1m  0",
    ]
    run = cli(db, "plan", "remove", "default")
    assert run.returncode == 1 and "default plan cannot be removed" in run.stderr


def test_maintenance_windows_are_listed_active_and_upcoming_and_removed_by_id(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", local_server.url("/ok"), "--name", "api", "--every", "1m")
    ok(db, "owner", "add", "alice")
    date_back(db)
    now_ms = clock.now_ms()
    hour = clock.MS_PER_HOUR
    iso = clock.iso_from_ms
    assert (
        ok(
            db,
            "maintenance",
            "add",
            "--monitor",
            "api",
            "--from",
            iso(now_ms - 2 * hour),
            "--until",
            iso(now_ms - hour),
        )
        == "1\n"
    )  # over: not listed
    ok(db, "maintenance", "add", "--monitor", "api", "--from", iso(now_ms - hour), "--until", iso(now_ms + hour))
    ok(db, "maintenance", "add", "--owner", "alice", "--from", iso(now_ms + hour), "--until", iso(now_ms + 2 * hour))
    lines = ok(db, "maintenance", "list").splitlines()
    assert lines[0] == "  ID  FROM                  UNTIL                 STATE     COVERS"
    assert lines[1].split() == ["2", iso(now_ms - hour), iso(now_ms + hour), "active", "monitor", "api"]
    assert lines[2].split() == ["3", iso(now_ms + hour), iso(now_ms + 2 * hour), "upcoming", "owner", "alice"]
    minute = clock.minute_of_ms(now_ms) - 1
    assert json.loads(ok(db, "--minute", str(minute), "--json"))["due"] == 0  # in maintenance
    assert ok(db, "maintenance", "remove", "2") == (
        f"removed maintenance window 2 ({iso(now_ms - hour)} to {iso(now_ms + hour)}, monitor api)\n"
    )
    assert json.loads(ok(db, "--minute", str(minute), "--json", "--force"))["due"] == 1
    run = cli(db, "maintenance", "remove", "2")
    assert (run.returncode, run.stderr) == (1, "monitor-tick: no maintenance window 2\n")


def test_a_private_monitor_is_left_off_the_status_page_and_groups_are_sections(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", local_server.url("/ok"), "--name", "site", "--every", "1m", "--group", "Public")
    ok(db, "add", local_server.url("/status/503"), "--name", "intranet", "--every", "1m", "--private")
    ok(db, "add", local_server.url("/ok"), "--name", "loose", "--every", "1m")
    date_back(db)
    ok(db, "--minute", str(START), "--retry-delay", "0")
    site = tmp_path / "site"
    ok(db, "status-page", "--out", str(site))
    page = (site / "index.html").read_text(encoding="utf-8")
    assert "intranet" not in page and "All systems operational" in page  # its outage is not on the page
    assert page.index('data-monitor-id="3"') < page.index('data-group="Public"') < page.index('data-monitor-id="1"')
    assert sorted(p.name.split("-")[0] for p in (site / "badges").iterdir()) == ["1"] * 3 + ["3"] * 3
    assert ok(db, "edit", "intranet", "--not-private", "--group", "Internal") == (
        "monitor 2 (intranet): --private yes -> no, --group none -> Internal\n"
    )
    ok(db, "status-page", "--out", str(site))
    assert 'data-group="Internal"' in (site / "index.html").read_text(encoding="utf-8")
    assert (site / "badges" / "2-status.svg").exists()


def test_a_recurring_window_skips_its_minutes_every_day_and_is_listed_with_its_next_occurrence(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", local_server.url("/ok"), "--name", "api", "--every", "1m")
    ok(db, "owner", "add", "alice")
    day = clock.MINUTES_PER_DAY
    base = START - 2 * day  # two days ago at the latest: replays are of minutes that have come
    date_back(db, base)
    assert ok(db, "maintenance", "add", "--monitor", "api", "--daily", "00:02", "--for", "3m") == "1\n"
    assert ok(db, "maintenance", "add", "--owner", "alice", "--weekly", "sat,sun@23:30", "--for", "2h") == "2\n"
    due = [json.loads(ok(db, "--minute", str(m), "--json"))["due"] for m in range(base, base + 7)]
    assert due == [1, 1, 0, 0, 0, 1, 1]  # 00:02, 00:03, 00:04 UTC are in the window
    due = [json.loads(ok(db, "--minute", str(m), "--json"))["due"] for m in range(base + day + 1, base + day + 6)]
    assert due == [1, 0, 0, 0, 1]  # and again the next day
    listed = {row["id"]: row for row in json.loads(ok(db, "maintenance", "list", "--json"))}
    assert listed[1]["repeats"] == "daily 00:02 UTC for 3m"
    assert listed[2]["repeats"] == "weekly sat,sun 23:30 UTC for 2h"
    now_ms = clock.now_ms()
    for row in listed.values():  # the occurrence that holds now, else the next one
        assert row["ends_at_ms"] > now_ms and row["starts_at_ms"] - now_ms < 7 * clock.MS_PER_DAY
        assert row["active"] == (row["starts_at_ms"] <= now_ms)
    assert clock.iso_from_ms(listed[1]["starts_at_ms"])[11:] == "00:02:00Z"
    assert (
        ok(db, "maintenance", "remove", "1") == "removed maintenance window 1 (daily 00:02 UTC for 3m, monitor api)\n"
    )
    assert json.loads(ok(db, "--minute", str(START + 3), "--json"))["due"] == 1
    assert ok(db, "maintenance", "add", "--monitor", "api", "--from", "2099-01-01", "--until", "2099-01-02") == "3\n"
    for args, error in (
        (["--daily", "3", "--for", "1h"], "--daily: not a time of day HH:MM (UTC): '3'"),
        (
            ["--weekly", "xx@03:00", "--for", "1h"],
            "--weekly: not a day: 'xx' (mon, tue, wed, thu, fri, sat, sun, or a range such as tue-thu)",
        ),
        (["--daily", "03:00"], "a recurring window needs --for, e.g. --for 30m"),
        (["--daily", "03:00", "--for", "25h"], "--for must be whole minutes, 1m to 24h (got 25h)"),
        (
            ["--daily", "03:00", "--from", "2099-01-01", "--for", "1h"],
            "give --from and --until, or one of --daily and --weekly (with --for)",
        ),
    ):
        run = cli(db, "maintenance", "add", "--monitor", "api", *args)
        assert (run.returncode, run.stdout, run.stderr) == (2, "", f"monitor-tick: {error}\n"), args


def test_a_weekly_range_holds_every_day_in_it_wraps_over_the_weekend_and_an_unknown_day_is_refused(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", "http://127.0.0.1:9/", "--name", "api")
    assert ok(db, "maintenance", "add", "--monitor", "api", "--weekly", "tue-thu@05:00", "--for", "1h") == "1\n"
    assert ok(db, "maintenance", "add", "--monitor", "api", "--weekly", "sat-mon@23:30", "--for", "2h") == "2\n"
    assert ok(db, "maintenance", "add", "--monitor", "api", "--weekly", "Friday, sun-mon@01:00", "--for", "1m") == "3\n"
    listed = {
        row["id"]: (row["days_mask"], row["repeats"]) for row in json.loads(ok(db, "maintenance", "list", "--json"))
    }
    assert listed == {
        1: (0b0001110, "weekly tue,wed,thu 05:00 UTC for 1h"),
        2: (0b1100001, "weekly mon,sat,sun 23:30 UTC for 2h"),
        3: (0b1010001, "weekly mon,fri,sun 01:00 UTC for 1m"),
    }
    days = "(mon, tue, wed, thu, fri, sat, sun, or a range such as tue-thu)"
    for weekly, bad in (
        ("wed-xyz@05:00", "xyz"),
        ("wedx@05:00", "wedx"),
        ("tue-@05:00", ""),
        ("mon-tue-wed@05:00", "tue-wed"),
        ("tues,thu@05:00", "tues"),
        ("sat,,sun@05:00", ""),
    ):
        run = cli(db, "maintenance", "add", "--monitor", "api", "--weekly", weekly, "--for", "1h")
        error = f"monitor-tick: --weekly: not a day: {bad!r} {days}\n"
        assert (run.returncode, run.stdout, run.stderr) == (2, "", error), weekly
    assert len(json.loads(ok(db, "maintenance", "list", "--json"))) == 3  # nothing stored


def test_edit_and_show_take_every_request_option_and_never_print_a_secret(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", "http://127.0.0.1:9/health", "--name", "api")
    out = ok(
        db,
        "edit",
        "api",
        "--method",
        "post",
        "--header",
        "X-Api-Key: abc123",
        "--header",
        "X-Tenant: ${TENANT}",
        "--basic-auth",
        "ops:hunter2",
        "--body",
        "token=s3cret",
        "--json-field",
        "status=UP",
        "--max-latency",
        "500ms",
        TENANT="tenant-1",  # else `edit` warns that it is not set here
    )
    assert out == (
        "monitor 1 (api): --method GET -> POST, --max-latency none -> 500ms, --json-field none -> status=UP, "
        "--header none -> X-Api-Key: ***\\nX-Tenant: ${TENANT}, --basic-auth none -> ops:***, --body none -> ***\n"
    )
    conn = sqlite3.connect(db)
    stored = conn.execute("SELECT method, headers, basic_auth, body, max_latency_ms, json_field FROM monitors")
    assert stored.fetchone() == (
        "POST",
        "X-Api-Key: abc123\nX-Tenant: ${TENANT}",
        "ops:hunter2",
        "token=s3cret",
        500,
        "status=UP",
    )
    shown = json.loads(ok(db, "show", "api", "--json"))["monitor"]
    assert (shown["headers"], shown["basic_auth"], shown["body"], shown["max_latency_ms"]) == (
        "X-Api-Key: ***\nX-Tenant: ${TENANT}",
        "ops:***",
        "***",
        500,
    )
    text = ok(db, "show", "api")
    assert "--max-latency 500ms" in text and "--json-field status=UP" in text and "--basic-auth ops:***" in text
    for printed in (out, text, ok(db, "list", "--json"), ok(db, "list")):
        assert "abc123" not in printed and "hunter2" not in printed and "s3cret" not in printed
    # '' puts an option back to its default, --not-insecure too
    ok(db, "edit", "api", "--url", "https://127.0.0.1:9/", "--insecure", TENANT="tenant-1")
    assert conn.execute("SELECT insecure FROM monitors").fetchone() == (1,)
    out = ok(db, "edit", "api", "--header", "", "--basic-auth", "", "--not-insecure", "--max-latency", "")
    assert out == (
        "monitor 1 (api): --max-latency 500ms -> none, --header X-Api-Key: ***\\nX-Tenant: ${TENANT} -> none, "
        "--basic-auth ops:*** -> none, --insecure yes -> no\n"
    )
    assert conn.execute("SELECT headers, basic_auth, insecure, max_latency_ms FROM monitors").fetchone() == (
        None,
        None,
        0,
        None,
    )
    conn.close()
    dns = ok(db, "add", "dns://example.org?type=A&server=127.0.0.1:9", "--name", "dns").strip()
    assert ok(db, "edit", dns, "--max-latency", "2s") == f"monitor {dns} (dns): --max-latency none -> 2000ms\n"
    assert cli(db, "edit", dns, "--header", "X: y").stderr == "monitor-tick: --header does not apply to dns monitors\n"


def test_on_sqlite_several_locations_are_refused_in_one_line_and_one_is_a_label(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", "http://127.0.0.1:9/a", "--name", "a")
    refused = cli(db, "add", "http://127.0.0.1:9/b", "--locations", "eu,home")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        "monitor-tick: --locations: a SQLite database has one host, so one location; use PostgreSQL for several\n"
    )
    assert cli(db, "edit", "a", "--locations", "eu,home").returncode == 2
    for args, said in [
        (("--locations", "home", "--quorum", "2"), "monitor-tick: --quorum 2 is more than the 1 locations named\n"),
        (("--quorum", "1"), "monitor-tick: --quorum needs --locations\n"),
        (("--locations", "Home"), "monitor-tick: location 'Home' is not 1-32 characters of a-z, 0-9 and '-'\n"),
    ]:
        done = cli(db, "edit", "a", *args)
        assert (done.returncode, done.stderr) == (2, said), args
    beat = cli(db, "add", "heartbeat", "--every", "1h", "--locations", "home")
    assert beat.returncode == 2 and "a heartbeat is pushed to us" in beat.stderr
    assert ok(db, "edit", "a", "--locations", "home", "--notify-partial") == (
        "monitor 1 (a): --locations none -> home, --notify-partial no -> yes\n"
    )
    (row,) = json.loads(ok(db, "list", "--json"))
    assert (row["locations"], row["quorum"], row["notify_partial"]) == ("home", None, 1)
    assert ok(db, "list").splitlines()[1].endswith("http://127.0.0.1:9/a  from home, quorum 1 of 1")
    tick = cli(db, "--location", "Home Server")
    assert tick.returncode == 2
    assert (
        tick.stderr == "monitor-tick: --location: location 'Home Server' is not 1-32 characters of a-z, 0-9 and '-'\n"
    )
    # what goes with the locations goes with them
    cleared = "monitor 1 (a): --locations home -> none, --notify-partial yes -> no\n"
    assert ok(db, "edit", "a", "--locations", "") == cleared
    refused = cli(db, "edit", "a", "--notify-partial")
    assert (refused.returncode, refused.stderr) == (2, "monitor-tick: --notify-partial needs --locations\n")
