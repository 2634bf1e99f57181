"""A round of a tick: the monitors of a minute (or of some of its buckets) prepared for probing,
their probes sorted out, and their results written; what every round of a tick shares, and the
tick's options. SQLite's tick is one round (tick.py); a PostgreSQL tick's rounds are its shares
of the minute (shares.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType

from monitor_tick import store
from monitor_tick.core import clock, quorum
from monitor_tick.core.model import CheckResult, InvalidMonitor, Monitor, ProbeResult, Recent
from monitor_tick.core.records import NamedTuple

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

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
# On PostgreSQL the server ends a tick's session that idles this long inside a transaction (at
# most, and a quarter of the lease; idle_in_transaction_s): a host stopped there (a paused VM,
# SIGSTOP) would hold the fleet's write lock, and the other hosts' writes would wait for it until
# they fail. A tick's transactions send their statements back to back.
IDLE_IN_TRANSACTION_S = 5.0
# A probe still running after this share of the budget (2 s of 30 s) gives its worker to the next
# monitor and runs on to its deadline: hanging hosts never keep the rest queued until the budget
# cuts them off. Three such holds and the largest timeout (25 s) still fit the budget.
SLOT_HOLD_SHARE = 1 / 15
# Probes in flight at once, per worker (--concurrency): hanging probes that gave their worker
# away hold a socket and a lookup thread each until their deadline.
IN_FLIGHT_PER_WORKER = 4
# this host's name in the fleet's claims, unless --host-name gives one
THIS_HOST = os.uname().nodename


class TickOptions(NamedTuple):
    """A tick's settings (cli/tick.py fills them from the command line)."""

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
    # for tests and embedding: TLS verification for https:// and tls:// (an ssl.SSLContext, whose
    # CA certificates HTTP checks trust; True for the default CA bundle; False; or a CA file)
    verify: Any = True
    # the work split on PostgreSQL: this host's name in the claims (`monitor-tick hosts`), and
    # how long a claimed bucket stays ours (must exceed the budget and the hosts' clock skew)
    host_name: str = THIS_HOST
    lease_s: float = DEFAULT_LEASE_S
    # the place this host probes from (--location): monitors with locations are checked once a
    # due minute in each of theirs, shared by that location's hosts only (store/locations.py)
    location: str = quorum.DEFAULT


def split_rows(rows: list[dict[str, Any]]) -> tuple[list[Monitor], list[tuple[int, str]]]:
    """Due rows -> good monitors, and (id, cause) for rows that cannot be probed."""
    good: list[Monitor] = []
    bad: list[tuple[int, str]] = []
    if not rows:
        return good, bad
    monitor_from_row = probes_module().monitor_from_row
    for row in rows:
        try:
            good.append(monitor_from_row(row))
        except (InvalidMonitor, TypeError, ValueError, KeyError) as exc:
            bad.append((int(row["id"]), f"invalid monitor: {exc}"))
    return good, bad


class Round(NamedTuple):
    """What one round of a tick probed and wrote (a whole minute, or some of its buckets)."""

    due: list[Monitor]
    invalid: list[tuple[int, str]]
    refused: list[tuple[int, str]]
    results: list[CheckResult]
    network_lost: bool
    summary: store.WriteSummary
    said: list[int]  # of invalid and refused: what this host says now (store.record_invalid)


class Run(NamedTuple):
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


def idle_in_transaction_s(options: TickOptions) -> float:
    """How long the server lets this tick's session idle inside a transaction (PostgreSQL)."""
    return min(IDLE_IN_TRANSACTION_S, options.lease_s / 4)


def probe_budget_s(run: Run, options: TickOptions, now: float) -> float:
    """How long probing may take from `now` (perf_counter, read by the caller): the budget, and
    time left for the canary before the network phases' deadline."""
    return max(min(options.budget_s, run.left_s(NETWORK_DEADLINE_S - CANARY_TIMEOUT_S, now)), 0.0)


class Share(NamedTuple):
    """What a round knows of its monitors before probing them (prepare)."""

    # the fleet's buckets, or those of this host's location (store.locations.LocationBuckets)
    buckets: Any
    created_ms: dict[int, int]
    good: list[Monitor]
    bad: list[tuple[int, str]]
    usable: list[Monitor]
    refused: list[tuple[int, str]]
    recent: dict[int, Recent]
    loaded: dict[str, Mapping[int, Any]]


def prepare(run: Run, rows: list[dict[str, Any]], buckets: Any, location: str = quorum.DEFAULT) -> Share:
    """The monitors of `rows` to probe (from `location`), and what their probes read from the store."""
    good, bad = split_rows(rows)
    # a monitor this machine or environment cannot probe is a configuration error, said hourly
    usable, refused = probes_module().split_usable(good) if good else ([], [])
    # checks from a named location say so in their User-Agent; the default location's keep
    # theirs (an idle tick imports no probes)
    agent = probes_module().request.location_user_agent(location) if usable else None
    if agent is not None:
        with_user_agent = probes_module().request.with_user_agent
        usable = [with_user_agent(m, agent) for m in usable]
    recent = store.recent_rollups(run.conn, [m.id for m in usable]) if usable else {}
    created_ms = {int(row["id"]): int(row["created_at_ms"]) for row in rows}
    return Share(buckets, created_ms, good, bad, usable, refused, recent, read_for_kinds(run.conn, usable))


class Checked(NamedTuple):
    """A round's probes sorted out (sort_out): what to record, what was refused, and the
    network canary to ask when some check failed at network level."""

    results: list[CheckResult]
    refused: list[tuple[int, str]]
    host_local: set[int]
    remote: list[CheckResult]
    canary: Monitor | None


def sort_out(run: Run, share: Share, probes: list[ProbeResult], options: TickOptions) -> Checked:
    """Sort out the probes of `share` (reads the canary's setting when one is needed)."""
    results = [CheckResult.of(m.id, p) for m, p in zip(share.usable, probes, strict=True)]
    # a probe stopped by this machine's configuration (a socket it may not open) records nothing
    refused = list(share.refused)
    if results:  # (an idle tick imports no probes)
        is_not_here = probes_module().is_not_here
        refused += [(r.monitor_id, r.cause or "") for r in results if is_not_here(r.cause)]
        results = [r for r in results if not is_not_here(r.cause)]
    if options.guard is not None:
        results, guard_refused = _set_refusals_aside(results)
        refused += guard_refused
    if not results:
        return Checked(results, refused, set(), [], None)
    policy = _alert_policy()
    # a check of this host itself (a loopback address, a unix socket; its URL's references
    # resolved, as it was probed) never crossed a network: its failure neither asks the
    # canary nor is set aside by it
    failed = {r.monitor_id for r in results if policy.is_network_failure(r)}
    host_local = {
        m.id for m in share.usable if m.id in failed and probes_module().host_local(probes_module().resolved(m))
    }
    remote = [r for r in results if r.monitor_id not in host_local]
    timeout_s = min(CANARY_TIMEOUT_S, run.left_s(NETWORK_DEADLINE_S, time.perf_counter()))
    return Checked(results, refused, host_local, remote, canary_monitor(run.conn, remote, options, timeout_s))


def record(run: Run, share: Share, checked: Checked, canary: CheckResult | None, options: TickOptions) -> Round:
    """Write a round's results (`canary`: the canary's check, if it was asked)."""
    conn, claim, now_ms = run.conn, run.claim, run.now_ms
    minutes = [claim.minute, *claim.covered]
    results = checked.results
    network_lost = False
    if results:
        policy = _alert_policy()
        network_lost = policy.network_lost(checked.remote, canary)
        if network_lost:
            results = policy.offline(results, checked.host_local)
    store.set_busy_timeout(conn, min(options.busy_timeout_s, run.left_s(WRITE_DEADLINE_S, time.perf_counter())))
    duration_ms = clock.elapsed_ms(run.started, time.perf_counter())
    located = isinstance(share.buckets, store.locations.LocationBuckets)
    rerun = None if located else claim.rerun  # a location's checks say themselves what is recorded
    recordable = results
    if rerun is not None:  # never a second check for a monitor-minute
        recordable = [r for r in results if rerun.may_record(r.monitor_id, share.created_ms[r.monitor_id])]
    # a live tick: no later tick can have counted a check after this (it started after our
    # clock reading, and at most our run time and one wait for the write lock ago)
    ahead_ms = ahead_after_ms(now_ms, duration_ms, options) if run.live else None
    write = store.locations.write_checks if located else store.write_results
    summary = write(
        conn,
        minutes,
        now_ms,
        recordable,
        finished_at_ms=now_ms + duration_ms,
        network_lost=network_lost,
        ahead_after_ms=ahead_ms,
        rerun=rerun,
        buckets=share.buckets,
    )
    # what the newest tick found of each monitor it had due, stored when it changes and shown by
    # list, show, the status page and the metrics (they never judge a monitor themselves)
    found: dict[int, str | None] = dict.fromkeys(share.created_ms)
    found.update(share.bad + checked.refused)
    said = store.record_invalid(conn, found, at_ms=now_ms, host=options.host_name, say=run.says)
    return Round(share.good, share.bad, checked.refused, results, network_lost, summary, said)


def ahead_after_ms(now_ms: int, duration_ms: int, options: TickOptions) -> int:
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


def probe_context(options: TickOptions, now_ms: int, loaded: Mapping[str, Mapping[int, Any]]) -> Any:
    """The probes' ProbeContext, on the running loop: the tick's HTTP engine (close it when
    probing ends: ProbeContext.engine.close) and its trust, each part made when a check first
    needs it (a tick without HTTP checks loads no libcurl, one without TLS no CA bundle)."""
    probes = probes_module()
    from monitor_tick.probes.curl import Engine

    contexts = probes.request.Contexts(options.verify)
    return probes.ProbeContext(Engine(), now_ms, None, loaded, options.guard, contexts)


def canary_monitor(
    conn: store.Connection, results: list[CheckResult], options: TickOptions, timeout_s: float
) -> Monitor | None:
    """The network canary (a setting) to probe, only when some check failed at network level
    and there is time for it (`timeout_s`)."""
    is_network_failure = _alert_policy().is_network_failure
    if timeout_s < MIN_PHASE_S or not any(is_network_failure(r) for r in results):
        return None
    # this host's own canary, else the one every host shares
    url = store.get_setting(conn, store.canary_setting(options.host_name))
    if url is None:
        url = store.get_setting(conn, store.CANARY_SETTING)
    if url is None:
        return None
    return Monitor(
        id=0,
        name="network canary",
        kind="http",
        url=url,
        interval_sec=60,
        effective_interval_sec=60,
        timeout_s=timeout_s,
        retries=0,
    )


def canary_options(options: TickOptions, canary: Monitor) -> TickOptions:
    # the admin chose the canary: --block-private guards monitors, not it (a router is private)
    return options._replace(guard=None, budget_s=canary.timeout_s + 1)


# ---------------------------------------------------------------------------------------------
# Deferred imports of a round (the tick's own are in tick.py): an idle tick imports none of these.
# The probes, asyncio and the fan-out are needed only when a monitor is due (libcurl only when an
# HTTP check is: probes/curl.py); the alert policy only when there are results.


def probes_module() -> ModuleType:
    import monitor_tick.probes

    return monitor_tick.probes


def event_loop() -> tuple[ModuleType, ModuleType]:
    import asyncio

    from monitor_tick.run import fanout

    return asyncio, fanout


def _address_guard() -> ModuleType:
    from monitor_tick.probes import guard

    return guard


def _alert_policy() -> ModuleType:
    from monitor_tick.alerts import policy

    return policy
