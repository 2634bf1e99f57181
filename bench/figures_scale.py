"""Figures 4, 5 and 7 of bench/run.py: the store and the schedule at scale, with no HTTP: due
selection at up to 1M monitors (4; its databases are kept in bench/out/ and reused, and
bench/postgres.py reads them too), storage over 30 days (5), and the load shape of 10,000
monitors over a day (7)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import bulk  # bench/bulk.py, beside this module
from common import (  # bench/common.py: what the figures share with bench/kuma.py
    MINUTE,
    OUT,
    Figure,
    db_with,
    fresh_db,
    median,
    monitor_row,
)

from monitor_tick import store
from monitor_tick.core import clock, schedule
from monitor_tick.core.model import CheckResult, Phases

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
    """30 days of results for 1,000 one-minute https monitors, written through
    store.write_results, each check with its phases.

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
            results = []
            for i in range(1, monitors + 1):
                # an https check's phases, as the probe records them (the newest is stored)
                total = rng.randint(25, 60)
                phases = Phases(rng.randint(0, 2), total // 6, total // 2, total - 2, total)
                if i in down:
                    results.append(CheckResult(i, "down", None, 503, "status 503", phases=phases))
                else:
                    results.append(CheckResult(i, "up", total, 200, phases=phases))
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
