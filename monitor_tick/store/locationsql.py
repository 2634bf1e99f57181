"""What of store/locations.py the modules below it need: the statements whose text differs by
engine (where the database server's clock decides: leases, liveness, closing; the lock of a
monitor's row), which the PostgreSQL engine registers (postgres.STATEMENTS), and reading the
hourly figures of each location (location_rollups.figures), which `show` gives."""

from __future__ import annotations

from monitor_tick.store.db import statement

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

    from monitor_tick.store.db import Connection

LOCATION_BUCKETS = 16  # a monitor with locations falls in bucket id % 16 of each of its locations

# The database server's clock where it decides (leases, liveness, closing): `{now}` is the
# tick's reading on SQLite (one host) and the server's on PostgreSQL (postgres.STATEMENTS).
_CLAIM = """
WITH RECURSIVE b(bucket) AS (SELECT 0 UNION ALL SELECT bucket + 1 FROM b WHERE bucket < {buckets} - 1),
free(bucket, n) AS (
  SELECT bucket, row_number() OVER (ORDER BY (bucket + :offset) % {buckets}) FROM b
   WHERE :force = 1 OR NOT EXISTS (SELECT 1 FROM location_claims c WHERE c.minute = :minute AND c.location = :location
                      AND c.bucket = b.bucket AND (c.finished_at_ms IS NOT NULL OR c.lease_until_ms > {now}))
),
size(free) AS (SELECT count(*) FROM free)
INSERT INTO location_claims (minute, location, bucket, host, token, claimed_at_ms, lease_until_ms)
SELECT :minute, :location, bucket, :host, :token, :now_ms, {now} + :lease_ms FROM free, size
 WHERE free.n <= CASE WHEN :all = 1 THEN size.free WHEN size.free < :share THEN 1 ELSE size.free / :share END
ON CONFLICT (minute, location, bucket) DO UPDATE SET host = excluded.host, token = excluded.token,
  claimed_at_ms = excluded.claimed_at_ms, lease_until_ms = excluded.lease_until_ms, finished_at_ms = NULL,
  taken_from = CASE WHEN location_claims.finished_at_ms IS NULL AND location_claims.host <> excluded.host
                    THEN location_claims.host END
 WHERE :force = 1 OR (location_claims.finished_at_ms IS NULL AND location_claims.lease_until_ms <= {now})
RETURNING bucket
"""
# (network_lost: what the tick found of its network, and canary_minute the minute it did, kept
# when this tick had no checks to judge it by: :asked = 0)
_SEEN = """
INSERT INTO fleet_hosts (host, location, last_minute, seen_at_ms, network_lost, canary_minute)
VALUES (:host, :location, :minute, {now}, :lost, CASE WHEN :asked = 1 THEN :minute END)
ON CONFLICT (host) DO UPDATE SET location = excluded.location, seen_at_ms = excluded.seen_at_ms,
  last_minute = CASE WHEN excluded.last_minute > fleet_hosts.last_minute
                     THEN excluded.last_minute ELSE fleet_hosts.last_minute END,
  network_lost = CASE WHEN :asked = 1 THEN excluded.network_lost ELSE fleet_hosts.network_lost END,
  canary_minute = CASE WHEN :asked = 1 THEN excluded.canary_minute ELSE fleet_hosts.canary_minute END
"""
_NOW = "SELECT {now}"
_LOCK_MONITOR = (
    "SELECT locations, quorum, notify_partial, alert_after_checks, resolve_after_checks, remind_every_sec "
    "FROM monitors WHERE id = ?{lock}"
)


def postgres_statements(server_now: str) -> dict[str, str]:
    """This module's statements as PostgreSQL runs them: the server's clock, the row lock."""
    return {
        "location_claim": _CLAIM.format(now=server_now, buckets=LOCATION_BUCKETS),
        "location_seen": _SEEN.format(now=server_now),
        "location_now": _NOW.format(now=server_now),
        "location_lock": _LOCK_MONITOR.format(lock=" FOR UPDATE"),
    }


def sql(conn: Connection, name: str) -> str:
    """The statement `name` as the connection's engine runs it."""
    sqlite = {
        "location_claim": _CLAIM.format(now=":now_ms", buckets=LOCATION_BUCKETS),
        "location_seen": _SEEN.format(now=":now_ms"),
        "location_now": _NOW.format(now=":now_ms"),
        "location_lock": _LOCK_MONITOR.format(lock=""),  # SQLite has one writer at a time
    }
    return statement(conn, name, sqlite[name])


def parse_figures(text: str) -> dict[str, tuple[int, int, int]]:
    """location_rollups.figures -> location -> (checks, failures, latency_ms_sum of up checks)."""
    found = {}
    for part in filter(None, text.split(";")):
        location, checks, failures, latency = part.split(" ")
        found[location] = (int(checks), int(failures), int(latency))
    return found


def single_location(stored: str | None) -> str | None:
    """The one location of a monitor checked from exactly one named location (its verdicts are
    that location's checks, so its hourly figures are not stored twice: location_figures derives
    them from its rollups), else None."""
    if stored is None or stored == "all" or "," in stored:
        return None
    return stored


def location_figures(conn: Connection, monitor: int, since_hour_ms: int) -> list[dict[str, Any]]:
    """Each location's checks, failures and latency_ms_sum of `monitor` from `since_hour_ms` on:
    stored in location_rollups, or, for the hours without a row there of a monitor checked from
    one named location, its own rollups (its verdicts are that location's checks)."""
    totals: dict[str, list[int]] = {}
    stored_hours = set()
    for hour, text in conn.execute(
        "SELECT hour_start_ms, figures FROM location_rollups WHERE monitor_id = ? AND hour_start_ms >= ?",
        (monitor, since_hour_ms),
    ):
        stored_hours.add(int(hour))
        for location, figures in parse_figures(str(text)).items():
            sums = totals.setdefault(location, [0, 0, 0])
            for n, value in enumerate(figures):
                sums[n] += value
    (stored,) = conn.execute("SELECT locations FROM monitors WHERE id = ?", (monitor,)).fetchone() or (None,)
    only = single_location(stored)
    if only is not None:
        for hour, checks, failures, latency in conn.execute(
            "SELECT hour_start_ms, checks, failures, latency_ms_sum FROM rollups "
            "WHERE monitor_id = ? AND hour_start_ms >= ?",
            (monitor, since_hour_ms),
        ):
            if int(hour) not in stored_hours:
                sums = totals.setdefault(only, [0, 0, 0])
                for n, value in enumerate((checks, failures, latency or 0)):
                    sums[n] += int(value)
    return [
        {"location": loc, "checks": c, "failures": f, "latency_ms_sum": lat}
        for loc, (c, f, lat) in sorted(totals.items())
    ]
