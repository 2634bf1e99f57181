"""redis://[[user]:password@]host[:port][/db] (rediss:// over TLS): up when the server answers PING
with PONG within the deadline (after AUTH and SELECT when the URL asks for them); then the
connection is closed.

Through redis-py's asyncio client (the `redis` extra), imported only when such a monitor is
probed: one connection, no pool, no retries (the tick retries a failed check itself). Port 6379
and database 0 unless given. rediss:// verifies the certificate as tls:// does (the tick's
trust, or --ca-file's CA) and judges its expiry with --expires-within when given.
"""

from __future__ import annotations

import functools
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

DEFAULT_PORT = 6379
TLS_SCHEME = "rediss"
# a server has at most INT_MAX databases (its `databases` setting), numbered from 0: a larger
# number can never be selected
MAX_DATABASE = 2**31 - 2


async def probe_redis(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    target = _target(monitor)
    tls = _scheme(monitor) == TLS_SCHEME
    redis = _redis()
    user, password = target.user, target.password
    start = time.perf_counter()
    connection = None
    try:
        async with asyncio.timeout(monitor.timeout_s):
            address = await target.address(ctx.guard)
            connection = _connection_class(redis)(
                host=address or target.host,
                port=target.port,
                server_name=target.host if tls else None,
                tls=ctx.tls() if tls else None,
                username=user or None,
                password=password,
                db=int(target.path or 0),
                socket_timeout=monitor.timeout_s,
                socket_connect_timeout=monitor.timeout_s,
            )
            await connection.connect()
            await connection.send_command("PING")
            reply = await connection.read_response()
            latency_ms = elapsed_ms(start, time.perf_counter())
    except OSError as exc:  # TimeoutError, the guard's refusal
        return ProbeResult("down", None, None, database.os_cause("redis", exc))
    except redis.RedisError as exc:
        return ProbeResult("down", None, None, f"redis: {cause_of_error(redis, exc)}")
    finally:
        if connection is not None:
            await connection.disconnect(nowait=True)
    if reply not in (b"PONG", "PONG"):
        return ProbeResult("down", latency_ms, None, "redis: PING not answered with PONG")
    return database.answered(monitor, ctx.now_ms, latency_ms, connection.peer_cert, tls)


def cause_of_error(redis: ModuleType, exc: BaseException) -> str:
    """A short cause for a redis-py error (never its message: it names the address)."""
    if isinstance(exc, redis.AuthenticationError):
        return database.AUTHENTICATION_FAILED
    if isinstance(exc, redis.exceptions.NoPermissionError):  # an ACL user who may not PING
        return "permission denied"
    if isinstance(exc, redis.BusyLoadingError):
        return "loading its dataset"
    if isinstance(exc, redis.TimeoutError):
        return "timeout"
    if isinstance(exc, redis.exceptions.InvalidResponse):
        return database.PROTOCOL_ERROR
    if isinstance(exc, redis.ConnectionError):
        # a socket or TLS error, which redis-py raises again as its own
        underlying = exc.__cause__ or exc.__context__
        if isinstance(underlying, OSError):
            return database.os_cause("redis", underlying).removeprefix("redis: ")
        if "invalid database" in str(exc).lower():
            return database.NO_DATABASE
        if "max number of clients" in str(exc).lower():
            return database.TOO_MANY_CONNECTIONS
        return "connection closed"
    if isinstance(exc, redis.ResponseError):
        text = str(exc)
        if "DB index is out of range" in text:
            return database.NO_DATABASE
        if "max number of clients" in text:
            return database.TOO_MANY_CONNECTIONS
        return f"error reply ({text.split(' ', 1)[0][:20]})"
    return f"error ({type(exc).__name__})"


@functools.cache
def _connection_class(redis: ModuleType) -> type:
    """redis-py's TCP connection, connecting to `host` (the address the guard checked) and
    verifying TLS against `server_name` with the tick's SSL context."""

    class Connection(redis.asyncio.Connection):  # type: ignore[misc,name-defined]
        def __init__(self, *, server_name: str | None, tls: ssl.SSLContext | None, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.server_name = server_name
            self.tls = tls
            self.peer_cert: dict[str, Any] | None = None

        def _connection_arguments(self) -> dict[str, Any]:
            arguments = dict(super()._connection_arguments())
            if self.tls is not None:
                arguments.update(
                    ssl=self.tls, server_hostname=self.server_name, ssl_handshake_timeout=self.socket_connect_timeout
                )
            return arguments

        async def _connect(self) -> None:
            await super()._connect()
            if self.tls is not None:
                self.peer_cert = self._writer.get_extra_info("peercert")

    return Connection


def _target(monitor: Monitor) -> database.Target:
    return database.target_of(monitor, default_port=DEFAULT_PORT)


def _scheme(monitor: Monitor) -> str:
    return monitor.url.partition(":")[0].lower()


def _check(monitor: Monitor) -> None:
    target = _target(monitor)
    if target.user and target.password is None:  # AUTH takes a user with a password, or a password
        raise InvalidMonitor("redis:// with a user needs its password: redis://user:password@host")
    if target.path and not (target.path.isdigit() and target.path.isascii()):
        raise InvalidMonitor("redis:// takes a database number after the host: redis://host/0")
    if target.path and int(target.path) > MAX_DATABASE:
        raise InvalidMonitor(f"redis:// database number must be 0 to {MAX_DATABASE}")
    database.check_tls_options(monitor, _scheme(monitor) == TLS_SCHEME, "a rediss:// url")
    latency.check(monitor)


def _redis() -> ModuleType:
    import redis
    import redis.asyncio

    return redis


KIND = Kind(
    name="redis",
    schemes=("redis", TLS_SCHEME),
    usage="redis(s)://[[user]:password@]host[:port][/db]",
    probe=latency.judged(request.own_trust(probe_redis)),
    check=_check,
    host_check=database.driver_check("redis", "redis-py", "redis"),
    options=frozenset({"timeout_s", "retries", "expires_within_sec", latency.OPTION, "ca_file"}),
)
