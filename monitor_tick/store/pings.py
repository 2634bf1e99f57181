"""Probe kinds' own results: heartbeat tokens and pings (a certificate's expiry is kept on the
rollups)."""

from __future__ import annotations

from collections.abc import Sequence

from monitor_tick.core.model import Pings
from monitor_tick.store.db import StoreError, one, statement, to_json, write_tx
from monitor_tick.store.manage import monitor_id

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from monitor_tick.store.db import Connection

PING_SIGNALS = ("ok", "fail", "start")


# `?`: the ids as a JSON array (one parameter however many)
_HEARTBEAT_PINGS = (
    "SELECT m.id, m.created_at_ms, p.last_ping_ms, coalesce(p.last_ping_failed, 0), p.last_duration_ms "
    "FROM monitors m LEFT JOIN pings p ON p.monitor_id = m.id "
    "WHERE m.id IN (SELECT value FROM json_each(?))"
)


def heartbeat_pings(conn: Connection, monitor_ids: Sequence[int]) -> dict[int, Pings]:
    """The last signals of these monitors, in one query (the tick hands them to the heartbeat probe)."""
    return {
        int(row[0]): Pings(int(row[1]), row[2], bool(row[3]), row[4])
        for row in conn.execute(statement(conn, "heartbeat_pings", _HEARTBEAT_PINGS), (to_json(list(monitor_ids)),))
    }


def heartbeat_id(conn: Connection, ref: str) -> int:
    """A heartbeat monitor by id or name; StoreError when there is none or it is another kind."""
    found = monitor_id(conn, ref)
    if one(conn, "SELECT token_sha256 IS NOT NULL FROM monitors WHERE id = ?", (found,)) != 1:
        raise StoreError(f"monitor {ref!r} is not a heartbeat (add one with: monitor-tick add heartbeat)")
    return found


def heartbeat_by_token(conn: Connection, token_sha256: bytes) -> int | None:
    """The heartbeat monitor whose token has this SHA-256 digest, if any."""
    found = one(conn, "SELECT id FROM monitors WHERE token_sha256 = ?", (token_sha256,))
    return None if found is None else int(found)


_RECORD_START = """
INSERT INTO pings (monitor_id, started_at_ms) VALUES (:monitor_id, :at_ms)
ON CONFLICT (monitor_id) DO UPDATE SET started_at_ms = excluded.started_at_ms
"""


# A ping ends the run a start signal began: its duration is kept, the start is cleared.
_RECORD_PING = """
INSERT INTO pings (monitor_id, last_ping_ms, last_ping_failed) VALUES (:monitor_id, :at_ms, :failed)
ON CONFLICT (monitor_id) DO UPDATE SET
  last_ping_ms = excluded.last_ping_ms,
  last_ping_failed = excluded.last_ping_failed,
  last_duration_ms = CASE WHEN pings.started_at_ms <= excluded.last_ping_ms
                          THEN excluded.last_ping_ms - pings.started_at_ms END,
  started_at_ms = NULL
"""


def record_ping(conn: Connection, monitor: int, signal: str, at_ms: int) -> None:
    """Record one signal ('ok', 'fail' or 'start') of a heartbeat monitor at `at_ms`: one upsert.
    Raises DatabaseError (e.g. the monitor was removed a moment ago)."""
    if signal not in PING_SIGNALS:
        raise ValueError(f"unknown ping signal {signal!r}")
    sql = _RECORD_START if signal == "start" else _RECORD_PING
    with write_tx(conn):
        conn.execute(sql, {"monitor_id": monitor, "at_ms": at_ms, "failed": int(signal == "fail")})
