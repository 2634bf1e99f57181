"""Time the status page and the metrics file for N monitors with a full history.

    .venv/bin/python -m bench.status_page 50

Each monitor gets 400 days of hourly rollups (the retention period) and an incident every 7
hours over 90 days; the ledger holds every minute of the last 90 days. Prints the best of 5
runs of each step, in ms. The database lives in a temporary directory, removed afterwards.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import Monitor
from monitor_tick.publish import metrics, statuspage

DAY, HOUR, MINUTE = clock.MS_PER_DAY, clock.MS_PER_HOUR, clock.MS_PER_MINUTE
NOW_MS = clock.parse_iso_ms("2026-12-01T12:00:30Z")


def best_ms(step: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def main(monitors: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        db = os.path.join(directory, "bench.db")
        conn = store.open_db(db)
        ids = [
            store.add_monitor(conn, Monitor(0, f"m{n}", "http", f"http://m{n}.test/", 60, 60), None, NOW_MS - 400 * DAY)
            for n in range(monitors)
        ]
        now_minute = clock.minute_of_ms(NOW_MS)
        first_hour = NOW_MS - NOW_MS % DAY - 400 * DAY
        with store.write_tx(conn):
            conn.executemany(
                "INSERT INTO ticks (minute, started_at_ms, finished_at_ms) VALUES (?, ?, ?)",
                [(m, m * MINUTE, m * MINUTE + 500) for m in range(now_minute - 90 * 1440, now_minute + 1)],
            )
            conn.executemany(
                "INSERT INTO rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum, last_check_ms) "
                "VALUES (?, ?, 60, ?, 6000, ?)",
                [
                    (i, h, int(h % (7 * HOUR) == 0), h + 59 * MINUTE)
                    for i in ids
                    for h in range(first_hour, NOW_MS, HOUR)
                ],
            )
            conn.executemany(
                "INSERT INTO incidents (monitor_id, started_at_ms, resolved_at_ms, cause) VALUES (?, ?, ?, 'timeout')",
                [(i, h, h + MINUTE) for i in ids for h in range(NOW_MS - 90 * DAY, NOW_MS - DAY, 7 * HOUR)],
            )
        site, prom = os.path.join(directory, "site"), os.path.join(directory, "monitor_tick.prom")
        status = statuspage.collect(conn, NOW_MS)
        page = statuspage.render_html(status)
        facts = metrics.TickFacts(NOW_MS, monitors, monitors, 0, 0, 100)
        print(f"{monitors} monitors, 400 days of hourly rollups each, 90 days of ticks (best of 5, ms)")
        print(f"  collect (read, compute) {best_ms(lambda: statuspage.collect(conn, NOW_MS)):8.1f}")
        render_ms = best_ms(lambda: statuspage.render_html(status))
        print(f"  render html             {render_ms:8.1f}  ({len(page) // 1024} KiB)")
        print(f"  write page and badges   {best_ms(lambda: statuspage.write_site(site, status)):8.1f}")
        print(f"  --status-page in all    {best_ms(lambda: statuspage.publish(db, site, NOW_MS)):8.1f}")
        print(f"  --metrics-file in all   {best_ms(lambda: metrics.write(db, prom, facts)):8.1f}")
        conn.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
