"""heartbeat: a monitor that waits to be pinged instead of probing (cron jobs, backups).

A job signals with `monitor-tick ping NAME` (or over HTTP through `monitor-tick serve`); each
signal is a result, stored in `pings` by whoever received it, never by the tick. When the
monitor is due, the tick has already read its last signal (store.heartbeat_pings, one query for all
due heartbeats) and the probe only compares instants:

    down  no ping for longer than the period (interval_sec) plus grace_sec -- counted from
          when the monitor was added while it has never been pinged;
    down  the last ping reported a failure (`ping --fail`);
    up    otherwise.
"""

from __future__ import annotations

from monitor_tick.core.clock import format_duration_s, ms_to_s, parse_duration_s, s_to_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, Pings, ProbeResult, check_seconds
from monitor_tick.probes.base import Kind, ProbeContext

NAME = "heartbeat"
DEFAULT_GRACE_SEC = int(parse_duration_s("1h"))
TOKEN_BYTES = 32  # 256 random bits: 43 URL-safe characters


def new_token() -> tuple[str, bytes]:
    """A fresh ping token and the digest that is stored in its place."""
    import secrets  # deferred, as hashlib below: a tick never makes a token

    token = secrets.token_urlsafe(TOKEN_BYTES)
    return token, token_digest(token)


def token_digest(token: str) -> bytes:
    """SHA-256 of a token: what the database holds and what a received token is looked up by."""
    # deferred: hashlib (and secrets, with random) load OpenSSL's hashes, about 0.9 MB of every
    # tick that probes anything, and the tick never looks a token up
    import hashlib

    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


async def probe_heartbeat(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    pings: Pings | None = ctx.loaded.get(NAME, {}).get(monitor.id)
    if pings is None:  # removed between selection and loading
        return ProbeResult("unknown", None, None, "heartbeat: monitor is gone")
    grace_sec = monitor.grace_sec or 0
    since_ms = pings.created_at_ms if pings.last_ping_ms is None else pings.last_ping_ms
    silent_ms = ctx.now_ms - since_ms
    if silent_ms > s_to_ms(monitor.interval_sec + grace_sec):
        silence = format_duration_s(ms_to_s(silent_ms))
        what = f"no ping since it was added {silence} ago" if pings.last_ping_ms is None else f"no ping for {silence}"
        return ProbeResult("down", None, None, f"heartbeat: {what} (grace {format_duration_s(grace_sec)})")
    if pings.last_ping_failed:
        return ProbeResult("down", None, None, "heartbeat: job reported failure")
    return ProbeResult("up")


def _check(monitor: Monitor) -> None:
    if monitor.url != NAME:
        raise InvalidMonitor(f"a heartbeat's url is the word {NAME!r}")
    check_seconds(monitor.grace_sec, "--grace", minimum=0)


KIND = Kind(
    name=NAME,
    schemes=(NAME,),
    usage=NAME,
    probe=probe_heartbeat,
    check=_check,
    options=frozenset({"grace_sec"}),
    # nothing remote can fail transiently: a retry would read the same rows
    defaults={"grace_sec": DEFAULT_GRACE_SEC, "retries": 0},
    pinged=True,
)
