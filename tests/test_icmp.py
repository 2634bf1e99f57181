"""icmp:// monitors: real pings of 127.0.0.1 by the installed `monitor-tick`, run in a
network namespace of its own (`unshare -n`, as root) whose net.ipv4.ping_group_range the test
sets, so the machine's own setting is never touched; and the path where ping is not allowed."""

from __future__ import annotations

import errno
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from monitor_tick.core import clock
from monitor_tick.probes import icmp

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
HOUR_START = clock.minute_of_ms(clock.now_ms()) // 60 * 60 - 60  # a past minute in which hourly lines are said


def in_namespace(db: str, *args: str, ping_groups: str, ignore_echo: bool = False) -> subprocess.CompletedProcess[str]:
    """`monitor-tick ARGS --db DB` in a new network namespace: loopback up, its own
    ping_group_range (and, with `ignore_echo`, a kernel that answers no ping)."""
    script = (
        'ip link set lo up && sysctl -qw net.ipv4.ping_group_range="$1" && sysctl -qw net.ipv4.icmp_echo_ignore_all="$2"'
        ' && shift 2 && exec "$@"'
    )
    command = [MONITOR_TICK, *args, "--db", db]
    return subprocess.run(
        ["unshare", "-n", "sh", "-ec", script, "sh", ping_groups, "1" if ignore_echo else "0", *command],
        capture_output=True,
        text=True,
        timeout=60,
    )


def added(db: str, *monitors: tuple[str, str]) -> None:
    for name, url in monitors:
        done = subprocess.run(
            [MONITOR_TICK, "add", url, "--name", name, "--every", "1m", "--timeout", "1s", "--db", db],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    raw = sqlite3.connect(db)
    raw.execute("UPDATE monitors SET created_at_ms = 0")  # replayed minutes come after it
    raw.commit()
    raw.close()


def test_a_ping_of_loopback_is_up_and_one_nobody_answers_is_a_timeout(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    added(db, ("v4", "icmp://127.0.0.1"), ("name", "icmp://localhost"), ("v6", "icmp://[::1]"))
    run = in_namespace(db, "--minute", str(HOUR_START), "--json", "--retry-delay", "0", ping_groups="0 0")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    results = {r["name"]: (r["kind"], r["status"], r["cause"]) for r in json.loads(run.stdout)["results"]}
    assert results == {"v4": ("icmp", "up", None), "name": ("icmp", "up", None), "v6": ("icmp", "up", None)}
    silent = in_namespace(
        db, "--minute", str(HOUR_START + 1), "--json", "--retry-delay", "0", ping_groups="0 0", ignore_echo=True
    )
    results = {r["name"]: (r["status"], r["cause"]) for r in json.loads(silent.stdout)["results"]}
    assert results["v4"] == ("down", "icmp: timeout")


def test_where_ping_is_not_allowed_the_monitor_is_a_configuration_error_said_hourly(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    added(db, ("router", "icmp://127.0.0.1"))
    said = in_namespace(db, "--minute", str(HOUR_START), "--json", ping_groups="1 0")
    assert said.returncode == 0
    assert said.stderr == (
        "monitor-tick: monitor 1 skipped: cannot be probed here: ping is not available: group 0 may not open "
        "ICMP sockets (net.ipv4.ping_group_range is '1 0'); allow it with: sysctl -w net.ipv4.ping_group_range='0 0'\n"
    )
    report = json.loads(said.stdout)
    assert (report["results"], report["invalid"], report["down"]) == ([], 1, 0)
    quiet = in_namespace(db, "--minute", str(HOUR_START + 1), ping_groups="1 0")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    # never down, never recorded, and never a silent `new`
    raw = sqlite3.connect(db)
    assert raw.execute("SELECT count(*) FROM rollups").fetchone()[0] == 0
    assert raw.execute("SELECT count(*) FROM incidents").fetchone()[0] == 0
    raw.close()
    # what the tick found, wherever it is read: `list` never judges the monitor again
    cause = said.stderr.removeprefix("monitor-tick: monitor 1 skipped: ").removesuffix("\n")
    for groups in ("1 0", "0 0"):
        listed = json.loads(in_namespace(db, "list", "--json", ping_groups=groups).stdout)
        assert [(row["state"], row["invalid_cause"]) for row in listed] == [("invalid", cause)]


@pytest.mark.parametrize(
    ("error", "group_range", "gid", "reason"),
    [
        (None, "1\t0\n", 0, None),
        (
            PermissionError(errno.EACCES, "Permission denied"),
            "1\t0\n",
            1000,
            "ping is not available: group 1000 may not open ICMP sockets (net.ipv4.ping_group_range is '1 0'); "
            "allow it with: sysctl -w net.ipv4.ping_group_range='1000 1000'",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied"),
            None,
            5,
            "ping is not available: group 5 may not open ICMP sockets (net.ipv4.ping_group_range); "
            "allow it with: sysctl -w net.ipv4.ping_group_range='5 5'",
        ),
        (
            OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol"),
            "0\t0\n",
            0,
            "ping is not available: cannot open an ICMP socket (Address family not supported by protocol)",
        ),
    ],
)
def test_the_reason_ping_is_not_available_names_the_setting_and_the_fix(
    error: OSError | None, group_range: str | None, gid: int, reason: str | None
) -> None:
    assert icmp.unavailable_reason(error, group_range, gid) == reason


def test_add_says_at_once_when_this_machine_cannot_ping(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    done = in_namespace(db, "add", "icmp://127.0.0.1", ping_groups="1 0")
    assert (done.returncode, done.stdout) == (0, "1\n")
    created, unable = done.stderr.splitlines()
    assert created == f"monitor-tick: created database {db}"  # add on a new file says so first
    assert unable.startswith("monitor-tick: monitor 1 cannot be probed here until this changes: ping is not available")
    allowed = in_namespace(db, "add", "icmp://localhost", ping_groups="0 0")
    assert (allowed.returncode, allowed.stdout, allowed.stderr) == (0, "2\n", "")
