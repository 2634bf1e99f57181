"""The fleet on PostgreSQL beside one SQLite process, measured side by side in one run (called
from bench/postgres.py, figure 2; or on its own: `.venv/bin/python bench/pg_fleet.py [MONITORS]`):

- checks/s of 1 SQLite process, and of 1, 2 and 3 `monitor-tick` hosts on one PostgreSQL, with
  MONITORS (default 3,000) due one-minute monitors answering after 200 ms (bench/server.py),
  --concurrency 50; each tick a fresh process, start-up included; the engines alternate, each
  repeated REPEATS times, median with the spread;
- CPU per check: the tick processes' own (getrusage of the children), and the server's, from
  /proc/<pid>/stat of the postmaster (its own time and its reaped children's: the backends of
  the ticks, which exit with them) and of its live children (checkpointer, autovacuum, ...);
- per minute (one tick of every host), the server's statement time and the time its writers
  waited for the write lock, from pg_stat_statements (preloaded here by a restart of the bench's
  own server): the time spent in `SELECT pg_advisory_xact_lock(...)` is that wait, and its
  calls are the write transactions. These, rather than more hosts on one 2-core machine, say
  how far the fleet grows: the hosts share nothing else.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import common  # noqa: E402

from monitor_tick import store  # noqa: E402
from monitor_tick.core import clock  # noqa: E402
from tests.postgres import Server, running_server  # noqa: E402

REPEATS = 3
HOSTS = (1, 2, 3)
GOALS = {"sqlite": 0.9, 2: 1.9, 3: 2.8}  # PostgreSQL 1 host / SQLite; n hosts / 1 host
CPU_GOAL = 1.5  # (hosts + server) CPU per check / SQLite's process CPU per check, at most
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    wall_s: float
    host_cpu_s: float
    server_cpu_s: float = 0.0
    statement_ms: float = 0.0
    lock_wait_ms: float = 0.0
    write_transactions: int = 0


def server_cpu_s(server: Server) -> float:
    """CPU seconds of the postmaster, the children it reaped, and its live children."""
    pid = int(Path(f"{server.directory}/data/postmaster.pid").read_text().split()[0])
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        # after the name: state ppid ... utime stime cutime cstime are fields 14-17 of stat
        ppid, utime, stime, cutime, cstime = int(fields[1]), *map(int, fields[11:15])
        if int(entry.name) == pid:
            total += utime + stime + cutime + cstime
        elif ppid == pid:
            total += utime + stime
    return total / TICKS_PER_S


def statements(server: Server) -> tuple[float, float, int]:
    """(all statements' ms, ms in the write lock's statement, its calls) since the last reset."""
    with server.admin() as admin:
        total, lock_ms, lock_calls = admin.execute(
            "SELECT coalesce(sum(total_exec_time), 0), "
            "coalesce(sum(total_exec_time) FILTER (WHERE query LIKE '%pg_advisory_xact_lock%'), 0), "
            "coalesce(sum(calls) FILTER (WHERE query LIKE '%pg_advisory_xact_lock%'), 0) "
            "FROM pg_stat_statements WHERE dbid <> (SELECT oid FROM pg_database WHERE datname = 'postgres')"
        ).fetchone()
    return float(total), float(lock_ms), int(lock_calls)


def with_statement_statistics(server: Server) -> None:
    with server.admin() as admin:
        admin.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    server.restart()
    with server.admin() as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")


def ticks(db: str, hosts: int, minute: int, server: Server | None) -> Run:
    """`hosts` monitor-tick processes started at once for `minute`, each its own host."""
    env = {
        **os.environ,
        "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(clock.minute_start_ms(minute) + 5000 - clock.now_ms()),
    }
    if server is not None:
        with server.admin() as admin:
            admin.execute("SELECT pg_stat_statements_reset()")
        server_before = server_cpu_s(server)
    argv = common.monitor_tick_argv()  # made (the installed copy) before it is measured
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    options = ["--concurrency", "50", "--budget", "30s", "--lease", "40s"]
    processes = [
        subprocess.Popen(
            [*argv, "--db", db, "--host-name", f"h{n}", *options],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for n in range(hosts)
    ]
    for process in processes:
        process.wait(timeout=120)
    wall_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = Run(wall_s, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    if server is not None:
        run.server_cpu_s = server_cpu_s(server) - server_before
        run.statement_ms, run.lock_wait_ms, run.write_transactions = statements(server)
    return run


def _verdict(value: float, goal: float, *, at_most: bool = False) -> str:
    ok = value <= goal if at_most else value >= goal
    return f"goal {'<=' if at_most else '>='} {goal}x: {'PASS' if ok else 'MISS'}"


def fleet(server: Server, port: int, monitors: int = 3000) -> None:
    rows = [common.monitor_row(i, f"http://127.0.0.1:{port}/d/200?m={i}") for i in range(1, monitors + 1)]
    sqlite_path = common.db_with("fleet.db", rows)
    url = server.empty_database()
    store.copy_database(sqlite_path, url)
    with_statement_statistics(server)
    minutes = {"sqlite": common.MINUTE, "postgresql": common.MINUTE}
    runs: dict[object, list[Run]] = {"sqlite": [], **{n: [] for n in HOSTS}}
    for _ in range(REPEATS):  # the engines alternate, so that the machine's load falls on both
        runs["sqlite"].append(ticks(sqlite_path, 1, minutes["sqlite"], None))
        minutes["sqlite"] += 1
        for count in HOSTS:
            runs[count].append(ticks(url, count, minutes["postgresql"], server))
            minutes["postgresql"] += 1
    common.assert_all_up(sqlite_path, monitors, REPEATS)
    common.assert_all_up(url, monitors, REPEATS * len(HOSTS))
    rates = {key: [monitors / r.wall_s for r in found] for key, found in runs.items()}
    rate = {key: common.median(values) for key, values in rates.items()}

    def per_check_ms(key: object, seconds: str) -> float:
        return common.median([getattr(r, seconds) / monitors * 1000 for r in runs[key]])

    sqlite_cpu = per_check_ms("sqlite", "host_cpu_s")
    print(
        f"2. fleet: {monitors:,} one-minute monitors answering after 200 ms, --concurrency 50, each tick a "
        f"fresh process; median of {REPEATS} (spread)"
    )
    print(
        f"   SQLite     1 process : {rate['sqlite']:5.0f} checks/s ({common.spread(rates['sqlite'])}), "
        f"{sqlite_cpu:.2f} ms CPU per check"
    )
    for count in HOSTS:
        host_cpu, server_cpu = per_check_ms(count, "host_cpu_s"), per_check_ms(count, "server_cpu_s")
        if count == 1:
            against = f"{rate[1] / rate['sqlite']:.2f}x SQLite, {_verdict(rate[1] / rate['sqlite'], GOALS['sqlite'])}"
        else:
            against = f"{rate[count] / rate[1]:.2f}x one host, {_verdict(rate[count] / rate[1], GOALS[count])}"
        both = (host_cpu + server_cpu) / sqlite_cpu
        print(f"   PostgreSQL {count} host(s): {rate[count]:5.0f} checks/s ({common.spread(rates[count])}), {against}")
        print(
            f"      CPU per check: hosts {host_cpu:.2f} ms ({host_cpu / sqlite_cpu:.2f}x SQLite's), server "
            f"{server_cpu:.2f} ms, both {host_cpu + server_cpu:.2f} ms = {both:.2f}x SQLite's, "
            f"{_verdict(both, CPU_GOAL, at_most=True)}"
        )
        statement_ms = common.median([r.statement_ms for r in runs[count]])
        lock_ms = common.median([r.lock_wait_ms for r in runs[count]])
        writes = common.median([r.write_transactions for r in runs[count]])
        print(
            f"      per minute: server statement time {statement_ms:.0f} ms; waits for the write lock "
            f"{lock_ms:.1f} ms over {writes:.0f} write transactions (pg_stat_statements)"
        )


def main(argv: list[str]) -> int:
    common.OUT.mkdir(exist_ok=True)
    with running_server() as server, common.lean_server() as port:
        fleet(server, port, int(argv[0]) if argv else 3000)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
