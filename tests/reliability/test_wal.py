"""The WAL stays small. SQLite cannot reuse the -wal past the snapshot of a reader that keeps a
transaction open, so while one does, the file grows by what each tick commits (no more); once
the reader ends, the next tick checkpoints it and cuts it back, even while another process (say
`serve`) keeps the database open, so SQLite never deletes the -wal on close."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from monitor_tick import store
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add

MINUTE = 29_934_720


def wal_bytes(db_path: str) -> int:
    path = Path(f"{db_path}-wal")
    return path.stat().st_size if path.exists() else 0


def tick(db_path: str, minute: int) -> None:
    # a short busy timeout: a tick must never wait for the reader (only writers block it)
    report = run_tick(TickOptions(db_path=db_path, minute=minute, busy_timeout_s=0.5))
    assert report.claimed and len(report.results) == 1


def test_the_wal_grows_only_by_each_ticks_commits_under_a_reader_and_shrinks_after_it(db_path: str) -> None:
    held = store.open_db(db_path)  # another process keeps the database open, as `serve` does
    add(held, "heartbeat", name="job")
    tick(db_path, MINUTE)
    reader = sqlite3.connect(db_path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM rollups").fetchone()  # a read transaction, held open
    sizes = [wal_bytes(db_path)]
    for n in range(1, 31):
        tick(db_path, MINUTE + n)
        sizes.append(wal_bytes(db_path))
    growth = [after - before for before, after in zip(sizes, sizes[1:], strict=False)]
    # each tick appends its own few pages (a frame is a page plus a 24-byte header): no more
    frame = held.execute("PRAGMA page_size").fetchone()[0] + 24
    assert max(growth) <= 8 * frame, growth
    assert sizes[-1] > store.WAL_LIMIT_BYTES  # the reader really held the WAL open
    reader.execute("COMMIT")
    reader.close()
    tick(db_path, MINUTE + 31)
    assert wal_bytes(db_path) <= store.WAL_LIMIT_BYTES
    for n in range(32, 52):  # and it stays there while nobody holds a read transaction open
        tick(db_path, MINUTE + n)
        assert wal_bytes(db_path) <= store.WAL_LIMIT_BYTES + 4 * frame
    held.close()
    assert not os.path.exists(f"{db_path}-wal")  # the last connection to close removes it
