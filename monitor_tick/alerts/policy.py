"""Alert policy, as pure functions: what a message says, when many become one summary, when a
failed delivery is tried again or given up, and when a tick's failures are our own network's.

Sending lives in alerts/notify.py; state lives in store/deliveries.py.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from monitor_tick.core import clock
from monitor_tick.core.model import CheckResult
from monitor_tick.core.records import NamedTuple
from monitor_tick.core.redact import redact_url

# More than this many events of one kind for one channel in one delivery run: one summary.
STORM_THRESHOLD = 5

# A failed delivery is tried again after 1, 2, 4, ... minutes, at most this far apart ...
RETRY_FIRST_MS = clock.MS_PER_MINUTE
RETRY_MAX_MS = 30 * clock.MS_PER_MINUTE
# ... until its event is this old: then it is given up, with one warning.
GIVE_UP_AFTER_MS = 6 * clock.MS_PER_HOUR

TITLES = {"down": "DOWN", "up": "UP", "reminder": "STILL DOWN", "paused": "PAUSED", "partial": "PARTIAL"}
# Apprise's notify types: they pick colours and icons on services that have them
NOTIFY_TYPES = {"down": "failure", "up": "success", "reminder": "warning", "paused": "warning", "partial": "warning"}

# ---------------------------------------------------------------------------------------------
# Messages


class EventInfo(NamedTuple):
    """One incident event to tell one channel about (what a message is made from)."""

    event_id: int
    # down, up, reminder, paused (auto-paused by housekeeping), partial (down from fewer of its
    # locations than its quorum: --notify-partial, once per episode)
    kind: str
    created_at_ms: int
    monitor_name: str
    monitor_url: str
    cause: str
    http_status: int | None
    started_at_ms: int
    resolved_at_ms: int | None


class Message(NamedTuple):
    title: str
    body: str
    notify_type: str
    event_ids: tuple[int, ...]  # the events this message tells of


def _down_for(event: EventInfo) -> str:
    end_ms = event.resolved_at_ms if event.resolved_at_ms is not None else event.created_at_ms
    return clock.format_duration_s(clock.ms_to_s(max(0, end_ms - event.started_at_ms)))


def message(event: EventInfo) -> Message:
    """The message for one event. The URL is shown with credentials and query values hidden."""
    name = event.monitor_name
    lead = {
        # a monitor checked from several locations: its cause names them (core/quorum.places)
        "down": f"{name} is {event.cause}." if event.cause.startswith("down from ") else f"{name} is down.",
        "up": f"{name} is up again after {_down_for(event)} down.",
        "reminder": f"{name} is still down, for {_down_for(event)} now.",
        "paused": f"{name} was paused after {_down_for(event)} down: it is no longer probed.",
        "partial": f"{name} is down from some of its locations, fewer than its quorum.",
    }[event.kind]
    lines = [
        lead,
        "",
        f"URL: {redact_url(event.monitor_url)}",
        f"Cause: {event.cause}",
        f"HTTP status: {event.http_status if event.http_status is not None else 'none (no answer)'}",
        f"Down since: {clock.iso_from_ms(event.started_at_ms)}",
    ]
    if event.resolved_at_ms is not None and event.kind == "up":
        lines += [f"Up since: {clock.iso_from_ms(event.resolved_at_ms)}", f"Down for: {_down_for(event)}"]
    if event.kind == "paused":
        lines += ["", f"To probe it again: monitor-tick resume '{name}'"]
    return Message(f"{TITLES[event.kind]}: {name}", "\n".join(lines), NOTIFY_TYPES[event.kind], (event.event_id,))


def summary(kind: str, events: Sequence[EventInfo]) -> Message:
    """One message for many events of one kind (a storm)."""
    lines = []
    for e in events:
        if kind == "up":
            detail = f"up after {_down_for(e)} down"
        else:
            detail = f"{e.cause} since {clock.iso_from_ms(e.started_at_ms)}"
        lines.append(f"- {e.monitor_name}: {detail} ({redact_url(e.monitor_url)})")
    verb = {
        "down": "are down",
        "up": "are up again",
        "reminder": "are still down",
        "paused": "were paused after a long outage (monitor-tick resume NAME probes one again)",
        "partial": "are down from some of their locations",
    }[kind]
    body = f"{len(events)} monitors {verb}:\n" + "\n".join(lines)
    return Message(
        f"{TITLES[kind]}: {len(events)} monitors", body, NOTIFY_TYPES[kind], tuple(e.event_id for e in events)
    )


def compose(events: Sequence[EventInfo]) -> list[Message]:
    """One channel's messages for its events, oldest first. A kind with more than
    STORM_THRESHOLD events becomes one summary, placed where its first event was."""
    by_kind: dict[str, list[EventInfo]] = {}
    for event in events:
        by_kind.setdefault(event.kind, []).append(event)
    messages: list[Message] = []
    summarised: set[str] = set()
    for event in sorted(events, key=lambda e: e.event_id):
        group = by_kind[event.kind]
        if len(group) <= STORM_THRESHOLD:
            messages.append(message(event))
        elif event.kind not in summarised:
            summarised.add(event.kind)
            messages.append(summary(event.kind, group))
    return messages


def trial_message(now_ms: int) -> Message:
    return Message(
        "monitor-tick test",
        f"A test message from monitor-tick, sent {clock.iso_from_ms(now_ms)}. This channel works.",
        "info",
        (),
    )


# ---------------------------------------------------------------------------------------------
# Retries


def retry_at_ms(attempts: int, now_ms: int) -> int:
    """When a delivery that has failed `attempts` times (>= 1) is tried next."""
    delay_ms = RETRY_FIRST_MS * 2 ** min(max(attempts - 1, 0), 16)
    return now_ms + min(delay_ms, RETRY_MAX_MS)


def gives_up(event_created_at_ms: int, now_ms: int) -> bool:
    """True when a failed delivery of an event this old is not tried again."""
    return now_ms - event_created_at_ms >= GIVE_UP_AFTER_MS


# ---------------------------------------------------------------------------------------------
# Our own outage


# Causes of a check that never reached the site's host: the name did not resolve, or the
# connection failed without an answer (network unreachable and the like). A refused or reset
# connection is an answer from the remote host, so our network works: those never count.
NETWORK_CAUSES = frozenset({"dns", "connect error"})


# the kinds whose causes name them before a connection's failure ('smtp: dns')
_CONNECTION_KINDS = (
    "tcp: ",
    "tls: ",
    "smtp: ",
    "ssh: ",
    "ws: ",
    "postgresql: ",
    "mysql: ",
    "redis: ",
    "docker: ",
    "dns: ",
    "icmp: ",
)


def is_network_failure(result: CheckResult) -> bool:
    """A down check that never reached the site (http, or a cause prefixed with its kind alike)."""
    cause = result.cause or ""
    for prefix in _CONNECTION_KINDS:
        cause = cause.removeprefix(prefix)
    return result.status == "down" and cause in NETWORK_CAUSES


def network_lost(results: Sequence[CheckResult], canary: CheckResult | None = None) -> bool:
    """Whether this tick's failures are the probe host's own lost network: only on positive
    evidence, a canary check (probed when some check failed at network level) that failed at
    network level too. A canary that answered -- a 404, a 503, a refusal -- proves our network
    works. Without a canary nothing is set aside, however many checks failed alike: one home
    server losing power, or the DNS of the one domain all monitors live under, looks the same.
    `results` leaves out checks of this host itself (see `offline`): they say nothing of the
    network."""
    if canary is None:
        return False
    return is_network_failure(canary) and any(is_network_failure(r) for r in results)


OFFLINE_CAUSE = "network lost"


def offline(results: Sequence[CheckResult], host_local: Collection[int] = ()) -> list[CheckResult]:
    """The results of a tick whose network was lost: checks that never reached their host become
    unknown (counted neither way, so they open nothing); up checks, and down checks that got an
    answer (a 503, a missing keyword, a refusal), are real answers and stay. So do the checks of
    `host_local` monitors (ids: a loopback address, a unix socket): they never crossed a network,
    so whatever failed them is this host's own, never the network's."""
    return [
        r._replace(status="unknown", cause=f"{OFFLINE_CAUSE} ({r.cause})")
        if is_network_failure(r) and r.monitor_id not in host_local
        else r
        for r in results
    ]


def is_offline(result: CheckResult) -> bool:
    """A check set aside by `offline`."""
    return result.status == "unknown" and (result.cause or "").startswith(OFFLINE_CAUSE)
