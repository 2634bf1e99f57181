"""Due selection: which monitors are due in a minute, in one query (SELECT_DUE), and the newest
rollup hour of each, which orders their probes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from monitor_tick.store.db import IN_SCHEDULED_WINDOW, dicts, greatest, statement

if TYPE_CHECKING:
    from monitor_tick.store.db import Connection

# The floor (seconds) in force for owner `o` joined to plan `p`, given the default plan's floor
# `df`: the default plan's once the owner's plan has expired at the tick's time.
FLOOR = (
    "CASE WHEN p.id IS NULL OR (o.plan_expires_at_ms IS NOT NULL AND o.plan_expires_at_ms <= :now_ms)"
    " THEN df.floor_sec ELSE p.min_interval_sec END"
)
_PHASE_INDEXED = "(CASE WHEN aligned = 1 THEN 0 ELSE id % (interval_sec / 60) END)"
# A row whose interval has no schedule (only possible when edited by hand with the schema's
# CHECK ignored). It is offered to the tick once an hour so the tick can say what is wrong.
# Must match the monitors_bad_interval index's WHERE to the letter.
_BAD_INTERVAL = (
    "NOT (typeof(interval_sec) = 'integer' AND interval_sec >= 60 AND interval_sec % 60 = 0)"
    " AND enabled = 1 AND auto_paused = 0"
)

# Monitors with a first-check minute; must match the monitors_first_check index's WHERE.
_FIRST_CHECK = "first_check_minute IS NOT NULL AND enabled = 1 AND auto_paused = 0"

# Plan floors up to this (seconds) are served by walking the short intervals (b1 below), larger
# ones through their owners (b2).
_SMALL_FLOOR_SEC = 900


# One query. Candidates come from indexes, so the cost follows the rows that are due, not the
# table (CROSS JOIN fixes the join order, MATERIALIZED keeps the CTEs from being inlined into a
# scan): (a) for each distinct interval (a loose index scan over monitors_due) the monitors whose
# indexed phase equals minute % n; (b) monitors whose owner's floor may be above their own
# interval: (b1) for floors up to _SMALL_FLOOR_SEC every monitor below the largest such floor (an
# index range: the 1-14 minute monitors, most of them due anyway), (b2) for larger floors through
# the owners on them (the owners are read only when such a plan exists); (c) rows whose interval
# is unusable, once an hour, through a partial index that is empty on a healthy database; (d) the
# monitors whose first-check minute this is (one probe of a partial index). Extra
# candidates cost little: the final WHERE is the authoritative rule of schedule.py.
def select_due_sql(bad_interval: str, *, lateral: bool = False) -> str:
    """The due query with the engine's test for a row whose interval has no schedule (it must
    match that engine's monitors_bad_interval index). One text otherwise: CROSS JOIN without ON
    (its condition in WHERE) is both SQLite's fixed join order and valid PostgreSQL, except that
    PostgreSQL's planner, which cannot know how few intervals and candidates there are, is made
    to look each up through an index with LATERAL (`lateral`; SQLite has no LATERAL), each
    subquery kept whole by OFFSET 0 (else PostgreSQL flattens it back into a join)."""
    per_interval = f"""SELECT monitors.id FROM intervals, monitors
     WHERE monitors.interval_sec = intervals.n_sec AND enabled = 1 AND auto_paused = 0
       AND {_PHASE_INDEXED} = :minute % (intervals.n_sec / 60)"""
    candidate_row = "CROSS JOIN monitors m"
    if lateral:
        per_interval = f"""SELECT m.id FROM intervals CROSS JOIN LATERAL (
      SELECT monitors.id FROM monitors
       WHERE monitors.interval_sec = intervals.n_sec AND enabled = 1 AND auto_paused = 0
         AND {_PHASE_INDEXED} = :minute % (intervals.n_sec / 60) OFFSET 0) m"""
        candidate_row = "CROSS JOIN LATERAL (SELECT * FROM monitors WHERE monitors.id = c.id OFFSET 0) m"
    return f"""
WITH RECURSIVE
  df(floor_sec) AS (SELECT min_interval_sec FROM plans WHERE id = 1),
  intervals(n_sec) AS (
    SELECT (SELECT min(interval_sec) FROM monitors WHERE enabled = 1 AND auto_paused = 0)
    UNION ALL
    SELECT (SELECT min(interval_sec) FROM monitors
             WHERE enabled = 1 AND auto_paused = 0 AND interval_sec > intervals.n_sec)
      FROM intervals WHERE n_sec IS NOT NULL
  ),
  small(floor_sec) AS (SELECT max(min_interval_sec) FROM plans WHERE min_interval_sec <= {_SMALL_FLOOR_SEC}),
  raised(owner_id, floor_sec) AS MATERIALIZED (
    SELECT o.id, {FLOOR} FROM owners o LEFT JOIN plans p ON p.id = o.plan_id, df
     WHERE (SELECT max(min_interval_sec) FROM plans) > {_SMALL_FLOOR_SEC}
  ),
  candidates(id) AS MATERIALIZED (
    {per_interval}
    UNION
    SELECT m.id FROM small CROSS JOIN monitors m
     WHERE small.floor_sec > 60 AND m.interval_sec < small.floor_sec
       AND m.enabled = 1 AND m.auto_paused = 0
    UNION
    SELECT m.id FROM raised r CROSS JOIN monitors m
     WHERE m.owner_id = r.owner_id AND r.floor_sec > {_SMALL_FLOOR_SEC} AND m.interval_sec < r.floor_sec
       AND m.enabled = 1 AND m.auto_paused = 0
    UNION
    SELECT m.id FROM df, monitors m
     WHERE df.floor_sec > 60 AND m.owner_id IS NULL AND m.interval_sec < df.floor_sec
       AND m.enabled = 1 AND m.auto_paused = 0
    UNION
    SELECT id FROM monitors WHERE {bad_interval} AND :minute % 60 = id % 60
    UNION
    SELECT id FROM monitors WHERE {_FIRST_CHECK} AND first_check_minute = :minute
  ),
  due AS (
    SELECT m.*, {greatest("m.interval_sec", FLOOR)} AS effective_interval_sec,
           m.owner_id IS NOT NULL AND o.id IS NULL AS owner_missing,
           o.id IS NOT NULL AND p.id IS NULL AS plan_missing
      FROM candidates c
      {candidate_row}
      LEFT JOIN owners o ON o.id = m.owner_id
      LEFT JOIN plans p ON p.id = o.plan_id
      CROSS JOIN df
     WHERE m.id = c.id
  )
SELECT * FROM due
 WHERE (CASE WHEN {bad_interval} THEN :minute % 60 = id % 60
             ELSE :minute % (effective_interval_sec / 60)
                  = CASE WHEN aligned = 1 THEN 0 ELSE id % (effective_interval_sec / 60) END
        END
        OR first_check_minute = :minute)
   AND NOT EXISTS (SELECT 1 FROM maintenance_windows w
                    WHERE w.monitor_id = due.id AND w.ends_at_ms > :now_ms AND w.starts_at_ms <= :now_ms)
   AND NOT EXISTS (SELECT 1 FROM maintenance_windows w
                    WHERE w.owner_id = due.owner_id AND w.ends_at_ms > :now_ms AND w.starts_at_ms <= :now_ms)
   AND NOT EXISTS (SELECT 1 FROM maintenance_schedules s WHERE s.monitor_id = due.id AND {IN_SCHEDULED_WINDOW})
   AND NOT EXISTS (SELECT 1 FROM maintenance_schedules s WHERE s.owner_id = due.owner_id AND {IN_SCHEDULED_WINDOW})
"""


SELECT_DUE = select_due_sql(_BAD_INTERVAL)


def select_due(conn: Connection, minute: int, now_ms: int) -> list[dict[str, Any]]:
    """Rows of the monitors due in `minute`, as dicts in id order; `now_ms` decides plan expiry
    and maintenance. Rows are not validated here: a hand-edited row may hold anything."""
    # sorted here: SQLite would sort whole rows in a temporary B-tree, which costs more
    return sorted(
        dicts(conn, statement(conn, "select_due", SELECT_DUE), {"minute": minute, "now_ms": now_ms}),
        key=lambda row: row["id"],
    )


# `?`: the ids as a JSON array (one parameter however many)
RECENT_ROLLUPS = (
    "SELECT r.monitor_id, r.failures, r.latency_ms_max, r.last_check_ms FROM json_each(?) j "
    "JOIN rollups r ON r.monitor_id = j.value "
    "AND r.hour_start_ms = (SELECT max(hour_start_ms) FROM rollups WHERE monitor_id = j.value)"
)


def recent_rollups(conn: Connection, monitor_ids: Sequence[int]) -> dict[int, tuple[int, int | None, int]]:
    """monitor id -> (failures, latency_ms_max, last_check_ms) of its newest rollup hour, for
    the monitors that have one. One primary-key seek per monitor (the tick orders its probes by
    this)."""
    if not monitor_ids:
        return {}
    rows = conn.execute(statement(conn, "recent_rollups", RECENT_ROLLUPS), (json.dumps(list(monitor_ids)),))
    return {int(monitor): (int(failures), latency, int(last)) for monitor, failures, latency, last in rows}
