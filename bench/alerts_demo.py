"""Alerts as a user sees them: a real site (`python -m http.server` on 127.0.0.1) is stopped and
started again while replayed ticks run through the installed `monitor-tick`; a JSON receiver on
127.0.0.1 (tests/receivers.py, Apprise's json:// target) prints the notifications as they arrived.

    .venv/bin/python bench/alerts_demo.py
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.receivers import JsonReceiver  # noqa: E402

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
FIRST_MINUTE = 29_934_720  # 2026-12-01T00:00Z


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_site(port: int) -> subprocess.Popen[bytes]:
    site = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # until it listens (bounded)
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return site
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the site did not start")


def main() -> None:
    port = free_port()
    db = str(Path(tempfile.mkdtemp()) / "m.db")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, check=False)

    with JsonReceiver() as receiver:
        site = start_site(port)
        run("add", f"http://127.0.0.1:{port}/?token=abc", "--name", "shop", "--every", "1m", "--retries", "0")
        run("notify", "add", receiver.apprise_url("/hooks/s3cret-path"))
        # the replayed minutes are in the past: date the monitor back to before them (a replay
        # records nothing for a monitor added after its minute)
        with sqlite3.connect(db) as raw:
            raw.execute("UPDATE monitors SET created_at_ms = ?", (FIRST_MINUTE * 60_000,))
        raw.close()
        for offset in range(8):
            if offset == 1:  # the service stops...
                site.kill()
                site.wait()
            if offset == 5:  # ...and comes back
                site = start_site(port)
            tick = run("--minute", str(FIRST_MINUTE + offset), "-v", "--retry-delay", "0")
            print(f"minute +{offset}: {tick.stderr.strip()}")
        site.kill()
        print(run("notify", "list").stdout)
        for message in receiver.messages:
            print(f"--- {message.get('type')}\ntitle: {message.get('title')}\n{message.get('message')}")


if __name__ == "__main__":
    main()
