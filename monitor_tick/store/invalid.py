"""What the ticks found of the monitors they could not probe (`invalid_monitors`), and when each
host last said so (`invalid_reports`): see schema.sql.

The readers (`list`, `show`, the status page, the metrics) show the stored finding and never
judge a monitor again: a finding depends on the tick's environment and host (a `${VAR}`, the
address guard, whether this machine may ping), which are not the reader's."""

from __future__ import annotations

from collections.abc import Mapping

from monitor_tick.core.clock import MS_PER_HOUR, hour_start_ms
from monitor_tick.store.db import write_tx

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from monitor_tick.store.db import Connection

# A finding is stored unless the monitor was removed meanwhile, and replaces a different one
# that is not newer (a replay of an older minute leaves a later finding alone).
_STORE = """
INSERT INTO invalid_monitors (monitor_id, cause, host, since_ms)
SELECT :monitor_id, :cause, :host, :at_ms WHERE EXISTS (SELECT 1 FROM monitors WHERE id = :monitor_id)
ON CONFLICT (monitor_id) DO UPDATE SET cause = excluded.cause, host = excluded.host, since_ms = excluded.since_ms
 WHERE invalid_monitors.cause <> excluded.cause AND invalid_monitors.since_ms <= excluded.since_ms
"""
# Said unless this host said it in the same UTC hour already; returns the row when it is to be said.
_SAY = """
INSERT INTO invalid_reports (monitor_id, host, said_at_ms)
SELECT :monitor_id, :host, :at_ms WHERE EXISTS (SELECT 1 FROM monitors WHERE id = :monitor_id)
ON CONFLICT (monitor_id, host) DO UPDATE SET said_at_ms = excluded.said_at_ms
 WHERE invalid_reports.said_at_ms < :hour_ms OR invalid_reports.said_at_ms >= :next_hour_ms
RETURNING monitor_id
"""


def record_invalid(conn: Connection, found: Mapping[int, str | None], *, at_ms: int, host: str, say: bool) -> list[int]:
    """Store what a tick (its clock reading `at_ms`, its --host-name `host`) found of the
    monitors it had due: monitor id -> why it could not probe it, or None when it could. Only
    changes are written: a new or different cause (not when the stored one is from a later
    `at_ms`), and a cleared one. With `say` (a live tick; never --force or --minute), returns the
    ids of those it could not probe that `host` has not said in `at_ms`'s UTC hour, marked said
    now, in id order. Reads one small table first and opens a write transaction only when there
    is something to write (nothing at all when nothing was due). Raises DatabaseError."""
    if not found:
        return []
    stored = {
        int(monitor): (cause, since_ms)
        for monitor, cause, since_ms in conn.execute("SELECT monitor_id, cause, since_ms FROM invalid_monitors")
    }
    changed = [
        (monitor, cause)
        for monitor, cause in found.items()
        if monitor in stored or cause is not None
        if monitor not in stored or (stored[monitor][0] != cause and stored[monitor][1] <= at_ms)
    ]
    hour_ms = hour_start_ms(at_ms)
    to_say: list[int] = []
    if say and any(cause is not None for cause in found.values()):
        said = dict(conn.execute("SELECT monitor_id, said_at_ms FROM invalid_reports WHERE host = ?", (host,)))
        to_say = sorted(
            monitor
            for monitor, cause in found.items()
            if cause is not None and (monitor not in said or hour_start_ms(said[monitor]) != hour_ms)
        )
    if not changed and not to_say:
        return []
    said_now: list[int] = []
    with write_tx(conn):
        for monitor, cause in changed:
            if cause is None:
                conn.execute("DELETE FROM invalid_monitors WHERE monitor_id = ? AND since_ms <= ?", (monitor, at_ms))
            else:
                conn.execute(_STORE, {"monitor_id": monitor, "cause": cause, "host": host, "at_ms": at_ms})
        for monitor in to_say:
            row = conn.execute(
                _SAY,
                {
                    "monitor_id": monitor,
                    "host": host,
                    "at_ms": at_ms,
                    "hour_ms": hour_ms,
                    "next_hour_ms": hour_ms + MS_PER_HOUR,
                },
            ).fetchone()
            if row is not None:
                said_now.append(monitor)
    return said_now
