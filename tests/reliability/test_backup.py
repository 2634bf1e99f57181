"""Backups: `backup --out FILE` makes a consistent, private copy while ticks commit; `check`
says in one line whether a file is sound; the manual's restore steps (docs/troubleshooting.md),
run as written, give a file that passes `check` and ticks, and a `serve` left running records
pings in it."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from monitor_tick import store
from monitor_tick.probes.heartbeat import new_token
from tests.commands import serving
from tests.conftest import add

BIN = Path(sys.executable).parent
MONITOR_TICK = str(BIN / "monitor-tick")
# the manual's page with the restore steps
RESTORE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"
MINUTE = 29_934_720


def cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MONITOR_TICK, *args], capture_output=True, text=True, timeout=60, **kwargs)  # type: ignore[call-overload]


def finished_ticks(path: str) -> int:
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(raw.execute("SELECT count(*) FROM ticks WHERE finished_at_ms IS NOT NULL").fetchone()[0])
    finally:
        raw.close()


# Ticks in another process, one after another, each a heartbeat check (no network): every
# finished minute adds exactly one check to the rollups, in the same transaction.
TICKER = textwrap.dedent(
    """
    import os, sys
    from monitor_tick.run.tick import TickOptions, run_tick
    db, first, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    for minute in range(first, first + 2000):
        if os.path.exists(stop):
            break
        run_tick(TickOptions(db_path=db, minute=minute))
    """
)


def test_a_backup_taken_while_ticks_commit_is_consistent_private_and_sound(db_path: str, tmp_path: Path) -> None:
    conn = store.open_db(db_path)
    add(conn, "heartbeat", name="job", every_s=60)
    conn.close()
    stop = tmp_path / "stop"
    ticker = subprocess.Popen([sys.executable, "-c", TICKER, db_path, str(MINUTE), str(stop)])
    copies = []

    def await_finished(floor: int) -> None:
        deadline = time.monotonic() + 30
        while finished_ticks(db_path) < floor:  # polling an observable condition, bounded
            assert ticker.poll() is None and time.monotonic() < deadline, "the ticker stopped"
            time.sleep(0.01)

    try:
        for n in range(3):
            await_finished(finished_ticks(db_path) + 5)
            copy = tmp_path / f"copy-{n}.db"
            result = cli("backup", "--out", str(copy), "--db", db_path)
            assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
            copies.append(copy)
        # the ticks go on past the last copy (on a busy machine the next may take a moment)
        await_finished(finished_ticks(str(copies[-1])) + 1)
        after = finished_ticks(db_path)
    finally:
        stop.touch()
        ticker.wait(60)
    assert ticker.returncode == 0
    seen = []
    for copy in copies:
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600
        assert cli("check", "--db", str(copy)).returncode == 0
        raw = sqlite3.connect(copy)
        checks = raw.execute("SELECT coalesce(sum(checks), 0) FROM rollups").fetchone()[0]
        finished = raw.execute("SELECT count(*) FROM ticks WHERE finished_at_ms IS NOT NULL").fetchone()[0]
        raw.close()
        assert checks == finished >= 5  # one snapshot: every finished tick's check, and no other
        seen.append(finished)
    assert seen == sorted(seen) and seen[-1] < after  # taken while the ticks went on
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left


def test_a_backup_never_overwrites_a_file(db_path: str, tmp_path: Path) -> None:
    existing = tmp_path / "existing.db"
    existing.write_bytes(b"yesterday's backup")
    result = cli("backup", "--out", str(existing), "--db", db_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"monitor-tick: {existing} exists; a backup never overwrites a file\n"
    assert existing.read_bytes() == b"yesterday's backup"


def test_check_says_in_one_line_that_a_sound_file_is_sound(db_path: str) -> None:
    result = cli("check", "--db", db_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"database {db_path} is sound (integrity and foreign keys checked)\n"


def _corrupt_a_page(path: str) -> None:
    """Overwrite the cells of the rollups table's root page, as a failing disk might."""
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = raw.execute("PRAGMA page_size").fetchone()[0]
    root = raw.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'rollups'").fetchone()[0]
    raw.close()
    with open(path, "r+b") as handle:
        handle.seek((root - 1) * page_size + 8)
        handle.write(b"\xa5" * 512)


def test_check_finds_a_page_corrupted_on_purpose(conn: sqlite3.Connection, db_path: str) -> None:
    monitors = [add(conn, f"http://127.0.0.1:9/{n}") for n in range(20)]
    conn.executemany(
        "INSERT INTO rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum, last_check_ms) "
        "VALUES (?, ?, 60, 0, 600, ?)",
        [(m, hour * 3_600_000, hour * 3_600_000) for m in monitors for hour in range(50)],
    )
    conn.close()
    _corrupt_a_page(db_path)
    result = cli("check", "--db", db_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert re.fullmatch(rf"monitor-tick: database {re.escape(db_path)} is damaged: .+\n", result.stderr)


KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from monitor_tick import store
    from tests.conftest import add
    conn = store.open_db(sys.argv[1])
    add(conn, "heartbeat", name="after the backup")
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _restore_steps() -> str:
    """The shell lines of the manual's restore block (the indented block after 'To restore')."""
    text = RESTORE_PAGE.read_text(encoding="utf-8")
    after = text[text.index("To restore from a backup") :]
    block = re.search(r"\n\n((?:    .*\n|\n)+)", after)
    assert block, "docs/troubleshooting.md has no restore steps"
    return textwrap.dedent(block.group(1))


def _restore(db_path: str, backup: Path, tmp_path: Path) -> None:
    """Run the manual's restore steps as written, on `db_path` from `backup`."""
    steps = _restore_steps()
    assert "DB=/var/lib/monitor-tick/monitor-tick.db" in steps and "/var/lib/monitor-tick/tick.lock" in steps
    steps = (
        steps.replace("/var/lib/monitor-tick/monitor-tick.db", db_path)
        .replace("/var/lib/monitor-tick/tick.lock", str(tmp_path / "tick.lock"))
        .replace("/var/backups/monitor-tick-2026-12-01.db", str(backup))
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    restored = subprocess.run(["sh", "-ec", steps], capture_output=True, text=True, timeout=60, env=env)
    assert restored.returncode == 0, restored.stderr


def test_the_manual_restore_steps_give_a_file_that_checks_and_ticks(db_path: str, tmp_path: Path) -> None:
    conn = store.open_db(db_path)
    kept = add(conn, "heartbeat", name="kept")
    conn.close()
    backup = tmp_path / "backups" / "monitor-tick-2026-12-01.db"
    backup.parent.mkdir()
    assert cli("backup", "--out", str(backup), "--db", db_path).returncode == 0
    assert cli("--minute", str(MINUTE), "--db", db_path).returncode == 0
    # a process that dies with a commit still in the -wal (not yet in the file): restoring must
    # not let that -wal be replayed onto the restored file
    died = subprocess.run([sys.executable, "-c", KILLED_WRITER, db_path], timeout=60, cwd=RESTORE_PAGE.parents[1])
    assert died.returncode == -9 and Path(f"{db_path}-wal").stat().st_size > 0
    _restore(db_path, backup, tmp_path)
    assert cli("check", "--db", db_path).returncode == 0
    assert stat.S_IMODE(Path(db_path).stat().st_mode) == 0o600
    tick = cli("--minute", str(MINUTE + 1), "--db", db_path)
    assert (tick.returncode, tick.stderr) == (0, "")
    raw = sqlite3.connect(db_path)
    assert raw.execute("SELECT id, name FROM monitors").fetchall() == [(kept, "kept")]
    assert raw.execute("SELECT minute FROM ticks WHERE finished_at_ms IS NOT NULL").fetchall() == [(MINUTE + 1,)]
    raw.close()


def test_serve_left_running_through_the_restore_steps_records_pings_in_the_restored_file(
    db_path: str, tmp_path: Path
) -> None:
    conn = store.open_db(db_path)
    token, digest = new_token()
    job = add(conn, "heartbeat", name="job", token_sha256=digest)
    conn.close()
    backup = tmp_path / "monitor-tick-2026-12-01.db"
    assert cli("backup", "--out", str(backup), "--db", db_path).returncode == 0
    rotated = cli("heartbeat", "rotate", "job", "--db", db_path).stdout.strip()  # the backup keeps `token`
    with serving(db_path) as served, httpx.Client(trust_env=False, timeout=10) as client:

        def status(ping_token: str) -> int:
            return client.get(served.url(f"/ping/{ping_token}")).status_code

        assert (status(rotated), status(token)) == (200, 404)
        _restore(db_path, backup, tmp_path)
        # another process adds a heartbeat to the restored file and keeps it open, so that its
        # commit is still in the -wal when serve lets go of the file it had open
        held = store.open_db(db_path)
        try:
            later_token, later_digest = new_token()
            later = add(held, "heartbeat", name="later", token_sha256=later_digest)
            assert Path(f"{db_path}-wal").stat().st_size > 0
            assert (status(token), status(later_token), status(rotated)) == (200, 200, 404)
        finally:
            held.close()
    raw = sqlite3.connect(db_path)
    try:
        assert raw.execute("SELECT monitor_id FROM pings ORDER BY monitor_id").fetchall() == [(job,), (later,)]
    finally:
        raw.close()


@pytest.mark.parametrize("out", ["", ":memory:"])
def test_backup_refuses_an_out_path_that_is_not_a_file(db_path: str, out: str) -> None:
    result = cli("backup", "--out", out, "--db", db_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "is not a database file" in result.stderr
