"""What both fan-outs share (fanout.py on asyncio's loop, bare.py on the bare loop): the order in
which a tick's probes start, which monitors go to httpx at once, the result of a probe the budget
cut off, and whether a tick's plain HTTP checks go straight on the wire. Imports no asyncio."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from monitor_tick.core import clock
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult, Recent
from monitor_tick.core.redact import redact_url
from monitor_tick.probes import resolved, wire
from monitor_tick.probes.request import hide_values

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import httpx

    from monitor_tick.probes.guard import AddressGuard

MIN_ATTEMPT_S = 0.1  # a retry with less time left than this is not worth starting
CUT_OFF = ProbeResult("unknown", None, None, "cut off by the tick's time budget")
# From this many HTTP checks a tick, plain ones go straight on the wire (probes/wire.py): from
# one, since a tick whose checks all go on the wire never imports httpx (bench/run.py, figure 8,
# and the curve of figure 11: no size at which httpx costs less). Tests raise it to send a small
# tick's checks through httpx.
FAST_PATH_FROM = 1
# A monitor whose check saw a response the fast path hands to httpx (a redirect) goes to httpx
# at once (to_httpx) until this many intervals have passed without httpx seeing one again; then
# the fast path tries it again, once.
WIRE_AGAIN_AFTER_CHECKS = 60


def fast_path(checks: int, transport: httpx.AsyncBaseTransport | None, guard: AddressGuard | None) -> bool:
    """Whether this tick's plain HTTP checks go straight on the wire (from FAST_PATH_FROM of
    them), unless a transport is handed in (tests mock through it), --block-private is on (the
    guard checks every connection inside httpx's transport) or a proxy is set in the environment
    (httpx's to use)."""
    return checks >= FAST_PATH_FROM and transport is None and guard is None and not wire.proxied()


def to_httpx(monitor: Monitor, handed_at_ms: int | None, now_ms: int) -> bool:
    """Whether this monitor's check goes to httpx at once, not first on the wire: a check of it
    saw a response the fast path hands to httpx (at `handed_at_ms`, store.recent_rollups) less
    than WIRE_AGAIN_AFTER_CHECKS intervals before `now_ms`. Otherwise the fast path would send
    its GET every tick only to hand the response over, and httpx would send it again.

    Every check through httpx that is redirected again is a new hand-over (http.probe_http), so a
    monitor that redirects stays with httpx and no GET of it is sent twice. One that stopped
    redirecting, or whose hand-over httpx cannot see (an informational status, a head that
    httptools refuses), goes on the wire again WIRE_AGAIN_AFTER_CHECKS intervals after its last
    hand-over, and stays there if the fast path takes its response (an hour for a monitor checked
    every minute; the tick forgets the hand-over then)."""
    if handed_at_ms is None:
        return False
    return now_ms - handed_at_ms < WIRE_AGAIN_AFTER_CHECKS * clock.s_to_ms(monitor.effective_interval_sec)


def handed_over(recent: Mapping[int, Recent]) -> dict[int, int]:
    """ProbeContext.handed: monitor id -> when its check last saw a response the fast path hands
    to httpx, of the monitors that have one remembered (`recent`: store.recent_rollups)."""
    return {monitor_id: handed_at_ms for monitor_id, (*_, handed_at_ms) in recent.items() if handed_at_ms is not None}


def failed_inside(monitor: Monitor, exc: BaseException) -> ProbeResult:
    """A bug in a probe of `monitor`: that monitor's failed check, never the tick's, said in one
    line on stderr (shown: no secret)."""
    detail = shown(str(exc), monitor)
    print(
        f"monitor-tick: probe of monitor {monitor.id} failed inside monitor-tick: {type(exc).__name__}: {detail}",
        file=sys.stderr,
    )
    return ProbeResult("down", None, None, f"probe error: {type(exc).__name__}")


def shown(text: str, monitor: Monitor) -> str:
    """`text` with the monitor's URL, as stored or as its probe was sent it, redacted, and any
    other value the tick resolved for it named by its reference."""
    try:
        sent = resolved(monitor).url
    except InvalidMonitor:
        sent = monitor.url
    for url in dict.fromkeys((sent, monitor.url)):
        text = text.replace(url, redact_url(monitor.url))
    return hide_values(text, monitor)


_NEVER_CHECKED: Recent = (0, None, -1, None)


def start_order(monitors: Sequence[Monitor], recent: Mapping[int, Recent], minute: int) -> list[int]:
    """Indexes of `monitors` in the order their probes start in `minute`.

    `recent` maps a monitor id to its newest rollup hour (store.recent_rollups). Three groups,
    each whole before the next:
    1. monitors whose previous due check was decided and that have no failure in their newest
       hour: they were up, and cost milliseconds, so a host that hangs never keeps them waiting;
       the slowest first (longest-processing-time-first keeps the makespan near its bound);
    2. monitors whose previous due check was not decided -- no check since the start of the
       minute one interval back: cut off by the budget, never checked, or monitor-tick was not
       running -- the longest waiting first, so none is cut off for ever;
    3. monitors that failed in their newest hour (a hanging host among them): each counts as its
       whole timeout, the longest first."""
    minute_start_ms = clock.minute_start_ms(minute)

    def key(index: int) -> tuple[int, float, int]:
        monitor = monitors[index]
        failures, latency_ms_max, last_check_ms, _ = recent.get(monitor.id, _NEVER_CHECKED)
        if last_check_ms < minute_start_ms - clock.s_to_ms(monitor.effective_interval_sec):
            return (2, last_check_ms, index)  # undecided: oldest last check first
        if failures:
            return (3, -monitor.timeout_s, index)
        return (1, -(latency_ms_max or 0), index)

    return sorted(range(len(monitors)), key=key)
