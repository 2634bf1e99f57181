"""The installed `monitor-tick` command, run in a subprocess under a clock moved to a chosen
instant (MONITOR_TICK_TEST_CLOCK_OFFSET_MS, see core/clock.py), with `--db` last; and `serve`,
started for a block."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass
class Served:
    """A running `monitor-tick serve`."""

    port: int
    process: subprocess.Popen[str]
    stderr_lines: queue.Queue[str]  # what it has said on stderr, a line at a time

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def next_stderr_line(self, timeout_s: float = 30) -> str:
        """The next line it says on stderr, waiting for it; queue.Empty after `timeout_s`."""
        return self.stderr_lines.get(timeout=timeout_s)


@contextmanager
def serving(db: str) -> Iterator[Served]:
    """`monitor-tick serve --port 0 --db DB` for the block. At the end it must still run, stop on
    SIGTERM with exit 0, and have said nothing on stderr that the block did not take."""
    with subprocess.Popen(
        [MONITOR_TICK, "serve", "--port", "0", "--db", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        stderr = process.stderr
        try:
            line = process.stdout.readline()  # printed once listening
            assert line.startswith("listening on http://127.0.0.1:"), (line, stderr.read())
            lines: queue.Queue[str] = queue.Queue()
            reader = threading.Thread(target=lambda: [lines.put(said) for said in stderr], daemon=True)
            reader.start()
            yield Served(int(line.rsplit(":", 1)[1]), process, lines)
            assert process.poll() is None, "serve died during the test"
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
            reader.join(timeout=10)
            assert list(lines.queue) == []
        finally:
            if process.poll() is None:
                process.kill()
