"""`heartbeat rotate NAME`: a new token, printed once; the old one stops working at once, in a
running `serve` too, and an older monitors file does not bring it back. Through the installed
command, with `serve` on 127.0.0.1."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path

import httpx

from monitor_tick import store
from monitor_tick.probes.heartbeat import token_digest
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


def test_an_older_file_never_brings_a_rotated_token_back_without_allow_token_change(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    old = run(db, "add", "heartbeat", "--name", "backups", "--every", "1d").stdout.strip()
    older = tmp_path / "monitors.toml"
    assert run(db, "export", "--out", str(older)).returncode == 0  # the file in git, before the rotation
    new = run(db, "heartbeat", "rotate", "backups").stdout.strip()

    def working() -> set[str]:
        conn = sqlite3.connect(db)
        try:
            return {t for t in (old, new) if store.heartbeat_by_token(conn, token_digest(t)) is not None}
        finally:
            conn.close()

    line = next(n for n, text in enumerate(older.read_text().splitlines(), 1) if text.startswith("token_sha256 ="))
    refusal = (
        f"monitor-tick: {older}:{line}: monitors.backups.token_sha256: not the token heartbeat backups has now "
        "(rotated since this file was written?): nothing applied; --allow-token-change makes the file's token "
        "work again and the current one stop\n"
    )
    for dry_run in ([], ["--dry-run"]):
        refused = run(db, "apply", str(older), *dry_run)
        assert (refused.returncode, refused.stdout, refused.stderr) == (2, "", refusal)
        assert working() == {new}
    allowed = run(db, "apply", str(older), "--allow-token-change")
    assert (allowed.returncode, allowed.stderr) == (0, "")
    assert allowed.stdout.splitlines() == [
        "~ monitor backups: token_sha256 from the file (the token it had stops working)",
        "0 to add, 1 to change, 0 to remove",
    ]
    assert working() == {old}
    assert run(db, "apply", str(older)).stdout == "no changes\n"
