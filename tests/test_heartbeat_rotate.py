"""`heartbeat rotate NAME`: a new token, printed once; the old one stops working at once, in a
running `serve` too. Through the installed command, with `serve` on 127.0.0.1."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx

from tests.commands import MONITOR_TICK


def run(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60)


def test_rotate_prints_a_new_token_and_the_old_one_stops_working(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    old = run(db, "add", "heartbeat", "--name", "backups", "--every", "1d").stdout.strip()
    run(db, "add", "http://127.0.0.1:9/", "--name", "site")
    with subprocess.Popen(
        [MONITOR_TICK, "serve", "--port", "0", "--db", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as server:
        assert server.stdout is not None
        try:
            port = int(server.stdout.readline().rsplit(":", 1)[1])
            with httpx.Client(trust_env=False, timeout=10) as client:
                assert client.get(f"http://127.0.0.1:{port}/ping/{old}").status_code == 200
                rotated = run(db, "heartbeat", "rotate", "backups")
                assert rotated.returncode == 0 and rotated.stderr == ""
                new = rotated.stdout.strip()
                assert len(new) == 43 and new != old
                assert client.get(f"http://127.0.0.1:{port}/ping/{old}").status_code == 404
                assert client.get(f"http://127.0.0.1:{port}/ping/{new}").status_code == 200
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=10)
    refused = run(db, "heartbeat", "rotate", "site")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert (
        refused.stderr == "monitor-tick: monitor 'site' is not a heartbeat (add one with: monitor-tick add heartbeat)\n"
    )
    assert run(db, "heartbeat", "rotate", "nope").stderr == "monitor-tick: no monitor 'nope'\n"
