"""What the database kinds share (postgresql://, mysql://, redis://): their URL, its user and
password, where the driver connects, and the causes every driver's failures have in common.

Secrets. The user and password in the URL may be, or hold, `${ENV_VAR}` references, which each
tick resolves before the probe sees the URL, as for every kind (probes.resolved: a variable that
is not set is a configuration error, said hourly; a value is percent-encoded in the user info,
so a password keeps its '@' and '/'). A literal password is stored as given
and never printed: output shows URLs through core/redact.py, and causes are our own words,
never a driver's message (those carry user names, addresses and the server's own text).

Where to connect. A driver resolves a name itself, which would skip --block-private's address
guard. Under the guard the name is resolved and checked here first, and the driver connects to
that address while keeping the name for TLS (libpq's hostaddr beside host, server_hostname for
redis-py, our own socket handed to PyMySQL). A unix socket is refused under the guard: it is
this machine's own, never a public address (a configuration error, said hourly, as every
refusal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.core.records import NamedTuple
from monitor_tick.probes import request
from monitor_tick.probes.guard import UNIX_SOCKETS, AddressGuard, BlockedAddress
from monitor_tick.probes.net import (
    cause_of_os_error,
    cert_expires_at_ms,
    check_expires_within,
    expiry_cause,
    prefixed,
)

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

AUTHENTICATION_FAILED = "authentication failed"
NO_DATABASE = "database does not exist"
TOO_MANY_CONNECTIONS = "too many connections"
SOCKET_NOT_FOUND = "socket not found"
PROTOCOL_ERROR = "protocol error"  # what answered does not speak the kind's protocol


class Target(NamedTuple):
    """A checked database URL's parts. `host` is None for a unix socket (`socket`: its path,
    or libpq's socket directory); user and password are percent-decoded."""

    host: str | None
    port: int
    socket: str | None
    user: str | None
    password: str | None
    path: str
    params: Mapping[str, str]

    async def address(self, guard: AddressGuard | None) -> str | None:
        """Under `guard`, the address the driver must connect to (the name resolved and checked;
        raises BlockedAddress, also for a unix socket); else None: the driver resolves the name."""
        if guard is None:
            return None
        if self.host is None:
            raise BlockedAddress(UNIX_SOCKETS)
        return await guard.resolve(self.host, self.port)


def target_of(
    monitor: Monitor, *, default_port: int, params: tuple[str, ...] = (), socket_param: str | None = None
) -> Target:
    """The parts of scheme://[user[:password]@]host[:port][/path][?params]. `params` are the
    query parameters the kind takes (each at most once); `socket_param` among them names a unix
    socket, when the URL's host is empty or `localhost`. Raises InvalidMonitor."""
    parts = urlsplit(monitor.url)
    scheme = parts.scheme.lower()
    if parts.fragment:
        raise InvalidMonitor(f"{scheme}:// takes no #fragment")
    if parts.port == 0:
        raise InvalidMonitor("port 0 cannot be connected to")
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    names = [name for name, _ in pairs]
    unknown = sorted(set(names) - set(params))
    if unknown:
        # the parameter is not named: a bare '?word' may be a password typed in the wrong place
        takes = f"only {', '.join(params)}" if params else "no parameters"
        raise InvalidMonitor(f"{scheme}:// takes {takes} in its query")
    if len(set(names)) != len(names):
        raise InvalidMonitor(f"{scheme}:// takes each parameter once")
    values = dict(pairs)
    socket = values.get(socket_param) if socket_param else None
    host = parts.hostname
    if socket is not None:
        if not socket.startswith("/"):
            raise InvalidMonitor(f"{socket_param} must be an absolute path")
        if host not in (None, "localhost"):
            raise InvalidMonitor(f"{scheme}:// with {socket_param}= takes no host but localhost")
        host = None
    elif not host:
        raise InvalidMonitor("url has no host")
    return Target(
        host=host,
        port=parts.port or default_port,
        socket=socket,
        user=None if parts.username is None else unquote(parts.username),
        password=None if parts.password is None else unquote(parts.password),
        path=unquote(parts.path.removeprefix("/")),
        params=values,
    )


def check_login(scheme: str, target: Target, usage: str) -> None:
    """A URL that names the user (a driver's default, the OS user cron runs as, would differ from
    host to host) and at most one database. Raises InvalidMonitor."""
    if not target.user:  # none, or an empty one (mysql://:password@host)
        raise InvalidMonitor(f"{scheme}:// needs a user: {usage}")
    if "/" in target.path:
        raise InvalidMonitor(f"{scheme}:// takes one database name after the host")


def check_tls_options(monitor: Monitor, tls: bool, needs: str) -> None:
    """--expires-within and --ca-file, which only a URL that requires TLS can use (`needs` says how)."""
    if monitor.expires_within_sec is not None and not tls:
        raise InvalidMonitor(f"--expires-within needs {needs}")
    check_expires_within(monitor)
    request.check_own_trust(monitor, tls, needs)


def answered(monitor: Monitor, now_ms: int, latency_ms: int, cert: dict[str, Any] | None, tls: bool) -> ProbeResult:
    """The result of a check the server answered: up, unless the certificate it verified over
    TLS expires within --expires-within (when given)."""
    expires_at_ms = cert_expires_at_ms(cert) if tls else None
    cause = expiry_cause(monitor, now_ms, expires_at_ms) if monitor.expires_within_sec is not None else None
    return ProbeResult("down" if cause else "up", latency_ms, None, cause, expires_at_ms)


def driver_check(module: str, package: str, extra: str) -> Callable[[], str | None]:
    """Kind.host_check of a kind whose driver comes from an extra: why this machine cannot probe
    its monitors (the driver is not installed), or None. Finds the module without importing it."""

    def missing() -> str | None:
        import importlib.util  # only when a monitor of the kind is due: a tick of others never needs it

        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed: pip install 'monitor-tick[{extra}]'"
        return None

    return missing


def os_cause(kind: str, exc: BaseException) -> str:
    """'mysql: connect refused', 'redis: timeout', 'postgresql: blocked: ...' for a socket or
    TLS error (ssl.SSLError is an OSError), and for TimeoutError."""
    if isinstance(exc, TimeoutError):
        return f"{kind}: timeout"
    if isinstance(exc, FileNotFoundError):  # a unix socket: the server is not running here
        return f"{kind}: {SOCKET_NOT_FOUND}"
    cause = cause_of_os_error(exc)
    return prefixed(kind, "tls: handshake failed" if cause == "tls" else cause)
