"""One tick: read the clock once -> claim the minute -> select what is due -> probe -> write.

The clock is the cursor: nothing is written to schedule. A tick for a minute that another run
has claimed probes nothing and writes nothing. A live tick also claims the unclaimed minutes
since the newest claimed one (cron skipped them, the machine slept) up to a window, and probes
what was due in any of them once.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from monitor_tick import store
from monitor_tick.core import clock, schedule
from monitor_tick.core.model import CheckResult, InvalidMonitor, Monitor, ProbeResult
from monitor_tick.run.report import TickReport

if TYPE_CHECKING:
    import httpx

    from monitor_tick.probes.guard import AddressGuard

DEFAULT_CONCURRENCY = 50
DEFAULT_RETRY_DELAY_S = 2.0
DEFAULT_CATCH_UP_MINUTES = 15
# Probing stops here (--budget, at most MAX_BUDGET_S).
DEFAULT_BUDGET_S = MAX_BUDGET_S = 30.0
# A tick ends inside its minute by arithmetic: its network phases (probing, the canary, sending
# notifications) end within NETWORK_DEADLINE_S of its start, each taking at most what is left
# (the claim's wait for the write lock comes out of it); its writes after probing wait for
# another writer's lock only until WRITE_DEADLINE_S; then the --ping-url ping (publish/ping.py,
# 3 s at most): 55 + 3 s.
NETWORK_DEADLINE_S = 45.0
WRITE_DEADLINE_S = 55.0
CANARY_TIMEOUT_S = 5.0
MIN_PHASE_S = 1.0  # less time left than this: the canary is not asked, notifications wait a tick
# A claimed bucket not finished within this may be claimed by another host: the budget, the
# canary and the write, and clocks up to 20 s apart (on PostgreSQL the server's clock judges it)
DEFAULT_LEASE_S = 60.0
# A probe still running after this share of the budget (2 s of 30 s) gives its worker to the next
# monitor and runs on to its deadline: hanging hosts never keep the rest queued until the budget
# cuts them off. Three such holds and the largest timeout (25 s) still fit the budget.
SLOT_HOLD_SHARE = 1 / 15
# Probes in flight at once, per worker (--concurrency): hanging probes that gave their worker
# away hold a socket and a lookup thread each until their deadline.
IN_FLIGHT_PER_WORKER = 4


@dataclass
class TickOptions:
    db_path: str
    minute: int | None = None  # None: the live clock; else replay this minute (never catches up)
    force: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    retry_delay_s: float = DEFAULT_RETRY_DELAY_S
    catch_up_minutes: int = DEFAULT_CATCH_UP_MINUTES
    budget_s: float = DEFAULT_BUDGET_S
    auto_pause_after_ms: int = store.AUTO_PAUSE_DEFAULT_MS
    retention_ms: int = store.RETENTION_DEFAULT_MS
    busy_timeout_s: float = store.DEFAULT_BUSY_TIMEOUT_S
    # refuse probes to private, loopback, link-local and metadata addresses (shared installs)
    guard: AddressGuard | None = None
    notify_timeout_s: float | None = None  # one notification to one channel; None: alerts.notify's
    # for tests and embedding: the httpx transport every HTTP probe goes through (None: httpx's
    # own, guarded under --block-private, and plain checks straight on the wire; see
    # fanout.make_client and fanout.fast_path), and TLS verification for
    # https:// and tls:// (an ssl.SSLContext, True for the default CA bundle, or a CA file)
    transport: httpx.AsyncBaseTransport | None = None
    verify: Any = True
    # the work split on PostgreSQL: this host's name in the claims (`monitor-tick hosts`), and
    # how long a claimed bucket stays ours (must exceed the budget and the hosts' clock skew)
    host_name: str = field(default_factory=lambda: os.uname().nodename)
    lease_s: float = DEFAULT_LEASE_S


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


def split_rows(rows: list[dict[str, Any]]) -> tuple[list[Monitor], list[tuple[int, str]]]:
    """Due rows -> good monitors, and (id, cause) for rows that cannot be probed."""
    good: list[Monitor] = []
    bad: list[tuple[int, str]] = []
    if not rows:
        return good, bad
    for row in rows:
        try:
            good.append(_probes().monitor_from_row(row))
        except (InvalidMonitor, TypeError, ValueError, KeyError) as exc:
            bad.append((int(row["id"]), f"invalid monitor: {exc}"))
    return good, bad


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
    in store.BUCKETS buckets, which each run claims a few at a time (_bucket_claims)."""
    started = time.perf_counter()
    refuse_future_minute(options.minute)
    live = options.minute is None
    now_ms = tick_time_ms(options.minute)
    minute = clock.minute_of_ms(now_ms)
    conn = store.open_db(options.db_path, busy_timeout_s=options.busy_timeout_s)
    try:
        claim = store.claim_minutes(
            conn,
            minute,
            now_ms,
            force=options.force,
            catch_up_minutes=options.catch_up_minutes if live else 0,
            # rows claimed by a clock ahead of ours by more than a tick can run (ahead_after_ms)
            reclaim_after_ms=_ahead_after_ms(now_ms, 0, options) if live else None,
        )
        if claim is None:
            return TickReport(minute, now_ms, claimed=False)
        minutes = [minute, *claim.covered]
        rows = select_due_rows(conn, minutes, now_ms, replay=not live)
        run = _Run(conn, claim, now_ms, started, live, says=live and not options.force)
        if options.force is False and conn.engine != "sqlite":
            rounds = []
            for held, elapsed_s in _bucket_claims(run, options):
                mine = [row for row in rows if held.holds(int(row["id"]))]
                left = dataclasses.replace(options, budget_s=options.budget_s - elapsed_s)
                rounds.append(_round(run, mine, left, held))
            if not rounds:  # every bucket was taken: another host runs this minute
                return TickReport(minute, now_ms, claimed=False)
        else:
            rounds = [_round(run, rows, options, None)]
        report = _merged(minute, now_ms, claim, rounds, says=run.says)
        if any(schedule.is_housekeeping_minute(m) for m in minutes):
            report.housekeeping = store.housekeep(
                conn, now_ms, auto_pause_after_ms=options.auto_pause_after_ms, retention_ms=options.retention_ms
            )
        report.no_monitors = report.housekeeping is not None and not store.has_monitors(conn)
        # after the results are committed; nobody is told anything while our network is down
        sending_s = run.left_s(NETWORK_DEADLINE_S, time.perf_counter())
        if not report.network_lost and sending_s >= MIN_PHASE_S and store.has_delivery_work(conn, now_ms):
            notify = _alert_sending()
            timeout_s = notify.SEND_TIMEOUT_S if options.notify_timeout_s is None else options.notify_timeout_s
            store.set_busy_timeout(conn, min(options.busy_timeout_s, run.left_s(WRITE_DEADLINE_S, time.perf_counter())))
            budget = min(notify.DELIVERY_BUDGET_S, sending_s)
            report.delivery = notify.deliver_pending(
                conn, now_ms, send_timeout_s=min(timeout_s, budget), budget_s=budget
            )
    except store.DatabaseError as exc:
        raise store.StoreError(store.describe_error(exc, options.db_path)) from None
    finally:
        conn.close()
    report.duration_ms = clock.elapsed_ms(started, time.perf_counter())
    return report


@dataclass
class _Round:
    """What one round of a tick probed and wrote (a whole minute, or some of its buckets)."""

    due: list[Monitor]
    invalid: list[tuple[int, str]]
    refused: list[tuple[int, str]]
    results: list[CheckResult]
    network_lost: bool
    summary: store.WriteSummary
    said: list[int]  # of invalid and refused: what this host says now (store.record_invalid)


@dataclass(frozen=True)
class _Run:
    """What every round of one tick shares."""

    conn: store.Connection
    claim: store.Claim
    now_ms: int
    started: float  # perf_counter at the tick's start
    live: bool
    # a live tick without --force: it says what it cannot probe, once an hour (TickReport.said)
    says: bool

    def left_s(self, deadline_s: float, now: float) -> float:
        """Seconds left at `now` (perf_counter, read by the caller) until `deadline_s` after the
        tick's start."""
        return self.started + deadline_s - now


def _bucket_claims(run: _Run, options: TickOptions) -> Iterator[tuple[store.Buckets, float]]:
    """Claim buckets of the minute a few at a time (with the seconds elapsed when each was
    claimed), the caller probing and writing each claim's monitors before the next, until none
    is left or the budget is spent: hosts that start together share the minute, and a host that
    comes back for more takes what the others have not. Each claim takes a quarter of the
    buckets still unclaimed (at least one); once two more rounds as long as the last would not
    fit in the budget left, a run takes all that are left, so that no bucket waits for a round
    that cannot finish in time (a round with a hanging host takes its timeout). A generator, so
    that every round runs from run_tick itself, on either engine."""
    token = os.urandom(8).hex()
    offset = int.from_bytes(os.urandom(2), "big")
    last_round_s = 0.0
    while True:
        round_started = time.perf_counter()
        elapsed_s = round_started - run.started
        if elapsed_s >= options.budget_s:
            return
        share = 4 if elapsed_s + 2 * last_round_s < options.budget_s else 1
        held = store.claim_buckets(
            run.conn,
            run.claim.minute,
            host=options.host_name,
            token=token,
            now_ms=run.now_ms,
            lease_ms=clock.s_to_ms(options.lease_s),
            share=share,
            offset=offset,
        )
        if not held.buckets:
            return
        yield held, elapsed_s
        last_round_s = time.perf_counter() - round_started


def _round(run: _Run, rows: list[dict[str, Any]], options: TickOptions, buckets: store.Buckets | None) -> _Round:
    """Probe the monitors of `rows` and write their results (only for `buckets` still held)."""
    conn, claim, now_ms = run.conn, run.claim, run.now_ms
    minutes = [claim.minute, *claim.covered]
    created_ms = {int(row["id"]): int(row["created_at_ms"]) for row in rows}
    good, bad = split_rows(rows)
    # a monitor this machine or environment cannot probe is a configuration error, said hourly
    usable, refused = _probes().split_usable(good) if good else ([], [])
    recent = store.recent_rollups(conn, [m.id for m in usable]) if usable else {}
    budget_s = max(min(options.budget_s, run.left_s(NETWORK_DEADLINE_S - CANARY_TIMEOUT_S, time.perf_counter())), 0.0)
    loaded = read_for_kinds(conn, usable)
    tick_options = dataclasses.replace(options, budget_s=budget_s)
    probes = _probe(usable, tick_options, now_ms, loaded, recent) if usable else []
    results = [CheckResult.of(m.id, p) for m, p in zip(usable, probes, strict=True)]
    # a probe stopped by this machine's configuration (a socket it may not open) records nothing
    refused += [(r.monitor_id, r.cause or "") for r in results if _probes().is_not_here(r.cause)]
    results = [r for r in results if not _probes().is_not_here(r.cause)]
    if options.guard is not None:
        results, guard_refused = _set_refusals_aside(results)
        refused += guard_refused
    network_lost = False
    if results:
        policy = _alert_policy()
        # a check of this host itself (a loopback address, a unix socket; its URL's references
        # resolved, as it was probed) never crossed a network: its failure neither asks the
        # canary nor is set aside by it
        failed = {r.monitor_id for r in results if policy.is_network_failure(r)}
        host_local = {m.id for m in usable if m.id in failed and _probes().host_local(_probes().resolved(m))}
        remote = [r for r in results if r.monitor_id not in host_local]
        timeout_s = min(CANARY_TIMEOUT_S, run.left_s(NETWORK_DEADLINE_S, time.perf_counter()))
        network_lost = policy.network_lost(remote, _probe_canary(conn, remote, options, now_ms, timeout_s))
        if network_lost:
            results = policy.offline(results, host_local)
    store.set_busy_timeout(conn, min(options.busy_timeout_s, run.left_s(WRITE_DEADLINE_S, time.perf_counter())))
    duration_ms = clock.elapsed_ms(run.started, time.perf_counter())
    rerun = claim.rerun
    recordable = results
    if rerun is not None:  # never a second check for a monitor-minute
        recordable = [r for r in results if rerun.may_record(r.monitor_id, created_ms[r.monitor_id])]
    # a live tick: no later tick can have counted a check after this (it started after our
    # clock reading, and at most our run time and one wait for the write lock ago)
    ahead_after_ms = _ahead_after_ms(now_ms, duration_ms, options) if run.live else None
    summary = store.write_results(
        conn,
        minutes,
        now_ms,
        recordable,
        finished_at_ms=now_ms + duration_ms,
        network_lost=network_lost,
        ahead_after_ms=ahead_after_ms,
        rerun=rerun,
        buckets=buckets,
    )
    # what the newest tick found of each monitor it had due, stored when it changes and shown by
    # list, show, the status page and the metrics (they never judge a monitor themselves)
    found: dict[int, str | None] = dict.fromkeys(created_ms)
    found.update(bad + refused)
    said = store.record_invalid(conn, found, at_ms=now_ms, host=options.host_name, say=run.says)
    return _Round(good, bad, refused, results, network_lost, summary, said)


def _merged(minute: int, now_ms: int, claim: store.Claim, rounds: list[_Round], *, says: bool) -> TickReport:
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


def _ahead_after_ms(now_ms: int, duration_ms: int, options: TickOptions) -> int:
    """A run whose clock read later than this was under a clock ahead of ours: no run can have
    started after our reading by more than our own run time, a wait for the write lock and a
    minute."""
    return now_ms + duration_ms + clock.s_to_ms(options.busy_timeout_s) + clock.MS_PER_MINUTE


def _set_refusals_aside(results: list[CheckResult]) -> tuple[list[CheckResult], list[tuple[int, str]]]:
    """(results to record, (id, cause) of probes --block-private refused). A refusal is the
    configuration's error, like an invalid row, not the site's outage: it records no check."""
    is_refusal = _address_guard().is_refusal
    kept = [r for r in results if not is_refusal(r.cause)]
    refused = [(r.monitor_id, f"refused by --block-private: {r.cause}") for r in results if is_refusal(r.cause)]
    return kept, refused


# What a kind with results of its own reads for its due monitors before probing, in one query
# (id -> value), handed to its probe in ProbeContext.loaded[kind]: probes never touch the store.
KIND_READS: dict[str, Callable[[store.Connection, Sequence[int]], Mapping[int, Any]]] = {
    "heartbeat": store.heartbeat_pings,
}


def read_for_kinds(conn: store.Connection, monitors: Sequence[Monitor]) -> dict[str, Mapping[int, Any]]:
    """KIND_READS for the kinds that are due (nothing when none is)."""
    loaded: dict[str, Mapping[int, Any]] = {}
    for kind in sorted({monitor.kind for monitor in monitors} & KIND_READS.keys()):
        loaded[kind] = KIND_READS[kind](conn, [monitor.id for monitor in monitors if monitor.kind == kind])
    return loaded


def _probe(
    monitors: list[Monitor],
    options: TickOptions,
    now_ms: int,
    loaded: dict[str, Any],
    recent: dict[int, tuple[int, int | None, int]] | None = None,
) -> list[ProbeResult]:
    """Probe on an event loop in fanout.start_order (`recent`: store.recent_rollups)."""
    asyncio, fanout = _event_loop()

    async def main() -> list[ProbeResult]:
        # DNS lookups run in the default executor: a thread each (see DaemonThreads), so a slow
        # resolver makes each probe wait for its own lookup only, and a stuck one never holds the tick.
        asyncio.get_running_loop().set_default_executor(fanout.DaemonThreads())
        # httpx's clients (a monitor with its own CA or --insecure gets its own), made when a check
        # first needs httpx: a tick whose checks all go on the wire never imports it
        clients = fanout.Clients(options.concurrency, options.transport, options.guard, options.verify)
        fast = fanout.fast_path(sum(m.kind == "http" for m in monitors), options.transport, options.guard)
        try:
            return await fanout.probe_all(
                monitors,
                _probes().ProbeContext(None, now_ms, None, loaded, options.guard, clients, fast),
                concurrency=options.concurrency,
                retry_delay_s=options.retry_delay_s,
                budget_s=options.budget_s,
                order=fanout.start_order(monitors, recent or {}, clock.minute_of_ms(now_ms)),
                slot_hold_s=options.budget_s * SLOT_HOLD_SHARE,
                max_in_flight=IN_FLIGHT_PER_WORKER * options.concurrency,
            )
        finally:
            await clients.aclose()

    # asyncio's own loop, not uvloop: uvloop resolves names on libuv's pool of 4 threads, which
    # would bring back the slow-resolver queue that DaemonThreads removes (docs/performance.md, issue 3)
    return asyncio.run(main())


def _probe_canary(
    conn: store.Connection, results: list[CheckResult], options: TickOptions, now_ms: int, timeout_s: float
) -> CheckResult | None:
    """Probe the network canary (a setting), only when some check failed at network level and
    there is time for it (`timeout_s`)."""
    if timeout_s < MIN_PHASE_S or not any(_alert_policy().is_network_failure(r) for r in results):
        return None
    # this host's own canary, else the one every host shares
    url = store.get_setting(conn, store.canary_setting(options.host_name))
    if url is None:
        url = store.get_setting(conn, store.CANARY_SETTING)
    if url is None:
        return None
    canary = Monitor(
        id=0,
        name="network canary",
        kind="http",
        url=url,
        interval_sec=60,
        effective_interval_sec=60,
        timeout_s=timeout_s,
        retries=0,
    )
    # the admin chose the canary: --block-private guards monitors, not it (a router is private)
    canary_options = dataclasses.replace(options, guard=None, budget_s=timeout_s + 1)
    return CheckResult.of(0, _probe([canary], canary_options, now_ms, {})[0])


# ---------------------------------------------------------------------------------------------
# Deferred imports, all of the tick's in one place. An idle tick (nothing due, nothing to send;
# cron runs it 1,440 times a day) imports none of these: the probes and the fan-out bring
# asyncio (httpx only when a check needs it: fanout.Clients); the alert modules are needed only when there are
# results or deliveries.


def _probes() -> ModuleType:
    import monitor_tick.probes

    return monitor_tick.probes


def _event_loop() -> tuple[ModuleType, ModuleType]:
    import asyncio

    from monitor_tick.run import fanout

    return asyncio, fanout


def _address_guard() -> ModuleType:
    from monitor_tick.probes import guard

    return guard


def _alert_policy() -> ModuleType:
    from monitor_tick.alerts import policy

    return policy


def _alert_sending() -> ModuleType:
    from monitor_tick.alerts import notify

    return notify
