"""PostgreSQL beside SQLite, measured side by side in one run on this machine:

    .venv/bin/python bench/postgres.py            # from the repository root, as root or postgres
    .venv/bin/python bench/postgres.py 1000000    # due selection at 1M monitors (builds and copies it)

1. due selection at N monitors (default 100,000), about 1% due: median ms on each engine, and
   whether PostgreSQL's plan reads monitors_due;
2. fleet checks/s with 1, 2 and 3 `monitor-tick` processes on one PostgreSQL, against a local
   server that answers after 200 ms, CPU per check of the hosts and of the server, and the
   server's statement time and write-lock waits per minute (bench/pg_fleet.py; next to one
   process on SQLite);
3. claim cost: a minute's claim on SQLite, a bucket's claim on PostgreSQL;
4. bytes per monitor-day of results on each engine.

PostgreSQL is a throwaway server started here (tests/postgres.py: initdb and pg_ctl in a
temporary directory); the SQLite databases are files under bench/out/."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import common  # noqa: E402  (bench/common.py: the SQLite figures' helpers)
import figures_scale  # noqa: E402  (bench/figures_scale.py: figure 4's database)
import pg_fleet  # noqa: E402  (bench/pg_fleet.py: figure 2)

from monitor_tick import store  # noqa: E402
from monitor_tick.core import clock  # noqa: E402
from monitor_tick.core.model import CheckResult  # noqa: E402
from tests.postgres import Server, running_server  # noqa: E402

MINUTE = common.MINUTE


def due_selection(server: Server, count: int) -> None:
    sqlite_path = figures_scale.selection_db(count)
    url = server.empty_database()
    started = time.perf_counter()
    store.copy_database(sqlite_path, url)  # `monitor-tick migrate`
    copy_s = time.perf_counter() - started
    rng = random.Random(4)
    minutes = [m for m in (MINUTE + rng.randint(0, 10_000) for _ in range(15)) if m % 60]
    figures = {}
    for name, db in (("SQLite", sqlite_path), ("PostgreSQL", url)):
        conn = store.open_db(db)
        if name == "PostgreSQL":
            conn.execute("ANALYZE")
        store.select_due(conn, MINUTE, clock.minute_start_ms(MINUTE))  # warm the cache
        times, dues = [], []
        for minute in minutes:
            begun = time.perf_counter()
            dues.append(len(store.select_due(conn, minute, clock.minute_start_ms(minute))))
            times.append((time.perf_counter() - begun) * 1000)
        figures[name] = (common.median(times), common.median(dues))
        if name == "PostgreSQL":
            plan = "\n".join(
                row[0]
                for row in conn.execute(
                    "EXPLAIN " + conn.statements["due_ids"], {"minute": minutes[0], "now_ms": 0}
                ).fetchall()
            )
            uses_index = "monitors_due" in plan
        conn.close()
    print(f"1. due selection at {count:,} monitors (copied to PostgreSQL by migrate in {copy_s:.0f} s)")
    for name, (ms, due) in figures.items():
        print(f"   {name:<10} {ms:7.1f} ms median for {due:,.0f} due ({due / count:.1%})")
    print(
        f"   PostgreSQL / SQLite: {figures['PostgreSQL'][0] / figures['SQLite'][0]:.2f}x; "
        f"PostgreSQL's plan reads monitors_due: {'yes' if uses_index else 'NO'}"
    )


def claim_cost(server: Server) -> None:
    sqlite_path = common.db_with("claims.db", [])
    url = server.fresh_database()
    repeats = 200
    conn = store.open_db(sqlite_path)
    started = time.perf_counter()
    for n in range(repeats):
        store.claim_minute(conn, MINUTE + n, clock.minute_start_ms(MINUTE + n), force=False)
    sqlite_ms = (time.perf_counter() - started) * 1000 / repeats
    conn.close()
    conn = store.open_db(url)
    started = time.perf_counter()
    for n in range(repeats):
        store.claim_minute(conn, MINUTE + n, clock.minute_start_ms(MINUTE + n), force=False)
    minute_ms = (time.perf_counter() - started) * 1000 / repeats
    started = time.perf_counter()
    for n in range(repeats):
        store.claim_buckets(conn, MINUTE + n, host="h", token=str(n), now_ms=0, lease_ms=60_000, share=4, offset=n)
    bucket_ms = (time.perf_counter() - started) * 1000 / repeats / (store.BUCKETS // 4)
    conn.close()
    print("3. claims")
    print(f"   SQLite     a minute's claim: {sqlite_ms:.2f} ms")
    print(
        f"   PostgreSQL a minute's claim: {minute_ms:.2f} ms; a claim of 16 buckets: {bucket_ms * 16:.2f} ms "
        f"({bucket_ms:.3f} ms per bucket)"
    )


def storage(server: Server, monitors: int = 200, days: int = 3) -> None:
    rows = [common.monitor_row(i, f"https://site-{i}.example/") for i in range(1, monitors + 1)]
    sqlite_path = common.db_with("pg-storage.db", rows)
    url = server.empty_database()
    store.copy_database(sqlite_path, url)
    sizes = {}
    for name, db in (("SQLite", sqlite_path), ("PostgreSQL", url)):
        conn = store.open_db(db)
        if name == "PostgreSQL":
            empty = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        else:
            empty = Path(db).stat().st_size
        rng = random.Random(5)
        for hour in range(days * 24):
            for block in range(6):  # 6 writes an hour: the rows and sizes of 60 checks (bench/run.py 5)
                minute = MINUTE - 1 + hour * 60 + block * 10
                at_ms = clock.minute_start_ms(minute)
                store.claim_minute(conn, minute, at_ms, force=False)
                results = [CheckResult(i, "up", rng.randint(25, 60), 200) for i in range(1, monitors + 1)]
                store.write_results(conn, [minute], at_ms, results, finished_at_ms=at_ms + 900)
        if name == "PostgreSQL":
            conn.execute("VACUUM")
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] - empty
        else:
            conn.close()
            conn = None
            size = sum(Path(db + s).stat().st_size for s in ("", "-wal") if Path(db + s).exists()) - empty
        if conn is not None:
            conn.close()
        sizes[name] = size / (monitors * days)
    print(f"4. bytes per monitor-day of results ({monitors} monitors, {days} days)")
    for name, per_day in sizes.items():
        print(f"   {name:<10} {per_day:,.0f} B")
    print("   plus, on PostgreSQL, 64 claim rows a minute whatever the monitors (kept 7 days)")


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 100_000
    common.OUT.mkdir(exist_ok=True)
    with running_server() as server, common.lean_server() as port:
        due_selection(server, count)
        pg_fleet.fleet(server, port)  # bench/pg_fleet.py: 3,000 monitors, 1-3 hosts, CPU and statements
        claim_cost(server)
        storage(server)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
