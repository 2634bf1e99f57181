"""The database misbehaves: locks, read-only files, foreign files, newer schemas, and the
process killed mid-tick. One line, exit 1, nothing half-written, and the next tick runs."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import LocalServer, send_response

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
MINUTE = 29_934_720


def tick_cli(db: str, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MONITOR_TICK, "--db", db, *args], capture_output=True, text=True, timeout=60, **kwargs)  # type: ignore[call-overload]


class Gate:
    """A route that answers only once the test opens the gate (set from any thread)."""

    def __init__(self, server: LocalServer, path: str, status: int = 200) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()
        self.status = status
        server.route(path, self.handle)

    async def handle(self, reader: object, writer: object, path: str, method: str) -> None:
        self.entered.set()
        await asyncio.to_thread(self.open.wait, 30)
        await send_response(writer, self.status, b"ok", method=method)  # type: ignore[arg-type]


def test_the_tick_waits_for_another_writer_and_then_commits(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    monitor = add(conn, local_server.url("/ok"))
    holder = store.open_db(db_path)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(1.5, lambda: holder.execute("COMMIT"))  # another process's few seconds
    release.start()
    try:
        report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, busy_timeout_s=10))
    finally:
        release.join()
        holder.close()
    assert report.claimed and rollup(conn, monitor) == (1, 0)


def test_past_the_busy_limit_the_tick_fails_clearly_and_writes_no_results(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    gate = Gate(local_server, "/gate", status=503)
    monitor = add(conn, local_server.url("/gate"), retries=0)
    holder = store.open_db(db_path)
    outcome: list[BaseException | object] = []

    def tick() -> None:
        try:
            outcome.append(run_tick(TickOptions(db_path=db_path, minute=MINUTE, busy_timeout_s=0.5)))
        except BaseException as exc:  # noqa: BLE001 -- handed to the test thread
            outcome.append(exc)

    runner = threading.Thread(target=tick)
    runner.start()
    assert gate.entered.wait(10)  # the tick is probing: its minute is claimed, nothing written
    holder.execute("BEGIN IMMEDIATE")  # another process takes the write lock and keeps it
    gate.open.set()
    runner.join(30)
    holder.execute("ROLLBACK")
    holder.close()
    (error,) = outcome
    assert isinstance(error, store.StoreError)
    assert str(error) == f"database {db_path} is locked by another process (gave up waiting)"
    assert rollup(conn, monitor) == (0, 0)
    assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (0,)
    assert conn.execute("SELECT finished_at_ms FROM ticks").fetchall() == [(None,)]


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_a_file_that_is_not_sqlite_fails_with_one_line_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("shopping list\n")
    before = _snapshot(tmp_path)
    run = tick_cli(str(path))
    assert (run.returncode, run.stdout, run.stderr) == (1, "", f"monitor-tick: not a SQLite database: {path}\n")
    assert _snapshot(tmp_path) == before


def test_a_newer_schema_fails_with_one_line_and_is_left_alone(db_path: str) -> None:
    raw = sqlite3.connect(db_path)
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    raw.close()
    directory = Path(db_path).parent
    before = _snapshot(directory)
    run = tick_cli(db_path)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "newer than this monitor-tick understands" in run.stderr
    assert _snapshot(directory) == before


def test_a_missing_directory_fails_with_one_line_and_creates_nothing(tmp_path: Path) -> None:
    run = tick_cli(str(tmp_path / "gone" / "m.db"))
    assert (run.returncode, run.stderr) == (
        1,
        f"monitor-tick: database directory does not exist: {tmp_path / 'gone'}\n",
    )
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def read_only() -> Iterator[object]:
    """Make a file read-only for this process: chmod for a normal user; for root, who ignores
    file modes, the immutable attribute (chattr +i)."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "+i", str(path)], check=True)
        else:
            path.chmod(0o444)
        made.append(path)

    yield make
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o600)


def test_a_read_only_database_fails_with_one_line_and_is_left_alone(db_path: str, read_only: object) -> None:
    conn = store.open_db(db_path)
    add(conn, "http://127.0.0.1:9/")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    read_only(Path(db_path))  # type: ignore[operator]
    directory = Path(db_path).parent
    before = _snapshot(directory)
    run = tick_cli(db_path, "--minute", str(MINUTE))
    assert (run.returncode, run.stdout, run.stderr) == (1, "", f"monitor-tick: database {db_path} is read-only\n")
    assert _snapshot(directory) == before


def _kill_when(process: subprocess.Popen[str], condition: object, limit_s: float = 60) -> None:
    """SIGKILL `process` once `condition()` holds (and in any case: a test that fails here leaves
    no tick behind)."""
    deadline = time.monotonic() + limit_s
    try:
        while not condition():  # type: ignore[operator]
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "condition never came"
            time.sleep(0.01)  # polling an observable condition, bounded
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)


def _minute_claimed(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT count(*) FROM ticks WHERE minute = ?", (MINUTE,)).fetchone() == (1,)


def _write_lock_taken(db_path: str) -> bool:
    probe = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        probe.close()


@pytest.mark.parametrize("moment", ["probing", "writing"])
def test_a_tick_killed_mid_way_leaves_nothing_half_done_and_the_next_tick_runs(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, moment: str
) -> None:
    gate = Gate(local_server, "/gate", status=503)
    monitors = [add(conn, local_server.url("/gate" if n == 0 else f"/status/503?n={n}"), retries=0) for n in range(5)]
    if moment == "writing":
        gate.open.set()
        # The final transaction never ends, so the kill lands inside it however late it comes.
        # The claim's transaction is made slow too, as a loaded machine makes it (the tick
        # preempted while it holds the write lock): the wait below must tell the two apart.
        conn.execute(
            "CREATE TRIGGER slow_write AFTER INSERT ON incidents BEGIN SELECT count(*) FROM "
            "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c); END"
        )
        conn.execute(
            "CREATE TRIGGER slow_claim AFTER INSERT ON ticks BEGIN SELECT count(*) FROM "
            "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT x FROM c); END"
        )
    process = subprocess.Popen(
        [MONITOR_TICK, "--db", db_path, "--minute", str(MINUTE), "--retry-delay", "0"],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if moment == "probing":
        _kill_when(process, gate.entered.is_set)
    else:
        # the write lock, once the minute's claim has committed: only the final write takes it
        # then (the claim takes it too, before: killed there, the tick would leave no ledger row)
        _kill_when(process, lambda: _minute_claimed(conn) and _write_lock_taken(db_path))
    process.communicate()
    conn.execute("DROP TRIGGER IF EXISTS slow_write")
    conn.execute("DROP TRIGGER IF EXISTS slow_claim")
    assert conn.execute("SELECT count(*) FROM rollups").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (0,)
    assert conn.execute("SELECT minute, finished_at_ms FROM ticks").fetchall() == [(MINUTE, None)]
    gate.open.set()
    run = tick_cli(db_path, "--minute", str(MINUTE + 1), "--retry-delay", "0")
    assert run.returncode == 0 and run.stderr == ""
    assert [rollup(conn, m) for m in monitors] == [(1, 1)] * 5
    assert conn.execute("SELECT count(*), count(DISTINCT monitor_id) FROM incidents").fetchone() == (5, 5)
