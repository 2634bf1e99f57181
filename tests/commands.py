"""The installed `monitor-tick` command, run in a subprocess under a clock moved to a chosen
instant (MONITOR_TICK_TEST_CLOCK_OFFSET_MS, see core/clock.py), with `--db` last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from monitor_tick.core import clock

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")


# For a live tick whose whole output a test pins: 2026-12-01T00:31:05Z, a minute away from an
# hour's first minutes (when the problems seen every tick are said, once an hour) and from the
# daily housekeeping minute (03:17 UTC: auto-pause, "no monitors"), which the real clock reaches.
ORDINARY_MS = clock.minute_start_ms(29_934_751) + 5_000


def clock_at(at_ms: int = ORDINARY_MS) -> dict[str, str]:
    """The environment entry that runs the installed command under a clock at `at_ms`."""
    return {"MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(at_ms - clock.now_ms())}


def run_at(db: str, at_ms: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **clock_at(at_ms)}
    return subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env=env)


def created_or_nothing(stderr: str, db: str) -> bool:
    """A command's stderr is empty, but for the line `add` and `apply` print when they create
    the database."""
    return stderr in ("", f"monitor-tick: created database {db}\n")


def ok_at(db: str, at_ms: int, *args: str) -> str:
    """stdout of a command that must succeed without a word on stderr (but `created database`)."""
    run = run_at(db, at_ms, *args)
    assert run.returncode == 0 and created_or_nothing(run.stderr, db), (args, run.stderr)
    return run.stdout
