"""Done when: a user monitors their nightly backup job with the heartbeat commands alone.

Everything goes through the installed `monitor-tick` command in subprocesses, as cron would run
it (the database from $MONITOR_TICK_DB), under a clock moved to chosen instants (clock.py's
test-only offset): the days between checks pass in a moment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from monitor_tick.core import clock

MONITOR_TICK = Path(sys.executable).parent / "monitor-tick"
MINUTES_PER_DAY = 1_440


def test_a_nightly_backup_is_monitored_with_add_ping_and_the_tick(tmp_path: Path) -> None:
    env = {**os.environ, "MONITOR_TICK_DB": str(tmp_path / "monitor-tick.db")}
    sim = {"ms": clock.now_ms()}  # what the commands' clock reads

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        offset = {"MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(sim["ms"] - clock.now_ms())}
        done = subprocess.run(
            [str(MONITOR_TICK), *args], env={**env, **offset}, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def at(minute: int, later_ms: int = 0) -> None:
        sim["ms"] = clock.minute_start_ms(minute) + 20_000 + later_ms

    def tick(minute: int) -> dict[str, Any]:
        at(minute)
        return json.loads(run("--json").stdout)

    def listed() -> dict[str, Any]:
        (row,) = json.loads(run("list", "--json").stdout)
        return row

    # the user adds the heartbeat and keeps its token (for pings from other machines)
    token = run("add", "heartbeat", "--name", "backups", "--every", "1d", "--grace", "1h").stdout.strip()
    assert len(token) == 43
    monitor = listed()
    assert (monitor["kind"], monitor["state"], monitor["note"]) == ("heartbeat", "new", "no ping yet")

    # tonight's backup succeeds and pings; the first check after it finds the monitor up,
    # and prints nothing (cron mails nothing)
    assert run("ping", "backups").stdout == ""
    now_minute = clock.minute_of_ms(clock.now_ms())
    phase = monitor["id"] % MINUTES_PER_DAY  # a daily monitor's minute of the day
    check = now_minute - now_minute % MINUTES_PER_DAY + phase
    check += MINUTES_PER_DAY if check <= now_minute else 0
    at(check)
    quiet = run()
    assert (quiet.stdout, quiet.stderr) == ("", "")
    assert listed()["state"] == "up"

    # the next night the backup fails and says so: the check is down with that cause
    at(check, 5 * clock.MS_PER_MINUTE)
    run("ping", "backups", "--fail")
    failed = tick(check + MINUTES_PER_DAY)
    assert (failed["down"], failed["opened"]) == (1, 1)
    assert failed["results"][0]["cause"] == "heartbeat: job reported failure"
    note = listed()["note"]
    assert note.startswith("heartbeat: job reported failure; last ping ") and note.endswith(" ago: failure")

    # it is fixed, runs (timed with --start) and pings: the outage is resolved
    at(check + MINUTES_PER_DAY, 5 * clock.MS_PER_MINUTE)
    run("ping", "backups", "--start")
    at(check + MINUTES_PER_DAY, 6 * clock.MS_PER_MINUTE)
    run("ping", "backups")
    recovered = tick(check + 2 * MINUTES_PER_DAY)
    assert (recovered["up"], recovered["resolved"]) == (1, 1)
    assert isinstance(listed()["last_duration_ms"], int)

    # then it silently stops running: two days on, the check is down, saying for how long
    silent_minute = check + 4 * MINUTES_PER_DAY
    silence_s = clock.ms_to_s(clock.minute_start_ms(silent_minute) + 20_000 - listed()["last_ping_ms"])
    silent = tick(silent_minute)
    cause = f"heartbeat: no ping for {clock.format_duration_s(silence_s)} (grace 1h)"
    assert (silent["down"], silent["opened"], silent["results"][0]["cause"]) == (1, 1, cause)
    assert listed()["state"] == "down"
    (reported,) = json.loads(run("report", "--since", "7d", "--json").stdout)
    assert (reported["name"], reported["kind"], reported["checks"], reported["failures"]) == (
        "backups",
        "heartbeat",
        4,
        2,
    )
    assert (reported["open_incident"], reported["cause"]) == (True, cause)
    assert cause in run("report", "--since", "7d").stdout
