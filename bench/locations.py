"""Several locations, measured in one run on a throwaway PostgreSQL, each figure
beside its goal:

    .venv/bin/python bench/locations.py            # from the repository root, as root or postgres
    .venv/bin/python bench/locations.py 400 3 200  # monitors and minutes of figure 1, monitors of 2

1. CPU per check-location: `monitor-tick` processes tick MINUTES minutes of MONITORS one-minute
   monitors answering at once (bench/server.py): one host in one location, each monitor checked
   from it, against three hosts in three locations, each monitor checked from all three (`all`).
   CPU of every process (user + system) over checks recorded from each location. Goal: 3
   locations at most 1.15x one's.
2. Bytes per monitor-day per location: a day of results (6 writes an hour) of 100 monitors written
   through the store as a fleet writes them, then VACUUM FULL, every table's size: monitors
   without locations (today's path) against monitors checked from 3 locations (their checks,
   decisions, verdicts and hourly figures per location, the short-lived rows pruned as ticks do),
   divided by 3. Goal: at most 1.1x today's. (Also printed: a monitor checked from one named
   location, which keeps its verdicts and that location's figures.)
3. Claims a minute: rows and bytes of `claims` and `location_claims` for one minute of figure 1's
   runs, 3 locations against 1. Goal: at most 1.5x one location's.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import common  # noqa: E402  (bench/common.py)

from monitor_tick import store  # noqa: E402
from monitor_tick.core import clock, quorum  # noqa: E402
from monitor_tick.core.model import CheckResult  # noqa: E402
from tests.postgres import Server, running_server  # noqa: E402

MINUTE = common.MINUTE
PLACES = ("eu", "us", "home")


def _fleet_db(server: Server, port: int, monitors: int, locations: str) -> str:
    url = server.fresh_database()
    conn = store.open_db(url)
    try:
        rows = [common.monitor_row(i, f"http://127.0.0.1:{port}/m{i}") for i in range(1, monitors + 1)]
        common.bulk.insert_monitors(conn, rows)
        conn.execute("UPDATE monitors SET locations = ?, first_check_minute = NULL", (locations,))
    finally:
        conn.close()
    return url


def _tick_minutes(url: str, hosts: dict[str, str], minutes: int) -> float:
    """Run each host's cron line for `minutes` minutes, one host after another; CPU s of all."""
    argv = [*common.monitor_tick_argv(), "--db", url, "--retry-delay", "0"]  # made before it is measured
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for minute in range(MINUTE, MINUTE + minutes):
        offset = str(clock.minute_start_ms(minute) + 5000 - clock.now_ms())
        for host, place in hosts.items():
            subprocess.run(
                [*argv, "--host-name", host, "--location", place],
                env={**os.environ, "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": offset},
                check=True,
                stdout=subprocess.DEVNULL,
            )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _checks(url: str) -> int:
    conn = store.open_db(url)
    try:
        monitors = [int(m) for (m,) in conn.execute("SELECT id FROM monitors")]
        return sum(p["checks"] for m in monitors for p in store.locationsql.location_figures(conn, m, 0))
    finally:
        conn.close()


def _claims(url: str, minute: int) -> tuple[int, int]:
    """Rows and bytes (pg_column_size of each row) of the claims of `minute`."""
    conn = store.open_db(url)
    try:
        rows = size = 0
        for table in ("claims", "location_claims"):
            n, b = conn.execute(
                f"SELECT count(*), coalesce(sum(pg_column_size(t.*)), 0) FROM {table} t WHERE minute = ?", (minute,)
            ).fetchone()
            rows, size = rows + int(n), size + int(b)
        return rows, size
    finally:
        conn.close()


def cpu_and_claims(server: Server, port: int, monitors: int, minutes: int) -> None:
    one = _fleet_db(server, port, monitors, "eu")
    cpu_one = _tick_minutes(one, {"eu-1": "eu"}, minutes)
    three = _fleet_db(server, port, monitors, quorum.ALL)
    cpu_three = _tick_minutes(three, {f"{place}-1": place for place in PLACES}, minutes)
    per_one = cpu_one / _checks(one) * 1000
    per_three = cpu_three / _checks(three) * 1000
    print(f"1. CPU per check-location ({monitors} monitors, {minutes} minutes, a process per host and minute)")
    print(f"   1 location : {per_one:.2f} ms ({_checks(one)} checks)")
    print(f"   3 locations: {per_three:.2f} ms ({_checks(three)} checks): {per_three / per_one:.2f}x   goal <= 1.15x")
    rows_one, bytes_one = _claims(one, MINUTE + 1)
    rows_three, bytes_three = _claims(three, MINUTE + 1)
    print("3. claims a minute (claims + location_claims)")
    print(f"   1 location : {rows_one} rows, {bytes_one:,} B")
    print(
        f"   3 locations: {rows_three} rows, {bytes_three:,} B: {rows_three / rows_one:.2f}x rows, "
        f"{bytes_three / bytes_one:.2f}x bytes   goal <= 1.5x"
    )


def _table_bytes(conn: store.Connection) -> int:
    conn.execute("VACUUM FULL")
    return int(
        conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname = current_schema()"
        ).fetchone()[0]
    )


def storage(server: Server, monitors: int, hours: int = 24) -> None:
    figures = {}
    for name, places in (("today", ()), ("1 location", PLACES[:1]), ("3 locations", PLACES)):
        located = bool(places)
        url = server.fresh_database()
        conn = store.open_db(url)
        try:
            common.bulk.insert_monitors(
                conn, [common.monitor_row(i, f"https://site-{i}.example/") for i in range(1, monitors + 1)]
            )
            if located:
                conn.execute("UPDATE monitors SET locations = ?", (",".join(sorted(places)),))
            empty = _table_bytes(conn)
            for hour in range(hours):
                for block in range(6):
                    minute = MINUTE + hour * 60 + block * 10
                    at_ms = clock.minute_start_ms(minute)
                    store.claim_minute(conn, minute, at_ms, force=False)
                    results = [CheckResult(i, "up", 25 + i % 30, 200) for i in range(1, monitors + 1)]
                    if not located:
                        store.write_results(conn, [minute], at_ms, results, finished_at_ms=at_ms + 900)
                        continue
                    for place in places:
                        store.locations.host_seen(conn, f"{place}-1", place, minute, at_ms)
                    for place in places:
                        held = store.locations.claim(
                            conn,
                            minute,
                            place,
                            host=f"{place}-1",
                            token=place,
                            now_ms=at_ms,
                            lease_ms=60_000,
                            share=1,
                            offset=0,
                        )
                        store.locations.write_checks(conn, [minute], at_ms, results, at_ms + 900, buckets=held)
                    store.locations.close_minutes(conn, minute, at_ms)
            store.locations.close_minutes(conn, MINUTE + hours * 60 + 60, clock.minute_start_ms(MINUTE + hours * 60))
            conn.execute("DELETE FROM claims")  # kept 7 days whatever the monitors: figure 3
            conn.execute("DELETE FROM location_claims")
            figures[name] = (_table_bytes(conn) - empty) / (monitors * hours / 24)
        finally:
            conn.close()
    today, located = figures["today"], figures["3 locations"] / len(PLACES)
    print(f"2. bytes per monitor-day ({monitors} monitors, {hours} hours, PostgreSQL after VACUUM FULL)")
    print(f"   today (no locations)        : {today:,.0f} B")
    print(f"   3 locations, per location   : {located:,.0f} B: {located / today:.2f}x   goal <= 1.1x")
    alone = figures["1 location"]
    print(f"   (1 named location           : {alone:,.0f} B: {alone / today:.2f}x: figures derived from verdicts)")


def main(argv: list[str]) -> int:
    monitors = int(argv[0]) if argv else 300
    minutes = int(argv[1]) if len(argv) > 1 else 3
    stored = int(argv[2]) if len(argv) > 2 else 100
    started = time.perf_counter()
    with running_server() as server, common.lean_server() as port:
        cpu_and_claims(server, port, monitors, minutes)
        storage(server, stored)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
