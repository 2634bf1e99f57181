"""postgresql://user[:password]@host[:port]/dbname (postgres:// too): up when the server lets the
user in and answers `SELECT 1` within the deadline; then the connection is closed.

Through psycopg (the `postgres` extra), imported only when such a monitor is probed. Port 5432
unless given; the database is always named. Parameters, as libpq spells them: `sslmode`
(libpq's default `prefer` unless given) and `sslrootcert` (an absolute path, or `system`; needed
by verify-ca and verify-full), and `host=/dir`, a unix socket's directory, in a URL with no
host (`postgresql://user@/dbname?host=/run/postgresql`).

The URL says everything: libpq's environment (PGPASSWORD, ~/.pgpass, PGSSLMODE, PGDATABASE)
is not read, so that a password meant for one server is never offered to another and every
host of a fleet probes alike. libpq does not hand out the server's certificate, so
--expires-within does not apply.
"""

from __future__ import annotations

import math
import time
from types import ModuleType

from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import database, latency, request
from monitor_tick.probes.base import Kind, ProbeContext

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_PORT = 5432
USAGE = "postgresql://user[:password]@host[:port]/dbname"
SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_PARAMS = ("sslmode", "sslrootcert", "host")
# libpq's connect_timeout is whole seconds, at least 2; the probe's own deadline is what holds
_LIBPQ_MIN_TIMEOUT_S = 2
# a path that can never exist (/dev/null is no directory): libpq reads no password file
_NO_PASSFILE = "/dev/null/pgpass"

# What the server's refusal says (libpq passes its message on; PostgreSQL sends no SQLSTATE
# that libpq would expose before a connection exists), in English: a server that speaks
# another language (lc_messages) gets the generic cause. The first whose words all appear wins.
_MESSAGES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("authentication failed",), database.AUTHENTICATION_FAILED),  # password, ident, peer, ldap, ...
    (("no password supplied",), database.AUTHENTICATION_FAILED),
    (("no pg_hba.conf entry",), database.AUTHENTICATION_FAILED),
    (("pg_hba.conf rejects connection",), database.AUTHENTICATION_FAILED),
    (('role "', "does not exist"), database.AUTHENTICATION_FAILED),
    (('database "', "does not exist"), database.NO_DATABASE),
    (("permission denied for database",), "access to the database denied"),
    (("too many clients",), database.TOO_MANY_CONNECTIONS),
    (("remaining connection slots are reserved",), database.TOO_MANY_CONNECTIONS),
    (("the database system is",), "not accepting connections"),  # starting up, shutting down, in recovery
    (("server does not support ssl",), "tls: not offered by the server"),
    (("does not match host name",), "tls: certificate is for another host"),
    (("certificate has expired",), "tls: certificate expired"),
    (("certificate verify failed",), "tls: certificate not trusted"),
    (("root certificate file",), "tls: cannot read sslrootcert"),
    (("connection refused",), "connect refused"),
    (("no such file or directory",), database.SOCKET_NOT_FOUND),  # a unix socket
    (("timeout expired",), "timeout"),
    (("could not translate host name",), "dns"),
    (("failed to resolve host",), "dns"),
    (("server closed the connection unexpectedly",), "connection closed"),
    (("invalid response to ssl negotiation",), database.PROTOCOL_ERROR),  # not PostgreSQL
    (("expected authentication request",), database.PROTOCOL_ERROR),
    (("ssl",), "tls: handshake failed"),
)


def settings_of(target: database.Target, address: str | None, timeout_s: float) -> dict[str, Any]:
    """libpq's connection parameters for `target`: every one that would
    otherwise come from the environment is given."""
    user, password = target.user, target.password
    settings: dict[str, Any] = {
        "host": target.socket if target.host is None else target.host,
        "port": target.port,
        "user": user,
        "password": password or "",  # given, even empty: PGPASSWORD is not read
        "passfile": _NO_PASSFILE,
        "dbname": target.path,
        "sslmode": target.params.get("sslmode", "prefer"),
        "connect_timeout": max(_LIBPQ_MIN_TIMEOUT_S, math.ceil(timeout_s)),
        "application_name": "monitor-tick",
    }
    if "sslrootcert" in target.params:
        settings["sslrootcert"] = target.params["sslrootcert"]
    if address is not None:  # connect there; `host` stays the name TLS verifies
        settings["hostaddr"] = address
    return settings


async def probe_postgresql(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    target = _target(monitor)
    start = time.perf_counter()
    psycopg = _psycopg()
    try:
        async with asyncio.timeout(monitor.timeout_s):
            address = await target.address(ctx.guard)
            connection = await psycopg.AsyncConnection.connect(
                **settings_of(target, address, monitor.timeout_s), autocommit=True
            )
            try:
                await connection.execute("SELECT 1")
                latency_ms = elapsed_ms(start, time.perf_counter())
            finally:
                await connection.close()
    except OSError as exc:  # TimeoutError, and the guard's refusal
        return ProbeResult("down", None, None, database.os_cause("postgresql", exc))
    except psycopg.Error as exc:
        return ProbeResult("down", None, None, f"postgresql: {cause_of_error(exc)}")
    return ProbeResult("up", latency_ms)


def cause_of_error(exc: BaseException) -> str:
    """A short cause for a psycopg error, from libpq's message (never the message itself: it
    names the user, the database and the address)."""
    text = str(exc).lower()
    # libpq says why each attempt failed (sslmode=prefer tries TLS, then without): the last one's
    text = text[max(text.rfind("failed: "), 0) :]
    for words, cause in _MESSAGES:
        if all(word in text for word in words):
            return cause
    return f"error ({type(exc).__name__})"


def _target(monitor: Monitor) -> database.Target:
    return database.target_of(monitor, default_port=DEFAULT_PORT, params=_PARAMS, socket_param="host")


def _check(monitor: Monitor) -> None:
    target = _target(monitor)
    database.check_login("postgresql", target, USAGE)
    if not target.path:  # libpq would take the user's name: say which database is meant
        raise InvalidMonitor(f"postgresql:// needs a database name: {USAGE}")
    sslmode = target.params.get("sslmode", "prefer")
    if sslmode not in SSLMODES:
        raise InvalidMonitor(f"sslmode must be one of {', '.join(SSLMODES)}")
    rootcert = target.params.get("sslrootcert")
    if rootcert is not None and rootcert != "system":
        _check_rootcert(rootcert)
    if sslmode.startswith("verify-") and rootcert is None:
        raise InvalidMonitor(f"sslmode={sslmode} needs sslrootcert=PATH (a CA file) or sslrootcert=system")
    latency.check(monitor)


def _check_rootcert(path: str) -> None:
    """A CA file this machine can read: checked on `add` and on every due row, so that a file
    missing (or moved away later) is a configuration error, never a down check. Its path is
    not quoted: it is a value of the URL's query."""
    if not path.startswith("/"):
        raise InvalidMonitor("sslrootcert must be an absolute path or system")
    problem = request.ca_file_problem(path)
    if problem is not None:
        raise InvalidMonitor(f"sslrootcert: {problem}")


def _psycopg() -> ModuleType:
    import psycopg

    return psycopg


KIND = Kind(
    name="postgresql",
    schemes=("postgresql", "postgres"),
    usage=USAGE,
    probe=latency.judged(probe_postgresql),
    check=_check,
    host_check=database.driver_check("psycopg", "psycopg", "postgres"),
    options=frozenset({"timeout_s", "retries", latency.OPTION}),
    instead={"ca_file": "use ?sslmode=verify-full&sslrootcert=/path/ca.pem"},
)
