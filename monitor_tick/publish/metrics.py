"""Prometheus metrics in the node_exporter textfile-collector format, written after a tick.

All gauges, derived from the tick's own report and three cheap queries (current state per
monitor, the newest rollup hour per monitor, the ledger's last 24 hours). Names follow the
Prometheus conventions: a `monitor_tick_` prefix, base units in the name (`_seconds`), and
labels `id` and `monitor` (the name, URLs redacted) on per-monitor series.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import monitor_state
from monitor_tick.core.redact import redact_text
from monitor_tick.publish.atomic import write_text_atomic

MISSED_WINDOW_MS = clock.MS_PER_DAY
STATES = ("up", "down", "partial", "new", "maintenance", "paused", "auto-paused", "invalid")


@dataclass(frozen=True)
class TickFacts:
    """What the tick that just ran reports about itself."""

    now_ms: int  # its one clock reading
    due: int
    up: int
    down: int
    unknown: int
    duration_ms: int


def collect(conn: sqlite3.Connection, tick: TickFacts) -> str:
    """The textfile for the state after `tick`. Raises sqlite3.Error."""
    rows = store.status_monitors(conn, tick.now_ms)
    since = clock.minute_of_ms(tick.now_ms - MISSED_WINDOW_MS)
    missed = sum(end - start for start, end in store.tick_gaps(conn, since, clock.minute_of_ms(tick.now_ms)))
    return render(rows, tick, missed, store.places.location_up(conn))


def render(
    rows: list[dict], tick: TickFacts, missed_ticks: int, places: list[tuple[int, str, bool]] | None = None
) -> str:
    """Pure: monitor rows (store.status_monitors), the tick's facts and each location's newest
    decided check of the monitors with locations (store.places.location_up) -> exposition text."""
    up, latency, last_check, invalid = [], [], [], []
    names = {int(row["id"]): redact_text(row["name"]) for row in rows}
    states: Counter[str] = Counter()
    for row in rows:
        state = monitor_state(row)
        states[state] += 1
        labels = {"id": str(row["id"]), "monitor": redact_text(row["name"])}
        if row["last_check_ms"] is not None:
            last_check.append((labels, clock.ms_to_s(row["last_check_ms"])))
        if state == "invalid":
            invalid.append((labels, 1))
        if state not in ("up", "down", "partial"):
            continue  # paused, in maintenance or never checked: no current up/down to report
        up.append((labels, 0 if state == "down" else 1))  # by the quorum: partial is not down
        answered = (row["hour_checks"] or 0) - (row["hour_failures"] or 0)
        if answered > 0:
            latency.append((labels, round(clock.ms_to_s(row["hour_latency_ms_sum"] / answered), 6)))
    out: list[str] = []
    _family(
        out,
        "monitor_tick_up",
        "1 if the monitor's current state is up (or partial: down from fewer of its locations than its "
        "quorum), 0 if down (monitors being checked).",
        up,
    )
    _family(
        out,
        "monitor_tick_location_up",
        "1 if the location's newest check of the monitor was up, 0 if down (monitors with --locations; "
        "monitor_tick_up is the quorum's verdict).",
        [
            ({"id": str(monitor), "monitor": names[monitor], "location": location}, 1 if is_up else 0)
            for monitor, location, is_up in places or []
            if monitor in names
        ],
    )
    _family(
        out,
        "monitor_tick_latency_seconds",
        "Average response time of the up checks in the monitor's newest rollup hour (UTC).",
        latency,
    )
    _family(
        out,
        "monitor_tick_last_check_timestamp_seconds",
        "When the monitor was last checked, as a Unix time.",
        last_check,
    )
    _family(
        out,
        "monitor_tick_invalid",
        "1 for each monitor the newest tick that had it due could not probe (a configuration error: "
        "`monitor-tick show ID` says why); absent for the others.",
        invalid,
    )
    _family(
        out,
        "monitor_tick_monitors",
        "Monitors by current state.",
        [({"state": state}, states[state]) for state in STATES],
    )
    _family(
        out,
        "monitor_tick_tick_timestamp_seconds",
        "When the last tick ran (its clock reading), as a Unix time.",
        [({}, clock.ms_to_s(tick.now_ms))],
    )
    _family(out, "monitor_tick_tick_due_monitors", "Monitors due in the last tick.", [({}, tick.due)])
    _family(
        out,
        "monitor_tick_tick_checks",
        "Checks of the last tick by result; unknown means monitor-tick could not decide (counted neither way).",
        [({"result": "up"}, tick.up), ({"result": "down"}, tick.down), ({"result": "unknown"}, tick.unknown)],
    )
    _family(
        out,
        "monitor_tick_tick_duration_seconds",
        "How long the last tick took, from its clock reading to its results written.",
        [({}, clock.ms_to_s(tick.duration_ms))],
    )
    _family(
        out,
        "monitor_tick_missed_ticks",
        "Minutes in the last 24 hours (since the first live tick) in which no tick probed: monitor-tick was not "
        "running, ran too late, or died. These minutes are no data, not downtime.",
        [({}, missed_ticks)],
    )
    return "".join(out)


def _family(out: list[str], name: str, help_text: str, samples: list[tuple[dict[str, str], float]]) -> None:
    out.append(f"# HELP {name} {_escape_help(help_text)}\n# TYPE {name} gauge\n")
    for labels, value in samples:
        label_text = ",".join(f'{key}="{_escape_label(val)}"' for key, val in labels.items())
        out.append(f"{name}{{{label_text}}} {_number(value)}\n" if labels else f"{name} {_number(value)}\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def write(db_path: str, path: str, tick: TickFacts) -> None:
    """Read the database and write the textfile at `path` atomically. Raises store.StoreError
    or OSError."""
    write_text_atomic(path, store.read_db(db_path, lambda conn: collect(conn, tick)))
