"""Status page, badges, metrics and report: reads only, a few queries per page.

Nothing here is written per check; all of it is derived from rollups, incidents and ticks."""

from __future__ import annotations

from collections.abc import Sequence

from monitor_tick.core.clock import MINUTES_PER_DAY, MS_PER_DAY, hour_start_ms
from monitor_tick.store.db import IN_MAINTENANCE, SETTING_COLUMNS, dicts, one

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

    from monitor_tick.store.db import Connection

# What the newest tick that had monitor `m` due found when it could not probe it (see
# store/invalid.py): why, on which host, since when; NULLs when it could. Three primary-key seeks.
INVALID_COLUMNS = """
(SELECT iv.cause FROM invalid_monitors iv WHERE iv.monitor_id = m.id) AS invalid_cause,
(SELECT iv.host FROM invalid_monitors iv WHERE iv.monitor_id = m.id) AS invalid_host,
(SELECT iv.since_ms FROM invalid_monitors iv WHERE iv.monitor_id = m.id) AS invalid_since_ms
"""

# A monitor's current-state columns (see model.monitor_state) and its settings, for `FROM
# monitors m` at :now_ms. The last check is read from the monitor's newest rollup hour (a
# primary-key seek) rather than a max over all its hours.
_STATE_COLUMNS = f"""
    m.enabled, m.auto_paused, {SETTING_COLUMNS}, {INVALID_COLUMNS},
    {IN_MAINTENANCE} AS in_maintenance,
    (SELECT i.started_at_ms FROM incidents i
      WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL AND i.kind = 'down') AS down_since_ms,
    (SELECT i.started_at_ms FROM incidents i
      WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL AND i.kind = 'partial') AS partial_since_ms,
    m.locations, m.quorum, m.notify_partial,
    (SELECT r.last_check_ms FROM rollups r
      WHERE r.monitor_id = m.id ORDER BY r.hour_start_ms DESC LIMIT 1) AS last_check_ms
"""


def report(conn: Connection, since_ms: int, now_ms: int) -> list[dict[str, Any]]:
    """Per monitor, over the rollup hours that start at or after the hour of `since_ms`: checks,
    failures, latency sum of up checks, the incidents that overlap [since_ms, now_ms], and the
    current-state columns at `now_ms`."""
    return dicts(
        conn,
        f"""
        SELECT m.id, {_STATE_COLUMNS}, {LATEST_RESULTS},
               (SELECT count(*) FROM incidents i
                 WHERE i.monitor_id = m.id AND i.started_at_ms <= :now_ms
                   AND (i.resolved_at_ms IS NULL OR i.resolved_at_ms >= :since_ms)) AS incidents,
               coalesce(sum(r.checks), 0) AS checks,
               coalesce(sum(r.failures), 0) AS failures,
               sum(r.latency_ms_sum) AS latency_ms_sum,
               EXISTS (SELECT 1 FROM incidents i
                        WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL) AS open_incident
          FROM monitors m
          LEFT JOIN rollups r ON r.monitor_id = m.id AND r.hour_start_ms >= :since_hour_ms
          LEFT JOIN pings ON pings.monitor_id = m.id
         GROUP BY m.id, pings.monitor_id
         ORDER BY m.id
        """,
        {"since_hour_ms": hour_start_ms(since_ms), "since_ms": since_ms, "now_ms": now_ms},
    )


def status_monitors(conn: Connection, now_ms: int) -> list[dict[str, Any]]:
    """Every monitor with its current-state columns at `now_ms`, when it was created, and the
    totals of its newest rollup hour (`hour_checks`, `hour_failures`, `hour_latency_ms_sum`)."""
    return dicts(
        conn,
        f"""
        SELECT m.id, m.created_at_ms, {_STATE_COLUMNS},
               h.hour_start_ms, h.checks AS hour_checks, h.failures AS hour_failures,
               h.latency_ms_sum AS hour_latency_ms_sum
          FROM monitors m
          LEFT JOIN rollups h ON h.monitor_id = m.id
               AND h.hour_start_ms = (SELECT max(x.hour_start_ms) FROM rollups x WHERE x.monitor_id = m.id)
         ORDER BY m.id
        """,
        {"now_ms": now_ms},
    )


def rollups_by_day(conn: Connection, since_ms: int, tier_starts_ms: Sequence[int]) -> list[dict[str, Any]]:
    """Rollup totals per monitor, UTC day and tier, over the hours from the hour of `since_ms`.

    `tier` counts how many of `tier_starts_ms` an hour starts at or after, so one pass serves
    nested windows: the rows of window k are those with tier >= k. A day cut by a window's start
    comes back as two rows. Each monitor's hours are read through the primary key.
    """
    tiers = " + ".join(f"CASE WHEN r.hour_start_ms >= :tier{k} THEN 1 ELSE 0 END" for k in range(len(tier_starts_ms)))
    tiers = tiers or "0"
    return dicts(
        conn,
        f"""
        SELECT r.monitor_id, r.hour_start_ms / :ms_per_day AS day, {tiers} AS tier,
               sum(r.checks) AS checks, sum(r.failures) AS failures, sum(r.latency_ms_sum) AS latency_ms_sum
          FROM monitors m
          CROSS JOIN rollups r
         WHERE r.monitor_id = m.id AND r.hour_start_ms >= :since_hour_ms
         GROUP BY r.monitor_id, day, tier
        """,
        {
            "since_hour_ms": hour_start_ms(since_ms),
            "ms_per_day": MS_PER_DAY,
            **{f"tier{k}": hour_start_ms(start) for k, start in enumerate(tier_starts_ms)},
        },
    )


def rollup_hours(conn: Connection, since_ms: int) -> list[dict[str, Any]]:
    """Each monitor's rollup hours from the hour of `since_ms` on: monitor_id, hour_start_ms,
    checks, failures, latency_ms_sum (the status page's latency chart). Each monitor's hours are
    read through the primary key, as in rollups_by_day."""
    return dicts(
        conn,
        "SELECT r.monitor_id, r.hour_start_ms, r.checks, r.failures, r.latency_ms_sum "
        "FROM monitors m CROSS JOIN rollups r WHERE r.monitor_id = m.id AND r.hour_start_ms >= ?",
        (hour_start_ms(since_ms),),
    )


def recent_incidents(conn: Connection, since_ms: int, per_monitor: int) -> list[dict[str, Any]]:
    """The newest `per_monitor` incidents of each monitor among those open at or after
    `since_ms` (started_at_ms, resolved_at_ms, cause), newest first, each row with `total`: how
    many of that monitor's incidents overlap the window."""
    return dicts(
        conn,
        """
        SELECT monitor_id, started_at_ms, resolved_at_ms, cause, http_status, total FROM (
            SELECT i.*, row_number() OVER (PARTITION BY i.monitor_id ORDER BY i.started_at_ms DESC, i.id DESC) AS n,
                   count(*) OVER (PARTITION BY i.monitor_id) AS total
              FROM incidents i
             WHERE i.resolved_at_ms IS NULL OR i.resolved_at_ms >= :since_ms
        ) AS ranked WHERE n <= :per_monitor
         ORDER BY monitor_id, started_at_ms DESC
        """,
        {"since_ms": since_ms, "per_monitor": per_monitor},
    )


def tick_gaps(conn: Connection, from_minute: int, until_minute: int) -> list[tuple[int, int]]:
    """The [start, end) minute ranges within [from_minute, until_minute) when no tick probed:
    unclaimed minutes, minutes claimed too late to probe (missed = 1) and runs that died
    (finished_at_ms NULL). Those are "no data", never downtime. Nothing before the first live
    tick (first_tick_minute) is a gap: monitor-tick was not yet meant to run. One range scan of
    the ledger."""
    first = first_tick_minute(conn)
    if first is None:
        return []
    from_minute = max(from_minute, first)
    return [
        (int(start), int(end))
        for start, end in conn.execute(
            """
            WITH ran(minute) AS (
                SELECT minute FROM ticks
                 WHERE minute >= :from AND minute < :until AND missed = 0 AND finished_at_ms IS NOT NULL
                UNION ALL SELECT CAST(:until AS INTEGER)
            )
            SELECT previous + 1, minute FROM (
                SELECT minute, lag(minute, 1, :from - 1) OVER (ORDER BY minute) AS previous FROM ran
            ) AS runs WHERE minute > previous + 1
            """,
            {"from": from_minute, "until": until_minute},
        )
    ]


def ticks_per_day(conn: Connection, from_minute: int, until_minute: int) -> dict[int, int]:
    """UTC day of the epoch -> how many minutes of it within [from_minute, until_minute) a tick
    probed. Cheaper than tick_gaps over many days: callers look for gaps only in days short
    of minutes."""
    return dict(
        conn.execute(
            "SELECT minute / :per_day, count(*) FROM ticks WHERE minute >= :from AND minute < :until "
            "AND missed = 0 AND finished_at_ms IS NOT NULL GROUP BY 1",
            {"per_day": MINUTES_PER_DAY, "from": from_minute, "until": until_minute},
        ).fetchall()
    )


def first_tick_minute(conn: Connection) -> int | None:
    """The minute of the first live tick (the oldest ledger row not replayed): before it,
    monitor-tick had never run from cron. Replays (--minute) of older minutes do not count: a
    database made today and shown a minute of last week has no week of gap."""
    # oldest first through the primary key, stopping at the first live row (min() would scan)
    found = one(conn, "SELECT minute FROM ticks WHERE replayed = 0 ORDER BY minute LIMIT 1", ())
    return None if found is None else int(found)


def last_tick(conn: Connection) -> dict[str, Any] | None:
    """The newest finished tick that probed: minute, started/finished_at_ms, due, up, down, unknown."""
    rows = dicts(
        conn,
        "SELECT minute, started_at_ms, finished_at_ms, due, up, down, unknown FROM ticks "
        "WHERE missed = 0 AND finished_at_ms IS NOT NULL ORDER BY minute DESC LIMIT 1",
        {},
    )
    return rows[0] if rows else None


# What list and report show of a monitor's latest results (needs `m` = monitors and `pings`
# left-joined): the open incident's cause, the newest check's certificate expiry, and the last
# heartbeat signals.
LATEST_RESULTS = """
(SELECT oi.cause FROM incidents oi WHERE oi.monitor_id = m.id AND oi.resolved_at_ms IS NULL) AS cause,
(SELECT rr.cert_expires_at_ms FROM rollups rr WHERE rr.monitor_id = m.id
  ORDER BY rr.hour_start_ms DESC LIMIT 1) AS cert_expires_at_ms,
pings.last_ping_ms, pings.last_ping_failed, pings.last_duration_ms, pings.started_at_ms
"""


# Each claim a host holds or finished, and each it lost (it died, or stopped past its lease: the
# claim names it as taken_from), with `location` NULL for the fleet's buckets
_HOST_SHARES = """
SELECT minute, host, {location} AS location, 1 AS buckets,
       CASE WHEN finished_at_ms IS NULL THEN 1 ELSE 0 END AS unfinished,
       CASE WHEN taken_from IS NULL THEN 0 ELSE 1 END AS took_over,
       coalesce(checks, 0) AS checks, claimed_at_ms, finished_at_ms
  FROM {table} WHERE minute >= :from
UNION ALL
SELECT minute, taken_from, {location}, 1, 1, 0, 0, NULL, NULL
  FROM {table} WHERE minute >= :from AND taken_from IS NOT NULL
"""


def host_minutes(conn: Connection, from_minute: int) -> list[dict[str, Any]]:
    """Per minute from `from_minute` on, per host and share that it claimed buckets of (the
    fleet's 64, `location` None, or a location's 16): how many buckets, how many of them it
    never finished (it died, or lost them to another host), how many it took over from another
    host, the checks it recorded, and when its first claim and its last write were (epoch ms)."""
    fleet = _HOST_SHARES.format(location="CAST(NULL AS TEXT)", table="claims")
    located = _HOST_SHARES.format(location="location", table="location_claims")
    return dicts(
        conn,
        f"""
        SELECT minute, host, location, sum(buckets) AS buckets, sum(unfinished) AS unfinished,
               sum(took_over) AS took_over, sum(checks) AS checks,
               min(claimed_at_ms) AS first_claim_ms, max(finished_at_ms) AS last_write_ms
          FROM ({fleet} UNION ALL {located}) AS shares
         GROUP BY minute, host, location
         ORDER BY minute, host, location IS NOT NULL, location
        """,
        {"from": from_minute},
    )


def fleet_hosts(conn: Connection) -> int:
    """How many hosts tick this database: on PostgreSQL, the hosts named in the claims kept
    (a day, as `monitor-tick hosts` shows them); a SQLite file is one host's, whatever names
    its ticks gave (1)."""
    if conn.engine == "sqlite":
        return 1
    return int(one(conn, "SELECT count(DISTINCT host) FROM claims", ()))


def has_monitors(conn: Connection) -> bool:
    """Whether the database holds any monitor at all."""
    return bool(one(conn, "SELECT EXISTS (SELECT 1 FROM monitors)", ()))
