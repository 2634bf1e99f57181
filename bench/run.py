"""monitor-tick's benchmark: seven figures, each next to its reference, with its goal.

    .venv/bin/python bench/run.py            # from the repository root; about 2-4 minutes
    .venv/bin/python bench/run.py 2 5        # only figures 2 and 5

Everything runs on this machine: HTTP goes to a lean server (bench/server.py) on 127.0.0.1 in
its own process; databases are real SQLite files under bench/out/ (git-ignored; the large ones
for figure 4 are kept there and reused). Ticks are real: run_tick (store -> select -> fan-out ->
write), or the installed `monitor-tick` command as a fresh process where the issue asks for it.
Timings on a shared 2-core machine move by 10-20% between runs; figures that are timed are
repeated and their medians shown.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import bulk  # bench/bulk.py, beside this script
import nginx  # bench/nginx.py
from common import (  # bench/common.py: what the figures share with bench/kuma.py
    CONCURRENCY,
    MINUTE,
    OUT,
    Figure,
    assert_all_up,
    db_with,
    fresh_db,
    lean_server,
    median,
    monitor_row,
    monitor_tick_argv,
    print_figure,
    run_child,
    timed_tick,
)

from monitor_tick import store
from monitor_tick.core import clock, schedule
from monitor_tick.core.model import CheckResult

# ---------------------------------------------------------------------------------------------
# 1. Fan-out efficiency


def fanout() -> Figure:
    """2,000 due monitors; 2% answer after 5 s, the rest after 20-60 ms; concurrency 50."""
    rng = random.Random(1)
    count = 2_000
    latencies_ms = [5_000 if rng.random() < 0.02 else rng.randint(20, 60) for _ in range(count)]
    lower_bound_s = max(sum(latencies_ms) / CONCURRENCY, max(latencies_ms)) / 1000
    # Reference: fixed batches of 50 in monitor order, each waiting for its slowest member.
    batches_s = sum(max(latencies_ms[i : i + CONCURRENCY]) for i in range(0, count, CONCURRENCY)) / 1000
    with lean_server() as port:
        path = db_with(
            "fanout.db",
            [monitor_row(i + 1, f"http://127.0.0.1:{port}/d/{ms}?m={i + 1}") for i, ms in enumerate(latencies_ms)],
        )
        cold_s, cold = timed_tick(path, MINUTE)  # no history yet: probes start in id order
        steady_s, steady = timed_tick(path, MINUTE + 1)  # the next minute: slowest of the last hour first
    assert cold["up"] == steady["up"] == count, (cold, steady)
    ratio = steady_s / lower_bound_s
    return Figure(
        1,
        "fan-out makespan, 2,000 checks (2% 5 s)",
        f"{steady_s:.2f} s",
        f"lower bound {lower_bound_s:.2f} s",
        ratio,
        "<= 1.20x",
        ratio <= 1.2,
        [
            f"fixed batches of 50 (simulated, same latencies): {batches_s:.1f} s; "
            f"the tick takes {steady_s / batches_s:.2f}x of that",
            f"first tick, no history (id order): {cold_s:.2f} s = {cold_s / lower_bound_s:.2f}x the lower bound",
            f"{sum(ms == 5_000 for ms in latencies_ms)} slow checks at random positions; whole tick timed",
        ],
    )


# ---------------------------------------------------------------------------------------------
# 2. Probe throughput


async def raw_client(port: int, count: int) -> float:
    """Checks per second of a minimal raw-asyncio HTTP client: open, GET, read to EOF, close."""
    request = (
        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: raw\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    ).encode()
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one() -> None:
        async with slots:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            data = await reader.read()
            writer.close()
            if not data.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(data[:40])

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    return count / (time.perf_counter() - started)


def throughput() -> Figure:
    import httpx

    count, rounds = 5_000, 5
    raw_rates: list[float] = []
    tick_rates: list[float] = []
    with lean_server() as port:
        path = db_with(
            "throughput.db", [monitor_row(i, f"http://127.0.0.1:{port}/?m={i}") for i in range(1, count + 1)]
        )
        for k in range(rounds):  # alternate, so that both see the same machine
            raw_rates.append(asyncio.run(raw_client(port, count)))
            seconds, report = timed_tick(path, MINUTE + k)
            assert report["up"] == count, report
            tick_rates.append(count / seconds)
        seconds, report = timed_tick(path, MINUTE + rounds, transport=httpx.AsyncHTTPTransport())
        default_rate = count / seconds
        assert report["up"] == count, report
    raw, tick = median(raw_rates), median(tick_rates)
    ratio = tick / raw
    return Figure(
        2,
        "probe throughput, 5,000 fresh connections",
        f"{tick:,.0f} checks/s",
        f"raw asyncio {raw:,.0f}/s",
        ratio,
        ">= 0.33x",
        ratio >= 0.33,
        [
            f"medians of {rounds} alternating rounds; whole tick (select, probe, write) timed",
            f"same tick through httpx's default transport: {default_rate:,.0f}/s = {default_rate / raw:.2f}x raw",
        ],
    )


# ---------------------------------------------------------------------------------------------
# 3. Idle tick


def idle_rows(count: int, first_minute: int, window_min: int, rng: random.Random) -> list[tuple[object, ...]]:
    """`count` monitors (15 min to 1 day, a tenth aligned) none of which is due in the minutes
    [first_minute, first_minute + window_min): ids are skipped where their phase would be."""
    window = range(first_minute, first_minute + window_min)
    periods = [15, 30, 60, 60, 360, 720, 1_440, 1_440]
    rows: list[tuple[object, ...]] = []
    monitor_id = 0
    while len(rows) < count:
        period = rng.choice(periods)
        aligned = rng.random() < 0.1 and all(m % period != 0 for m in window)
        monitor_id += 1
        while not aligned and any(m % period == monitor_id % period for m in window):
            monitor_id += 1
        rows.append(monitor_row(monitor_id, f"https://site-{monitor_id}.example/", period * 60, aligned=aligned))
    return rows


def idle() -> Figure:
    count, runs, window_min = 10_000, 15, 5
    first_minute = clock.minute_of_ms(clock.now_ms())
    template = db_with("idle.db", idle_rows(count, first_minute, window_min, random.Random(3)))
    conn = store.open_db(template)
    for minute in range(first_minute, first_minute + window_min):
        assert not store.select_due(conn, minute, clock.minute_start_ms(minute)), minute
    conn.close()
    copy = str(OUT / "idle-run.db")
    bare: list[tuple[float, int]] = []
    tick: list[tuple[float, int]] = []
    argv = monitor_tick_argv()
    for _ in range(runs):
        bare.append(run_child([sys.executable, "-c", "import sqlite3"]))
        shutil.copy(template, copy)  # a fresh copy: each run claims its minute, as cron's does
        for suffix in ("-wal", "-shm"):
            Path(copy + suffix).unlink(missing_ok=True)
        tick.append(run_child([*argv, "--db", copy]))
    if clock.minute_of_ms(clock.now_ms()) >= first_minute + window_min:
        raise RuntimeError("idle bench outran its window of no-due minutes; rerun")
    bare_s, tick_s = median([w for w, _ in bare]), median([w for w, _ in tick])
    bare_mb, tick_mb = median([r for _, r in bare]) / 1024, median([r for _, r in tick]) / 1024
    ratio = tick_s / bare_s
    return Figure(
        3,
        "idle tick, 10,000 monitors, none due",
        f"{tick_s * 1000:.0f} ms, {tick_mb:.1f} MB",
        f"python -c 'import sqlite3' {bare_s * 1000:.0f} ms, {bare_mb:.1f} MB",
        ratio,
        "<= 3x, <= 25 MB",
        ratio <= 3 and tick_mb <= 25,
        [f"`{' '.join(Path(a).name for a in argv)} --db COPY` as a fresh process, medians of {runs} runs each"],
    )


# ---------------------------------------------------------------------------------------------
# 4. Selection at scale

# (period in minutes, share of monitors): about 1.2% of monitors are due in a typical minute
SELECT_MIX = [(1, 0.001), (5, 0.005), (15, 0.03), (30, 0.05), (60, 0.30), (360, 0.20), (720, 0.15), (1_440, 0.264)]
SELECT_DB_VERSION = 3  # 3: schema 12 (monitors_due holds the owner and aligned)


def selection_db(count: int) -> str:
    """A realistic world of `count` monitors: owners on plans (some expired), a tenth aligned,
    some paused, a few maintenance windows. Cached in bench/out/."""
    path = OUT / f"select-{count}-v{SELECT_DB_VERSION}.db"
    if path.exists():
        return str(path)
    building = fresh_db(f"{path.name}.part")
    rng = random.Random(count)
    conn = store.open_db(building)
    free = store.add_plan(conn, "free", 300)
    pro = store.add_plan(conn, "pro", 60)
    base_ms = clock.minute_start_ms(MINUTE)
    owners = max(1, count // 20)
    bulk.insert_owners(
        conn,
        (
            (
                owner,
                f"owner-{owner}",
                rng.choices([1, free, pro], [0.6, 0.3, 0.1])[0],
                base_ms + rng.randint(-30, 30) * 86_400_000 if rng.random() < 0.05 else None,
            )
            for owner in range(1, owners + 1)
        ),
    )
    periods, shares = zip(*SELECT_MIX, strict=True)
    bulk.insert_monitors(
        conn,
        (
            monitor_row(
                i,
                f"https://site-{i}.example/health",
                rng.choices(periods, shares)[0] * 60,
                owner_id=rng.randint(1, owners) if rng.random() < 0.8 else None,
                aligned=rng.random() < 0.1,
                enabled=rng.random() < 0.97,
                auto_paused=rng.random() < 0.005,
            )
            for i in range(1, count + 1)
        ),
    )
    for _ in range(max(3, count // 100_000)):
        starts_ms = base_ms + rng.randint(-600, 600) * 60_000
        store.add_maintenance(
            conn,
            monitor_ref=str(rng.randint(1, count)),
            owner_name=None,
            starts_at_ms=starts_ms,
            ends_at_ms=starts_ms + 3_600_000,
        )
        store.add_maintenance(
            conn,
            monitor_ref=None,
            owner_name=f"owner-{rng.randint(1, owners)}",
            starts_at_ms=starts_ms,
            ends_at_ms=starts_ms + 3_600_000,
        )
    conn.close()
    os.replace(building, path)
    return str(path)


def selection() -> Figure:
    """store.due_ids (which monitors are due, and at what interval: the selection) as the tick
    calls it; store.select_due's time beside it adds reading the due rows (what a tick that
    probes them all reads anyway)."""
    rng = random.Random(4)
    minutes = [MINUTE + rng.randint(0, 10_000) for _ in range(15)]
    minutes = [m for m in minutes if m % 60]  # typical minutes, not the :00 boundary
    notes = []
    at_million = 0.0
    for count in (10_000, 100_000, 1_000_000):
        conn = store.open_db(selection_db(count))
        store.select_due(conn, MINUTE, clock.minute_start_ms(MINUTE))  # warm the page cache
        times_ms, rows_ms, dues = [], [], []
        for minute in minutes:
            started = time.perf_counter()
            due = store.due_ids(conn, minute, clock.minute_start_ms(minute))
            times_ms.append((time.perf_counter() - started) * 1000)
            dues.append(len(due))
            started = time.perf_counter()
            rows = store.select_due(conn, minute, clock.minute_start_ms(minute))
            rows_ms.append((time.perf_counter() - started) * 1000)
            assert [r["id"] for r in rows] == sorted(due), minute
        midnight = MINUTE - 1 + 1_440 * 3
        started = time.perf_counter()
        at_midnight = len(store.due_ids(conn, midnight, clock.minute_start_ms(midnight)))
        midnight_ms = (time.perf_counter() - started) * 1000
        conn.close()
        typical = median(times_ms)
        notes.append(
            f"{count:>9,} monitors: {typical:6.1f} ms median (max {max(times_ms):.1f}) for "
            f"{median(dues):,.0f} due ({median(dues) / count:.1%}), with their rows {median(rows_ms):.0f} ms; "
            f"00:00 UTC: {at_midnight:,} due in {midnight_ms:.0f} ms"
        )
        at_million = typical
    return Figure(
        4,
        "due selection at 1M monitors, ~1% due",
        f"{at_million:.1f} ms",
        "goal 20 ms",
        at_million / 20,
        "<= 20 ms",
        at_million <= 20,
        [*notes, "store.due_ids as the tick calls it (ids and intervals); its plan is asserted in tests"],
    )


# ---------------------------------------------------------------------------------------------
# 5. Storage


def storage() -> Figure:
    """30 days of results for 1,000 one-minute monitors, written through store.write_results.

    Every minute is claimed and gets its ticks row. Rollups get CHECKS_PER_HOUR writes per
    monitor-hour, each covering a tenth of the hour's minutes (write_results takes the minutes
    it covers): the rows, their order of creation and their sizes are those of 60 checks an
    hour -- checks, failures and latency sums need the same bytes at 6 as at 60 -- for a tenth
    of the time."""
    monitors, days, checks_per_hour = 1_000, 30, 6
    rng = random.Random(5)
    path = db_with("storage.db", [monitor_row(i, f"https://site-{i}.example/") for i in range(1, monitors + 1)])
    conn = store.open_db(path)
    first = MINUTE - 1
    step = 60 // checks_per_hour
    down: set[int] = set()
    for hour in range(days * 24):
        hour_minute = first + hour * 60
        for minute in range(hour_minute, hour_minute + 60):
            store.claim_minute(conn, minute, clock.minute_start_ms(minute), force=False)
        for block in range(checks_per_hour):
            minutes = list(range(hour_minute + block * step, hour_minute + (block + 1) * step))
            at_ms = clock.minute_start_ms(minutes[0])
            if rng.random() < 0.02:  # now and then a site goes down for a while
                down.add(rng.randint(1, monitors))
            if down and rng.random() < 0.1:
                down.discard(next(iter(down)))
            results = [
                CheckResult(i, "down", None, 503, "status 503")
                if i in down
                else CheckResult(i, "up", rng.randint(25, 60), 200)
                for i in range(1, monitors + 1)
            ]
            store.write_results(conn, minutes, at_ms, results, finished_at_ms=at_ms + 900)
        if hour % 24 == 3:
            store.housekeep(
                conn,
                clock.minute_start_ms(hour_minute + 17),
                auto_pause_after_ms=7 * 86_400_000,
                retention_ms=400 * 86_400_000,
            )
    conn.close()  # the last connection checkpoints the WAL into the file
    size = sum(Path(path + s).stat().st_size for s in ("", "-wal") if Path(path + s).exists())
    per_day = size / (monitors * days)
    return Figure(
        5,
        "storage per monitor-day (1,000 x 1-minute, 30 days)",
        f"{per_day:,.0f} B",
        "a row per check: 1,440 rows",
        per_day / 2048,
        "<= 2 KB",
        per_day <= 2048,
        [
            f"{size / 1e6:.1f} MB on disk: {monitors * days * 24:,} rollup rows (24 per monitor-day), "
            f"{days * 1_440:,} ticks rows, incidents",
        ],
    )


# ---------------------------------------------------------------------------------------------
# 6. Peak memory


def memory() -> Figure:
    count = 10_000
    with lean_server() as port:
        path = db_with("memory.db", [monitor_row(i, f"http://127.0.0.1:{port}/?m={i}") for i in range(1, count + 1)])
        wall, peak_kib = run_child([*monitor_tick_argv(), "--db", path, "--minute", str(MINUTE), "--retry-delay", "0"])
    assert_all_up(path, count)
    peak_mb = peak_kib / 1024
    return Figure(
        6,
        "peak memory, tick with 10,000 due",
        f"{peak_mb:.0f} MB",
        "goal 100 MB",
        peak_mb / 100,
        "<= 100 MB",
        peak_mb <= 100,
        [f"`monitor-tick --minute` as a fresh process against the lean server, {wall:.1f} s"],
    )


# ---------------------------------------------------------------------------------------------
# 7. Load shape

# (period in minutes, share): a realistic mix from 1 minute to 1 day
LOAD_MIX = [
    (1, 0.10),
    (5, 0.30),
    (10, 0.10),
    (15, 0.10),
    (30, 0.10),
    (60, 0.20),
    (360, 0.03),
    (720, 0.02),
    (1_440, 0.05),
]


def load_shape() -> Figure:
    rng = random.Random(7)
    periods, shares = zip(*LOAD_MIX, strict=True)
    mix = [(i, rng.choices(periods, shares)[0]) for i in range(1, 10_001)]
    day = MINUTE - 1  # a day boundary
    spread = schedule.load_shape([(i, p, False) for i, p in mix], day)
    aligned = schedule.load_shape([(i, p, True) for i, p in mix], day)
    ratio = spread.busiest / spread.mean
    return Figure(
        7,
        "load shape, 10,000 monitors over 1,440 minutes",
        f"busiest {spread.busiest:,} / mean {spread.mean:,.0f}",
        f"all aligned: busiest {aligned.busiest:,} = {aligned.busiest / aligned.mean:.1f}x mean",
        ratio,
        "<= 1.5x mean",
        ratio <= 1.5,
        ["intervals 1 m (10%), 5 m (30%), 10-30 m (30%), 1 h (20%), 6 h-1 d (10%); ids 1..10,000"],
    )


# ---------------------------------------------------------------------------------------------
# 8. The small tick

SMALL_RUNS = 7


def small_tick_rows(count: int, http_url: str, tls_url: str | None = None, enabled: bool = True) -> list[tuple]:
    """`count` one-minute monitors; with `tls_url`, every other one is https://."""
    return [
        monitor_row(i, f"{tls_url if tls_url and i % 2 else http_url}?m={i}", enabled=enabled)
        for i in range(1, count + 1)
    ]


def copy_of(template: str) -> str:
    """Where timed_ticks copies `template` (the last copy stays, for the figure's checks)."""
    return str(OUT / f"run-{Path(template).name}")


def timed_ticks(template: str, runs: int, extra_env: dict[str, str] | None = None) -> list[tuple[float, int]]:
    """(wall s, peak KiB) of `runs` fresh `monitor-tick --db COPY --minute MINUTE` processes, each
    on a fresh copy of `template` (each claims its minute, as cron's tick does)."""
    copy = copy_of(template)
    measured = []
    for _ in range(runs):
        shutil.copy(template, copy)
        for suffix in ("-wal", "-shm"):
            Path(copy + suffix).unlink(missing_ok=True)
        measured.append(run_child([*monitor_tick_argv(), "--db", copy, "--minute", str(MINUTE)], extra_env))
    return measured


# The floor of a small tick with httpx as its HTTP library: 10 GETs through one httpx.AsyncClient
# and nothing else (no database, no monitor-tick), with httpx's command-line client left out as
# the tick leaves it out (monitor_tick/__init__.py).
_HTTPX_FLOOR = """
import sys
sys.modules["httpx._main"] = None
import asyncio, httpx
async def main(url):
    async with httpx.AsyncClient() as client:
        await asyncio.gather(*(client.get(f"{url}?m={i}") for i in range(10)))
asyncio.run(main(sys.argv[1]))
"""


def small_tick() -> Figure:
    """10 due HTTP monitors against nginx vs the idle tick of the same 10 monitors, paused."""
    count = 10
    with nginx.nginx_server() as server:
        http_url = f"http://127.0.0.1:{server.port}/"
        due = db_with("small-due.db", small_tick_rows(count, http_url))
        paused = db_with("small-idle.db", small_tick_rows(count, http_url, enabled=False))
        mixed = db_with("small-tls.db", small_tick_rows(count, http_url, f"https://localhost:{server.tls_port}/"))
        idle_runs: list[tuple[float, int]] = []
        due_runs: list[tuple[float, int]] = []
        tls_runs: list[tuple[float, int]] = []
        floor_runs: list[tuple[float, int]] = []
        for _ in range(SMALL_RUNS):  # interleaved, so that all four see the same machine
            idle_runs += timed_ticks(paused, 1)
            due_runs += timed_ticks(due, 1)
            tls_runs += timed_ticks(mixed, 1, {"SSL_CERT_FILE": server.ca_file})
            floor_runs.append(run_child([sys.executable, "-c", _HTTPX_FLOOR, http_url]))
    for template in (due, mixed):  # the last copy of each: every check came back up
        assert_all_up(copy_of(template), count)
    idle_s, due_s, tls_s, floor_s = (median([w for w, _ in r]) for r in (idle_runs, due_runs, tls_runs, floor_runs))
    due_mb, tls_mb, floor_mb = (median([k for _, k in r]) / 1024 for r in (due_runs, tls_runs, floor_runs))
    ratio = due_s / idle_s
    return Figure(
        8,
        "small tick, 10 due HTTP monitors (nginx)",
        f"{due_s * 1000:.0f} ms, {due_mb:.1f} MB",
        f"idle tick {idle_s * 1000:.0f} ms",
        ratio,
        "<= 3.2x, <= 32 MB",
        ratio <= 3.2 and due_mb <= 32,
        [
            f"`monitor-tick --db COPY --minute M` as a fresh process, medians of {SMALL_RUNS} interleaved runs; "
            "idle: the same 10 monitors paused",
            f"half of them https:// (local nginx, a test CA through SSL_CERT_FILE): {tls_s * 1000:.0f} ms "
            f"= {tls_s / idle_s:.2f}x idle, {tls_mb:.1f} MB (no goal yet)",
            f"the floor, 10 GETs through one httpx.AsyncClient in a bare script: {floor_s * 1000:.0f} ms "
            f"= {floor_s / idle_s:.2f}x idle, {floor_mb:.1f} MB",
        ],
    )


# ---------------------------------------------------------------------------------------------
# 9. Whole-process throughput


def whole_process_throughput() -> Figure:
    """3,000 due against nginx: `monitor-tick --minute` as a fresh process, start-up, selection
    and writes included, against the raw asyncio client, alternating in one run."""
    count, rounds = 3_000, 5
    raw_rates: list[float] = []
    tick_rates: list[float] = []
    peaks: list[int] = []
    with nginx.nginx_server() as server:
        template = db_with(
            "whole.db", [monitor_row(i, f"http://127.0.0.1:{server.port}/?m={i}") for i in range(1, count + 1)]
        )
        for _ in range(rounds):
            raw_rates.append(asyncio.run(raw_client(server.port, count)))
            ((seconds, peak_kib),) = timed_ticks(template, 1)
            tick_rates.append(count / seconds)
            peaks.append(peak_kib)
    assert_all_up(copy_of(template), count)
    raw, tick = median(raw_rates), median(tick_rates)
    ratio = tick / raw
    return Figure(
        9,
        "whole-process throughput, 3,000 due (nginx)",
        f"{tick:,.0f} checks/s",
        f"raw asyncio {raw:,.0f}/s",
        ratio,
        ">= 0.4x",
        ratio >= 0.4,
        [
            f"`monitor-tick --db COPY --minute M` as a fresh process (start-up, selection, probes, writes), "
            f"medians of {rounds} rounds alternating with the raw client; peak {median(peaks) / 1024:.0f} MB",
        ],
    )


# ---------------------------------------------------------------------------------------------


def kuma() -> Figure | str:
    """bench/kuma.py's figure (a string: why it was skipped)."""
    import kuma  # bench/kuma.py, loaded only in the process that measures this figure

    return kuma.kuma_figure()


FIGURES: dict[int, Callable[[], Figure | str]] = {
    1: fanout,
    2: throughput,
    3: idle,
    4: selection,
    5: storage,
    6: memory,
    7: load_shape,
    8: small_tick,
    9: whole_process_throughput,
    10: kuma,
}
SKIPPED = 4  # the exit status of `--one N` for a figure that could not be measured here


def main(argv: Sequence[str]) -> int:
    """Each figure runs in a fresh interpreter, so that none inherits another's heap or loop."""
    if argv[:1] == ["--one"]:
        started = time.perf_counter()
        figure = FIGURES[int(argv[1])]()
        if isinstance(figure, str):
            print(f"\n{argv[1]}. skipped: {figure}")
            return SKIPPED
        print_figure(figure, time.perf_counter() - started)
        return 0 if figure.passed else 3
    chosen = [int(a) for a in argv] or sorted(FIGURES)
    print(f"monitor-tick bench: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} (timings on a shared machine")
    print("vary 10-20% between runs; timed figures are medians of repeats)")
    sys.stdout.flush()
    started = time.perf_counter()
    passed = skipped = 0
    for number in chosen:
        done = subprocess.run([sys.executable, __file__, "--one", str(number)], check=False)
        if done.returncode not in (0, 3, SKIPPED):
            print(f"\n{number}. failed (exit {done.returncode})")
        passed += done.returncode == 0
        skipped += done.returncode == SKIPPED
    print(f"\n{passed}/{len(chosen) - skipped} goals met ({skipped} skipped) in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
