"""What a probe kind is, and what probes share within one tick (no kind is defined here)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from urllib.parse import urlsplit

from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.core.records import NamedTuple

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import ssl
    from typing import Any, Protocol

    from monitor_tick.probes.curl import Engine
    from monitor_tick.probes.guard import AddressGuard


TlsSetting = tuple[str | None, bool]  # (ca_file, insecure): request.tls_setting


if TYPE_CHECKING:

    class Contexts(Protocol):
        """The tick's trust by TLS setting (None: the tick's default), each made when a check
        first needs it (request.Contexts): SSL contexts for the kinds that speak TLS themselves,
        curl's options for HTTP checks."""

        def context(self, setting: TlsSetting | None) -> ssl.SSLContext: ...

        def curl_trust(self, setting: TlsSetting | None) -> dict[int, object]: ...

        def proxies(self) -> dict[str, str]: ...


_EMPTY: Mapping[Any, Any] = MappingProxyType({})  # the default of a Mapping field: never written to


class ProbeContext(NamedTuple):
    """What probes share within one tick."""

    # the tick's HTTP engine (libcurl's multi, curl.Engine), which HTTP and docker:// checks use
    engine: Engine | None
    # the tick's one clock reading (a replayed minute's start under --minute)
    now_ms: int
    # what TLS probes trust (None: the tick's, which `contexts` makes when a check first needs
    # it: tls())
    ssl_context: ssl.SSLContext | None
    # kind name -> monitor id -> what the tick read for that kind before probing (tick.KIND_READS)
    loaded: Mapping[str, Mapping[int, Any]] = _EMPTY
    # --block-private: connections (http, tls, tcp alike) only to addresses it allows
    guard: AddressGuard | None = None
    # the tick's trust by TLS setting; monitors that verify TLS their own way (--ca-file,
    # --insecure) get their own
    contexts: Contexts | None = None

    def tls(self) -> ssl.SSLContext:
        """The SSL context a TLS connection verifies with: ssl_context, or the tick's, made on
        first use (an SSL context costs half a megabyte, which a tick without TLS never needs)."""
        if self.ssl_context is not None:
            return self.ssl_context
        if self.contexts is None:
            raise ValueError("a ProbeContext needs an ssl_context or contexts")
        return self.contexts.context(None)


Probe = Callable[[Monitor, ProbeContext], Awaitable[ProbeResult]]

DEFAULT_OPTIONS = frozenset({"timeout_s", "retries"})
NOT_HERE = "cannot be probed here: "  # how the cause of a configuration error begins


def not_here(reason: str) -> ProbeResult:
    """What a probe answers when this machine's configuration stops it, not the target (a socket
    this user may not open): like Kind.unusable's reasons, the tick records no check and says
    `reason` once an hour. Unknown, so it is never retried."""
    return ProbeResult("unknown", None, None, NOT_HERE + reason)


def is_not_here(cause: str | None) -> bool:
    """Whether a probe's cause is a configuration error (not_here)."""
    return cause is not None and cause.startswith(NOT_HERE)


def loopback(host: str | None) -> str | None:
    """'a loopback address' when `host` (a URL's host) is this machine itself: a loopback or
    unspecified address, or a `localhost` name (RFC 6761); else None. A name is not resolved:
    one that resolves to 127.0.0.1 is not seen here."""
    if not host:
        return None
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return "a loopback address"
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return "a loopback address" if address.is_loopback or address.is_unspecified else None


def url_host_local(monitor: Monitor) -> str | None:
    """Kind.host_local for a kind whose URL's host is what it connects to."""
    try:
        return loopback(urlsplit(monitor.url).hostname)
    except ValueError:
        return None


class Kind(NamedTuple):
    """Everything that differs between kinds of monitor.

    name      the `kind` column's value
    schemes   URL schemes that select it; a bare word (`heartbeat`) selects a kind with no address
    usage     how to write its URL (for `add --help` and the manual, docs/monitors.md)
    probe     async (monitor, ctx) -> ProbeResult; never raises for what a remote end does
    check     raises InvalidMonitor for a URL or option this kind cannot use
    options   the model.OPTIONS a user may set for it; the others must keep their defaults
    defaults  its values for options, where they differ from Monitor's
    pinged    it waits for pings (identified by a token) instead of probing; `add` prints the token
    unusable  why this tick cannot probe a valid monitor of it here and now (its environment),
              or None: a configuration error the tick reports hourly, never down
    host_check  why this machine cannot probe any monitor of this kind (icmp: ping not allowed),
              or None; as `unusable`: the tick that had it due stores the finding, and `list`
              then shows the monitor `invalid`
    host_local  what makes a monitor's target this machine itself ('a loopback address', 'a unix
              socket'), or None: its failure never crossed a network, so a failed network canary
              never sets it aside, and a fleet refuses it (each host would probe its own)
    instead   option -> what to write instead, for an option it does not take but does otherwise
              (postgresql's CA is its URL's sslrootcert, not --ca-file)
    """

    name: str
    schemes: tuple[str, ...]
    usage: str
    probe: Probe
    check: Callable[[Monitor], None]
    options: frozenset[str] = DEFAULT_OPTIONS
    defaults: Mapping[str, Any] = _EMPTY
    pinged: bool = False
    unusable: Callable[[Monitor], str | None] = lambda monitor: None
    host_check: Callable[[], str | None] = lambda: None
    host_local: Callable[[Monitor], str | None] = url_host_local
    instead: Mapping[str, str] = _EMPTY


MAX_CONDITION_CHARS = 120  # of one failed condition's cause; a check has at most six conditions
# compiled on first use, by re's cache (re.sub(PATTERN, ...)): only a failed condition needs it
_LINE_BREAKERS = "[\x00-\x1f\x7f-\x9f\u2028\u2029]"


def failed_conditions(*causes: str | None) -> str | None:
    """The cause of a check that failed these conditions (None: passed), in the order given:
    `slow: 412 ms > 150 ms; json: body is not JSON`, as Gatus lists every failed condition.
    None when none failed. One line, each condition's cause at most MAX_CONDITION_CHARS (a
    setting quoted in it, a --json-field's path, is a user's text of any length)."""
    shown = [_one_short_line(cause) for cause in causes if cause is not None]
    return "; ".join(shown) if shown else None


def _one_short_line(cause: str) -> str:
    cause = re.sub(_LINE_BREAKERS, lambda ch: f"\\u{ord(ch.group()):04x}", cause)
    return cause if len(cause) <= MAX_CONDITION_CHARS else cause[: MAX_CONDITION_CHARS - 3] + "..."
