"""Management: monitors as the commands add, find, edit, pause, remove and list them, and
finding a plan, an owner or a monitor by name (adding, editing and removing plans, owners and
maintenance windows: accounts.py). Ids are never given twice (db.insert_row): a removed
monitor's badge URL and metrics series never pass to another monitor. Names are stored and
looked up in NFC (model.normal_name): 'café' typed either way is one name."""

from __future__ import annotations

from monitor_tick.core import clock, schedule
from monitor_tick.core.model import COMMON_SETTINGS, OPTIONS, AlertSettings, Monitor, normal_name
from monitor_tick.store.db import (
    IN_MAINTENANCE,
    SETTING_COLUMNS,
    StoreError,
    dicts,
    greatest,
    insert_row,
    one,
    write_tx,
)
from monitor_tick.store.due import FLOOR
from monitor_tick.store.locationsql import location_figures
from monitor_tick.store.reads import INVALID_COLUMNS, LATEST_RESULTS

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

    from monitor_tick.store.db import Connection


def plan_id(conn: Connection, name: str) -> int:
    found = one(conn, "SELECT id FROM plans WHERE name = ?", (normal_name(name),))
    if found is None:
        raise StoreError(f"no plan named {name!r}")
    return int(found)


def owner_id(conn: Connection, name: str) -> int:
    found = one(conn, "SELECT id FROM owners WHERE name = ?", (normal_name(name),))
    if found is None:
        raise StoreError(f"no owner named {name!r}")
    return int(found)


def monitor_id(conn: Connection, ref: str) -> int:
    """A monitor by id or by name."""
    found = None
    if ref.isdecimal():  # what int() reads as a number (not "²"), as check_name's all-digit rule
        found = one(conn, "SELECT id FROM monitors WHERE id = ?", (int(ref),))
    if found is None:
        found = one(conn, "SELECT id FROM monitors WHERE name = ?", (normal_name(ref),))
    if found is None:
        raise StoreError(f"no monitor {ref!r}")
    return int(found)


# an event's kind as people are told of it (`i`: its incident, `e`: the event): a partial
# episode's alert is a PARTIAL, whichever event of it was recorded
EVENT_KIND = "CASE WHEN i.kind = 'partial' THEN 'partial' ELSE e.kind END"
_MONITOR_COLUMNS = (*COMMON_SETTINGS, *OPTIONS)  # Monitor fields stored under the same names


def add_monitor(
    conn: Connection,
    monitor: Monitor,
    owner_name: str | None,
    created_at_ms: int,
    alerts: AlertSettings = AlertSettings(),  # noqa: B008 -- frozen, so one shared default is safe
    *,
    token_sha256: bytes | None = None,
    name_given: bool = True,
    places: dict[str, Any] | None = None,
) -> int:
    """Insert a checked monitor; `token_sha256` identifies a heartbeat's pings. A name that was
    not given (the redacted URL) is made unique with ' (2)', ' (3)', ...; a given one must be."""
    with write_tx(conn):
        name = monitor.name
        for n in range(2, 1000):
            if one(conn, "SELECT id FROM monitors WHERE name = ?", (name,)) is None:
                break
            if name_given:
                raise StoreError(f"a monitor named {monitor.name!r} exists; choose another with --name")
            name = f"{monitor.name} ({n})"
        owner = owner_id(conn, owner_name) if owner_name else None
        return insert_monitor(
            conn, monitor._replace(name=name), owner, created_at_ms, alerts, token_sha256, places=places
        )


def insert_monitor(
    conn: Connection,
    monitor: Monitor,
    owner: int | None,
    created_at_ms: int,
    alerts: AlertSettings,
    token_sha256: bytes | None,
    *,
    enabled: bool = True,
    places: dict[str, Any] | None = None,
) -> int:
    """The INSERT of a checked, named monitor, inside the caller's write transaction (add and
    import): a new id, and its first check within minutes when it runs."""
    values = {column: getattr(monitor, column) for column in _MONITOR_COLUMNS}
    values["aligned"] = int(monitor.aligned)
    values["private"] = int(monitor.private)
    values.update(
        owner_id=owner,
        enabled=int(enabled),
        created_at_ms=created_at_ms,
        token_sha256=token_sha256,
        alert_after_checks=alerts.alert_after_checks,
        resolve_after_checks=alerts.resolve_after_checks,
        remind_every_sec=alerts.remind_every_sec,
    )
    values.update(places or {})  # locations, quorum, notify_partial (cli/places.py)
    new = insert_row(conn, "monitors", values)  # the columns are Monitor's own field names
    if enabled:
        _first_check_soon(conn, new, created_at_ms)
    return new


def _first_check_soon(conn: Connection, monitor: int, now_ms: int) -> None:
    """Give a monitor added, resumed or edited at `now_ms` its first check within minutes."""
    minute = schedule.first_check_minute(clock.minute_of_ms(now_ms), monitor)
    conn.execute("UPDATE monitors SET first_check_minute = ? WHERE id = ?", (minute, monitor))


def set_paused(conn: Connection, ref: str, paused: bool, now_ms: int) -> int:
    """Pause (enabled = 0) or resume (enabled = 1, auto-pause cleared, first check within
    minutes) a monitor at `now_ms`."""
    with write_tx(conn):
        found = monitor_id(conn, ref)
        if paused:
            conn.execute("UPDATE monitors SET enabled = 0 WHERE id = ?", (found,))
        else:
            conn.execute("UPDATE monitors SET enabled = 1, auto_paused = 0 WHERE id = ?", (found,))
            _first_check_soon(conn, found, now_ms)
    return found


def remove_monitor(conn: Connection, ref: str) -> dict[str, Any]:
    """Delete a monitor with its history; returns its id, name and what went with it (rollup
    hours, incidents, maintenance windows, channels)."""
    with write_tx(conn):
        found = monitor_id(conn, ref)
        removed = dicts(
            conn,
            "SELECT id, name,"
            " (SELECT count(*) FROM rollups WHERE monitor_id = :id) AS rollup_hours,"
            " (SELECT count(*) FROM incidents WHERE monitor_id = :id) AS incidents,"
            " (SELECT count(*) FROM maintenance_windows WHERE monitor_id = :id)"
            " + (SELECT count(*) FROM maintenance_schedules WHERE monitor_id = :id) AS windows,"
            " (SELECT count(*) FROM channels WHERE monitor_id = :id) AS channels"
            " FROM monitors WHERE id = :id",
            {"id": found},
        )[0]
        conn.execute("DELETE FROM monitors WHERE id = ?", (found,))
    return removed


def monitor_row(conn: Connection, ref: str) -> dict[str, Any]:
    """A monitor's stored settings (every column but the token's digest) with its owner's name."""
    found = monitor_id(conn, ref)
    row = dicts(
        conn,
        "SELECT m.*, o.name AS owner FROM monitors m LEFT JOIN owners o ON o.id = m.owner_id WHERE m.id = ?",
        (found,),
    )[0]
    del row["token_sha256"]
    return row


def update_monitor(
    conn: Connection, ref: str, values: dict[str, Any], now_ms: int, owner_name: str | None = None
) -> None:
    """Set `values` (columns of `monitors`, Monitor's and AlertSettings' field names, never user
    input) on a monitor, and its owner when `owner_name` is given ('' clears it); a change gets
    its first check within minutes of `now_ms`. Its id, and so its history, badge and metrics
    series, stay."""
    with write_tx(conn):
        found = monitor_id(conn, ref)
        values = dict(values)
        if owner_name is not None:
            values["owner_id"] = owner_id(conn, owner_name) if owner_name else None
        name = values.get("name")
        if name is not None and one(conn, "SELECT id FROM monitors WHERE name = ? AND id <> ?", (name, found)):
            raise StoreError(f"a monitor named {name!r} exists; choose another with --name")
        if values:
            _end_partial_if_places_change(conn, found, values, now_ms)
            conn.execute(
                f"UPDATE monitors SET {', '.join(f'{c} = :{c}' for c in values)} WHERE id = :id_",
                {**values, "id_": found},
            )
            _first_check_soon(conn, found, now_ms)


def _end_partial_if_places_change(conn: Connection, monitor: int, values: dict[str, Any], now_ms: int) -> None:
    """A partial episode belongs to the places and quorum that opened it: when either changes,
    it ends here, silently, in the edit's transaction, so that the monitor's next verdict (under
    the new setting, or as a monitor without places) starts from no episode. Left open, it would
    show "Partial outage" through up checks and block the outage's incident (one open incident a
    monitor). An open outage stays: it is still true, and resolves under the new setting."""
    before = conn.execute("SELECT locations, quorum FROM monitors WHERE id = ?", (monitor,)).fetchone()
    changed = any(column in values and values[column] != before[i] for i, column in enumerate(("locations", "quorum")))
    if changed:
        conn.execute(
            "UPDATE incidents SET resolved_at_ms = ?"
            " WHERE monitor_id = ? AND resolved_at_ms IS NULL AND kind = 'partial'",
            (now_ms, monitor),
        )


def scope(conn: Connection, monitor_ref: str | None, owner_name: str | None) -> tuple[int | None, int | None]:
    """(monitor id, owner id) of a row that covers one monitor or one owner's monitors."""
    monitor = monitor_id(conn, monitor_ref) if monitor_ref else None
    owner = owner_id(conn, owner_name) if owner_name else None
    return monitor, owner


def list_monitors(conn: Connection, now_ms: int, monitor: int | None = None) -> list[dict[str, Any]]:
    """Every monitor (or only the one with id `monitor`) with its effective interval, current
    state at `now_ms` and next check (`next_check_ms`, see next_checks)."""
    rows = dicts(
        conn,
        f"""
        WITH df(floor_sec) AS (SELECT min_interval_sec FROM plans WHERE id = 1)
        SELECT m.id, {SETTING_COLUMNS}, m.enabled, m.auto_paused, m.first_check_minute, o.name AS owner,
               {LATEST_RESULTS}, {INVALID_COLUMNS},
               {greatest("m.interval_sec", FLOOR)} AS effective_interval_sec,
               {IN_MAINTENANCE} AS in_maintenance,
               (SELECT i.started_at_ms FROM incidents i
                 WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL AND i.kind = 'down') AS down_since_ms,
    (SELECT i.started_at_ms FROM incidents i
      WHERE i.monitor_id = m.id AND i.resolved_at_ms IS NULL AND i.kind = 'partial') AS partial_since_ms,
    m.locations, m.quorum, m.notify_partial,
               (SELECT max(r.last_check_ms) FROM rollups r WHERE r.monitor_id = m.id) AS last_check_ms
          FROM monitors m
          LEFT JOIN owners o ON o.id = m.owner_id
          LEFT JOIN plans p ON p.id = o.plan_id
          LEFT JOIN pings ON pings.monitor_id = m.id
         CROSS JOIN df
         WHERE CAST(:monitor AS BIGINT) IS NULL OR m.id = :monitor
         ORDER BY m.id
        """,
        {"now_ms": now_ms, "monitor": monitor},
    )
    upcoming = next_checks(conn, now_ms, monitor)
    for row in rows:
        row["next_check_ms"] = upcoming.get(row["id"])
    return rows


def next_checks(conn: Connection, now_ms: int, monitor: int | None = None) -> dict[int, int | None]:
    """Monitor id -> the start (epoch ms) of the first minute after the minute of `now_ms` in
    which the due query will select it, by schedule.next_check_minute: its schedule or its
    first-check minute, its owner's plan floor (and the default plan's once that plan expires),
    outside the maintenance windows of the monitor and of its owner. None when it is paused,
    auto-paused or never due again (every due minute in a recurring window). Only the one
    monitor with id `monitor` when given."""
    rows = conn.execute(
        f"""
        WITH df(floor_sec) AS (SELECT min_interval_sec FROM plans WHERE id = 1)
        SELECT m.id, m.owner_id, m.aligned, m.first_check_minute, m.enabled = 1 AND m.auto_paused = 0,
               {greatest("m.interval_sec", FLOOR)},
               CASE WHEN p.id IS NOT NULL AND o.plan_expires_at_ms > :now_ms THEN o.plan_expires_at_ms END,
               {greatest("m.interval_sec", "df.floor_sec")}
          FROM monitors m
          LEFT JOIN owners o ON o.id = m.owner_id
          LEFT JOIN plans p ON p.id = o.plan_id
         CROSS JOIN df
         WHERE CAST(:monitor AS BIGINT) IS NULL OR m.id = :monitor
        """,
        {"now_ms": now_ms, "monitor": monitor},
    ).fetchall()
    # the windows not over (through maintenance_by_end) and the recurring ones, by what they cover
    windows = _by_cover(
        conn,
        "SELECT monitor_id, owner_id, starts_at_ms, ends_at_ms FROM maintenance_windows WHERE ends_at_ms > ?",
        now_ms,
    )
    recurring = _by_cover(
        conn, "SELECT monitor_id, owner_id, start_minute, duration_min, days_mask FROM maintenance_schedules"
    )
    after = clock.minute_of_ms(now_ms)
    found: dict[int, int | None] = {}
    for monitor_id, owner, aligned, first_check, probed, interval_sec, floor_ends_ms, later_sec in rows:
        if not probed:
            found[monitor_id] = None
            continue
        covers = [("m", monitor_id), *([("o", owner)] if owner is not None else [])]
        held = schedule.Maintenance(
            windows=tuple(w for key in covers for w in windows.get(key, ())),
            recurring=tuple(r for key in covers for r in recurring.get(key, ())),
        )
        later = None
        if floor_ends_ms is not None:
            later = (clock.first_minute_from_ms(floor_ends_ms), later_sec // clock.S_PER_MINUTE)
        minute = schedule.next_check_minute(
            after,
            monitor_id,
            interval_sec // clock.S_PER_MINUTE,
            bool(aligned),
            first_check,
            maintenance=held,
            later=later,
        )
        found[monitor_id] = None if minute is None else clock.minute_start_ms(minute)
    return found


def _by_cover(conn: Connection, sql: str, *params: Any) -> dict[tuple[str, int], list[Any]]:
    """Rows of (monitor_id, owner_id, values...) as ('m', monitor id) or ('o', owner id) -> the
    values of each row that covers it."""
    found: dict[tuple[str, int], list[Any]] = {}
    for monitor_id, owner, *values in conn.execute(sql, params):
        found.setdefault(("m", monitor_id) if monitor_id is not None else ("o", owner), []).append(tuple(values))
    return found


def incidents_for(conn: Connection, monitor: int) -> list[tuple[int, int | None, str]]:
    """(started_at_ms, resolved_at_ms, cause) of one monitor's incidents, oldest first."""
    return [
        (int(a), None if b is None else int(b), str(c))
        for a, b, c in conn.execute(
            "SELECT started_at_ms, resolved_at_ms, cause FROM incidents WHERE monitor_id = ? "
            "ORDER BY started_at_ms, id",
            (monitor,),
        )
    ]


def monitor_detail(conn: Connection, ref: str, now_ms: int, since_ms: int) -> dict[str, Any]:
    """One monitor in full (`show`): its list_monitors row with every stored setting, its rollup
    hours from the hour of `since_ms` on, the newest check's phases (as stored), its incidents
    (newest first) and the deliveries of their events. Raises StoreError for an unknown monitor."""
    found = monitor_id(conn, ref)
    (listed,) = list_monitors(conn, now_ms, found)
    settings = monitor_row(conn, str(found))
    hours = dicts(
        conn,
        "SELECT hour_start_ms, checks, failures FROM rollups"
        " WHERE monitor_id = ? AND hour_start_ms >= ? ORDER BY hour_start_ms",
        (found, clock.hour_start_ms(since_ms)),
    )
    incidents = dicts(
        conn,
        "SELECT id, kind, started_at_ms, resolved_at_ms, cause, http_status, state, confirmed_at_ms"
        " FROM incidents WHERE monitor_id = ? ORDER BY started_at_ms DESC, id DESC",
        (found,),
    )
    deliveries = dicts(
        conn,
        f"SELECT e.incident_id, {EVENT_KIND} AS kind, e.created_at_ms, d.channel_id, c.url AS channel_url, d.state,"
        " d.attempts,"
        " d.sent_at_ms, d.last_error"
        " FROM incidents i JOIN incident_events e ON e.incident_id = i.id"
        " JOIN deliveries d ON d.event_id = e.id JOIN channels c ON c.id = d.channel_id"
        " WHERE i.monitor_id = ? ORDER BY e.created_at_ms DESC, e.id DESC, d.channel_id",
        (found,),
    )
    # a monitor with locations: each location's figures over the same hours (its verdicts are in `hours`)
    places = location_figures(conn, found, clock.hour_start_ms(since_ms))
    phases = one(conn, "SELECT phases FROM rollups WHERE monitor_id = ? ORDER BY hour_start_ms DESC LIMIT 1", (found,))
    return {
        "monitor": {**settings, **listed},
        "phases": phases,
        "hours": hours,
        "incidents": incidents,
        "deliveries": deliveries,
        "locations": places,
    }
