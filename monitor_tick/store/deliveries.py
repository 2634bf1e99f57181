"""Alerts: incident events, channels, deliveries and settings (schema.sql "Alerts").

Delivery runs after the results commit; every claim is a conditional UPDATE under BEGIN
IMMEDIATE, so overlapping ticks never hold the same delivery."""

from __future__ import annotations

from collections.abc import Sequence

from monitor_tick.core.clock import minute_of_ms, minute_start_ms
from monitor_tick.core.records import NamedTuple
from monitor_tick.store.db import StoreError, dicts, insert_row, inserted_id, one, write_tx
from monitor_tick.store.manage import EVENT_KIND, scope

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

    from monitor_tick.store.db import Connection

CANARY_SETTING = "network_canary_url"


def canary_setting(host: str | None) -> str:
    """The setting that names `host`'s own network canary (one host's view of the world: each
    host of a shared database may have its own), or every host's when `host` is None."""
    return CANARY_SETTING if host is None else f"{CANARY_SETTING}@{host}"


def record_event(conn: Connection, incident_id: int, monitor: int, kind: str, at_ms: int) -> None:
    """An incident event, and a pending delivery to every channel that covers the monitor, due
    from the start of its minute: any host's run of that minute may send it, though its clock
    read the minute a few seconds before the host that decided it."""
    event_id = inserted_id(
        conn.execute(
            "INSERT INTO incident_events (incident_id, kind, created_at_ms) VALUES (?, ?, ?) RETURNING id",
            (incident_id, kind, at_ms),
        )
    )
    conn.execute(
        "INSERT INTO deliveries (event_id, channel_id, next_attempt_at_ms) "
        "SELECT ?, c.id, ? FROM monitors m JOIN channels c "
        "ON c.monitor_id = m.id OR c.owner_id = m.owner_id OR (c.monitor_id IS NULL AND c.owner_id IS NULL) "
        "WHERE m.id = ?",
        (event_id, minute_start_ms(minute_of_ms(at_ms)), monitor),
    )


# The DOWN events of a monitor's outages (a held one is of its newest).
_OUTAGE_DOWN = """
SELECT e.id FROM incident_events e JOIN incidents i ON i.id = e.incident_id
 WHERE i.monitor_id = ? AND i.kind = 'down' AND e.kind = 'down'
"""


def hold_down_alert(conn: Connection, monitor: int, until_ms: int) -> None:
    """Hold the DOWN of `monitor`'s open outage, not yet attempted, until `until_ms` at the
    latest: its minute reached the quorum before every place wrote, and the alert is to name the
    places of the minute as it closes (release_down_alert)."""
    conn.execute(
        "UPDATE deliveries SET next_attempt_at_ms = ? WHERE state = 'pending' AND attempts = 0 "
        f"AND event_id IN ({_OUTAGE_DOWN} AND i.resolved_at_ms IS NULL)",
        (until_ms, monitor),
    )


def release_down_alert(conn: Connection, monitor: int, at_ms: int) -> None:
    """Make a held DOWN of `monitor` decided at or before `at_ms` (a minute's start) due from
    `at_ms`: its minute, or a later one, has closed, or its outage ended (the DOWN goes out
    first, then its UP: a channel hears of its events in order). A DOWN decided later, of a
    newer outage or a later minute, stays held for its own minute."""
    conn.execute(
        "UPDATE deliveries SET next_attempt_at_ms = ? WHERE state = 'pending' AND attempts = 0 "
        f"AND next_attempt_at_ms > ? AND event_id IN ({_OUTAGE_DOWN} AND e.created_at_ms <= ?)",
        (at_ms, at_ms, monitor, at_ms),
    )


# Confirmed open incidents of active monitors whose next reminder is due, when anyone listens.
_DUE_REMINDERS = """
SELECT i.id, i.monitor_id FROM incidents i JOIN monitors m ON m.id = i.monitor_id
 WHERE i.resolved_at_ms IS NULL AND i.state = 'confirmed' AND i.kind = 'down'
   AND m.remind_every_sec IS NOT NULL AND m.enabled = 1 AND m.auto_paused = 0
   AND coalesce(i.reminded_at_ms, i.confirmed_at_ms) + m.remind_every_sec * 1000 <= :now_ms
   AND EXISTS (SELECT 1 FROM channels)
"""


# Deliveries a run may claim: due, or claimed by a run whose claim expired (it died mid-send),
# and not behind an older delivery to the same channel that is waiting (backing off, or being
# sent by another run) -- a channel hears of its events in order.
_CLAIMABLE = """
SELECT d.event_id, d.channel_id FROM deliveries d
 WHERE ((d.state = 'pending' AND d.next_attempt_at_ms <= :now_ms)
        OR (d.state = 'sending' AND d.claimed_until_ms <= :now_ms))
   AND NOT EXISTS (SELECT 1 FROM deliveries b
                    WHERE b.channel_id = d.channel_id AND b.event_id < d.event_id
                      AND ((b.state = 'pending' AND b.next_attempt_at_ms > :now_ms)
                           OR (b.state = 'sending' AND b.claimed_until_ms > :now_ms)))
"""


def has_delivery_work(conn: Connection, now_ms: int) -> bool:
    """Whether anything is to be sent at `now_ms`: a due delivery or a due reminder. One read
    through partial indexes, so an idle tick stays cheap."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM deliveries WHERE state = 'pending' AND next_attempt_at_ms <= :now_ms) "
        "OR EXISTS (SELECT 1 FROM deliveries WHERE state = 'sending' AND claimed_until_ms <= :now_ms) "
        f"OR EXISTS ({_DUE_REMINDERS})",
        {"now_ms": now_ms},
    ).fetchone()
    return bool(row[0])


def add_due_reminders(conn: Connection, now_ms: int) -> int:
    """Record a reminder event (with its deliveries) for every incident whose reminder is due."""
    with write_tx(conn):
        due = conn.execute(_DUE_REMINDERS, {"now_ms": now_ms}).fetchall()
        for incident_id, monitor in due:
            conn.execute("UPDATE incidents SET reminded_at_ms = ? WHERE id = ?", (now_ms, incident_id))
            record_event(conn, incident_id, monitor, "reminder", now_ms)
    return len(due)


def claim_deliveries(
    conn: Connection, now_ms: int, token: str, claimed_until_ms: int, limit: int
) -> list[dict[str, Any]]:
    """Claim up to `limit` deliveries for this run (`token`) until `claimed_until_ms`, oldest
    first, and return them with what their messages need, ordered by channel then event."""
    with write_tx(conn):
        conn.execute(
            "UPDATE deliveries SET state = 'sending', claim_token = :token, claimed_until_ms = :until "
            f"WHERE (event_id, channel_id) IN ({_CLAIMABLE} ORDER BY d.event_id LIMIT :limit) "
            "AND (state = 'pending' OR claimed_until_ms <= :now_ms)",
            {"token": token, "until": claimed_until_ms, "now_ms": now_ms, "limit": limit},
        )
        rows = dicts(
            conn,
            f"""
            SELECT d.event_id, d.channel_id, d.attempts, c.url AS channel_url,
                   {EVENT_KIND} AS kind,
                   e.created_at_ms, m.name AS monitor_name, m.url AS monitor_url,
                   i.cause, i.http_status, i.started_at_ms, i.resolved_at_ms
              FROM deliveries d
              JOIN channels c ON c.id = d.channel_id
              JOIN incident_events e ON e.id = d.event_id
              JOIN incidents i ON i.id = e.incident_id
              JOIN monitors m ON m.id = i.monitor_id
             WHERE d.state = 'sending' AND d.claim_token = ?
             ORDER BY d.channel_id, d.event_id
            """,
            (token,),
        )
    return rows


class DeliveryOutcome(NamedTuple):
    """What became of one claimed delivery: 'sent', 'retry' (at next_attempt_at_ms), 'failed'
    (given up) or 'released' (not attempted in this run; its attempts are unchanged)."""

    event_id: int
    channel_id: int
    outcome: str
    error: str | None = None
    next_attempt_at_ms: int | None = None


def finish_deliveries(conn: Connection, token: str, now_ms: int, outcomes: Sequence[DeliveryOutcome]) -> int:
    """Record outcomes of this run's claims; a claim another run has since taken over (ours
    expired) is left alone. Returns how many were recorded."""
    updates = {
        "sent": "state = 'sent', attempts = attempts + 1, sent_at_ms = :now_ms, last_error = NULL",
        "retry": "state = 'pending', attempts = attempts + 1, next_attempt_at_ms = :next, last_error = :error",
        "failed": "state = 'failed', attempts = attempts + 1, last_error = :error",
        "released": "state = 'pending'",
    }
    recorded = 0
    with write_tx(conn):
        for o in outcomes:
            recorded += conn.execute(
                f"UPDATE deliveries SET {updates[o.outcome]}, claim_token = NULL, claimed_until_ms = NULL "
                "WHERE event_id = :event AND channel_id = :channel AND state = 'sending' AND claim_token = :token",
                {
                    "now_ms": now_ms,
                    "next": o.next_attempt_at_ms,
                    "error": o.error,
                    "event": o.event_id,
                    "channel": o.channel_id,
                    "token": token,
                },
            ).rowcount
    return recorded


def add_channel(
    conn: Connection, url: str, *, monitor_ref: str | None, owner_name: str | None, created_at_ms: int
) -> int:
    with write_tx(conn):
        monitor, owner = scope(conn, monitor_ref, owner_name)
        return insert_row(
            conn,
            "channels",
            {"url": url, "monitor_id": monitor, "owner_id": owner, "created_at_ms": created_at_ms},
        )


def list_channels(conn: Connection) -> list[dict[str, Any]]:
    """Every channel with what it covers and how its deliveries stand. `url` holds secrets."""
    return dicts(
        conn,
        """
        SELECT c.id, c.url, m.name AS monitor, o.name AS owner,
               (SELECT count(*) FROM deliveries d
                 WHERE d.channel_id = c.id AND d.state IN ('pending', 'sending')) AS pending,
               (SELECT count(*) FROM deliveries d WHERE d.channel_id = c.id AND d.state = 'sent') AS sent,
               (SELECT count(*) FROM deliveries d WHERE d.channel_id = c.id AND d.state = 'failed') AS failed
          FROM channels c
          LEFT JOIN monitors m ON m.id = c.monitor_id
          LEFT JOIN owners o ON o.id = c.owner_id
         ORDER BY c.id
        """,
    )


def channel_urls(conn: Connection, channel: int | None = None) -> list[tuple[int, str]]:
    """(id, url) of one channel or of all; raises StoreError for an unknown id."""
    if channel is None:
        return [(int(i), str(u)) for i, u in conn.execute("SELECT id, url FROM channels ORDER BY id")]
    url = one(conn, "SELECT url FROM channels WHERE id = ?", (channel,))
    if url is None:
        raise StoreError(f"no channel {channel}")
    return [(channel, str(url))]


def remove_channel(conn: Connection, channel: int) -> None:
    """Delete a channel with its deliveries; raises StoreError for an unknown id."""
    with write_tx(conn):
        if not conn.execute("DELETE FROM channels WHERE id = ?", (channel,)).rowcount:
            raise StoreError(f"no channel {channel}")


def get_setting(conn: Connection, name: str) -> str | None:
    found = one(conn, "SELECT value FROM settings WHERE name = ?", (name,))
    return None if found is None else str(found)


def set_setting(conn: Connection, name: str, value: str | None) -> None:
    """Set a setting, or remove it with None."""
    with write_tx(conn):
        if value is None:
            conn.execute("DELETE FROM settings WHERE name = ?", (name,))
        else:
            conn.execute(
                "INSERT INTO settings (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (name, value),
            )
