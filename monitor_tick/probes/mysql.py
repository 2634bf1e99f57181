"""mysql://user[:password]@host[:port][/dbname] (mariadb:// too): up when the server lets the user
in and answers a ping (COM_PING) within the deadline; then the connection is closed (COM_QUIT).

Port 3306 unless given; the database is optional (the login is refused when the user may not
use it). `unix_socket=/path` connects to a socket instead, in a URL whose host is empty or
`localhost` (`mysql://user@localhost?unix_socket=/run/mysqld/mysqld.sock`). `tls=1` requires
TLS and verifies the certificate as tls:// does (the tick's trust, the URL's name), and judges
its expiry with --expires-within when given; without it, TLS is used when the server offers
it, unverified (PyMySQL's default, as libpq's sslmode=prefer).

Through PyMySQL (the `mysql` extra), imported only when such a monitor is probed, on a thread,
rather than aiomysql. PyMySQL takes a socket that is already connected: the connection is
opened here, on the event loop, to the address --block-private checked, and PyMySQL verifies
TLS against the URL's name. aiomysql connects by name itself, and would verify TLS against the
address it was given instead. PyMySQL is also the better kept of the two (aiomysql builds on
it, pinned to its versions). Its timeouts are the deadline left, and when the deadline passes
first, the socket is shut down, so that the thread ends with the probe. Whichever of the two
ends a wait, the cause is `mysql: timeout`.
"""

from __future__ import annotations

import socket
import time
from types import ModuleType

from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import database, latency, request
from monitor_tick.probes.base import Kind, ProbeContext

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import ssl
    from typing import Any

DEFAULT_PORT = 3306
USAGE = "mysql://user[:password]@host[:port][/dbname]"

# The server's error numbers (ER_*) and the client's (CR_*) that have a cause of their own.
_ERRORS = {
    1045: database.AUTHENTICATION_FAILED,  # ER_ACCESS_DENIED_ERROR
    1698: database.AUTHENTICATION_FAILED,  # ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    1044: "access to the database denied",  # ER_DBACCESS_DENIED_ERROR
    1049: database.NO_DATABASE,  # ER_BAD_DB_ERROR
    1040: database.TOO_MANY_CONNECTIONS,  # ER_CON_COUNT_ERROR
    1203: database.TOO_MANY_CONNECTIONS,  # ER_TOO_MANY_USER_CONNECTIONS
    1129: "host blocked",  # ER_HOST_IS_BLOCKED (too many connection errors)
    1130: "host not allowed",  # ER_HOST_NOT_PRIVILEGED
    2013: "connection lost",  # CR_SERVER_LOST
    2059: "authentication method not supported",  # CR_AUTH_PLUGIN_CANNOT_LOAD
    2026: "tls: not offered by the server",  # CR_SSL_CONNECTION_ERROR
}


async def probe_mysql(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    target = _target(monitor)
    start = time.perf_counter()
    pymysql = _pymysql()
    try:
        async with asyncio.timeout(monitor.timeout_s):
            address = await target.address(ctx.guard)
            sock = await _open(target, address)
            try:
                tls = ctx.tls() if _tls(target) else None
                login = _login(pymysql, target, tls, monitor.timeout_s - (time.perf_counter() - start))
            except BaseException:
                sock.close()
                raise
            # from here the thread owns the socket and closes it; when the deadline passes first,
            # the socket is shut down, so that the thread's read fails at once and it ends
            pinged = asyncio.get_running_loop().run_in_executor(None, _ping, login, sock)
            try:
                cert = await pinged
            except BaseException:
                _shut_down(sock)
                raise
            latency_ms = elapsed_ms(start, time.perf_counter())
    except OSError as exc:  # TimeoutError, the guard's refusal, connect errors
        return ProbeResult("down", None, None, database.os_cause("mysql", exc))
    except pymysql.err.Error as exc:
        return ProbeResult("down", None, None, f"mysql: {cause_of_error(pymysql, exc)}")
    return database.answered(monitor, ctx.now_ms, latency_ms, cert, tls is not None)


async def _open(target: database.Target, address: str | None) -> socket.socket:
    """A socket connected to the server (to `address` when given, else each address of the
    host in turn), on the event loop. Raises OSError."""
    import asyncio

    loop = asyncio.get_running_loop()
    if target.host is None:
        assert target.socket is not None  # checked when the monitor was loaded
        infos: list[tuple[Any, ...]] = [(socket.AF_UNIX, socket.SOCK_STREAM, 0, "", target.socket)]
    else:
        infos = await loop.getaddrinfo(address or target.host, target.port, type=socket.SOCK_STREAM)
    failure: OSError | None = None
    for family, kind, proto, _, where in infos:
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, where)
        except OSError as exc:
            sock.close()
            failure = exc
            continue
        except BaseException:  # cancelled: the deadline passed
            sock.close()
            raise
        if family != socket.AF_UNIX:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    assert failure is not None  # getaddrinfo returns at least one address or raises
    raise failure


def _login(pymysql: ModuleType, target: database.Target, tls: ssl.SSLContext | None, timeout_s: float) -> Any:
    """A PyMySQL connection not yet connected, its timeouts `timeout_s` (the deadline left); with
    `tls`, TLS is required and verified with it."""
    user, password = target.user, target.password
    timeout_s = max(timeout_s, 0.001)
    return pymysql.connections.Connection(
        host=target.host or "localhost",  # kept for TLS: the name, never the address connected to
        port=target.port,
        unix_socket=target.socket,
        user=user,
        password=password or "",
        database=target.path or None,
        connect_timeout=timeout_s,
        read_timeout=timeout_s,
        write_timeout=timeout_s,
        local_infile=False,
        defer_connect=True,
        ssl=tls,
    )


def _ping(connection: Any, sock: socket.socket) -> dict[str, Any] | None:
    """Log in over `sock`, ping, and quit (on a thread); the server's certificate when TLS
    verified it. Raises pymysql.err.Error or OSError."""
    sock.setblocking(True)
    connection.connect(sock)  # closes the socket itself when it fails
    try:
        # PyMySQL has no public way to it: its socket, once TLS wrapped it
        secured = connection._sock
        import ssl  # pymysql has imported it

        cert = secured.getpeercert() if isinstance(secured, ssl.SSLSocket) else None
        connection.ping(reconnect=False)
    finally:
        if connection.open:
            connection.close()
    return cert


def _shut_down(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed, or never connected
        pass


def cause_of_error(pymysql: ModuleType, exc: BaseException) -> str:
    """A short cause for a PyMySQL error, from its error number (never the message: it names the
    user and the address)."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    if isinstance(exc.__context__, TimeoutError):
        # PyMySQL's own socket timeout (CR_SERVER_LOST, CR_SERVER_GONE_ERROR): the deadline left,
        # equal to the probe's, so the same fault whichever of the two ends the wait first
        return "timeout"
    original = getattr(exc, "original_exception", None)
    if isinstance(original, OSError):  # CR_CONN_HOST_ERROR: a socket error during the login
        return database.os_cause("mysql", original).removeprefix("mysql: ")
    if code in _ERRORS:
        return _ERRORS[code]
    if isinstance(exc, pymysql.err.OperationalError | pymysql.err.InternalError) and code is not None:
        return f"error {code}"
    return database.PROTOCOL_ERROR


def _target(monitor: Monitor) -> database.Target:
    return database.target_of(
        monitor, default_port=DEFAULT_PORT, params=("unix_socket", "tls"), socket_param="unix_socket"
    )


def _tls(target: database.Target) -> bool:
    return target.params.get("tls") == "1"


def _check(monitor: Monitor) -> None:
    target = _target(monitor)
    database.check_login("mysql", target, USAGE)
    if target.params.get("tls", "1") != "1":
        raise InvalidMonitor("mysql:// tls takes only 1: tls=1 requires TLS")
    database.check_tls_options(monitor, _tls(target), "tls=1 (mysql://...?tls=1)")
    latency.check(monitor)


def _pymysql() -> ModuleType:
    import pymysql

    return pymysql


KIND = Kind(
    name="mysql",
    schemes=("mysql", "mariadb"),
    usage=USAGE,
    probe=latency.judged(request.own_trust(probe_mysql)),
    check=_check,
    host_check=database.driver_check("pymysql", "PyMySQL", "mysql"),
    options=frozenset({"timeout_s", "retries", "expires_within_sec", latency.OPTION, "ca_file"}),
)
