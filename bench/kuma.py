"""CPU per check: monitor-tick against Uptime Kuma 1.23.x, the same HTTP monitors, the same nginx.

    .venv/bin/python bench/kuma.py                  # from the repository root; about 17 minutes
    .venv/bin/python bench/kuma.py --sizes 100      # one size only

For each size N, N monitors of `http://127.0.0.1:PORT/?m=ID` on bench/nginx.py's nginx:

- monitor-tick: N one-minute monitors in a fresh SQLite file; TICKS consecutive replayed minutes,
  each a fresh `monitor-tick --db PATH --minute M --retry-delay 0` process, as cron runs it.
  CPU = ru_utime + ru_stime of each process (os.wait4), peak RSS = the largest ru_maxrss. The
  median of REPEATS such runs, each on a fresh file, with their spread.
- Uptime Kuma: a built checkout (env KUMA_DIR, default /work/kuma/uptime-kuma; docs/performance.md,
  "Building Uptime Kuma for figure 10", builds 1.23.17 from its git tag) runs `node server/server.js` on a fresh
  data dir with N http monitors, inserted into its SQLite `monitor` table before the server
  starts, once at each of KUMA_INTERVALS_S: 60 s, the default of Kuma's add dialog, and 20 s,
  its minimum. CPU = utime + stime of the node process (/proc/PID/stat) over a window of two
  intervals that begins once every monitor has started and made its first check; checks = its
  heartbeat rows timed in that window; peak RSS = VmHWM. Kuma starts its monitors 0.3-1 s apart
  (16 minutes for 1,000); a `node -r` preload shortens only that start-up spacing so they start
  spread over one interval, as they end up after Kuma's own spacing. Once per size and interval.

The figure writes a plot of CPU per check against monitors, both sides, with the ratios, to
docs/img/ (matplotlib: the `bench` extra, `pip install -e '.[bench]'`; never the tick's).

Bytes per monitor-day (one check a minute) are the bytes the checks' tables grew by (sqlite's
dbstat, used bytes of table and index pages): monitor-tick's rollups x 24 (one row per monitor-
hour; all ticks fall in one hour) plus its per-minute rows (ticks, claims) x 1,440 / N; Kuma's
heartbeat table and its four indexes per heartbeat row x 1,440.

When Kuma is not there (no server/server.js, node_modules or dist/index.html; no node) or does
not start, the figure says `skipped: why` and the script still exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import common  # bench/common.py: Figure, print_figure, monitor_row, db_with, run_child_usage
import nginx  # bench/nginx.py, beside this script

NUMBER = 10
KUMA_DIR = Path(os.environ.get("KUMA_DIR", "/work/kuma/uptime-kuma"))
KUMA_INTERVALS_S = (60, 20)  # the default of Kuma's add dialog, and its minimum
DEFAULT_INTERVAL_S = 60
SIZES = (10, 100, 1_000)
TICKS = 5
REPEATS = 3  # monitor-tick's side: the median of this many runs of TICKS ticks
# after Kuma listens: one interval for every monitor to start (the preload spreads them over
# it), and this for the last one's first (important) check
FIRST_CHECK_S = 10
WINDOWS = 2  # Kuma's window: this many intervals
START_TIMEOUT_S = 60
PLOT = Path(__file__).resolve().parent.parent / "docs" / "img" / "kuma-cpu-per-check.svg"


def goal(size: int, interval_s: int) -> float | None:
    """The ratio to reach at Kuma's default interval (None: no goal at its minimum)."""
    if interval_s != DEFAULT_INTERVAL_S:
        return None
    return {10: 5.0, 100: 10.0}.get(size, 20.0)


def used_bytes(path: str | Path) -> dict[str, int]:
    """Used bytes (page size less unused bytes) of each table and index, from sqlite's dbstat."""
    conn = sqlite3.connect(path)
    try:
        return {
            name: int(used)
            for name, used in conn.execute("SELECT name, sum(pgsize - unused) FROM dbstat GROUP BY name")
        }
    finally:
        conn.close()


def file_bytes(path: str | Path) -> int:
    return sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").exists())


@dataclass
class Side:
    cpu_per_1000_s: float
    peak_mb: float
    bytes_per_monitor_day: float
    checks: int
    spread: str = ""  # of repeats (monitor-tick's side)


# ---------------------------------------------------------------------------------------------
# monitor-tick


def measure_tick(size: int, port: int) -> Side:
    """The median of REPEATS runs of measure_ticks, with their spread."""
    runs = sorted((measure_ticks(size, port) for _ in range(REPEATS)), key=lambda side: side.cpu_per_1000_s)
    middle = runs[len(runs) // 2]
    middle.spread = f"{runs[0].cpu_per_1000_s:.2f}-{runs[-1].cpu_per_1000_s:.2f}"
    return middle


def measure_ticks(size: int, port: int) -> Side:
    rows = [common.monitor_row(i, f"http://127.0.0.1:{port}/?m={i}") for i in range(1, size + 1)]
    path = common.db_with(f"kuma-mt-{size}.db", rows)
    before = used_bytes(path)
    argv = common.monitor_tick_argv()
    cpu = 0.0
    peak_kib = 0
    for k in range(TICKS):  # consecutive minutes of one hour, as cron runs them
        _, kib, seconds = common.run_child_usage(
            [*argv, "--db", path, "--minute", str(common.MINUTE + k), "--retry-delay", "0"]
        )
        cpu += seconds
        peak_kib = max(peak_kib, kib)
    common.assert_all_up(path, size, TICKS)  # (its last connection checkpoints the WAL into the file)
    checks = size * TICKS
    after = used_bytes(path)
    grown = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    per_hour = sum(v for name, v in grown.items() if "rollups" in name)
    per_minute = sum(v for name, v in grown.items() if "ticks" in name or "claims" in name)
    per_day = (per_hour * 24 + per_minute / TICKS * 1_440) / size
    return Side(cpu / checks * 1_000, peak_kib / 1024, per_day, checks)


# ---------------------------------------------------------------------------------------------
# Uptime Kuma

# Loaded with `node -r` before server.js: Kuma's only use of getRandomInt is the 300-1000 ms
# pause between starting two monitors (server.js startMonitors); this makes the pause average
# KUMA_BENCH_SPACING_MS instead, so that N monitors start spread over one interval.
_PRELOAD = """
const util = require(process.env.KUMA_BENCH_UTIL);
const spacing = Number(process.env.KUMA_BENCH_SPACING_MS);
util.getRandomInt = () => Math.floor(Math.random() * 2 * spacing);
"""


def kuma_missing() -> str | None:
    """Why Kuma cannot run here, or None."""
    for needed in ("server/server.js", "node_modules", "dist/index.html", "src/util.js"):
        if not (KUMA_DIR / needed).exists():
            return f"no {needed} in {KUMA_DIR} (set KUMA_DIR to a built Uptime Kuma 1.23.x)"
    if shutil.which("node") is None:
        return "node is not installed"
    return None


def kuma_version() -> str:
    try:
        return str(json.loads((KUMA_DIR / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "1.23.x"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Kuma:
    """`node server/server.js` on a data dir and a free loopback port; stop() always ends it."""

    def __init__(self, data_dir: Path, preload: Path | None = None, spacing_ms: float = 0) -> None:
        self.log = data_dir / f"server-{time.monotonic_ns()}.log"
        env = {**os.environ, "NODE_ENV": "production"}
        argv = [shutil.which("node") or "node"]
        if preload is not None:
            argv += ["-r", str(preload)]
            env["KUMA_BENCH_UTIL"] = str(KUMA_DIR / "src" / "util.js")
            env["KUMA_BENCH_SPACING_MS"] = str(spacing_ms)
        port = _free_port()
        argv += ["server/server.js", f"--data-dir={data_dir}/", f"--port={port}", "--host=127.0.0.1"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                argv, cwd=KUMA_DIR, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        self.port = port

    def wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Kuma exited {self.process.returncode}: {self.tail()}")
            if b"Listening on" in self.log.read_bytes():
                return
            time.sleep(0.2)  # a bench waiting for a server it started
        raise RuntimeError(f"Kuma did not listen within {START_TIMEOUT_S} s: {self.tail()}")

    def tail(self) -> str:
        lines = self.log.read_text(errors="replace").strip().splitlines()
        return lines[-1][:200] if lines else "(no output)"

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def peak_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RuntimeError("no VmHWM")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # Kuma's graceful shutdown closes its DB
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def insert_kuma_monitors(db: Path, size: int, port: int, interval_s: int) -> None:
    """A user (as after setup) and `size` http monitors, as Kuma's add dialog saves them with
    its defaults (retry interval = interval, timeout 0.8 x interval, no retries), every
    `interval_s`."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("INSERT INTO user (id, username, password, active) VALUES (1, 'admin', '!', 1)")
            conn.executemany(
                "INSERT INTO monitor (id, name, active, user_id, interval, retry_interval, url, type, method,"
                " maxretries, timeout, accepted_statuscodes_json)"
                " VALUES (?, ?, 1, 1, ?, ?, ?, 'http', 'GET', 0, ?, '[\"200-299\"]')",
                [
                    (i, f"m{i}", interval_s, interval_s, f"http://127.0.0.1:{port}/?m={i}", interval_s * 0.8)
                    for i in range(1, size + 1)
                ],
            )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _sql_time(epoch_s: float) -> str:
    """Kuma's heartbeat.time format: UTC 'YYYY-MM-DD HH:MM:SS.mmm'."""
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:23]


class KumaSkipped(Exception):
    """Kuma did not start, stopped, or did not check every monitor up: the figure is skipped."""


def measure_kuma(size: int, port: int, interval_s: int) -> Side:
    try:
        return _measure_kuma(size, port, interval_s)
    except (RuntimeError, OSError, sqlite3.Error, subprocess.SubprocessError) as e:
        raise KumaSkipped(f"Kuma: {e}") from e


def _measure_kuma(size: int, port: int, interval_s: int) -> Side:
    with tempfile.TemporaryDirectory(prefix="monitor-tick-kuma-") as tmp:
        data = Path(tmp)
        preload = data / "spread-start.js"
        preload.write_text(_PRELOAD)
        first = Kuma(data)  # creates and migrates kuma.db; no monitors yet
        try:
            first.wait_listening()
        finally:
            first.stop()
        db = data / "kuma.db"
        insert_kuma_monitors(db, size, port, interval_s)
        before = used_bytes(db)
        kuma = Kuma(data, preload, spacing_ms=interval_s * 1000 / size)
        try:
            kuma.wait_listening()
            time.sleep(interval_s + FIRST_CHECK_S)
            if kuma.process.poll() is not None:
                raise RuntimeError(f"Kuma exited {kuma.process.returncode}: {kuma.tail()}")
            start_wall, start_cpu = time.time(), kuma.cpu_s()
            time.sleep(WINDOWS * interval_s)
            end_wall, end_cpu = time.time(), kuma.cpu_s()
            peak_kib = kuma.peak_kib()
        finally:
            kuma.stop()
        conn = sqlite3.connect(db)
        try:
            window = (_sql_time(start_wall), _sql_time(end_wall))
            checks, up, monitors = conn.execute(
                "SELECT count(*), coalesce(sum(status = 1), 0), count(DISTINCT monitor_id)"
                " FROM heartbeat WHERE time >= ? AND time < ?",
                window,
            ).fetchone()
            total_beats = conn.execute("SELECT count(*) FROM heartbeat").fetchone()[0]
        finally:
            conn.close()
        if not checks or up != checks or monitors != size:
            raise RuntimeError(f"Kuma: {checks} checks in the window, {up} up, of {monitors}/{size} monitors")
        after = used_bytes(db)
        heartbeat_names = ("heartbeat", "monitor_id", "important", "monitor_time_index", "monitor_important_time_index")
        grown = sum(after.get(n, 0) - before.get(n, 0) for n in heartbeat_names)
        return Side((end_cpu - start_cpu) / checks * 1_000, peak_kib / 1024, grown / total_beats * 1_440, checks)


# ---------------------------------------------------------------------------------------------


def kuma_figure(sizes: Sequence[int] = SIZES, intervals: Sequence[int] = KUMA_INTERVALS_S) -> common.Figure | str:
    """The figure, or the one-line reason it was skipped."""
    missing = kuma_missing()
    if missing:
        return missing
    results: list[tuple[int, Side, dict[int, Side]]] = []
    with ExitStack() as stack:
        try:
            server = stack.enter_context(nginx.nginx_server())
        except RuntimeError as e:  # nginx is not installed or would not start
            return f"nginx: {e}"
        try:
            for size in sizes:  # one heavy thing at a time: monitor-tick, then Kuma at each interval
                tick = measure_tick(size, server.port)
                results.append((size, tick, {i: measure_kuma(size, server.port, i) for i in intervals}))
        except KumaSkipped as e:
            return str(e).splitlines()[0][:300]
    version = kuma_version()
    notes = [
        "monitors | monitor-tick ms CPU/check (spread of 3) | "
        + " | ".join(f"Kuma every {i} s: ms/check, ratio" for i in intervals)
    ]
    passed = True
    for size, tick, kuma in results:
        cells = []
        for interval in intervals:
            ratio = kuma[interval].cpu_per_1000_s / tick.cpu_per_1000_s
            wanted = goal(size, interval)
            ok = wanted is None or ratio >= wanted
            passed &= ok
            verdict = "" if wanted is None else f" (goal >= {wanted:.0f}x {'PASS' if ok else 'MISS'})"
            cells.append(f"{kuma[interval].cpu_per_1000_s:.2f}, {ratio:.1f}x{verdict}")
        notes.append(f"{size:,} | {tick.cpu_per_1000_s:.2f} ({tick.spread}) | " + " | ".join(cells))
    for size, tick, kuma in results:
        notes.append(
            f"{size:,} monitors: monitor-tick {tick.peak_mb:.0f} MB peak, {tick.bytes_per_monitor_day:,.0f} "
            "B/monitor-day; Kuma "
            + ", ".join(
                f"every {i} s {k.peak_mb:.0f} MB peak, {k.bytes_per_monitor_day:,.0f} B/monitor-day, "
                f"{k.checks:,} checks in {WINDOWS * i} s"
                for i, k in kuma.items()
            )
        )
    notes += [
        f"monitor-tick: median of {REPEATS} runs of {TICKS} consecutive 1-minute ticks, each a fresh "
        "`monitor-tick --minute` process (interpreter start-up included); CPU of the processes (wait4)",
        f"Kuma {version}: once per size and interval, node's CPU per heartbeat over {WINDOWS} intervals from "
        f"one interval + {FIRST_CHECK_S} s after it listens (every monitor started and checked once); start-up "
        "spacing shortened (node -r preload); per-check CPU is what is compared, not per-minute",
        "B/monitor-day: dbstat used bytes, monitor-tick rollups x 24 + ticks/claims rows x 1,440 / N; "
        "Kuma heartbeat table + indexes per row x 1,440",
        "both against nginx on 127.0.0.1 (bench/nginx.py, keepalive off: a fresh connection per check)",
        plot(results, intervals, version),
    ]
    size, tick, kuma = results[-1]
    shown = DEFAULT_INTERVAL_S if DEFAULT_INTERVAL_S in kuma else intervals[0]
    goals = [f">= {g:.0f}x at {s:,}" for s, _, k in results for i in k for g in [goal(s, i)] if g]
    return common.Figure(
        NUMBER,
        f"CPU per check vs Uptime Kuma {version}, every {' s and '.join(map(str, intervals))} s",
        f"monitor-tick {tick.cpu_per_1000_s:.2f} ms a check at {size:,}",
        f"Kuma every {shown} s {kuma[shown].cpu_per_1000_s:.2f} ms",
        kuma[shown].cpu_per_1000_s / tick.cpu_per_1000_s,
        (" and ".join(goals) + f" (Kuma every {DEFAULT_INTERVAL_S} s)") if goals else "none at this interval",
        passed,
        notes,
    )


def plot(results: Sequence[tuple[int, Side, dict[int, Side]]], intervals: Sequence[int], version: str) -> str:
    """Write PLOT (CPU per check against monitors, both sides, log-log, the ratios marked);
    returns the note that says where, or why not."""
    try:
        import matplotlib

        matplotlib.use("svg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot: matplotlib is not installed (pip install -e '.[bench]')"
    sizes = [size for size, _, _ in results]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    ticks = [tick.cpu_per_1000_s for _, tick, _ in results]
    axes.plot(sizes, ticks, "o-", label="monitor-tick (cron, a fresh process a minute)")
    for interval in intervals:
        kuma = [k[interval].cpu_per_1000_s for _, _, k in results]
        axes.plot(sizes, kuma, "s--", label=f"Uptime Kuma {version}, every {interval} s")
        for size, mine, theirs in zip(sizes, ticks, kuma, strict=True):
            axes.annotate(f"{theirs / mine:.1f}x", (size, theirs), textcoords="offset points", xytext=(6, 4))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xticks(sizes, [f"{s:,}" for s in sizes])
    axes.set_xlabel("monitors")
    axes.set_ylabel("ms of CPU per check")
    axes.set_title("CPU per check (ratios: Kuma / monitor-tick)")
    axes.legend()
    figure.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(PLOT, metadata={"Date": None})
    plt.close(figure)
    return f"plot: {PLOT.relative_to(PLOT.parent.parent.parent)}"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="monitor counts, comma-separated (default 10,100,1000)")
    parser.add_argument("--intervals", default="60,20", help="Kuma's intervals in seconds (default 60,20)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    intervals = [int(s) for s in args.intervals.split(",") if s.strip()]
    started = time.perf_counter()
    figure = kuma_figure(sizes, intervals)
    if isinstance(figure, str):
        print(f"\n{NUMBER}. CPU per check vs Uptime Kuma {kuma_version()}  skipped: {figure}")
    else:
        common.print_figure(figure, time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
