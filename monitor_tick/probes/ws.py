"""ws://host[:port]/path and wss://...: a WebSocket server's opening handshake, then a clean close.

Up when the server switches protocols (101, with a valid Sec-WebSocket-Accept) within the
deadline and then completes the closing handshake the probe starts (close code 1000 back, within
a second). A server that answers the upgrade with another status is down with it (`ws: status
403`; a redirect is not followed, as Uptime Kuma's check does not follow one either), and so is
an HTTP/1.0 server, which cannot upgrade (`ws: status 200 (HTTP/1.0, no upgrade)`); one that
closes with another code, or drops the connection without a close frame, is down too. wss://
is verified like an HTTPS request, and with --expires-within its certificate is judged as an
https:// monitor's is; a port without TLS is `tls: not spoken by the server`, as for https://
and tls://. The latency is the opening handshake's. A user and password in the URL are sent as basic auth, and, like the
query, never printed.

The protocol is the `websockets` library's (the `ws` extra): framing, the accept key and the
closing handshake, from a maintained library with no dependencies of its own. It is imported
only when a ws:// monitor is probed, and its connect is given the address the guard checked
(--block-private) while the name stays the Host and the TLS server name.
"""

from __future__ import annotations

import functools
import re
import time
from urllib.parse import urlsplit

from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import latency, request
from monitor_tick.probes.base import Kind, ProbeContext, failed_conditions
from monitor_tick.probes.net import (
    CLOSE_WAIT_S,
    cert_expires_at_ms,
    check_expires_within,
    expiry_cause,
    tls_handshake,
    upgraded_cause,
)
from monitor_tick.probes.request import USER_AGENT

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

EXTRA = "monitor-tick[ws]"
NORMAL_CLOSURE = 1000
ABNORMAL_CLOSURE = 1006  # no close frame came (RFC 6455 7.1.5)
# websockets' words for a status line of another HTTP version: "... expected HTTP/1.1: HTTP/1.0 200 OK"
# compiled on first use (re's cache): a tick of other kinds never needs it
_OLDER_HTTP = r"expected HTTP/1\.1: HTTP/([0-9](?:\.[0-9])?) ([1-5][0-9][0-9])\b"


async def probe_ws(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    parts = urlsplit(monitor.url)
    secure = parts.scheme.lower() == "wss"
    host = parts.hostname
    port = parts.port or (443 if secure else 80)
    assert host is not None  # checked when the monitor was loaded
    connect, errors = _websockets()
    start = time.perf_counter()
    connection = None
    try:
        async with asyncio.timeout(monitor.timeout_s):
            where: dict[str, Any] = {}
            if ctx.guard is not None:  # connect to the checked address; the name stays Host and SNI
                where = {"host": await ctx.guard.resolve(host, port), "port": port}
            if secure:
                where |= {"ssl": ctx.tls(), "server_hostname": host}
            connection = await connect(
                monitor.url,
                proxy=None,  # as http monitors: never through a proxy from the environment
                open_timeout=None,  # the deadline above is the one limit
                close_timeout=CLOSE_WAIT_S,
                ping_interval=None,
                compression=None,
                user_agent_header=USER_AGENT,
                **where,
            )
            latency_ms = elapsed_ms(start, time.perf_counter())
            cert = connection.transport.get_extra_info("peercert") if secure else None
            await connection.close(NORMAL_CLOSURE)
    except TimeoutError:
        return ProbeResult("down", None, None, "ws: timeout")
    except errors.InvalidStatus as exc:
        return ProbeResult("down", None, None, f"ws: status {exc.response.status_code}")
    except errors.InvalidMessage as exc:  # no HTTP/1.1 answer: closed, an older HTTP, or another protocol
        return ProbeResult("down", None, None, _unanswered_cause(exc))
    except errors.InvalidHandshake as exc:
        return ProbeResult("down", None, None, f"ws: bad handshake ({type(exc).__name__})")
    except OSError as exc:  # ssl.SSLError too
        return ProbeResult("down", None, None, upgraded_cause("ws", exc))
    finally:
        if connection is not None:  # cut off while closing (the deadline): not left open
            connection.transport.abort()
    closing = _closing_cause(connection.close_code)
    expires_at_ms = cert_expires_at_ms(cert) if monitor.expires_within_sec is not None else None
    expiry = expiry_cause(monitor, ctx.now_ms, expires_at_ms) if monitor.expires_within_sec is not None else None
    cause = failed_conditions(closing, expiry)
    return ProbeResult("down" if cause else "up", latency_ms, None, cause, expires_at_ms)


def _unanswered_cause(exc: BaseException) -> str:
    """Why the opening handshake got no HTTP/1.1 answer (websockets' InvalidMessage): the
    connection closed, an HTTP/1.0 server answered (which cannot upgrade: it answers with its
    status, as a refusal), or something else speaks there."""
    if isinstance(exc.__cause__, EOFError | ConnectionError):
        return "ws: connection closed"
    older = re.search(_OLDER_HTTP, str(exc.__cause__))
    if older is not None:
        return f"ws: status {older[2]} (HTTP/{older[1]}, no upgrade)"
    return "ws: not an HTTP answer"


def _closing_cause(code: int | None) -> str | None:
    """Why the closing handshake failed (`code`: what the server closed with; 1006, or None
    while still closing, when no close frame came)."""
    if code is None or code == ABNORMAL_CLOSURE:
        return "ws: closed without a close frame"
    return None if code == NORMAL_CLOSURE else f"ws: closed with {code}"


def _check(monitor: Monitor) -> None:
    parts = urlsplit(monitor.url)
    if not parts.hostname:
        raise InvalidMonitor("url has no host")
    if parts.port == 0:
        raise InvalidMonitor("port 0 cannot be connected to")
    if parts.fragment:
        raise InvalidMonitor(f"{parts.scheme.lower()}:// takes no #fragment")
    if parts.username is not None and parts.password is None:
        raise InvalidMonitor("a user in a ws:// url needs a password: ws://user:password@host/")
    if monitor.expires_within_sec is not None and parts.scheme.lower() != "wss":
        raise InvalidMonitor("--expires-within needs a wss:// url")
    check_expires_within(monitor)
    request.check_own_trust(monitor, parts.scheme.lower() == "wss", "a wss:// url")
    latency.check(monitor)


@functools.cache
def available() -> str | None:
    """None when the websockets library is installed; else why ws:// cannot be probed here."""
    import importlib.util  # only when a ws:// monitor is due: a tick of other kinds never needs it

    if importlib.util.find_spec("websockets") is None:
        return f"ws:// needs the websockets library: pip install '{EXTRA}'"
    return None


KIND = Kind(
    name="ws",
    schemes=("ws", "wss"),
    usage="ws(s)://host[:port]/path",
    probe=latency.judged(request.own_trust(probe_ws)),
    check=_check,
    options=frozenset({"timeout_s", "retries", "expires_within_sec", latency.OPTION, "ca_file"}),
    host_check=available,
)


# websockets, imported when a ws:// monitor is first probed (see the docstring)
@functools.cache
def _websockets() -> tuple[Any, Any]:
    """(its connect, without redirects; its exceptions module)."""
    import websockets.asyncio.client
    import websockets.exceptions

    class Connect(websockets.asyncio.client.connect):
        def process_redirect(self, exc: Exception) -> Exception | str:
            return exc  # a redirect is the server's answer, as any status other than 101

        async def open_tcp_connection(self) -> Any:
            """The connection, and for wss:// its TLS handshake (net.NotTls when the peer hangs
            up during it: a plain port)."""
            if not self.ws_uri.secure:
                return await super().open_tcp_connection()
            with tls_handshake():
                return await super().open_tcp_connection()

    return Connect, websockets.exceptions
