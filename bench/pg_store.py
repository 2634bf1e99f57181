"""bench/postgres.py's figures of the store, side by side with SQLite:

- due selection at N monitors: store.due_ids, measured as bench/run.py figure 4 measures it on
  SQLite, on a PostgreSQL database made by `migrate` (which ends with VACUUM and ANALYZE), and
  whether its plan reads monitors_due alone (index-only scans);
- bytes per monitor-day of results (rollups and incidents, with their indexes: dbstat on SQLite,
  pg_total_relation_size on PostgreSQL) and of the claims per day, written as users write them:
  a tick a minute, each check its own upsert (60 an hour for a one-minute monitor), on a server
  with PostgreSQL's own durability settings and autovacuum as the schema leaves it, whose runs
  are printed. No manual VACUUM."""

from __future__ import annotations

import random
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import common  # bench/common.py
import figures_scale  # bench/figures_scale.py: figure 4's database

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.clock import MS_PER_DAY
from monitor_tick.core.model import CheckResult
from monitor_tick.store.results import CLAIMS_KEPT_MS
from tests.postgres import Server, running_server

MINUTE = common.MINUTE
DUE_GOAL_MS = 20
STORAGE_GOAL = 2.0  # PostgreSQL's bytes per monitor-day at most this many times SQLite's
RESULTS = ("rollups", "incidents")  # the tables of results, each with its indexes


def due_selection(server: Server, count: int) -> None:
    sqlite_path = figures_scale.selection_db(count)
    store.open_db(sqlite_path).close()  # upgraded, if bench/out/ holds it from an older schema
    url = server.empty_database()
    started = time.perf_counter()
    store.copy_database(sqlite_path, url)  # `monitor-tick migrate`: ends with VACUUM and ANALYZE
    copy_s = time.perf_counter() - started
    rng = random.Random(4)  # figure 4's minutes
    minutes = [m for m in (MINUTE + rng.randint(0, 10_000) for _ in range(15)) if m % 60]
    figures = {}
    plan = ""
    for name, db in (("SQLite", sqlite_path), ("PostgreSQL", url)):
        conn = store.open_db(db)
        store.select_due(conn, MINUTE, clock.minute_start_ms(MINUTE))  # warm the cache
        times, dues = [], []
        for minute in minutes:
            begun = time.perf_counter()
            dues.append(len(store.due_ids(conn, minute, clock.minute_start_ms(minute))))
            times.append((time.perf_counter() - begun) * 1000)
        figures[name] = (common.median(times), common.median(dues))
        if name == "PostgreSQL":
            params = {"minute": minutes[0], "now_ms": clock.minute_start_ms(minutes[0])}
            plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + conn.statements["due_ids"], params))
        conn.close()
    index_only = plan.count("Index Only Scan using monitors_due")
    print(f"1. due selection (store.due_ids) at {count:,} monitors (copied by migrate in {copy_s:.0f} s)")
    for name, (ms, due) in figures.items():
        print(f"   {name:<10} {ms:7.1f} ms median for {due:,.0f} due ({due / count:.1%})")
    pg_ms = figures["PostgreSQL"][0]
    print(
        f"   PostgreSQL: {pg_ms:.1f} ms, goal <= {DUE_GOAL_MS} ms: {'met' if pg_ms <= DUE_GOAL_MS else 'NOT met'}; "
        f"{pg_ms / figures['SQLite'][0]:.2f}x SQLite; index-only scans of monitors_due: {index_only}, "
        f"full scans of monitors: {plan.count('Seq Scan on monitors')}"
    )


@dataclass
class Written:
    """What a replay left: bytes per table (with its indexes) at its end, a day before, and after
    its first day; on PostgreSQL autovacuum's runs, the dead row versions left, HOT updates and
    updates, per table."""

    seconds: float
    sizes: dict[str, int]
    day_before: dict[str, int]
    first_day: dict[str, int]
    autovacuum: dict[str, tuple[int, int, int, int]]

    def last_day(self, table: str) -> int:
        """How much `table` grew in the replay's last day: what a day costs once it runs."""
        return self.sizes.get(table, 0) - self.day_before.get(table, 0)


def _sizes(conn: Any, db: str) -> dict[str, int]:
    """Bytes per table with its indexes: pg_total_relation_size, or SQLite's dbstat."""
    if conn.engine == "postgresql":
        query = "SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables"
        return {table: int(size) for table, size in conn.execute(query).fetchall()}
    reader = sqlite3.connect(db)  # reads the WAL too
    try:
        owners = dict(reader.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')"))
        sizes: dict[str, int] = {}
        for name, pgsize in reader.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            table = owners.get(name, name)
            sizes[table] = sizes.get(table, 0) + int(pgsize)
        return sizes
    finally:
        reader.close()


def replay(db: str, monitors: int, days: int) -> Written:
    """`days` of one-minute `monitors` as ticks write them: a claim and a transaction of results a
    minute, each check its own upsert; now and then a site down; housekeeping once a day."""
    conn = store.open_db(db)
    with store.write_tx(conn):
        conn.executemany(
            "INSERT INTO monitors (id, name, url, interval_sec, created_at_ms) VALUES (?, ?, ?, 60, 0)",
            [(i, f"site-{i}", f"https://site-{i}.example/") for i in range(1, monitors + 1)],
        )
    postgres = conn.engine == "postgresql"
    day_before = first_day = _sizes(conn, db)
    rng = random.Random(5)
    down: set[int] = set()
    started = time.perf_counter()
    for minute in range(MINUTE, MINUTE + days * 1440):
        at_ms = clock.minute_start_ms(minute)
        if rng.random() < 0.002:  # now and then a site goes down for a while
            down.add(rng.randint(1, monitors))
        if down and rng.random() < 0.01:
            down.discard(next(iter(down)))
        results = [
            CheckResult(i, "down", None, 503, "status 503")
            if i in down
            else CheckResult(i, "up", rng.randint(25, 60), 200)
            for i in range(1, monitors + 1)
        ]
        if postgres:  # the fleet's claim: every bucket of the minute, one host
            buckets = store.claim_buckets(
                conn,
                minute,
                host="web-1",
                token=f"{rng.getrandbits(64):016x}",  # as the tick: os.urandom(8).hex()
                now_ms=at_ms,
                lease_ms=60_000,
                share=1,
                offset=0,
            )
            store.write_results(conn, [minute], at_ms, results, finished_at_ms=at_ms + 900, buckets=buckets)
        else:
            store.claim_minute(conn, minute, at_ms, force=False)
            store.write_results(conn, [minute], at_ms, results, finished_at_ms=at_ms + 900)
        if minute % 1440 == 3 * 60 + 17:
            store.housekeep(conn, at_ms, auto_pause_after_ms=7 * MS_PER_DAY, retention_ms=400 * MS_PER_DAY)
        if minute == MINUTE + (days - 1) * 1440 - 1:
            day_before = _sizes(conn, db)
        if minute == MINUTE + 1440 - 1:
            first_day = _sizes(conn, db)
    seconds = time.perf_counter() - started
    sizes = _sizes(conn, db)
    autovacuum: dict[str, tuple[int, int, int, int]] = {}
    if postgres:
        for table, runs, dead, hot, updates in conn.execute(
            "SELECT relname, autovacuum_count, n_dead_tup, n_tup_hot_upd, n_tup_upd FROM pg_stat_user_tables"
        ).fetchall():
            autovacuum[table] = (int(runs), int(dead), int(hot), int(updates))
    conn.close()
    return Written(seconds, sizes, day_before, first_day, autovacuum)


def storage(monitors: int = 100, days: int = 4) -> None:
    sqlite_path = str(common.OUT / "pg-storage.db")
    for suffix in ("", "-wal", "-shm"):
        common.OUT.joinpath(f"pg-storage.db{suffix}").unlink(missing_ok=True)
    with running_server(durable=True) as server:
        written = {
            "SQLite": replay(sqlite_path, monitors, days),
            "PostgreSQL": replay(server.empty_database(), monitors, days),
        }
    # the last day's growth: what a day costs once the table has settled (its first hours' free
    # space reused); the whole run's average beside it
    per_day = {name: sum(w.last_day(t) for t in RESULTS) / monitors for name, w in written.items()}
    average = {name: sum(w.sizes.get(t, 0) for t in RESULTS) / (monitors * days) for name, w in written.items()}
    ratio = per_day["PostgreSQL"] / per_day["SQLite"]
    print(
        f"4. bytes per monitor-day of results ({', '.join(RESULTS)}, with their indexes): {days} days of {monitors} "
        "one-minute monitors, a tick a minute; PostgreSQL with its own durability settings"
    )
    for name, w in written.items():
        tables = ", ".join(f"{t} {w.last_day(t) / monitors:,.0f}" for t in RESULTS)
        print(
            f"   {name:<10} {per_day[name]:7,.0f} B in the last day ({tables}); {average[name]:,.0f} B a day "
            f"over all {days}; replayed in {w.seconds:.0f} s"
        )
    print(
        f"   PostgreSQL / SQLite: {ratio:.2f}x in the last day, {average['PostgreSQL'] / average['SQLite']:.2f}x over "
        f"all {days}; goal <= {STORAGE_GOAL:.0f}x: {'met' if ratio <= STORAGE_GOAL else 'NOT met'}"
    )
    pg = written["PostgreSQL"]
    print(
        f"   claims: {pg.first_day.get('claims', 0) / 1e6:.1f} MB after the first day, "
        f"{pg.sizes.get('claims', 0) / 1e6:.1f} MB at the end (64 rows a minute whatever the monitors; "
        f"kept {CLAIMS_KEPT_MS / MS_PER_DAY:g} day by the daily housekeeping)"
    )
    # a live server's autovacuum looks once a minute, as often as ticks come; here ticks come
    # dozens a second, so it gets far fewer chances per tick: the figure is the worse for it
    print(f"   autovacuum looked about {pg.seconds / 60:.0f} times (once a minute) in {days * 1440:,} ticks")
    for table in ("rollups", "claims"):
        runs, dead, hot, updates = pg.autovacuum[table]
        print(
            f"   autovacuum on {table}: {runs} runs, {dead:,} dead row versions left; "
            f"{hot / max(updates, 1):.0%} of {updates:,} updates HOT"
        )
