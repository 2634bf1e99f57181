"""The minute ledger (`ticks`): claiming a minute, catching up the minutes cron skipped, and
--force reruns that never count a check twice."""

from __future__ import annotations

from monitor_tick.core.records import NamedTuple
from monitor_tick.store.db import from_json, one, statement, write_tx

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from monitor_tick.store.db import Connection


def claim_minute(conn: Connection, minute: int, started_at_ms: int, *, force: bool, replay: bool = False) -> bool:
    """Claim `minute` for this run: True when this run owns it now.

    Exactly one of any number of concurrent runs for a minute wins (an INSERT on the primary
    key). With `force`, the minute is claimed again even if an earlier run had it.
    """
    claim = claim_minutes(conn, minute, started_at_ms, force=force, catch_up_minutes=0, replay=replay)
    return claim is not None


class Rerun(NamedTuple):
    """A --force rerun of a minute whose run finished: it records only what that run did not."""

    run_minute: int  # the ledger row of the run (the minute itself, or the one that caught it up)
    started_at_ms: int  # when that run (or the last rerun) started
    unrecorded: frozenset[int]  # monitors it probed but did not record (unknown)

    def may_record(self, monitor: int, created_at_ms: int) -> bool:
        """Whether a check of `monitor` would be its first for the run's minutes."""
        return monitor in self.unrecorded or created_at_ms > self.started_at_ms


class Claim(NamedTuple):
    minute: int
    covered: list[int]  # earlier, unclaimed minutes this run probes for (catch-up)
    missed: int  # unclaimed minutes too old to probe for, recorded as missed
    rerun: Rerun | None = None  # set when this is a --force rerun of a finished minute
    # another run claimed the minute first: this one shares its buckets (claim_buckets), and
    # has nothing to do when none is left
    joined: bool = False


MAX_MISSED_MINUTES = 90 * 1_440  # a longer gap is recorded for its last 90 days only


# A row claimed by a run whose clock read later than `:ahead_ms` (a live tick's reading plus the
# longest a tick can run): a clock that was ahead, or ours stepped back. A live tick takes it over,
# missed, covered or run: otherwise one tick under a clock 3 hours ahead leaves the live ticks
# that follow nothing to do, and a clock stepped back goes blind for the step.
# (the CAST gives PostgreSQL the parameter's type when it is NULL)
_CLAIMED_AHEAD = "CAST(:ahead_ms AS BIGINT) IS NOT NULL AND ticks.started_at_ms > :ahead_ms"
# what a take-over clears of the earlier run (the own minute's counts are rewritten by its write)
_TAKEN_OVER = "finished_at_ms = NULL, unrecorded_ids = NULL, network_lost = 0"


def claim_minutes(
    conn: Connection,
    minute: int,
    started_at_ms: int,
    *,
    force: bool,
    catch_up_minutes: int,
    reclaim_after_ms: int | None = None,
    replay: bool = False,
) -> Claim | None:
    """Claim `minute`, and with `catch_up_minutes` > 0 the unclaimed minutes since the newest
    claimed one: those within the window are covered by this run, older ones recorded as
    missed. None when another run already has `minute`. Each minute is claimed by exactly one
    run, however many race (INSERT ... ON CONFLICT DO NOTHING inside one write transaction).

    `reclaim_after_ms` (live ticks): minutes claimed by a run whose clock read later than it count
    as unclaimed. With `force`, a minute whose run finished is
    returned with `rerun` (record only what that run did not); one that never ran or whose run
    died is claimed afresh.

    A `replay` (--minute) marks its row replayed: it says nothing of whether monitor-tick was
    running then or since, so a live tick's catch-up starts from the newest live row, and a
    live tick that finds none is the first (nothing before it is missed).
    """
    with write_tx(conn):
        if force:
            return _claim_forced(conn, minute, started_at_ms, replay=replay)
        params = {"minute": minute, "at_ms": started_at_ms, "ahead_ms": reclaim_after_ms, "replayed": int(replay)}
        cursor = conn.execute(
            "INSERT INTO ticks (minute, started_at_ms, replayed) VALUES (:minute, :at_ms, :replayed) "
            "ON CONFLICT (minute) DO UPDATE SET started_at_ms = excluded.started_at_ms, missed = 0, "
            f"covered_by = NULL, replayed = excluded.replayed, {_TAKEN_OVER} WHERE {_CLAIMED_AHEAD}",
            params,
        )
        if cursor.rowcount != 1:
            return _join(conn, minute)
        if catch_up_minutes <= 0:
            return Claim(minute, [], 0)
        last = one(
            conn,
            # newest first through the primary key, stopping at the first match (max() would scan)
            "SELECT minute FROM ticks WHERE minute < :minute AND replayed = 0 "
            f"AND NOT ({_CLAIMED_AHEAD}) ORDER BY minute DESC LIMIT 1",
            params,
        )
        if last is None or last >= minute - 1:  # the first live tick ever, or no gap
            return Claim(minute, [], 0)
        window_start = max(last + 1, minute - catch_up_minutes)
        missed_start = max(last + 1, window_start - MAX_MISSED_MINUTES)
        missed = conn.execute(
            _INSERT_RANGE.format(columns="minute, started_at_ms, missed", values="m, :at_ms, 1"),
            {**params, "first": missed_start, "last": window_start - 1},
        ).fetchall()
        covered = conn.execute(
            _INSERT_RANGE.format(columns="minute, started_at_ms, covered_by", values="m, :at_ms, :by"),
            {**params, "first": window_start, "last": minute - 1, "by": minute},
        ).fetchall()
        return Claim(minute, sorted(row[0] for row in covered), len(missed))


def _join(conn: Connection, minute: int) -> Claim | None:
    """The claim of a run that comes second for `minute`: it shares the buckets of the run
    that claimed the minute (and the minutes that run caught up). None when the minute was
    caught up by another minute's run, recorded as missed, or finished: nothing is left to
    share; and always on SQLite, where one host runs each minute whole (nothing to share, and
    no claim rows to write: the minute's row in the ledger is its claim).

    A finished minute is done whatever its claim rows say: its run finished every bucket, or
    wrote the minute whole without claims (a SQLite run whose ledger `migrate` copied, or a
    --force run); sharing its buckets again would count its checks twice."""
    if conn.engine == "sqlite":
        return None
    row = conn.execute("SELECT covered_by, missed, finished_at_ms FROM ticks WHERE minute = ?", (minute,)).fetchone()
    if row is None or row[0] is not None or row[1] or row[2] is not None:
        return None
    covered = [
        int(m) for (m,) in conn.execute("SELECT minute FROM ticks WHERE covered_by = ? ORDER BY minute", (minute,))
    ]
    return Claim(minute, covered, 0, joined=True)


def _claim_forced(conn: Connection, minute: int, started_at_ms: int, *, replay: bool) -> Claim:
    """--force: a rerun of a finished run (see Rerun), or a fresh claim when nothing was recorded
    for `minute` (never claimed, missed, or its run died: finished_at_ms NULL)."""
    found = conn.execute("SELECT coalesce(covered_by, minute) FROM ticks WHERE minute = ? AND missed = 0", (minute,))
    row = found.fetchone()
    run = None
    if row is not None:
        run = conn.execute(
            "SELECT minute, started_at_ms, unrecorded_ids FROM ticks WHERE minute = ? AND finished_at_ms IS NOT NULL",
            (row[0],),
        ).fetchone()
    if run is not None:
        unrecorded = frozenset(int(i) for i in from_json(run[2] or "[]"))
        return Claim(minute, [], 0, Rerun(int(run[0]), int(run[1]), unrecorded))
    conn.execute(
        "INSERT INTO ticks (minute, started_at_ms, replayed) VALUES (?, ?, ?) "
        "ON CONFLICT (minute) DO UPDATE SET started_at_ms = excluded.started_at_ms, "
        "finished_at_ms = NULL, covered_by = NULL, missed = 0, unrecorded_ids = NULL, replayed = excluded.replayed, "
        "due = NULL, up = NULL, down = NULL, unknown = NULL, opened = NULL, resolved = NULL",
        (minute, started_at_ms, int(replay)),
    )
    return Claim(minute, [], 0)


_INSERT_RANGE = (
    """
WITH RECURSIVE r(m) AS (
  SELECT CAST(:first AS BIGINT) WHERE :first <= :last UNION ALL SELECT m + 1 FROM r WHERE m < :last
)
INSERT INTO ticks ({columns}) SELECT {values} FROM r WHERE true
ON CONFLICT (minute) DO UPDATE SET started_at_ms = excluded.started_at_ms, covered_by = excluded.covered_by,
  missed = excluded.missed, """
    + _TAKEN_OVER
    + " WHERE "
    + _CLAIMED_AHEAD
    + "\nRETURNING minute\n"
)


BUCKETS = 64  # a monitor falls in bucket id % BUCKETS (schema.sql: claims)


class Buckets(NamedTuple):
    """The (minute, bucket) claims one round of a run holds: its writes are conditional on them."""

    minute: int
    token: str
    buckets: frozenset[int]

    def holds(self, monitor: int) -> bool:
        return monitor % BUCKETS in self.buckets


# The server's clock decides whether a lease has expired (`{now}`): on SQLite, where every run
# is on one machine, the run's own reading (:now_ms); PostgreSQL's statement replaces it with
# the database server's clock (store/postgres.py), so hosts whose clocks disagree agree on it.
# A run takes one :share-th of the buckets free (never claimed, or claimed under a lease that
# has expired), at least one, or all of them (:all). Expired claims come first (a dead host's
# work is the oldest); then buckets are offered from a different place for each run (:offset),
# so that hosts asking at once take different buckets. A claim taken over names the host it was
# taken from (`monitor-tick hosts` counts that host's lost work).
CLAIM_BUCKETS = """
WITH RECURSIVE b(bucket) AS (SELECT 0 UNION ALL SELECT bucket + 1 FROM b WHERE bucket < {buckets} - 1),
free(bucket, n) AS (
  SELECT bucket, row_number() OVER (
           ORDER BY EXISTS (SELECT 1 FROM claims c WHERE c.minute = :minute AND c.bucket = b.bucket) DESC,
                    (bucket + :offset) % {buckets}) FROM b
   WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.minute = :minute AND c.bucket = b.bucket
                      AND (c.finished_at_ms IS NOT NULL OR c.lease_until_ms > {now}))
),
size(free) AS (SELECT count(*) FROM free)
INSERT INTO claims (minute, bucket, host, token, claimed_at_ms, lease_until_ms)
SELECT :minute, bucket, :host, :token, :now_ms, {now} + :lease_ms FROM free, size
 WHERE free.n <= CASE WHEN :all = 1 THEN size.free WHEN size.free < :share THEN 1 ELSE size.free / :share END
ON CONFLICT (minute, bucket) DO UPDATE SET host = excluded.host, token = excluded.token,
  claimed_at_ms = excluded.claimed_at_ms, lease_until_ms = excluded.lease_until_ms,
  taken_from = CASE WHEN claims.host <> excluded.host THEN claims.host END
 WHERE claims.finished_at_ms IS NULL AND claims.lease_until_ms <= {now}
RETURNING bucket
"""


def claim_buckets_sql(now: str) -> str:
    """CLAIM_BUCKETS with the engine's clock for leases (see above)."""
    return CLAIM_BUCKETS.format(now=now, buckets=BUCKETS)


def claim_buckets(
    conn: Connection, minute: int, *, host: str, token: str, now_ms: int, lease_ms: int, share: int, offset: int
) -> Buckets:
    """Claim, for `lease_ms`, one `share`-th (at least one; all when `share` is 1) of the
    buckets of `minute` that no run has finished or holds under a live lease (a run that died,
    or stopped past its lease, loses them). Empty when none is left."""
    with write_tx(conn):
        rows = conn.execute(
            statement(conn, "claim_buckets", claim_buckets_sql(":now_ms")),
            {
                "minute": minute,
                "host": host,
                "token": token,
                "now_ms": now_ms,
                "lease_ms": lease_ms,
                "share": share,
                "all": share <= 1,
                "offset": offset,
            },
        ).fetchall()
    return Buckets(minute, token, frozenset(int(row[0]) for row in rows))
