"""A full disk: the tick says so in one line and exits 1, the file stays sound, and the next
tick runs once there is space. The disk is a small tmpfs mounted in a mount namespace of its
own (`unshare -m`, as root), so nothing outside the test sees it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
MINUTE = 29_934_720

# Inside the namespace: a 256 KiB disk with a database that ticked once; fill the disk, tick,
# free it, check the file (before anything writes to it again), tick again.
SCRIPT = """
mount -t tmpfs -o size=256k tmpfs "$DISK"
"$MT" add heartbeat --name job --db "$DISK/m.db" > /dev/null 2> "$OUT/add.stderr"
"$MT" --minute "$M" --db "$DISK/m.db"
if [ -n "$HOLD" ]; then  # another process has the file open: its -wal and -shm stay allocated
    mkfifo "$OUT/ready" "$OUT/release"
    "$PY" -c "$HOLDER" "$DISK/m.db" "$OUT/ready" "$OUT/release" &
    read -r _ < "$OUT/ready"
fi
dd if=/dev/zero of="$DISK/filler" bs=1k 2> /dev/null || true
set +e
"$MT" --minute $((M + 1)) --db "$DISK/m.db" > "$OUT/full.stdout" 2> "$OUT/full.stderr"
echo $? > "$OUT/full.rc"
set -e
if [ -n "$HOLD" ]; then echo done > "$OUT/release"; wait; fi
rm "$DISK/filler"
"$PY" -c "$INTEGRITY" "$DISK/m.db" > "$OUT/integrity"
"$MT" --minute $((M + 2)) --db "$DISK/m.db"
"$PY" -c "$LEDGER" "$DISK/m.db" > "$OUT/ledger"
"""
HOLDER = (
    "import sqlite3, sys; conn = sqlite3.connect(sys.argv[1]); conn.execute('SELECT count(*) FROM ticks').fetchone(); "
    "open(sys.argv[2], 'w').write('open\\n'); open(sys.argv[3]).read(); conn.close()"
)
INTEGRITY = "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchall())"
LEDGER = (
    "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("
    "'SELECT minute FROM ticks WHERE finished_at_ms IS NOT NULL ORDER BY minute').fetchall())"
)


@pytest.mark.parametrize("hold", ["", "1"], ids=["alone", "file held open"])
def test_a_full_disk_fails_the_tick_in_one_line_and_the_next_tick_runs_once_there_is_space(
    tmp_path: Path, hold: str
) -> None:
    """Alone, the tick cannot allocate the -shm file (SQLite says "disk I/O error"); with the file
    held open by another process, it cannot grow the -wal ("database or disk is full")."""
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    env = {
        "DISK": str(disk),
        "OUT": str(out),
        "MT": MONITOR_TICK,
        "PY": sys.executable,
        "M": str(MINUTE),
        "INTEGRITY": INTEGRITY,
        "LEDGER": LEDGER,
        "HOLDER": HOLDER,
        "HOLD": hold,
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
    }
    done = subprocess.run(["unshare", "-m", "sh", "-ec", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    db = disk / "m.db"
    assert (out / "add.stderr").read_text() == f"monitor-tick: created database {db}\n"
    assert (out / "full.rc").read_text() == "1\n"
    assert (out / "full.stdout").read_text() == ""
    assert (out / "full.stderr").read_text() == (
        f"monitor-tick: no space left on the disk for database {db} (free some: the next tick runs normally)\n"
    )
    assert (out / "integrity").read_text() == "[('ok',)]\n"
    assert (out / "ledger").read_text() == str([(MINUTE,), (MINUTE + 2,)]) + "\n"
    assert list(disk.iterdir()) == []  # the tmpfs went with its namespace
