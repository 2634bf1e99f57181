"""A PostgreSQL tick shares its minute with the other hosts' ticks, and claims its next share
while its probes run.

The minute's monitors fall in store.BUCKETS buckets. A tick claims them a share at a time
(store.claim_buckets), and probes every share on one event loop, with one pool of workers
(fanout.Pool), so that a share claimed while the last one's probes run keeps the workers busy.
Each share's results are written as soon as its probes have ended, for the buckets still held.

The database is used from one thread of its own, which claims, reads what a share's probes need
and writes each share's results, one statement after another on the tick's connection: the
store runs on psycopg's synchronous connection, and a statement run on the loop would hold every
probe for its round trip. (SQLite's tick touches its file only before and after probing.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import CheckResult, Monitor, ProbeResult
from monitor_tick.run import fanout, rounds

_T = TypeVar("_T")

# A claim takes this fraction of the buckets still free (an eighth, at least one). A tick holds
# at most two shares whose probes keep workers (the one probing and the next): hosts that start
# together each take a few buckets at a time, so they share the minute, and a host alone never
# waits for a share's slowest probe before it claims the next.
SHARE = 8
OPEN_SHARES = 2


class Claims:
    """This run's claims of the minute's buckets: which share to claim next, and how large."""

    def __init__(self, run: rounds.Run, options: rounds.TickOptions, *, located: bool = False) -> None:
        self._run = run
        self._options = options
        self._located = located  # the buckets of this host's location (store.locations.claim)
        self._forced = False
        self._token = os.urandom(8).hex()
        # hosts asking at once are offered the free buckets from different places
        self._offset = int.from_bytes(os.urandom(2), "big")
        self.last_share_s = 0.0  # from claim to written, of the share written last

    def next(self) -> store.Buckets:
        """Claim the next share (empty: none is left). Once two more shares as long as the last
        would not fit in the budget left, it takes all that are left, so that no bucket waits for
        a share that cannot finish in time (a share with a hanging host takes its timeout)."""
        elapsed_s = time.perf_counter() - self._run.started
        share = SHARE if elapsed_s + 2 * self.last_share_s < self._options.budget_s else 1
        if self._located:
            if self._options.force:  # a rerun: all of the location's buckets at once, then none
                if self._forced:
                    return store.locations.LocationBuckets(
                        self._run.claim.minute, self._options.location, "", frozenset()
                    )
                self._forced, share = True, 1
            return store.locations.claim(
                self._run.conn,
                self._run.claim.minute,
                self._options.location,
                **self._share(share),
                force=self._options.force,
            )
        return store.claim_buckets(self._run.conn, self._run.claim.minute, **self._share(share))

    def _share(self, share: int) -> dict[str, Any]:
        """What a claim of either kind (the fleet's buckets, or a location's) is asked with."""
        return {
            "host": self._options.host_name,
            "token": self._token,
            "now_ms": self._run.now_ms,
            "lease_ms": clock.s_to_ms(self._options.lease_s),
            "share": share,
            "offset": self._offset,
        }


async def probe_minute(
    run: rounds.Run, rows: list[dict[str, Any]], options: rounds.TickOptions, budget_s: float, *, located: bool = False
) -> list[rounds.Round]:
    """Claim shares of the minute (`rows`: its due monitors) until none is left or `budget_s`
    (rounds.probe_budget_s) is spent, probing and writing each; one round per share, in the
    order claimed. `located`: shares of this host's location's work (its monitors with
    locations, store.locations), which only hosts of that location share."""
    loop = asyncio.get_running_loop()
    # DNS lookups: on daemon threads, never one behind another (see fanout.DaemonThreads)
    loop.set_default_executor(fanout.DaemonThreads())
    db = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="monitor-tick-db")

    idle_s = rounds.idle_in_transaction_s(options)

    def in_db(call: Callable[..., _T], *args: Any, lost: Callable[[], _T] | None = None) -> asyncio.Future[_T]:
        return loop.run_in_executor(db, on_connection, run.conn, call, args, lost, idle_s, run.started)

    deadline = loop.time() + budget_s
    loaded: dict[str, dict[int, Any]] = {}  # every share's (rounds.KIND_READS), read as it is claimed
    ctx = rounds.probe_context(options, run.now_ms, loaded)
    pool = fanout.Pool(
        ctx,
        concurrency=options.concurrency,
        retry_delay_s=options.retry_delay_s,
        slot_hold_s=budget_s * rounds.SLOT_HOLD_SHARE,
        max_in_flight=rounds.IN_FLIGHT_PER_WORKER * options.concurrency,
    )
    claims = Claims(run, options, located=located)
    batches: list[fanout.Batch] = []
    written: list[asyncio.Task[rounds.Round]] = []

    def may_claim() -> bool:
        # the workers are about to run out of monitors, and at most one share keeps workers
        return pool.waiting < options.concurrency and sum(not b.released.is_set() for b in batches) < OPEN_SHARES

    async def claim_all() -> None:
        while loop.time() < deadline:
            if not may_claim():
                pool.changed.clear()
                await asyncio.wait([asyncio.ensure_future(pool.changed.wait())], timeout=deadline - loop.time())
                continue
            claimed_at = time.perf_counter()
            # a claim cut off by a lost connection claimed nothing (the server rolled it back)
            held = await in_db(claims.next, lost=lambda: store.Buckets(run.claim.minute, "", frozenset()))
            if not held.buckets:
                return
            mine = [row for row in rows if held.holds(int(row["id"]))]
            if located:  # those without a decided check get one that does not count
                held = held._replace(given=frozenset(int(row["id"]) for row in mine))
            share = await in_db(rounds.prepare, run, mine, held, options.location)
            for kind, values in share.loaded.items():
                loaded.setdefault(kind, {}).update(values)
            order = fanout.start_order(share.usable, share.recent, run.claim.minute)
            batches.append(pool.submit(share.usable, order))
            written.append(asyncio.ensure_future(write(share, batches[-1], claimed_at)))

    async def write(share: rounds.Share, batch: fanout.Batch, claimed_at: float) -> rounds.Round:
        probes = await batch.ended()
        checked = await in_db(rounds.sort_out, run, share, probes, options)
        canary = None
        if checked.canary is not None:
            canary = CheckResult.of(0, (await _probe_canary(checked.canary, options, run.now_ms))[0])
        done = await in_db(rounds.record, run, share, checked, canary, options)
        claims.last_share_s = time.perf_counter() - claimed_at
        return done

    try:
        await claim_all()
        if written:  # the shares' probes end, or the budget cuts them off
            await asyncio.wait(written, timeout=max(deadline - loop.time(), 0))
        await pool.close()
        return list(await asyncio.gather(*written))
    finally:
        # on an error (the database lost), the other shares' errors are the same one
        for pending in written:
            pending.cancel()
        await asyncio.gather(*written, return_exceptions=True)
        await pool.close()
        ctx.engine.close()
        db.shutdown(wait=True, cancel_futures=True)


def on_connection(
    conn: store.Connection,
    call: Callable[..., _T],
    args: tuple[Any, ...],
    lost: Callable[[], _T] | None,
    idle_s: float,
    tick_started: float,
) -> _T:
    """`call(*args)` on the tick's connection. When the server ended the session because this
    host was stopped inside a transaction (rounds.idle_in_transaction_s, `idle_s`: the server
    says so, or the call lost its connection after taking longer than that, and the server has
    not restarted since the tick began at `tick_started`, a perf_counter reading), that
    transaction was rolled back: connect again, then `lost()` says what that means, or the call
    runs once more (reads, and a share's write, which records only for buckets still held and not
    yet finished: never twice). Any other loss of the database fails the tick, as before."""
    started = time.monotonic()
    try:
        return call(*args)
    except store.StoreError as exc:
        stopped = conn.lost() and time.monotonic() - started >= idle_s
        if not (getattr(conn, "ended_idle", False) or stopped):
            raise
        failure = exc
    conn.reopen()
    # a server that restarted during the tick dropped every session, not just a stopped one
    if conn.server_up_s() <= time.perf_counter() - tick_started + 1:
        raise failure
    return lost() if lost is not None else call(*args)


async def _probe_canary(canary: Monitor, options: rounds.TickOptions, now_ms: int) -> list[ProbeResult]:
    canary_options = rounds.canary_options(options, canary)
    ctx = rounds.probe_context(canary_options, now_ms, {})
    try:
        return await fanout.probe_all(
            [canary], ctx, concurrency=1, retry_delay_s=options.retry_delay_s, budget_s=canary_options.budget_s
        )
    finally:
        ctx.engine.close()
