"""Locations: where each host probes from (fleet_hosts), the work split of monitors with
locations (location_claims: a location's hosts share its work, and only they take a dead host's
share over), each location's check of a minute (location_checks, short-lived), and the decision
of each minute by a quorum of locations (core/quorum.py), made once across the fleet under a
lock of the monitor's row: its verdict counted once in rollups, its incident or partial episode
stepped, its event recorded. See schema.sql (step 17) and docs/postgresql.md's "Several locations".

Monitors without locations never come here: they keep the fleet-wide claims of ledger.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from monitor_tick.core import quorum
from monitor_tick.core.clock import MS_PER_MINUTE, hour_start_ms, minute_start_ms
from monitor_tick.core.incidents import CONFIRMED, SUSPECTED, Open, Transition
from monitor_tick.core.model import AlertSettings, CheckResult
from monitor_tick.core.records import NamedTuple
from monitor_tick.store.db import one, write_tx
from monitor_tick.store.deliveries import hold_down_alert, record_event, release_down_alert
from monitor_tick.store.ledger import Claim
from monitor_tick.store.locationsql import LOCATION_BUCKETS, parse_figures, single_location, sql
from monitor_tick.store.results import _UPSERT_ROLLUP, WriteSummary, _apply_incident_step

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

    from monitor_tick.store.db import Connection

CLOSE_AFTER_MS = 2 * MS_PER_MINUTE  # a minute closes this long after its first write (server clock)
CHECKS_KEPT_MINUTES = 10  # closed minutes' checks and verdicts are deleted after this


class LocationBuckets(NamedTuple):
    """The (minute, location, bucket) claims one round of a run holds, and the monitors of its
    location it was given for them (those without a check get one that does not count)."""

    minute: int
    location: str
    token: str
    buckets: frozenset[int]
    given: frozenset[int] = frozenset()

    def holds(self, monitor: int) -> bool:
        return monitor % LOCATION_BUCKETS in self.buckets


def checked_here(stored: str | None, location: str) -> bool:
    """Whether a monitor with `stored` locations is checked from `location` (None: no locations)."""
    return stored is not None and (stored == quorum.ALL or location in stored.split(","))


def host_seen(
    conn: Connection, host: str, location: str, minute: int, now_ms: int, *, network_lost: bool | None = None
) -> None:
    """Record that `host` of `location` ticked `minute` (`monitor-tick locations`, liveness, `all`),
    and what its canary said (`network_lost`; None: this tick did not ask it)."""
    params = {
        "host": host,
        "location": location,
        "minute": minute,
        "now_ms": now_ms,
        "lost": bool(network_lost),
        "asked": network_lost is not None,
    }
    with write_tx(conn):
        conn.execute(sql(conn, "location_seen"), params)


def claim(
    conn: Connection,
    minute: int,
    location: str,
    *,
    host: str,
    token: str,
    now_ms: int,
    lease_ms: int,
    share: int,
    offset: int,
    force: bool = False,
) -> LocationBuckets:
    """As ledger.claim_buckets, for `location`'s share of `minute`: only its hosts call it.
    `force` (a --force rerun): every bucket, finished or held (write_checks records only what
    the location has not)."""
    with write_tx(conn):
        rows = conn.execute(
            sql(conn, "location_claim"),
            {
                "minute": minute,
                "location": location,
                "host": host,
                "token": token,
                "now_ms": now_ms,
                "lease_ms": lease_ms,
                "share": share,
                "all": share <= 1,
                "offset": offset,
                "force": force,
            },
        ).fetchall()
    return LocationBuckets(minute, location, token, frozenset(int(row[0]) for row in rows))


def join(conn: Connection, minute: int) -> Claim | None:
    """The claim of a run for `minute` that another run claimed and whose fleet-wide buckets are
    all done (ledger's join says nothing is left): its locations' shares may still be open. None
    on SQLite, and when the minute was caught up by another minute's run or missed."""
    if conn.engine == "sqlite":
        return None
    row = conn.execute("SELECT covered_by, missed FROM ticks WHERE minute = ?", (minute,)).fetchone()
    if row is None or row[0] is not None or row[1]:
        return None
    covered = [
        int(m) for (m,) in conn.execute("SELECT minute FROM ticks WHERE covered_by = ? ORDER BY minute", (minute,))
    ]
    return Claim(minute, covered, 0, joined=True)


def write_checks(
    conn: Connection,
    minutes: Sequence[int],
    at_ms: int,
    results: Iterable[CheckResult],
    finished_at_ms: int,
    *,
    buckets: LocationBuckets,
    **_: Any,
) -> WriteSummary:
    """Write one round's checks from `buckets.location` (store.write_results' signature; the
    ledger's figures are the fleet-wide rounds'): each check of a monitor in a bucket still held
    once per minute (a rerun records none twice), one that does not count for each monitor given
    without a decided check (it could not be probed here), the location's hourly figures; then
    decide each minute they touch. Raises DatabaseError; nothing is written then."""
    minute = buckets.minute
    up = down = unknown = 0
    with write_tx(conn):
        held = {
            int(row[0])
            for row in conn.execute(
                "SELECT bucket FROM location_claims WHERE minute = ? AND location = ? AND token = ? "
                "AND finished_at_ms IS NULL",
                (minute, buckets.location, buckets.token),
            )
        } & buckets.buckets
        newest = one(conn, "SELECT max(minute) FROM ticks", ())
        # a rerun of a minute whose checks are deleted cannot tell what was recorded: it records none
        recording = held if newest is None or minute >= newest - CHECKS_KEPT_MINUTES else set()
        by_id = {r.monitor_id: r for r in results if r.monitor_id % LOCATION_BUCKETS in recording}
        given = {m for m in buckets.given if m % LOCATION_BUCKETS in recording} | set(by_id)
        # a monitor removed while the tick probed: its check has nowhere to go
        places = {m: conn.execute("SELECT locations FROM monitors WHERE id = ?", (m,)).fetchone() for m in given}
        existing = {m for m, row in places.items() if row is not None}
        written = []
        for monitor in sorted(given & existing):
            result = by_id.get(monitor)
            decided = result is not None and result.status != "unknown"
            is_up = decided and result is not None and result.status == "up"
            cause = None if result is None else result.cause
            # a location's check of a minute is recorded once: a rerun decides only one it could not
            inserted = conn.execute(
                "INSERT INTO location_checks (monitor_id, minute, location, up, cause, latency_ms, http_status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (monitor_id, minute, location) DO UPDATE SET "
                "up = excluded.up, cause = excluded.cause, latency_ms = excluded.latency_ms, "
                "http_status = excluded.http_status "
                "WHERE location_checks.up IS NULL AND excluded.up IS NOT NULL",
                (
                    monitor,
                    minute,
                    buckets.location,
                    is_up if decided else None,
                    cause,
                    result.latency_ms if result is not None and is_up else None,
                    None if result is None else result.http_status,
                ),
            ).rowcount
            if not inserted:
                continue
            written.append(monitor)
            if not decided:
                unknown += 1
                continue
            up += is_up
            down += not is_up
            latency = result.latency_ms if is_up and result is not None else None
            if single_location(places[monitor][0]) is None:  # one location's figures are its verdicts'
                _count_here(conn, monitor, hour_start_ms(at_ms), buckets.location, is_up, latency or 0)
        per_bucket = Counter(monitor % LOCATION_BUCKETS for monitor in written)
        conn.executemany(
            "UPDATE location_claims SET finished_at_ms = ?, checks = ? "
            "WHERE minute = ? AND location = ? AND bucket = ? AND token = ?",
            [
                (finished_at_ms, per_bucket[bucket], minute, buckets.location, bucket, buckets.token)
                for bucket in sorted(held)
            ],
        )
        server_now = one(conn, sql(conn, "location_now"), {"now_ms": at_ms})
        opened: list[int] = []
        resolved: list[int] = []
        confirmed: list[int] = []
        for monitor in written:
            conn.execute(
                "INSERT INTO quorum_minutes (monitor_id, minute, first_write_ms) VALUES (?, ?, ?) "
                "ON CONFLICT (monitor_id, minute) DO NOTHING",
                (monitor, minute, server_now),
            )
            _decide(conn, monitor, minute, at_ms, server_now, minute, (opened, resolved, confirmed))
    return WriteSummary(up, down, unknown, opened, resolved, 0, confirmed)


def _count_here(conn: Connection, monitor: int, hour_ms: int, location: str, is_up: bool, latency_ms: int) -> None:
    """Count one decided check of `location` in the monitor's hourly figures (location_rollups),
    under the lock of the monitor's row: its locations' writes never lose each other's."""
    conn.execute(sql(conn, "location_lock"), (monitor,))
    text = one(
        conn, "SELECT figures FROM location_rollups WHERE monitor_id = ? AND hour_start_ms = ?", (monitor, hour_ms)
    )
    figures = parse_figures(text or "")
    checks, failures, latency_sum = figures.get(location, (0, 0, 0))
    figures[location] = (checks + 1, failures + (not is_up), latency_sum + (latency_ms if is_up else 0))
    conn.execute(
        "INSERT INTO location_rollups (monitor_id, hour_start_ms, figures) VALUES (?, ?, ?) "
        "ON CONFLICT (monitor_id, hour_start_ms) DO UPDATE SET figures = excluded.figures",
        (monitor, hour_ms, ";".join(f"{loc} {c} {f} {lat}" for loc, (c, f, lat) in sorted(figures.items()))),
    )


def close_minutes(conn: Connection, tick_minute: int, now_ms: int) -> WriteSummary:
    """Any host's tick: decide the minutes still open that have closed since (their time is up),
    and delete the checks of minutes closed long ago."""
    opened: list[int] = []
    resolved: list[int] = []
    confirmed: list[int] = []
    with write_tx(conn):
        server_now = one(conn, sql(conn, "location_now"), {"now_ms": now_ms})
        for monitor, minute in conn.execute(
            # monitors in id order, as write_checks locks them: two writers never wait on each other in turn
            "SELECT monitor_id, minute FROM quorum_minutes WHERE closed = 0 ORDER BY monitor_id, minute"
        ).fetchall():
            _decide(conn, int(monitor), int(minute), now_ms, server_now, tick_minute, (opened, resolved, confirmed))
        old = tick_minute - CHECKS_KEPT_MINUTES
        conn.execute("DELETE FROM quorum_minutes WHERE minute < ? AND closed = 1", (old,))
        conn.execute(
            "DELETE FROM location_checks WHERE minute < ? AND NOT EXISTS (SELECT 1 FROM quorum_minutes q "
            "WHERE q.monitor_id = location_checks.monitor_id AND q.minute = location_checks.minute)",
            (old,),
        )
    return WriteSummary(0, 0, 0, opened, resolved, 0, confirmed)


def has_open_minutes(conn: Connection) -> bool:
    return one(conn, "SELECT count(*) FROM (SELECT 1 FROM quorum_minutes WHERE closed = 0 LIMIT 1) AS q", ()) > 0


def ticked_locations(conn: Connection, server_now_ms: int) -> list[str]:
    """Every location a host ticked from in the last 7 days (by the server's clock)."""
    rows = conn.execute(
        "SELECT DISTINCT location FROM fleet_hosts WHERE seen_at_ms >= ? ORDER BY location",
        (server_now_ms - quorum.ALL_WINDOW_MS,),
    )
    return [str(row[0]) for row in rows]


def all_locations(conn: Connection, now_ms: int) -> list[str]:
    """The locations `--locations all` names now (ticked_locations by the server's clock; on
    SQLite, `now_ms`)."""
    return ticked_locations(conn, one(conn, sql(conn, "location_now"), {"now_ms": now_ms}))


def _decide(
    conn: Connection,
    monitor: int,
    minute: int,
    at_ms: int,
    server_now_ms: int,
    tick_minute: int,
    changes: tuple[list[int], list[int], list[int]],
) -> None:
    """Decide `monitor`'s `minute` again from its checks that are in, under a lock of its row:
    count its verdict once, step its incident or partial episode."""
    row = conn.execute(sql(conn, "location_lock"), (monitor,)).fetchone()
    state = conn.execute(
        "SELECT verdict, closed, first_write_ms FROM quorum_minutes WHERE monitor_id = ? AND minute = ?",
        (monitor, minute),
    ).fetchone()
    if row is None or state is None or (state[1] and state[0] is not None):
        return  # (a closed minute no location could decide is decided by a rerun's check)
    stored, k_set, notify_partial = row[0], row[1], bool(row[2])
    settings = AlertSettings(row[3], row[4], row[5])
    if stored is None:  # its locations were removed meanwhile: nothing left to decide
        conn.execute("UPDATE quorum_minutes SET closed = 1 WHERE monitor_id = ? AND minute = ?", (monitor, minute))
        release_down_alert(conn, monitor, minute_start_ms(minute))
        return
    names = quorum.names_of(stored, ticked_locations(conn, server_now_ms))
    checks = {
        str(loc): quorum.Check(None if up is None else bool(up), cause, status)
        for loc, up, cause, status in conn.execute(
            "SELECT location, up, cause, http_status FROM location_checks WHERE monitor_id = ? AND minute = ?",
            (monitor, minute),
        )
    }
    expected = {
        str(loc)
        for (loc,) in conn.execute("SELECT DISTINCT location FROM fleet_hosts WHERE last_minute >= ?", (minute - 1,))
    } & set(names)
    closed = expected <= checks.keys() or server_now_ms >= int(state[2]) + CLOSE_AFTER_MS or tick_minute >= minute + 3
    k = quorum.quorum_of(len(names), k_set)
    decision = quorum.decide(names, k, checks, closed=closed, default_quorum=k_set is None)
    if state[0] is None and decision.verdict is not None:
        latencies = [
            int(lat)
            for (lat,) in conn.execute(
                "SELECT latency_ms FROM location_checks WHERE monitor_id = ? AND minute = ? AND up = 1 "
                "AND latency_ms IS NOT NULL",
                (monitor, minute),
            )
        ]
        _count(conn, monitor, decision, at_ms, latencies)
        # Stamped with the minute's own start, never the deciding host's clock (which may lag the
        # others by seconds, or be minutes past a minute decided at its close): every host agrees
        # on it, and it is when the checks were made.
        stamp_ms = minute_start_ms(minute)
        if not _newer_decided(conn, monitor, minute):
            told, ended = len(changes[2]), len(changes[1])
            _step(conn, monitor, decision, quorum.status_of(checks), settings, notify_partial, stamp_ms, changes)
            if len(changes[1]) > ended:
                release_down_alert(conn, monitor, stamp_ms)
            if not closed and len(changes[2]) > told:
                # The outage counts from now, but its DOWN waits for the minute to close (when
                # every live place has written: seconds; at most CLOSE_AFTER_MS), so that it
                # names the places that saw it rather than 'did not check it'. The server's clock
                # says when the minute closes; a delivery is due by the sending host's.
                closes_in_ms = int(state[2]) + CLOSE_AFTER_MS - server_now_ms
                hold_down_alert(conn, monitor, min(at_ms + closes_in_ms, minute_start_ms(minute + 3)))
    elif state[0] == quorum.DOWN and decision.verdict == quorum.DOWN and not _newer_decided(conn, monitor, minute):
        # a place that wrote after its minute reached the quorum: the open outage names the
        # places, and gives the status, of the minute as it now stands
        conn.execute(
            "UPDATE incidents SET cause = ?, http_status = ? "
            "WHERE monitor_id = ? AND resolved_at_ms IS NULL AND kind = 'down'",
            (decision.text, quorum.status_of(checks), monitor),
        )
    if closed and quorum.DOWN in (state[0], decision.verdict):
        # any minute of the outage that closes lets its DOWN go: a newer one closes first when
        # the older one waits for a place whose hosts died
        release_down_alert(conn, monitor, minute_start_ms(minute))
    conn.execute(
        "UPDATE quorum_minutes SET verdict = coalesce(verdict, ?), closed = ? WHERE monitor_id = ? AND minute = ?",
        (decision.verdict, closed, monitor, minute),
    )


def _newer_decided(conn: Connection, monitor: int, minute: int) -> bool:
    """Whether a minute after `minute` already has its verdict. Verdicts take effect in minute
    order: a minute that closes late (it waited for a location whose hosts died) must not undo
    what a newer minute decided, or one outage would read as DOWN, UP, DOWN. Its checks still
    count in the rollups."""
    return (
        one(
            conn,
            "SELECT count(*) FROM quorum_minutes WHERE monitor_id = ? AND minute > ? AND verdict IS NOT NULL",
            (monitor, minute),
        )
        > 0
    )


def _count(conn: Connection, monitor: int, decision: quorum.Decision, at_ms: int, latencies: list[int]) -> None:
    """The minute's verdict in the monitor's own hourly rollup (a partial minute is up by the
    quorum rule: its partial episode says the rest)."""
    latency = sum(latencies) // len(latencies) if latencies and decision.verdict != quorum.DOWN else None
    conn.execute(
        _UPSERT_ROLLUP,
        {
            "monitor_id": monitor,
            "hour_start_ms": hour_start_ms(at_ms),
            "failures": 1 if decision.verdict == quorum.DOWN else 0,
            "latency_ms": latency or 0,
            "latency_min": latency,
            "latency_max": latency,
            "at_ms": at_ms,
            "cert_expires_at_ms": None,
            "phases": None,
        },
    )


def _step(
    conn: Connection,
    monitor: int,
    decision: quorum.Decision,
    status: int | None,
    settings: AlertSettings,
    notify_partial: bool,
    at_ms: int,
    changes: tuple[list[int], list[int], list[int]],
) -> None:
    """What a verdict does to the monitor's open incident ('down') or partial episode (`status`:
    the HTTP status its alert gives, quorum.status_of)."""
    opened, resolved, confirmed = changes
    found = conn.execute(
        "SELECT id, state, down_checks, up_checks, kind FROM incidents WHERE monitor_id = ? AND resolved_at_ms IS NULL",
        (monitor,),
    ).fetchone()
    outage = (int(found[0]), Open(found[1], found[2], found[3])) if found is not None and found[4] == "down" else None
    episode = int(found[0]) if found is not None and found[4] == "partial" else None
    if decision.verdict == quorum.DOWN:
        if episode is not None:  # the partial episode ends where the outage begins
            conn.execute("UPDATE incidents SET resolved_at_ms = ? WHERE id = ?", (at_ms, episode))
        result = CheckResult(monitor, "down", cause=decision.text, http_status=status)
        change = _apply_incident_step(conn, result, outage, settings, at_ms)
        if change is not None and change.transition is Transition.OPEN:
            opened.append(monitor)
        if change is not None and change.confirms:
            confirmed.append(monitor)
            # the alert names the places, and gives the status, as they are when it is sent
            conn.execute(
                "UPDATE incidents SET cause = ?, http_status = ? WHERE monitor_id = ? AND resolved_at_ms IS NULL",
                (decision.text, status, monitor),
            )
        return
    if outage is not None:
        change = _apply_incident_step(conn, CheckResult(monitor, "up"), outage, settings, at_ms)
        if change is None or change.transition is not Transition.RESOLVE:
            return  # still down until resolve_after closed minutes say otherwise
        resolved.append(monitor)
    if decision.verdict == quorum.UP:
        if episode is not None:
            conn.execute("UPDATE incidents SET resolved_at_ms = ? WHERE id = ?", (at_ms, episode))
        return
    _partial(conn, monitor, episode, decision.text, status, settings, notify_partial, at_ms)


def _partial(
    conn: Connection,
    monitor: int,
    episode: int | None,
    text: str,
    status: int | None,
    settings: AlertSettings,
    notify_partial: bool,
    at_ms: int,
) -> None:
    """A partial minute: open or count the partial episode; at alert_after minutes it is
    confirmed, and told (its own kind, once) only with --notify-partial."""
    if episode is None:
        episode = int(
            one(
                conn,
                "INSERT INTO incidents (monitor_id, started_at_ms, cause, http_status, state, down_checks, "
                "up_checks, kind) VALUES (?, ?, ?, ?, ?, 1, 0, 'partial') RETURNING id",
                (monitor, at_ms, text, status, SUSPECTED),
            )
        )
        downs = 1
    else:
        downs = int(one(conn, "SELECT down_checks FROM incidents WHERE id = ?", (episode,))) + 1
        conn.execute(
            "UPDATE incidents SET down_checks = ?, cause = ?, http_status = ? WHERE id = ?",
            (downs, text, status, episode),
        )
    if downs >= settings.alert_after_checks:
        confirmed_now = conn.execute(
            "UPDATE incidents SET state = ?, confirmed_at_ms = ? WHERE id = ? AND state = ?",
            (CONFIRMED, at_ms, episode, SUSPECTED),
        ).rowcount
        if confirmed_now and notify_partial:
            record_event(conn, episode, monitor, "down", at_ms)
