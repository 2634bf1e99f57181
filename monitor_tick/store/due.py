"""Due selection: which monitors are due in a minute, in one query (SELECT_DUE, fetched as one
row: DUE_IDS), and the newest rollup hour of each, which orders their probes."""

from __future__ import annotations

from collections.abc import Sequence

from monitor_tick.store.db import IN_SCHEDULED_WINDOW, dicts, from_json, greatest, statement, to_json

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

    from monitor_tick.core.model import Recent
    from monitor_tick.store.db import Connection

# The floor (seconds) in force for owner `o` joined to plan `p`, given the default plan's floor
# `df`: the default plan's once the owner's plan has expired at the tick's time.
FLOOR = (
    "CASE WHEN p.id IS NULL OR (o.plan_expires_at_ms IS NOT NULL AND o.plan_expires_at_ms <= :now_ms)"
    " THEN df.floor_sec ELSE p.min_interval_sec END"
)
_PHASE_INDEXED = "(CASE WHEN aligned = 1 THEN 0 ELSE id % (interval_sec / 60) END)"
# Whether an interval (an SQL expression) has a schedule: a whole number of minutes. SQLite's
# test; PostgreSQL's column is an integer (store/postgres.py).
USABLE_INTERVAL = "typeof({n}) = 'integer' AND {n} >= 60 AND {n} % 60 = 0"

# Monitors with a first-check minute; must match the monitors_first_check index's WHERE.
_FIRST_CHECK = "first_check_minute IS NOT NULL AND enabled = 1 AND auto_paused = 0"

# Plan floors up to this (seconds) are served by walking the short intervals (b1 below), larger
# ones through their owners (b2).
_SMALL_FLOOR_SEC = 900


def bad_interval(usable: str) -> str:
    """A row whose interval has no schedule (only possible when edited by hand with the schema's
    CHECK ignored). It is offered to the tick once an hour so the tick can say what is wrong.
    Must match the monitors_bad_interval index's WHERE to the letter."""
    return f"NOT ({usable.format(n='interval_sec')}) AND enabled = 1 AND auto_paused = 0"


# One query, which reads only indexes for nearly every due monitor and returns (id, effective
# interval), fetched as one row (DUE_IDS); select_due then reads the rows of the due ones
# (DUE_ROWS). A monitor may come out of more than one part (a first-check minute that is also
# its phase's), with the same interval.
#
# (a) `plain`: most monitors' own interval is at least every plan's floor, so their effective
#     interval is their own whatever their owner's plan, and they are due exactly when their
#     indexed phase is this minute's: for each distinct interval (a loose index scan over
#     monitors_due) the index entries whose phase equals minute % n -- the index holds the
#     owner too, so owners' maintenance is judged without reading a row.
# (b) `short`: for plan floors up to _SMALL_FLOOR_SEC, every monitor below the largest such floor
#     (an index range: the 1-14 minute monitors, most of them due anyway), judged by the whole
#     rule from the index entry and the owner's plan (monitors_due holds aligned, too).
# (c) `candidates`, the rest, judged by the whole rule of schedule.py over their rows: the
#     intervals that neither (a) nor (b) read; monitors whose owner's floor is above
#     _SMALL_FLOOR_SEC, through the owners on such plans (read only when such a plan exists);
#     monitors without an owner below the default plan's floor; rows whose interval is unusable,
#     once an hour, through a partial index that is empty on a healthy database; the monitors
#     whose first-check minute this is (one probe of a partial index). Extra candidates cost
#     little: the final WHERE is the authoritative rule.
# Maintenance: the monitors and owners in a window now (`held_*`, a few rows, read once).
# CROSS JOIN fixes SQLite's join order, MATERIALIZED keeps a CTE from being inlined. SQLite
# streams (a) and (b) straight into the result (NOT MATERIALIZED): copying their 10,000 rows at
# 1M monitors into a temporary table first cost a sixth of the selection (bench figure 4).
def select_due_sql(usable: str = USABLE_INTERVAL, *, lateral: bool = False) -> str:
    """The due query with the engine's test for an interval with a schedule (USABLE_INTERVAL's
    form). One text otherwise: CROSS JOIN without ON (its condition in WHERE) is both SQLite's
    fixed join order and valid PostgreSQL, except that PostgreSQL's planner, which cannot know
    how few intervals and candidates there are, is made to look each up through an index with
    LATERAL (`lateral`; SQLite has no LATERAL), each subquery kept whole by OFFSET 0 (else
    PostgreSQL flattens it back into a join): the intervals, the candidates, and the owners on
    plans above _SMALL_FLOOR_SEC (through monitors_owner, as on SQLite; else a scan of every
    monitor whenever such a plan exists). SQLite is told the index of rows with an unusable
    interval (INDEXED BY): with no statistics it may guess a scan of monitors_due cheaper, and
    a mismatch with the index's WHERE is then an error, not a silent scan."""
    usable_n = usable.format(n="intervals.n_sec")
    plain_interval = f"intervals.n_sec >= top.floor_sec AND {usable_n}"
    # the intervals `short` reads whole (below the largest small floor), or `plain`
    taken = f"({plain_interval} OR coalesce(small.floor_sec > 60 AND intervals.n_sec < small.floor_sec, FALSE))"
    phase = f"{_PHASE_INDEXED} = :minute % (intervals.n_sec / 60)"
    plain_filter = (
        "monitors.id NOT IN (SELECT id FROM held_monitors)"
        " AND (monitors.owner_id IS NULL OR monitors.owner_id NOT IN (SELECT id FROM held_owners))"
    )
    plain = f"""SELECT monitors.id, intervals.n_sec FROM intervals CROSS JOIN top CROSS JOIN monitors
     WHERE {plain_interval} AND monitors.interval_sec = intervals.n_sec AND enabled = 1 AND auto_paused = 0
       AND {phase} AND {plain_filter}"""
    per_interval = f"""SELECT monitors.id FROM intervals CROSS JOIN top CROSS JOIN small CROSS JOIN monitors
     WHERE NOT {taken} AND monitors.interval_sec = intervals.n_sec AND enabled = 1 AND auto_paused = 0
       AND {phase}"""
    candidate_row = "CROSS JOIN monitors m"
    raised_rows = f"""SELECT m.id FROM raised r CROSS JOIN monitors m
     WHERE m.owner_id = r.owner_id AND r.floor_sec > {_SMALL_FLOOR_SEC} AND m.interval_sec < r.floor_sec
       AND m.enabled = 1 AND m.auto_paused = 0"""
    if lateral:
        plain = f"""SELECT m.id, intervals.n_sec FROM intervals CROSS JOIN top CROSS JOIN LATERAL (
      SELECT monitors.id FROM monitors
       WHERE monitors.interval_sec = intervals.n_sec AND enabled = 1 AND auto_paused = 0
         AND {phase} AND {plain_filter} OFFSET 0) m
     WHERE {plain_interval}"""
        per_interval = f"""SELECT m.id FROM intervals CROSS JOIN top CROSS JOIN small CROSS JOIN LATERAL (
      SELECT monitors.id FROM monitors
       WHERE monitors.interval_sec = intervals.n_sec AND enabled = 1 AND auto_paused = 0
         AND {phase} OFFSET 0) m
     WHERE NOT {taken}"""
        candidate_row = "CROSS JOIN LATERAL (SELECT * FROM monitors WHERE monitors.id = c.id OFFSET 0) m"
        raised_rows = f"""SELECT m.id FROM raised r CROSS JOIN LATERAL (
      SELECT monitors.id FROM monitors
       WHERE monitors.owner_id = r.owner_id AND monitors.interval_sec < r.floor_sec
         AND enabled = 1 AND auto_paused = 0 OFFSET 0) m
     WHERE r.floor_sec > {_SMALL_FLOOR_SEC}"""
    bad = bad_interval(usable)
    bad_index = "" if lateral else " INDEXED BY monitors_bad_interval"
    streamed = "MATERIALIZED" if lateral else "NOT MATERIALIZED"
    return f"""
WITH RECURSIVE
  df(floor_sec) AS (SELECT min_interval_sec FROM plans WHERE id = 1),
  top(floor_sec) AS (SELECT max(min_interval_sec) FROM plans),
  small(floor_sec) AS (SELECT max(min_interval_sec) FROM plans WHERE min_interval_sec <= {_SMALL_FLOOR_SEC}),
  intervals(n_sec) AS (
    SELECT (SELECT min(interval_sec) FROM monitors WHERE enabled = 1 AND auto_paused = 0)
    UNION ALL
    SELECT (SELECT min(interval_sec) FROM monitors
             WHERE enabled = 1 AND auto_paused = 0 AND interval_sec > intervals.n_sec)
      FROM intervals WHERE n_sec IS NOT NULL
  ),
  held_monitors(id) AS MATERIALIZED (
    SELECT monitor_id FROM maintenance_windows
     WHERE ends_at_ms > :now_ms AND starts_at_ms <= :now_ms AND monitor_id IS NOT NULL
    UNION
    SELECT monitor_id FROM maintenance_schedules s WHERE monitor_id IS NOT NULL AND {IN_SCHEDULED_WINDOW}
  ),
  held_owners(id) AS MATERIALIZED (
    SELECT owner_id FROM maintenance_windows
     WHERE ends_at_ms > :now_ms AND starts_at_ms <= :now_ms AND owner_id IS NOT NULL
    UNION
    SELECT owner_id FROM maintenance_schedules s WHERE owner_id IS NOT NULL AND {IN_SCHEDULED_WINDOW}
  ),
  plain(id, effective_interval_sec) AS {streamed} (
    {plain}
  ),
  short(id, effective_interval_sec) AS {streamed} (
    SELECT m.id, {greatest("m.interval_sec", FLOOR)}
      FROM small CROSS JOIN monitors m
      LEFT JOIN owners o ON o.id = m.owner_id
      LEFT JOIN plans p ON p.id = o.plan_id
      CROSS JOIN df
     WHERE small.floor_sec > 60 AND m.interval_sec < small.floor_sec AND m.enabled = 1 AND m.auto_paused = 0
       AND {usable.format(n="m.interval_sec")}
       AND :minute % ({greatest("m.interval_sec", FLOOR)} / 60)
           = CASE WHEN m.aligned = 1 THEN 0 ELSE m.id % ({greatest("m.interval_sec", FLOOR)} / 60) END
       AND {plain_filter.replace("monitors.", "m.")}
  ),
  raised(owner_id, floor_sec) AS MATERIALIZED (
    SELECT o.id, {FLOOR} FROM owners o LEFT JOIN plans p ON p.id = o.plan_id, df
     WHERE (SELECT max(min_interval_sec) FROM plans) > {_SMALL_FLOOR_SEC}
  ),
  candidates(id) AS MATERIALIZED (
    {per_interval}
    UNION
    {raised_rows}
    UNION
    SELECT m.id FROM df, monitors m
     WHERE df.floor_sec > 60 AND m.owner_id IS NULL AND m.interval_sec < df.floor_sec
       AND m.enabled = 1 AND m.auto_paused = 0
    UNION
    SELECT id FROM monitors{bad_index} WHERE {bad} AND :minute % 60 = id % 60
    UNION
    SELECT id FROM monitors WHERE {_FIRST_CHECK} AND first_check_minute = :minute
  ),
  due AS (
    SELECT m.id, m.interval_sec, m.aligned, m.owner_id, m.first_check_minute, m.enabled, m.auto_paused,
           {greatest("m.interval_sec", FLOOR)} AS effective_interval_sec
      FROM candidates c
      {candidate_row}
      LEFT JOIN owners o ON o.id = m.owner_id
      LEFT JOIN plans p ON p.id = o.plan_id
      CROSS JOIN df
     WHERE m.id = c.id
  )
SELECT id, effective_interval_sec FROM plain
UNION ALL
SELECT id, effective_interval_sec FROM short
UNION ALL
SELECT id, effective_interval_sec FROM due
 WHERE (CASE WHEN {bad} THEN :minute % 60 = id % 60
             ELSE :minute % (effective_interval_sec / 60)
                  = CASE WHEN aligned = 1 THEN 0 ELSE id % (effective_interval_sec / 60) END
        END
        OR first_check_minute = :minute)
   AND id NOT IN (SELECT id FROM held_monitors)
   AND (owner_id IS NULL OR owner_id NOT IN (SELECT id FROM held_owners))
"""


SELECT_DUE = select_due_sql()


def due_ids_sql(select_due: str, ids: str, intervals: str) -> str:
    """SELECT_DUE's rows as one row of two JSON arrays, `ids` and `intervals` (the engine's
    aggregates of id and effective_interval_sec, in one order): one row to fetch instead of
    10,000 at 1M monitors, which in SQLite cost a sixth of the selection (bench figure 4)."""
    return f"SELECT {ids}, {intervals} FROM ({select_due}) due"


# Only whole numbers go through JSON: a hand-edited interval may be a BLOB or an infinite REAL,
# which JSON cannot hold. Such a row's effective interval is NULL here, and the tick reports its
# interval_sec (read with its row) as unusable. (Plans' floors are STRICT integers, so only an
# unusable interval_sec makes an effective interval that is not one.)
DUE_IDS = due_ids_sql(
    SELECT_DUE,
    "json_group_array(id)",
    "json_group_array(CASE WHEN typeof(effective_interval_sec) = 'integer' THEN effective_interval_sec END)",
)


def due_rows_sql(ids: str, by_id: str) -> str:
    """The rows of the due monitors (`?`: their ids as a JSON array, read by the engine's `ids`,
    joined before the monitors, and `by_id`), with what says a row cannot be used: an owner or
    a plan that does not exist (hand edits; the foreign keys prevent it)."""
    return (
        "SELECT m.*, m.owner_id IS NOT NULL AND o.id IS NULL AS owner_missing,"
        " o.id IS NOT NULL AND p.id IS NULL AS plan_missing"
        f" FROM {ids}monitors m LEFT JOIN owners o ON o.id = m.owner_id"
        f" LEFT JOIN plans p ON p.id = o.plan_id WHERE {by_id}"
    )


DUE_ROWS = due_rows_sql("json_each(?) j CROSS JOIN ", "m.id = j.value")


def due_ids(conn: Connection, minute: int, now_ms: int) -> dict[int, int | None]:
    """id -> effective interval (seconds) of the monitors due in `minute`, in no order (None for
    a row whose interval is unusable; see DUE_IDS); `now_ms` decides plan expiry and
    maintenance. The selection itself: indexes only for nearly every due monitor."""
    ids, intervals = conn.execute(statement(conn, "due_ids", DUE_IDS), {"minute": minute, "now_ms": now_ms}).fetchone()
    if ids == "[]":  # nothing due (both engines' empty array): nothing to read
        return {}
    # a monitor that comes out of two parts comes with the same interval: the dict keeps it once
    return dict(zip(from_json(ids), from_json(intervals), strict=True))


def select_due(conn: Connection, minute: int, now_ms: int) -> list[dict[str, Any]]:
    """Rows of the monitors due in `minute`, as dicts in id order, each with its
    effective_interval_sec; `now_ms` decides plan expiry and maintenance. Rows are not validated
    here: a hand-edited row may hold anything."""
    effective = due_ids(conn, minute, now_ms)
    if not effective:
        return []
    rows = dicts(conn, statement(conn, "due_rows", DUE_ROWS), (to_json(sorted(effective)),))
    for row in rows:
        row["effective_interval_sec"] = effective[row["id"]]
    # SQLite returns them in the array's order already; PostgreSQL's IN gives no order
    return sorted(rows, key=lambda row: row["id"])


# `?`: the ids as a JSON array (one parameter however many)
RECENT_ROLLUPS = (
    "SELECT r.monitor_id, r.failures, r.latency_ms_max, r.last_check_ms FROM json_each(?) j "
    "JOIN rollups r ON r.monitor_id = j.value "
    "AND r.hour_start_ms = (SELECT max(hour_start_ms) FROM rollups WHERE monitor_id = j.value)"
)


def recent_rollups(conn: Connection, monitor_ids: Sequence[int]) -> dict[int, Recent]:
    """monitor id -> its newest rollup hour, for the monitors that have one. One primary-key
    seek per monitor (the tick orders its probes by this: run/fanout.py, start_order)."""
    if not monitor_ids:
        return {}
    rows = conn.execute(statement(conn, "recent_rollups", RECENT_ROLLUPS), (to_json(list(monitor_ids)),))
    return {int(monitor): (int(failures), latency, int(last)) for monitor, failures, latency, last in rows}
