"""The same database everywhere: an explicit --db wins over MONITOR_TICK_DB wherever it stands,
a command that fails or only reads leaves no database behind, `add` says when it created one,
and a tick on a database without monitors says so once a day. Through the installed command."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from monitor_tick.core import clock, schedule
from tests.commands import MONITOR_TICK


def run(*args: str, env_db: str | None = None, at_ms: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MONITOR_TICK_DB"}
    if env_db is not None:
        env["MONITOR_TICK_DB"] = env_db
    if at_ms is not None:
        env["MONITOR_TICK_TEST_CLOCK_OFFSET_MS"] = str(at_ms - clock.now_ms())
    return subprocess.run([MONITOR_TICK, *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("before", [True, False])
def test_an_explicit_db_wins_over_the_environment_before_or_after_the_command(tmp_path: Path, before: bool) -> None:
    env_db, explicit = str(tmp_path / "env.db"), str(tmp_path / "explicit.db")
    assert run("add", "http://127.0.0.1:9/", "--name", "in-env", env_db=env_db).returncode == 0
    assert run("add", "http://127.0.0.1:9/", "--name", "explicit", "--db", explicit).returncode == 0
    args = ["--db", explicit, "list"] if before else ["list", "--db", explicit]
    listed = run(*args, env_db=env_db)
    assert listed.returncode == 0 and "explicit" in listed.stdout and "in-env" not in listed.stdout
    added = run(
        *(["--db", explicit, "add"] if before else ["add"]),
        "http://127.0.0.1:9/b",
        "--name",
        "second",
        *([] if before else ["--db", explicit]),
        env_db=env_db,
    )
    assert added.stdout == "2\n"
    assert "second" not in run("list", env_db=env_db).stdout


def test_add_says_when_it_created_the_database_and_failing_commands_create_none(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    failing = [
        ["add", "http://127.0.0.1:9/", "--owner", "nobody"],
        ["pause", "api"],
        ["resume", "api"],
        ["remove", "api"],
        ["edit", "api", "--every", "1m"],
        ["maintenance", "add", "--monitor", "api", "--from", "2099-01-01", "--until", "2099-01-02"],
        ["maintenance", "remove", "1"],
        ["owner", "add", "alice", "--plan", "pro"],
        ["owner", "edit", "alice", "--plan", "default"],
        ["owner", "remove", "alice"],
        ["plan", "edit", "pro", "--min-interval", "5m"],
        ["plan", "remove", "pro"],
        ["notify", "add", "json://127.0.0.1:9/", "--monitor", "api"],
        ["notify", "remove", "1"],
        ["heartbeat", "rotate", "api"],
        ["ping", "api"],
    ]
    said = {"add": "no owner named 'nobody'", "owner add": "no plan named 'pro'"}  # else: no database
    for args in failing:
        result = run(*args, "--db", db)
        assert (result.returncode, result.stdout) == (1, ""), (args, result)
        expected = said.get(" ".join(args[:2]), said.get(args[0], f"no database at {db}"))
        assert result.stderr == f"monitor-tick: {expected}\n", args
        assert not Path(db).exists(), args
    created = run("add", "http://127.0.0.1:9/", "--name", "api", "--db", db)
    assert (created.returncode, created.stdout, created.stderr) == (0, "1\n", f"monitor-tick: created database {db}\n")
    again = run("add", "http://127.0.0.1:9/b", "--db", db)
    assert (again.stdout, again.stderr) == ("2\n", "")


def test_a_tick_on_a_database_without_monitors_says_so_in_the_daily_housekeeping_tick(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    day = clock.day_of_ms(clock.parse_iso_ms("2026-11-30T00:00Z"))
    housekeeping = day * clock.MINUTES_PER_DAY + schedule.HOUSEKEEPING_MINUTE_OF_DAY
    quiet = run("--db", db, at_ms=clock.minute_start_ms(housekeeping - 1) + 1_000)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    said = run("--db", db, at_ms=clock.minute_start_ms(housekeeping) + 1_000)
    assert (said.returncode, said.stdout) == (0, "")
    assert said.stderr == (
        f"monitor-tick: {db} has no monitors, so nothing is checked; add one with: monitor-tick add URL "
        "(said once a day)\n"
    )
    run("add", "http://127.0.0.1:9/", "--db", db, at_ms=clock.minute_start_ms(housekeeping) + 2_000)
    next_day = run("--db", db, at_ms=clock.minute_start_ms(housekeeping + clock.MINUTES_PER_DAY) + 1_000)
    assert (next_day.returncode, next_day.stderr) == (0, "")
