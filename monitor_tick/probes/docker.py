"""docker://NAME[?host=ENGINE]: a container's state, read from the Docker Engine API
(GET /containers/NAME/json) with httpx, which speaks to a unix socket itself: no Docker SDK.
ENGINE is unix:///path/docker.sock (/var/run/docker.sock unless given) or tcp://host[:port]
(port 2375 unless given). A tcp:// engine is asked through the tick's client, so --block-private
guards it like any address; a unix socket is refused under --block-private (it is this machine).

NAME is a container's name or id ([a-zA-Z0-9][a-zA-Z0-9_.-]*, which hex ids match): nothing
else can reach another API path.

Up when the container runs and, if it has a health check, is healthy; `starting` counts as up
only within its health check's start period plus retries x interval from when it started (the
engine's own defaults: no start period, 3 retries, 30 s). Down, with the cause, when it exited,
was created and never started, is dead, being removed, restarting, paused, unhealthy or missing
(the cause of a health check starting too long says for how long, and the allowance), when an
id prefix names more than one container, and when the socket is missing or refuses
(`docker: engine not running`). A socket this user may
not open (EACCES) is this machine's configuration, not the container's state: not recorded, said
once an hour (base.not_here).
"""

from __future__ import annotations

import errno
import math
import re
import time
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from monitor_tick.core import urls
from monitor_tick.core.clock import elapsed_ms, format_duration_s, ms_to_s, parse_iso_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import latency
from monitor_tick.probes.base import Kind, ProbeContext, loopback, not_here
from monitor_tick.probes.guard import BLOCKED
from monitor_tick.probes.http import cause_of
from monitor_tick.probes.net import cause_of_os_error, prefixed

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_SOCKET = "/var/run/docker.sock"
DEFAULT_TCP_PORT = 2375
NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")
USAGE = "docker://NAME[?host=ENGINE]"  # ENGINE: unix:///path/docker.sock or tcp://host[:port]
# the engine's defaults for a health check that does not set them (Docker's HEALTHCHECK reference)
HEALTH_INTERVAL_NS = 30 * 10**9
HEALTH_RETRIES = 3
NS_PER_MS = 10**6
# how the Engine's message begins when an id prefix names more than one container
_AMBIGUOUS = "multiple ids found with provided prefix"
# State.Status -> the cause when the container is not running
_NOT_RUNNING = {
    "created": "created, never started",
    "paused": "paused",
    "restarting": "restarting",
    "removing": "being removed",
    "dead": "dead",
}


def engine_of(monitor: Monitor) -> tuple[str | None, str, int]:
    """(socket path or None, host, port) of a checked docker:// monitor: a unix socket, or a
    tcp:// engine's host and port."""
    params = dict(parse_qsl(urlsplit(monitor.url).query, keep_blank_values=True))
    engine = urlsplit(params.get("host", f"unix://{DEFAULT_SOCKET}"))
    if engine.scheme == "unix":
        return engine.path, "", 0
    assert engine.hostname is not None  # checked when the monitor was loaded
    return None, engine.hostname, engine.port or DEFAULT_TCP_PORT


async def probe_docker(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    import httpx  # only when a docker:// monitor is probed: a tick of plain checks never loads it

    name = urlsplit(monitor.url).netloc
    path, host, port = engine_of(monitor)
    if path is not None and ctx.guard is not None:
        return ProbeResult("down", None, None, f"docker: {BLOCKED}unix sockets")  # set aside by the tick
    start = time.perf_counter()
    try:
        async with asyncio.timeout(monitor.timeout_s):
            if path is None:  # the tick's client: guarded under --block-private
                url = httpx.URL(scheme="http", host=host, port=port, path=f"/containers/{name}/json")
                client = ctx.client if ctx.clients is None else ctx.clients.client(None)
                assert client is not None
                response = await client.get(url, timeout=monitor.timeout_s)
            else:
                transport = httpx.AsyncHTTPTransport(uds=path)
                async with httpx.AsyncClient(transport=transport, timeout=monitor.timeout_s) as client:
                    response = await client.get(f"http://docker/containers/{name}/json")
    except TimeoutError:
        return ProbeResult("down", None, None, "docker: timeout")
    except (httpx.HTTPError, OSError) as exc:  # transports may leak raw socket errors (the guard's)
        return _failed(exc, path)
    latency_ms = elapsed_ms(start, time.perf_counter())
    try:
        answer = response.json()
    except ValueError:
        answer = None
    message = answer.get("message") if isinstance(answer, dict) else None
    if response.status_code == 404 and isinstance(message, str):
        return ProbeResult("down", latency_ms, None, "docker: no such container")  # the Engine's own 404
    if isinstance(message, str) and message.lower().startswith(_AMBIGUOUS):  # whatever the status
        return ProbeResult("down", latency_ms, None, "docker: ambiguous id: more than one container matches")
    if response.status_code not in (200, 404):
        return ProbeResult("down", latency_ms, None, f"docker: the engine answered {response.status_code}")
    container = answer if response.status_code == 200 else None
    if not isinstance(container, dict) or not isinstance(container.get("State"), dict):
        return ProbeResult("down", latency_ms, None, "docker: not an Engine API answer")
    cause = state_cause(container, ctx.now_ms)
    return ProbeResult("down" if cause else "up", latency_ms, None, cause)


def state_cause(container: Mapping[str, Any], now_ms: int) -> str | None:
    """Why a container (the Engine API's inspect answer) is down at `now_ms`, or None when up."""
    state = container["State"]
    status = state.get("Status")
    if status == "exited":
        code = state.get("ExitCode")
        return f"docker: exited (code {code}{', out of memory' if state.get('OOMKilled') else ''})"
    if status != "running":
        return f"docker: {_NOT_RUNNING.get(status, f'state {str(status)[:20]!r}')}"
    health = (state.get("Health") or {}).get("Status")
    if health in (None, "none", "healthy"):
        return None
    if health == "starting":
        return _starting_cause(container, now_ms)
    return "docker: unhealthy" if health == "unhealthy" else f"docker: health {str(health)[:20]!r}"


def _starting_cause(container: Mapping[str, Any], now_ms: int) -> str | None:
    """A health check still `starting`: up within its start period plus retries x interval from
    when the container started; after that the check has had every chance to pass."""
    check = (container.get("Config") or {}).get("Healthcheck") or {}
    interval_ns = check.get("Interval") or HEALTH_INTERVAL_NS
    window_ms = ((check.get("StartPeriod") or 0) + (check.get("Retries") or HEALTH_RETRIES) * interval_ns) // NS_PER_MS
    try:
        started_ms = parse_iso_ms(str(container["State"].get("StartedAt")))
    except ValueError:
        return "docker: health check starting, since an unknown time"
    if now_ms - started_ms <= window_ms:
        return None
    # the time starting rounded up, so that a moment over the allowance never reads as equal to it
    starting = format_duration_s(math.ceil(ms_to_s(now_ms - started_ms)))
    return f"docker: health check starting for {starting} (allowed {format_duration_s(ms_to_s(window_ms))})"


def _failed(exc: Exception, path: str | None) -> ProbeResult:
    """The result of a request to the engine that raised (`path`: its socket, None over tcp)."""
    code = _errno(exc)
    if code == errno.EACCES and path is not None:
        return not_here(f"docker: permission denied on {path}: this user may not use the engine's socket")
    if code in (errno.ENOENT, errno.ECONNREFUSED):
        return ProbeResult("down", None, None, "docker: engine not running")
    cause = cause_of(exc) if not isinstance(exc, OSError) else cause_of_os_error(exc)
    return ProbeResult("down", None, None, prefixed("docker", cause))


def _errno(exc: BaseException) -> int | None:
    """The errno of the OSError behind an httpx error (httpx and httpcore chain it)."""
    seen: BaseException | None = exc
    for _ in range(10):  # chains are short, and may loop
        if seen is None:
            return None
        if isinstance(seen, OSError) and seen.errno is not None:
            return seen.errno
        seen = seen.__cause__ or seen.__context__
    return None


def _check(monitor: Monitor) -> None:
    parts = urlsplit(monitor.url)
    if not NAME.fullmatch(parts.netloc):
        raise InvalidMonitor("docker:// needs a container's name or id: letters, digits, _ . - (docker://NAME)")
    if parts.path or parts.fragment:
        raise InvalidMonitor("docker:// takes a container's name and ?host= only")
    params = parse_qsl(parts.query, keep_blank_values=True)
    if [key for key, _ in params] not in ([], ["host"]):
        raise InvalidMonitor("docker:// takes only ?host=unix:///path/docker.sock or ?host=tcp://host:port, once")
    if params:
        _check_engine(params[0][1])
    latency.check(monitor)


def _check_engine(host: str) -> None:
    engine = urls.split(host, "docker:// host")
    if engine.scheme == "unix" and not engine.netloc and engine.path.startswith("/") and not engine.query:
        return
    if engine.scheme == "tcp" and engine.hostname and engine.path in ("", "/") and not engine.query:
        if engine.port == 0 or engine.username is not None:
            raise InvalidMonitor("docker:// host tcp://host:port takes a host and a port only")
        return
    raise InvalidMonitor("docker:// host must be unix:///path/docker.sock or tcp://host:port")


def _host_local(monitor: Monitor) -> str | None:
    path, host, _ = engine_of(monitor)
    return "a unix socket" if path is not None else loopback(host)


KIND = Kind(
    name="docker",
    schemes=("docker",),
    usage=USAGE,
    probe=latency.judged(probe_docker),
    check=_check,
    options=frozenset({"timeout_s", "retries", latency.OPTION}),
    host_local=_host_local,
)
