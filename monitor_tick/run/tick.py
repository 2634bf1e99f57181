"""One tick: read the clock once -> claim the minute -> select what is due -> probe -> write.

The clock is the cursor: nothing is written to schedule. A tick for a minute that another run
has claimed probes nothing and writes nothing. A live tick also claims the unclaimed minutes
since the newest claimed one (cron skipped them, the machine slept) up to a window, and probes
what was due in any of them once.
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Coroutine
from types import ModuleType

from monitor_tick import store
from monitor_tick.core import clock, schedule
from monitor_tick.core.model import CheckResult, Monitor, ProbeResult, Recent
from monitor_tick.run.report import TickReport

# the tick's options and its rounds (run/rounds.py), named here too: callers import them from here
from monitor_tick.run.rounds import (  # noqa: F401
    CANARY_TIMEOUT_S,
    DEFAULT_BUDGET_S,
    IN_FLIGHT_PER_WORKER,
    KIND_READS,
    MAX_BUDGET_S,
    MIN_PHASE_S,
    NETWORK_DEADLINE_S,
    SLOT_HOLD_SHARE,
    THIS_HOST,
    WRITE_DEADLINE_S,
    Round,
    Run,
    TickOptions,
    ahead_after_ms,
    canary_options,
    event_loop,
    idle_in_transaction_s,
    prepare,
    probe_budget_s,
    probe_context,
    read_for_kinds,
    record,
    sort_out,
    split_rows,
)

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any


class MinuteNotYet(ValueError):
    """A replay (--minute) of a minute that has not come yet: a usage error."""


def refuse_future_minute(minute: int | None) -> None:
    """Raise MinuteNotYet when `minute` (a replay) is after the live clock's minute: claiming it
    would leave the live tick for it nothing to do, and record results before they happen."""
    if minute is None:
        return
    live = clock.minute_of_ms(clock.now_ms())
    if minute > live:
        raise MinuteNotYet(
            f"--minute {minute} has not come yet (the clock reads minute {live}); only --dry-run can look ahead"
        )


def tick_time_ms(minute: int | None) -> int:
    """The one clock reading of a tick: the live clock, or the start of a replayed minute."""
    return clock.now_ms() if minute is None else clock.minute_start_ms(minute)


def select_due_rows(
    conn: store.Connection, minutes: list[int], now_ms: int, *, replay: bool = False
) -> list[dict[str, Any]]:
    """The monitors due in any of `minutes`, each once. Maintenance windows and plan floors
    are judged at `now_ms`, for caught-up minutes too: the probe happens now, so a monitor in
    maintenance now is not probed for a minute it missed before the window began. A `replay`
    leaves out monitors created after `now_ms` (its minute): they did not exist yet. (A live
    tick does not: a monitor added under a clock that was ahead must still be probed.)"""
    rows: dict[int, dict[str, Any]] = {}
    for minute in minutes:
        for row in store.select_due(conn, minute, now_ms):
            if not (replay and row["created_at_ms"] > now_ms):
                rows.setdefault(row["id"], row)
    return [rows[key] for key in sorted(rows)]


def due_now(options: TickOptions) -> tuple[int, list[Monitor], list[tuple[int, str]]]:
    """--dry-run: (minute, monitors due, invalid rows) without claiming or writing."""
    now_ms = tick_time_ms(options.minute)
    minute = clock.minute_of_ms(now_ms)
    # read-only: a dry run never creates, writes or upgrades the database
    replay = options.minute is not None
    good, bad = store.read_db(
        options.db_path, lambda conn: split_rows(select_due_rows(conn, [minute], now_ms, replay=replay))
    )
    return minute, good, bad


def run_tick(options: TickOptions) -> TickReport:
    """Run one tick. Raises store.StoreError when the database cannot be used; down monitors
    are results, not errors; raises MinuteNotYet for a replay of a minute that has not come.
    Rows that cannot be probed are skipped and listed in `invalid`. A --force rerun of a
    finished minute probes and reports what is due but records only what its run did not.

    On PostgreSQL the minute's monitors are shared with the other hosts' runs for it: they fall
    in store.BUCKETS buckets, which each run claims a few at a time while it probes
    (run/shares.py)."""
    started = time.perf_counter()
    refuse_future_minute(options.minute)
    live = options.minute is None
    now_ms = tick_time_ms(options.minute)
    minute = clock.minute_of_ms(now_ms)
    conn = store.open_db(
        options.db_path,
        busy_timeout_s=options.busy_timeout_s,
        idle_in_transaction_s=idle_in_transaction_s(options),
    )
    try:
        claim = store.claim_minutes(
            conn,
            minute,
            now_ms,
            force=options.force,
            catch_up_minutes=options.catch_up_minutes if live else 0,
            # rows claimed by a clock ahead of ours by more than a tick can run (ahead_after_ms)
            reclaim_after_ms=ahead_after_ms(now_ms, 0, options) if live else None,
            replay=not live,
        )
        # where each host is (`monitor-tick locations`), written as its tick ends; SQLite's one host
        # is one location
        fleet = conn.engine != "sqlite"
        seen = functools.partial(store.locations.host_seen, conn, options.host_name, options.location, minute, now_ms)
        fleet_done = claim is None  # the minute's fleet-wide work is done: its locations' may not be
        if fleet_done and fleet and not options.force:
            claim = store.locations.join(conn, minute)
        if claim is None:
            if fleet:
                seen()
            return _unclaimed(minute, now_ms)
        minutes = [minute, *claim.covered]
        rows = select_due_rows(conn, minutes, now_ms, replay=not live)
        run = Run(conn, claim, now_ms, started, live, says=live and not options.force)
        # on a fleet, monitors with locations are checked from theirs (SQLite: one host, one location)
        free, here = _by_location(rows, options.location) if fleet else (rows, [])
        rounds = []
        if fleet_done:
            pass
        elif options.force is False and fleet:
            # shares of the minute, claimed while probes run (run/shares.py)
            asyncio, shares = event_loop()[0], _shares()
            rounds = _probing(
                asyncio, shares.probe_minute(run, free, options, probe_budget_s(run, options, time.perf_counter()))
            )
        else:
            rounds = [_round(run, free, options, None)]
        if here:  # this host's location's shares of its monitors with locations
            asyncio, shares = event_loop()[0], _shares()
            budget_s = probe_budget_s(run, options, time.perf_counter())
            rounds += _probing(asyncio, shares.probe_minute(run, here, options, budget_s, located=True))
        if fleet and store.locations.has_open_minutes(conn):  # any host's tick closes minutes left open
            rounds.append(_closing(store.locations.close_minutes(conn, minute, now_ms)))
        if fleet:  # and what its canary said, when it had checks to ask it about
            seen(network_lost=any(r.network_lost for r in rounds) if any(r.results for r in rounds) else None)
        if not rounds:  # every bucket was taken: another host runs this minute
            return _unclaimed(minute, now_ms)
        report = _merged(minute, now_ms, claim, rounds, says=run.says)
        if any(schedule.is_housekeeping_minute(m) for m in minutes):
            report = report._replace(
                housekeeping=store.housekeep(
                    conn, now_ms, auto_pause_after_ms=options.auto_pause_after_ms, retention_ms=options.retention_ms
                )
            )
        report = report._replace(no_monitors=report.housekeeping is not None and not store.has_monitors(conn))
        # after the results are committed; nobody is told anything while our network is down
        sending_s = run.left_s(NETWORK_DEADLINE_S, time.perf_counter())
        if not report.network_lost and sending_s >= MIN_PHASE_S and store.has_delivery_work(conn, now_ms):
            notify = _alert_sending()
            timeout_s = notify.SEND_TIMEOUT_S if options.notify_timeout_s is None else options.notify_timeout_s
            store.set_busy_timeout(conn, min(options.busy_timeout_s, run.left_s(WRITE_DEADLINE_S, time.perf_counter())))
            budget = min(notify.DELIVERY_BUDGET_S, sending_s)
            report = report._replace(
                delivery=notify.deliver_pending(conn, now_ms, send_timeout_s=min(timeout_s, budget), budget_s=budget)
            )
    except store.DatabaseError as exc:
        raise store.StoreError(store.describe_error(exc, options.db_path)) from None
    finally:
        conn.close()
    return report._replace(duration_ms=clock.elapsed_ms(started, time.perf_counter()))


def _unclaimed(minute: int, now_ms: int) -> TickReport:
    """The report of a tick that found its minute claimed by another run: nothing done."""
    return TickReport(minute, now_ms, claimed=False, covered=[], due=[], results=[], invalid=[], refused=[])


def _round(run: Run, rows: list[dict[str, Any]], options: TickOptions, buckets: store.Buckets | None) -> Round:
    """Probe the monitors of `rows` and write their results (only for `buckets` still held)."""
    share = prepare(run, rows, buckets, options.location)
    tick_options = options._replace(budget_s=probe_budget_s(run, options, time.perf_counter()))
    probes = _probe(share.usable, tick_options, run.now_ms, share.loaded, share.recent) if share.usable else []
    checked = sort_out(run, share, probes, options)
    canary = None
    if checked.canary is not None:
        options_of_canary = canary_options(options, checked.canary)
        canary = CheckResult.of(0, _probe([checked.canary], options_of_canary, run.now_ms, {})[0])
    return record(run, share, checked, canary, options)


def _by_location(rows: list[dict[str, Any]], location: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(monitors without locations, monitors checked from `location`) of the due `rows`."""
    free = [row for row in rows if row.get("locations") is None]
    here = [row for row in rows if store.locations.checked_here(row.get("locations"), location)]
    return free, here


def _closing(summary: store.WriteSummary) -> Round:
    """What closing the minutes left open decided (a round that probed nothing)."""
    return Round([], [], [], [], False, summary, [])


def _merged(minute: int, now_ms: int, claim: store.Claim, rounds: list[Round], *, says: bool) -> TickReport:
    """One report of a tick's rounds."""
    summaries = [r.summary for r in rounds]
    return TickReport(
        minute,
        now_ms,
        claimed=True,
        covered=claim.covered,
        missed=claim.missed,
        # in id order, as one round lists them, whichever buckets came first
        due=sorted((m for r in rounds for m in r.due), key=lambda m: m.id),
        results=sorted((c for r in rounds for c in r.results), key=lambda c: c.monitor_id),
        invalid=sorted(i for r in rounds for i in r.invalid),
        refused=sorted(i for r in rounds for i in r.refused),
        said=sorted(i for r in rounds for i in r.said) if says else None,
        summary=store.WriteSummary(
            up=sum(s.up for s in summaries),
            down=sum(s.down for s in summaries),
            unknown=sum(s.unknown for s in summaries),
            opened=[m for s in summaries for m in s.opened],
            resolved=[m for s in summaries for m in s.resolved],
            stale=sum(s.stale for s in summaries),
            confirmed=[m for s in summaries for m in s.confirmed],
        ),
        network_lost=any(r.network_lost for r in rounds),
    )


def _probe(
    monitors: list[Monitor],
    options: TickOptions,
    now_ms: int,
    loaded: dict[str, Any],
    recent: dict[int, Recent] | None = None,
) -> list[ProbeResult]:
    """Probe on asyncio's loop, in fanout.start_order (`recent`: store.recent_rollups)."""
    asyncio, fanout = event_loop()

    async def main() -> list[ProbeResult]:
        # DNS lookups run in the default executor, never one behind another (see DaemonThreads): a
        # slow resolver makes each probe wait for its own lookup only, and a stuck one never holds
        # the tick.
        asyncio.get_running_loop().set_default_executor(fanout.DaemonThreads())
        order = fanout.start_order(monitors, recent or {}, clock.minute_of_ms(now_ms))
        ctx = probe_context(options, now_ms, loaded)
        try:
            return await fanout.probe_all(
                monitors,
                ctx,
                order=order,
                concurrency=options.concurrency,
                retry_delay_s=options.retry_delay_s,
                budget_s=options.budget_s,
                slot_hold_s=options.budget_s * SLOT_HOLD_SHARE,
                max_in_flight=IN_FLIGHT_PER_WORKER * options.concurrency,
            )
        finally:
            ctx.engine.close()

    # asyncio's own loop, not uvloop: uvloop resolves names on libuv's pool of 4 threads, which
    # would bring back the slow-resolver queue that DaemonThreads removes: one resolver that hangs
    # would hold back the names of every check queued behind it
    return _probing(asyncio, main())


def _probing(asyncio: ModuleType, probing: Coroutine[Any, Any, Any]) -> Any:
    """asyncio.run(probing), with the garbage collector on (the command keeps it off while a
    tick starts: cli/entry.py) and what was made before frozen out of its walks: it lives as long
    as the tick, so the collector looks only at what probes leave behind (a check's exceptions,
    its buffers). Both undone at the end, for a caller that goes on after the tick."""
    enabled, frozen = gc.isenabled(), gc.get_freeze_count() > 0  # frozen: by a caller, left so
    if not frozen:
        gc.freeze()
    gc.enable()
    try:
        return asyncio.run(probing)
    finally:
        if not frozen:
            gc.unfreeze()
        if not enabled:
            gc.disable()


# ---------------------------------------------------------------------------------------------
# Deferred imports, all of the tick's in one place. An idle tick (nothing due, nothing to send;
# cron runs it 1,440 times a day) imports none of these: the probes, asyncio and the fan-out
# (rounds.event_loop; libcurl only when an HTTP check runs); the alert modules are needed only
# when there are results or deliveries.


def _shares() -> ModuleType:
    from monitor_tick.run import shares

    return shares


def _alert_sending() -> ModuleType:
    from monitor_tick.alerts import notify

    return notify
