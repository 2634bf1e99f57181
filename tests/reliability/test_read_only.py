"""A read-only database still serves the commands that only read: list, report, status-page,
--dry-run and notify list open it read-only, never create or write it. An older schema they
upgrade first where they may write the file (tests/reliability/test_migrations.py); in a
read-only one, they say so in one line and leave it as it was. Where SQLite cannot read it (a
WAL file in a read-only directory with no -shm to share), one line says why."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.run.tick import TickOptions, run_tick
from tests.commands import clock_at
from tests.conftest import add
from tests.servers import LocalServer

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
V1_DB = Path(__file__).resolve().parent.parent / "fixtures" / "v1.db"  # schema version 1
MINUTE = 29_934_720

READERS = [
    (["list", "--json"], lambda out: [m["name"] for m in json.loads(out)] == ["api"]),
    (["report", "--json"], lambda out: [(m["name"], m["checks"]) for m in json.loads(out)] == [("api", 1)]),
    (["--dry-run", "--minute", str(MINUTE + 1)], lambda out: out.splitlines()[0].endswith(": 1 due")),
    (["notify", "list", "--json"], lambda out: json.loads(out)["channels"] == []),
    (["plan", "list", "--json"], lambda out: [p["name"] for p in json.loads(out)] == ["default"]),
    (["owner", "list", "--json"], lambda out: json.loads(out) == []),
    (["maintenance", "list", "--json"], lambda out: json.loads(out) == []),
    (["show", "api", "--json"], lambda out: json.loads(out)["monitor"]["name"] == "api"),
    (["export"], lambda out: "[monitors.api]" in out),
]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command under a clock a minute after MINUTE's tick: `report` counts the last 24 hours
    back from now, and the real clock would leave that tick behind a day after MINUTE."""
    env = {**os.environ, **clock_at(clock.minute_start_ms(MINUTE + 2))}
    return subprocess.run([MONITOR_TICK, *args], capture_output=True, text=True, timeout=60, env=env)


def every_reader_fails(db: Path, message: str) -> None:
    """Every command of READERS on `db` prints nothing, says `message` in one line, exits 1."""
    for args, _ in READERS:
        result = cli(*args, "--db", str(db))
        assert (result.returncode, result.stdout, result.stderr) == (1, "", f"monitor-tick: {message}\n"), args


@pytest.fixture
def immutable() -> Iterator[object]:
    """Make a path read-only for this process: chmod for a normal user; for root, who ignores
    modes, the immutable attribute (chattr +i), which holds for files and directories alike."""
    made: list[tuple[Path, int]] = []

    def make(path: Path) -> None:
        made.append((path, path.stat().st_mode))
        if os.geteuid() == 0:
            subprocess.run(["chattr", "+i", str(path)], check=True)
        else:
            path.chmod(0o555 if path.is_dir() else 0o444)

    yield make
    for path, mode in reversed(made):
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(mode)


@pytest.fixture
def ticked(tmp_path: Path, local_server: LocalServer) -> Path:
    """A database in a directory of its own, with one monitor and one tick, every connection
    closed (so no -wal or -shm is left)."""
    directory = tmp_path / "data"
    directory.mkdir()
    path = directory / "monitor-tick.db"
    conn = store.open_db(str(path))
    add(conn, local_server.url("/ok"), name="api")
    conn.close()
    run_tick(TickOptions(db_path=str(path), minute=MINUTE))
    assert sorted(p.name for p in directory.iterdir()) == ["monitor-tick.db"]
    return path


def _contents(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if not p.name.endswith(("-wal", "-shm"))}


def test_a_read_only_file_still_serves_every_command_that_only_reads(
    ticked: Path, immutable: object, tmp_path: Path
) -> None:
    immutable(ticked)  # type: ignore[operator]
    before = _contents(ticked.parent)
    for args, good in READERS:
        result = cli(*args, "--db", str(ticked))
        assert (result.returncode, result.stderr) == (0, ""), (args, result.stderr)
        assert good(result.stdout), (args, result.stdout)
    page = cli("status-page", "--out", str(tmp_path / "site"), "--db", str(ticked))
    assert (page.returncode, page.stderr) == (0, "")
    assert "api" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert _contents(ticked.parent) == before
    # and a command that writes still says, in one line, that it cannot
    tick = cli("--minute", str(MINUTE + 1), "--db", str(ticked))
    assert (tick.returncode, tick.stderr) == (1, f"monitor-tick: database {ticked} is read-only\n")


def test_a_read_only_directory_serves_readers_once_the_shared_memory_file_exists(
    ticked: Path, immutable: object
) -> None:
    # SQLite reads a WAL database through its -shm file. While a writer (a tick, `serve`) has the
    # file open, it exists; a reader cannot create it in a directory it may not write.
    writer = sqlite3.connect(ticked)
    writer.execute("SELECT count(*) FROM monitors").fetchone()  # the -wal and -shm now exist
    immutable(ticked.parent)  # type: ignore[operator]
    immutable(ticked)  # type: ignore[operator]
    for args, good in READERS:
        result = cli(*args, "--db", str(ticked))
        assert (result.returncode, result.stderr) == (0, ""), (args, result.stderr)
        assert good(result.stdout), (args, result.stdout)
    writer.close()


def test_a_read_only_directory_without_the_shared_memory_file_fails_in_one_line(
    ticked: Path, immutable: object
) -> None:
    immutable(ticked.parent)  # type: ignore[operator]
    every_reader_fails(
        ticked,
        f"cannot read database {ticked}: SQLite needs {ticked}-shm beside it and {ticked.parent} is not writable",
    )
    assert sorted(p.name for p in ticked.parent.iterdir()) == ["monitor-tick.db"]


def test_a_read_only_file_of_an_older_schema_is_refused_in_one_line_and_left_as_it_was(
    tmp_path: Path, immutable: object
) -> None:
    directory = tmp_path / "data"
    directory.mkdir()
    older = directory / "monitor-tick.db"
    shutil.copy(V1_DB, older)
    immutable(older)  # type: ignore[operator]
    before = _contents(directory)
    every_reader_fails(
        older,
        f"database {older} has schema version 1, older than this monitor-tick's ({store.SCHEMA_VERSION}), "
        "and is read-only here; the next tick (or any command that writes) upgrades it",
    )
    assert _contents(directory) == before


def test_readers_never_create_a_database(tmp_path: Path) -> None:
    path = tmp_path / "monitor-tick.db"
    every_reader_fails(path, f"no database at {path}")
    assert list(tmp_path.iterdir()) == []
