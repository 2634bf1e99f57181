"""One tick: read the clock once -> claim the minute -> select what is due -> probe -> write.

The clock is the cursor: nothing is written to schedule. A tick for a minute that another run
has claimed probes nothing and writes nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from monitor_tick import clock, schedule, store
from monitor_tick.model import CheckResult, InvalidMonitor, Monitor, ProbeResult, monitor_from_row

if TYPE_CHECKING:
    import httpx

DEFAULT_CONCURRENCY = 50
DEFAULT_RETRY_DELAY_S = 2.0


@dataclass
class TickOptions:
    db_path: str
    minute: int | None = None  # None: the live clock; else replay this minute
    force: bool = False
    dry_run: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    retry_delay_s: float = DEFAULT_RETRY_DELAY_S
    auto_pause_after_ms: int = store.AUTO_PAUSE_DEFAULT_MS
    retention_ms: int = store.RETENTION_DEFAULT_MS
    busy_timeout_s: float = store.DEFAULT_BUSY_TIMEOUT_S
    # for tests and embedding: an httpx transport and TLS verification to use
    transport: httpx.AsyncBaseTransport | None = None
    verify: Any = True


@dataclass
class TickReport:
    minute: int
    now_ms: int
    claimed: bool
    due: list[Monitor] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)
    invalid: list[tuple[int, str]] = field(default_factory=list)
    summary: store.WriteSummary | None = None
    duration_ms: int = 0
    housekeeping: tuple[int, int] | None = None

    def as_json(self) -> dict[str, Any]:
        s = self.summary
        return {
            "minute": self.minute,
            "claimed": self.claimed,
            "due": len(self.due) + len(self.invalid),
            "up": s.up if s else 0,
            "down": s.down if s else 0,
            "unknown": s.unknown if s else 0,
            "opened": len(s.opened) if s else 0,
            "resolved": len(s.resolved) if s else 0,
            "duration_ms": self.duration_ms,
        }


def tick_time_ms(minute: int | None) -> int:
    """The one clock reading of a tick: the live clock, or the start of a replayed minute."""
    return clock.now_ms() if minute is None else clock.minute_start_ms(minute)


def split_rows(rows: list[dict[str, Any]]) -> tuple[list[Monitor], list[tuple[int, str]]]:
    """Due rows -> good monitors, and (id, cause) for rows that cannot be probed."""
    good: list[Monitor] = []
    bad: list[tuple[int, str]] = []
    for row in rows:
        try:
            good.append(monitor_from_row(row))
        except (InvalidMonitor, TypeError, ValueError, KeyError) as exc:
            bad.append((int(row["id"]), f"invalid monitor: {exc}"))
    return good, bad


def due_now(options: TickOptions) -> tuple[int, list[Monitor], list[tuple[int, str]]]:
    """--dry-run: (minute, monitors due, invalid rows) without claiming or writing."""
    now_ms = tick_time_ms(options.minute)
    minute = clock.minute_of_ms(now_ms)
    conn = store.open_db(options.db_path, busy_timeout_s=options.busy_timeout_s)
    try:
        good, bad = split_rows(store.select_due(conn, minute, now_ms))
    finally:
        conn.close()
    return minute, good, bad


def run_tick(options: TickOptions) -> TickReport:
    """Run one tick. Raises store.StoreError when the database cannot be used; down monitors
    are results, not errors."""
    started = time.perf_counter()
    now_ms = tick_time_ms(options.minute)
    minute = clock.minute_of_ms(now_ms)
    conn = store.open_db(options.db_path, busy_timeout_s=options.busy_timeout_s)
    try:
        if not store.claim_minute(conn, minute, now_ms, force=options.force):
            return TickReport(minute, now_ms, claimed=False)
        good, bad = split_rows(store.select_due(conn, minute, now_ms))
        probes = _probe(good, store.recent_rollups(conn, [m.id for m in good]), options) if good else []
        results = [CheckResult.of(m.id, p) for m, p in zip(good, probes, strict=True)]
        results += [CheckResult(monitor_id, "down", None, None, cause) for monitor_id, cause in bad]
        duration_ms = clock.elapsed_ms(started, time.perf_counter())
        summary = store.write_results(conn, [minute], now_ms, results, finished_at_ms=now_ms + duration_ms)
        housekeeping = None
        if schedule.is_housekeeping_minute(minute):
            housekeeping = store.housekeep(
                conn, now_ms, auto_pause_after_ms=options.auto_pause_after_ms, retention_ms=options.retention_ms
            )
    except store.sqlite3.Error as exc:
        raise store.StoreError(store.describe_error(exc, options.db_path)) from None
    finally:
        conn.close()
    return TickReport(
        minute,
        now_ms,
        claimed=True,
        due=good,
        results=results,
        invalid=bad,
        summary=summary,
        duration_ms=clock.elapsed_ms(started, time.perf_counter()),
        housekeeping=housekeeping,
    )


def _probe(
    monitors: list[Monitor], recent: dict[int, tuple[int, int | None]], options: TickOptions
) -> list[ProbeResult]:
    """Probe on an event loop, slowest expected first; imported only when something is due
    (an idle tick stays light)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from monitor_tick.fanout import make_client, probe_all, slowest_first
    from monitor_tick.probes import ProbeContext

    async def main() -> list[ProbeResult]:
        # DNS lookups run on the loop's default executor (6 threads on 2 cores): give them a
        # thread per probe in flight, up to 64 (httpx's own transport allows 40)
        lookups = ThreadPoolExecutor(max_workers=min(options.concurrency, 64), thread_name_prefix="dns")
        asyncio.get_running_loop().set_default_executor(lookups)
        async with make_client(options.concurrency, options.transport, options.verify) as client:
            return await probe_all(
                monitors,
                ProbeContext(client),
                concurrency=options.concurrency,
                retry_delay_s=options.retry_delay_s,
                order=slowest_first(monitors, recent),
            )

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        return runner.run(main())


def event_loop_factory() -> Any:
    """uvloop's event loop where it is installed (about a fifth more checks per second than
    asyncio's own), else None: asyncio's default."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
