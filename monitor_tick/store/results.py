"""Writing a tick's results: the hourly rollup upserts, each check's incident step (the pure
incidents.step, applied in the same locked transaction, never letting a stale result flip
state), the ledger's figures; and the daily housekeeping (auto-pause, retention)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from monitor_tick.core.clock import MS_PER_DAY, hour_start_ms, minute_of_ms
from monitor_tick.core.incidents import Open, Step, Transition, step
from monitor_tick.core.model import AlertSettings, CheckResult
from monitor_tick.core.records import NamedTuple
from monitor_tick.store.db import from_json, greatest, inserted_id, least, one, statement, to_json, write_tx
from monitor_tick.store.deliveries import record_event
from monitor_tick.store.ledger import BUCKETS, Buckets, Rerun

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from monitor_tick.store.db import Connection


class WriteSummary(NamedTuple):
    up: int
    down: int
    unknown: int
    opened: list[int]
    resolved: list[int]
    stale: int
    confirmed: Sequence[int] = ()  # incidents announced as down this tick


# One text for both engines: columns of the stored row are qualified (PostgreSQL finds a bare
# name ambiguous beside `excluded`), and the scalar min/max are written as CASE (db.least).
_ROLLUP_COLUMNS = """rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum,
                     latency_ms_min, latency_ms_max, last_check_ms, cert_expires_at_ms, phases)"""
_ROLLUP_COUNTED = f"""
ON CONFLICT (monitor_id, hour_start_ms) DO UPDATE SET
  cert_expires_at_ms = CASE WHEN excluded.last_check_ms >= rollups.last_check_ms
                            THEN excluded.cert_expires_at_ms ELSE rollups.cert_expires_at_ms END,
  phases = CASE WHEN excluded.last_check_ms >= rollups.last_check_ms THEN excluded.phases ELSE rollups.phases END,
  checks = rollups.checks + 1,
  failures = rollups.failures + excluded.failures,
  latency_ms_sum = rollups.latency_ms_sum + excluded.latency_ms_sum,
  latency_ms_min = {
    least(
        "coalesce(rollups.latency_ms_min, excluded.latency_ms_min)",
        "coalesce(excluded.latency_ms_min, rollups.latency_ms_min)",
    )
},
  latency_ms_max = {
    greatest(
        "coalesce(rollups.latency_ms_max, excluded.latency_ms_max)",
        "coalesce(excluded.latency_ms_max, rollups.latency_ms_max)",
    )
},
  last_check_ms = {greatest("rollups.last_check_ms", "excluded.last_check_ms")}
"""
_UPSERT_ROLLUP = f"""
INSERT INTO {_ROLLUP_COLUMNS}
VALUES (:monitor_id, :hour_start_ms, 1, :failures, :latency_ms, :latency_min, :latency_max, :at_ms,
        :cert_expires_at_ms, :phases)
{_ROLLUP_COUNTED}
RETURNING last_check_ms
"""
# PostgreSQL: a round's checks in one statement, from one array a column (unnest): the server
# parses and plans it once, and a round costs one round trip, where a statement a check cost
# both a check. (Arrays rather than a JSON document: typed, with nothing to parse.)
_UPSERT_ROLLUPS = f"""
INSERT INTO {_ROLLUP_COLUMNS}
SELECT c.monitor_id, :hour_start_ms, 1, c.failures, coalesce(c.latency_ms, 0), c.latency_ms, c.latency_ms, :at_ms,
       c.cert_expires_at_ms, c.phases
  FROM unnest(CAST(:monitor_ids AS BIGINT[]), CAST(:failures AS BIGINT[]), CAST(:latencies_ms AS BIGINT[]),
              CAST(:certs_ms AS BIGINT[]), CAST(:phases AS TEXT[]))
       AS c(monitor_id, failures, latency_ms, cert_expires_at_ms, phases)
{_ROLLUP_COUNTED}
RETURNING monitor_id, last_check_ms
"""


# SQLite: _UPSERT_ROLLUP for executemany, its values in order (monitor_id, hour_start_ms,
# failures, latency_ms, latency_min, latency_max, at_ms, cert_expires_at_ms, phases), and the
# counted hours read back after it (`?`: the hour, then the monitors' ids as a JSON array)
_COUNT_CHECK = f"""
INSERT INTO {_ROLLUP_COLUMNS}
VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
{_ROLLUP_COUNTED}
"""
_COUNTED = (
    "SELECT monitor_id, last_check_ms FROM rollups "
    "WHERE hour_start_ms = ? AND monitor_id IN (SELECT value FROM json_each(?))"
)


def _count_checks(conn: Connection, hour_ms: int, at_ms: int, decided: list[CheckResult]) -> dict[int, int]:
    """Count each decided check in its monitor's hour (one check a monitor): monitor id -> the
    hour's last_check_ms after it. On PostgreSQL in one statement; on SQLite, whose statements
    are calls inside this process, in one executemany of the upsert, and the hours' last checks
    read back in one query (executemany returns no rows)."""
    if not decided:
        return {}
    latencies = [r.latency_ms if r.status == "up" else None for r in decided]  # averages of up checks
    if conn.engine != "sqlite":
        params = {
            "hour_start_ms": hour_ms,
            "at_ms": at_ms,
            "monitor_ids": [r.monitor_id for r in decided],
            "failures": [0 if r.status == "up" else 1 for r in decided],
            "latencies_ms": latencies,
            "certs_ms": [r.cert_expires_at_ms for r in decided],
            "phases": [_phases_text(r) for r in decided],
        }
        return {int(m): int(last) for m, last in conn.execute(_UPSERT_ROLLUPS, params).fetchall()}
    conn.executemany(
        _COUNT_CHECK,
        [
            (
                result.monitor_id,
                hour_ms,
                0 if result.status == "up" else 1,
                latency or 0,
                latency,
                latency,
                at_ms,
                result.cert_expires_at_ms,
                _phases_text(result),
            )
            for result, latency in zip(decided, latencies, strict=True)
        ],
    )
    ids = to_json([r.monitor_id for r in decided])
    return {int(m): int(last) for m, last in conn.execute(_COUNTED, (hour_ms, ids))}


def _phases_text(result: CheckResult) -> str | None:
    return None if result.phases is None else result.phases.text()


def write_results(
    conn: Connection,
    minutes: Sequence[int],
    at_ms: int,
    results: Iterable[CheckResult],
    finished_at_ms: int,
    *,
    network_lost: bool = False,
    ahead_after_ms: int | None = None,
    rerun: Rerun | None = None,
    buckets: Buckets | None = None,
) -> WriteSummary:
    """Write one tick's results in one transaction: a rollup upsert per decided check, an
    incident step per down check or per up check of a monitor with an open incident (see
    incidents.py; confirming and resolving record events to notify), and the tick's rows in the
    ledger (`minutes`: the run's own minute first, then the minutes it caught up;
    `network_lost` marks them: see _mark_network_lost).

    A result is stale when a newer check of the same monitor is already counted (a later tick
    that overlapped this one committed first): it is counted in the rollup but changes no
    incident, so state never flips backwards. A check counted after `ahead_after_ms` (a live
    tick's clock reading plus the longest it can have run) cannot come from a later tick: a
    clock that was ahead counted it, and it makes nothing stale, so it cannot hide an outage.

    `rerun` (a --force rerun; `results` holds only what it may record): the run's ledger row
    keeps its figures and is told what is now recorded.

    `buckets` (one round of a run that shares its minute, see ledger.claim_buckets): only the
    results of monitors in buckets this run still holds are written (another run may have taken
    a bucket over after our lease expired: its results count, ours are dropped); the buckets
    are marked finished, the ledger's figures add up over rounds and runs, and the minute is
    finished with its last bucket. Raises DatabaseError; nothing is written then.
    """
    up = down = unknown = stale = 0
    opened: list[int] = []
    resolved: list[int] = []
    confirmed: list[int] = []
    hour_ms = hour_start_ms(at_ms)
    ahead = _NEVER if ahead_after_ms is None else ahead_after_ms
    unrecorded: list[int] = []
    with write_tx(conn):
        open_by_monitor = _open_incidents(conn)
        results = list(results)
        held: set[int] = set()
        if buckets is not None:
            held = _still_held(conn, buckets)
            results = [r for r in results if r.monitor_id % BUCKETS in held]
        # a monitor removed while the tick probed: its result has nowhere to go
        existing = _alert_thresholds(conn, [r.monitor_id for r in results])
        results = [r for r in results if r.monitor_id in existing]
        unrecorded += [r.monitor_id for r in results if r.status == "unknown"]
        unknown = len(unrecorded)
        decided = [r for r in results if r.status != "unknown"]
        counted = _count_checks(conn, hour_ms, at_ms, decided)
        for result in decided:
            is_up = result.status == "up"
            up += is_up
            down += not is_up
            last_check_ms = counted[result.monitor_id]
            could_change = not is_up or result.monitor_id in open_by_monitor
            if at_ms < last_check_ms <= ahead or (
                could_change and _newer_check_exists(conn, result.monitor_id, at_ms, ahead)
            ):
                stale += 1
                continue
            change = _apply_incident_step(
                conn, result, open_by_monitor.get(result.monitor_id), existing[result.monitor_id], at_ms
            )
            if change is not None:
                if change.transition is Transition.OPEN:
                    opened.append(result.monitor_id)
                elif change.transition is Transition.RESOLVE:
                    resolved.append(result.monitor_id)
                if change.confirms:
                    confirmed.append(result.monitor_id)
        if rerun is not None:
            recorded = {r.monitor_id for r in results if r.status != "unknown"}
            conn.execute(
                "UPDATE ticks SET started_at_ms = ?, finished_at_ms = ?, unrecorded_ids = ? WHERE minute = ?",
                (at_ms, finished_at_ms, _id_list((rerun.unrecorded - recorded) | set(unrecorded)), rerun.run_minute),
            )
            return WriteSummary(up, down, unknown, opened, resolved, stale, confirmed)
        own_minute, *covered = minutes or [None]  # no minute: results only (bench, tests)
        minute_finished_ms: int | None = finished_at_ms
        if buckets is not None:
            _finish_buckets(conn, buckets, held, results, finished_at_ms)
            unrecorded += from_json(
                one(conn, "SELECT unrecorded_ids FROM ticks WHERE minute = ?", (own_minute,)) or "[]"
            )
            if one(conn, _FINISHED_BUCKETS, (own_minute,)) != BUCKETS:
                minute_finished_ms = None  # other buckets are still being probed
        conn.execute(
            "UPDATE ticks SET finished_at_ms = :finished, due = coalesce(due, 0) + :due, up = coalesce(up, 0) + :up, "
            "down = coalesce(down, 0) + :down, unknown = coalesce(unknown, 0) + :unknown, "
            "opened = coalesce(opened, 0) + :opened, resolved = coalesce(resolved, 0) + :resolved, "
            "unrecorded_ids = :unrecorded WHERE minute = :minute",
            {
                "unrecorded": _id_list(unrecorded),
                "finished": minute_finished_ms,
                "due": up + down + unknown,
                "up": up,
                "down": down,
                "unknown": unknown,
                "opened": len(opened),
                "resolved": len(resolved),
                "minute": own_minute,
            },
        )
        if minute_finished_ms is not None:
            conn.executemany(
                "UPDATE ticks SET finished_at_ms = ? WHERE minute = ? AND covered_by = ?",
                [(minute_finished_ms, minute, own_minute) for minute in covered],
            )
        if network_lost:
            _mark_network_lost(conn, minutes)
    return WriteSummary(up, down, unknown, opened, resolved, stale, confirmed)


_FINISHED_BUCKETS = "SELECT count(*) FROM claims WHERE minute = ? AND finished_at_ms IS NOT NULL"


def _still_held(conn: Connection, buckets: Buckets) -> set[int]:
    """Those of `buckets` this run still holds (nobody took them over since)."""
    rows = conn.execute(
        "SELECT bucket FROM claims WHERE minute = ? AND token = ? AND finished_at_ms IS NULL",
        (buckets.minute, buckets.token),
    )
    return {int(row[0]) for row in rows} & buckets.buckets


# `?` (both): JSON arrays of the buckets held and of the monitors whose checks were recorded
FINISH_BUCKETS = f"""
UPDATE claims SET finished_at_ms = :finished_at_ms,
  checks = (SELECT count(*) FROM json_each(:recorded) AS r WHERE r.value % {BUCKETS} = claims.bucket)
WHERE minute = :minute AND token = :token AND bucket IN (SELECT value FROM json_each(:held))
"""


def _finish_buckets(
    conn: Connection, buckets: Buckets, held: set[int], results: list[CheckResult], finished_at_ms: int
) -> None:
    """Mark the buckets `held` finished, each with the checks recorded in it: one statement."""
    recorded = [r.monitor_id for r in results if r.status != "unknown"]
    params = {
        "finished_at_ms": finished_at_ms,
        "recorded": to_json(recorded),
        "minute": buckets.minute,
        "token": buckets.token,
        "held": to_json(sorted(held)),
    }
    conn.execute(statement(conn, "finish_buckets", FINISH_BUCKETS), params)


_NEVER = 2**62  # no instant is counted after it: for replays every newer check is a later one


def _id_list(ids: Iterable[int]) -> str | None:
    """Monitor ids as a ledger column holds them: a JSON array, NULL when there are none."""
    ordered = sorted(set(ids))
    return to_json(ordered, separators=(",", ":")) if ordered else None


def _newer_check_exists(conn: Connection, monitor: int, at_ms: int, ahead_after_ms: int) -> bool:
    """Whether a check newer than `at_ms`, and not after `ahead_after_ms` (see write_results), is
    counted in a later hour than at_ms's (a tick that overlapped this one across an hour
    boundary, or a replay of an older minute). Read only for results that could change an
    incident, so a healthy monitor still costs one upsert."""
    newest = one(
        conn,
        "SELECT max(last_check_ms) FROM rollups WHERE monitor_id = ? AND hour_start_ms > ? AND last_check_ms <= ?",
        (monitor, hour_start_ms(at_ms), ahead_after_ms),
    )
    return newest is not None and newest > at_ms


class AutoPaused(NamedTuple):
    monitor_id: int
    name: str
    down_since_ms: int


def _auto_pause(conn: Connection, now_ms: int, after_ms: int) -> list[AutoPaused]:
    """Auto-pause the monitors down continuously for longer than `after_ms`, each with a
    'paused' event to notify: a monitor that stops being probed is never silent. Only on proof:
    a confirmed incident (a suspected one is a single down check, then nothing), open for
    AUTO_PAUSE_MIN_INTERVALS of the monitor's intervals at least (a weekly monitor: 3 weeks)."""
    found = conn.execute(
        "SELECT m.id, m.name, i.id, i.started_at_ms FROM monitors m "
        "JOIN incidents i ON i.monitor_id = m.id AND i.resolved_at_ms IS NULL "
        "WHERE m.auto_paused = 0 AND i.state = 'confirmed' AND i.kind = 'down' AND i.started_at_ms < ? "
        "AND i.started_at_ms < ? - ? * 1000 * m.interval_sec ORDER BY m.id",
        (now_ms - after_ms, now_ms, AUTO_PAUSE_MIN_INTERVALS),
    ).fetchall()
    for monitor, _, incident_id, _ in found:
        conn.execute("UPDATE monitors SET auto_paused = 1 WHERE id = ?", (monitor,))
        record_event(conn, incident_id, monitor, "paused", now_ms)
    return [AutoPaused(monitor, name, started_ms) for monitor, name, _, started_ms in found]


def housekeep(
    conn: Connection, now_ms: int, *, auto_pause_after_ms: int, retention_ms: int
) -> tuple[list[AutoPaused], int]:
    """Auto-pause monitors down continuously for longer than `auto_pause_after_ms`, delete
    rollups, ledger minutes, and incident events with their deliveries older than the retention
    period (an open incident's events stay: it is still being told about), and clear the phases
    of every rollup hour but each monitor's newest. Returns (paused, rollups deleted)."""
    with write_tx(conn):
        paused = _auto_pause(conn, now_ms, auto_pause_after_ms)
        deleted = conn.execute(
            "DELETE FROM rollups WHERE hour_start_ms < ?", (hour_start_ms(now_ms - retention_ms),)
        ).rowcount
        conn.execute("DELETE FROM ticks WHERE minute < ?", (minute_of_ms(now_ms - retention_ms),))
        # where the time went is kept for each monitor's newest check only (`show`): the rows of
        # the hours before its newest give theirs up
        conn.execute(
            "UPDATE rollups SET phases = NULL WHERE phases IS NOT NULL AND hour_start_ms < "
            "(SELECT max(n.hour_start_ms) FROM rollups n WHERE n.monitor_id = rollups.monitor_id)"
        )
        # who ran which bucket matters for a while (`monitor-tick hosts`), not for reports
        conn.execute("DELETE FROM claims WHERE minute < ?", (minute_of_ms(now_ms - CLAIMS_KEPT_MS),))
        conn.execute("DELETE FROM location_claims WHERE minute < ?", (minute_of_ms(now_ms - CLAIMS_KEPT_MS),))
        conn.execute("DELETE FROM location_rollups WHERE hour_start_ms < ?", (hour_start_ms(now_ms - retention_ms),))
        # deliveries go with their events (ON DELETE CASCADE)
        conn.execute(
            "DELETE FROM incident_events WHERE created_at_ms < ? AND incident_id NOT IN "
            "(SELECT id FROM incidents WHERE resolved_at_ms IS NULL)",
            (now_ms - retention_ms,),
        )
    return paused, deleted


RETENTION_DEFAULT_MS = 400 * MS_PER_DAY


AUTO_PAUSE_DEFAULT_MS = 7 * MS_PER_DAY
AUTO_PAUSE_MIN_INTERVALS = 3
# 64 rows a minute on PostgreSQL, whatever the monitors (about 24 MB a day, bench/postgres.py): a
# day of them, which `monitor-tick hosts` shows and which names the hosts of the fleet
CLAIMS_KEPT_MS = MS_PER_DAY


def _open_incidents(conn: Connection) -> dict[int, tuple[int, Open]]:
    """monitor id -> (incident id, its counters) for every open incident."""
    return {
        monitor: (incident, Open(state, downs, ups))
        for monitor, incident, state, downs, ups in conn.execute(
            "SELECT monitor_id, id, state, down_checks, up_checks FROM incidents WHERE resolved_at_ms IS NULL "
            "AND kind = 'down'"
        )
    }


# `?`: the ids as a JSON array (one parameter however many)
_ALERT_THRESHOLDS = (
    "SELECT id, alert_after_checks, resolve_after_checks, remind_every_sec FROM monitors "
    "WHERE id IN (SELECT value FROM json_each(?))"
)


def _alert_thresholds(conn: Connection, monitor_ids: Sequence[int]) -> dict[int, AlertSettings]:
    """The alert settings of those of `monitor_ids` that still exist."""
    if not monitor_ids:  # an idle tick's: no query to make
        return {}
    return {
        row[0]: AlertSettings(row[1], row[2], row[3])
        for row in conn.execute(statement(conn, "alert_thresholds", _ALERT_THRESHOLDS), (to_json(list(monitor_ids)),))
    }


def _apply_incident_step(
    conn: Connection,
    result: CheckResult,
    open_incident: tuple[int, Open] | None,
    settings: AlertSettings,
    at_ms: int,
) -> Step | None:
    """Write what one decided, current check does to its monitor's incident (incidents.step),
    and record the event people are told about, if any."""
    incident_id, counters = open_incident if open_incident is not None else (None, None)
    change = step(
        counters,
        result.status == "up",
        alert_after=settings.alert_after_checks,
        resolve_after=settings.resolve_after_checks,
    )
    if change is None:
        return None
    confirmed_at_ms = at_ms if change.confirms else None
    if change.transition is Transition.OPEN:
        incident_id = inserted_id(
            conn.execute(
                "INSERT INTO incidents (monitor_id, started_at_ms, cause, http_status, state, down_checks, "
                "up_checks, confirmed_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    result.monitor_id,
                    at_ms,
                    result.cause or "down",
                    result.http_status,
                    change.state,
                    change.down_checks,
                    change.up_checks,
                    confirmed_at_ms,
                ),
            )
        )
    elif change.transition is Transition.COUNT:
        conn.execute(
            "UPDATE incidents SET state = ?, down_checks = ?, up_checks = ?, "
            "confirmed_at_ms = coalesce(confirmed_at_ms, ?) WHERE id = ? AND resolved_at_ms IS NULL",
            (change.state, change.down_checks, change.up_checks, confirmed_at_ms, incident_id),
        )
    else:
        conn.execute(
            "UPDATE incidents SET up_checks = ?, resolved_at_ms = ? WHERE id = ? AND resolved_at_ms IS NULL",
            (change.up_checks, at_ms, incident_id),
        )
    if change.event is not None and incident_id is not None:
        record_event(conn, incident_id, result.monitor_id, change.event.value, at_ms)
    return change


def _mark_network_lost(conn: Connection, minutes: Sequence[int]) -> None:
    conn.executemany("UPDATE ticks SET network_lost = 1 WHERE minute = ?", [(m,) for m in minutes])
