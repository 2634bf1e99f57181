"""PostgreSQL beside SQLite, measured side by side in one run on this machine:

    .venv/bin/python bench/postgres.py            # from the repository root, as root or postgres
    .venv/bin/python bench/postgres.py 1000000    # due selection at 1M monitors (builds and copies it)

1. due selection at N monitors (default 100,000), about 1% due: median ms of store.due_ids on
   each engine beside the goal, and whether PostgreSQL's plan reads monitors_due alone
   (bench/pg_store.py);
2. fleet checks/s with 1, 2 and 3 `monitor-tick` processes on one PostgreSQL, against a local
   server that answers after 200 ms, CPU per check of the hosts and of the server, and the
   server's statement time and write-lock waits per minute (bench/pg_fleet.py; next to one
   process on SQLite);
3. claim cost: a minute's claim on SQLite, a bucket's claim on PostgreSQL;
4. bytes per monitor-day of results on each engine beside the goal, the claims' bytes per day,
   and autovacuum's runs (bench/pg_store.py).

PostgreSQL is a throwaway server started here (tests/postgres.py: initdb and pg_ctl in a
temporary directory; figure 4's with PostgreSQL's own durability settings, the others' with the
tests' faster ones); the SQLite databases are files under bench/out/."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import common  # noqa: E402  (bench/common.py: the SQLite figures' helpers)
import pg_fleet  # noqa: E402  (bench/pg_fleet.py: figure 2)
import pg_store  # noqa: E402  (bench/pg_store.py: figures 1 and 4, the store's)

from monitor_tick import store  # noqa: E402
from monitor_tick.core import clock  # noqa: E402
from tests.postgres import Server, running_server  # noqa: E402

MINUTE = common.MINUTE


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


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 100_000
    common.OUT.mkdir(exist_ok=True)
    with running_server() as server, common.lean_server() as port:
        pg_store.due_selection(server, count)
        pg_fleet.fleet(server, port)  # bench/pg_fleet.py: 3,000 monitors, 1-3 hosts, CPU and statements
        claim_cost(server)
    pg_store.storage()  # on a server of its own, with PostgreSQL's own durability settings
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
