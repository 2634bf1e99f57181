"""docker://NAME[?host=ENGINE]: a container's state, read from the Docker Engine API
(GET /containers/NAME/json) through the tick's HTTP engine (libcurl, which speaks to a unix
socket itself: curl.py): no Docker SDK.
ENGINE is unix:///path/docker.sock (/var/run/docker.sock unless given) or tcp://host[:port]
(port 2375 unless given). A tcp:// engine's name is looked up as an HTTP check's is, so
--block-private guards it like any address; a unix socket is refused under --block-private (it is this machine).

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
from monitor_tick.probes import curl, latency
from monitor_tick.probes.base import Kind, ProbeContext, loopback, not_here
from monitor_tick.probes.guard import BLOCKED
from monitor_tick.probes.http import Refused, lookup, pin
from monitor_tick.probes.net import prefixed

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_SOCKET = "/var/run/docker.sock"
DEFAULT_TCP_PORT = 2375
MAX_ANSWER_BYTES = 4 * 1024 * 1024  # an inspect answer is a few KiB; a larger one is not the Engine's
NAME = r"[a-zA-Z0-9][a-zA-Z0-9_.-]*"  # compiled on first use (re's cache): a tick of other kinds never needs it
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
    import json

    assert ctx.engine is not None
    name = urlsplit(monitor.url).netloc
    path, host, port = engine_of(monitor)
    if path is not None and ctx.guard is not None:
        return ProbeResult("down", None, None, f"docker: {BLOCKED}unix sockets")  # set aside by the tick
    start = time.perf_counter()
    deadline = start + monitor.timeout_s
    answer = curl.Exchange()
    try:
        if path is None:  # looked up, and guarded under --block-private, as HTTP checks are
            pinned = pin(host, port, await lookup(host, port, ctx.guard, deadline))
            url = f"http://{f'[{host}]' if ':' in host else host}:{port}/containers/{name}/json"
        else:
            pinned, url = [], f"http://docker/containers/{name}/json"
        left_s = deadline - time.perf_counter()
        if left_s <= 0:
            raise TimeoutError
        sent = curl.Request(
            url,
            "GET",
            [],
            None,
            pinned=pinned,
            proxy="",
            trust={},
            keep=MAX_ANSWER_BYTES,
            read_body=lambda status, location: True,
            unix_socket=path,
            timeout_s=left_s,  # the check's deadline, as curl's own timeout (code 28)
        )
        await curl.exchange(ctx.engine, sent, answer)
    except TimeoutError:  # the deadline passed in the lookup
        return ProbeResult("down", None, None, "docker: timeout")
    except Refused as exc:
        return ProbeResult("down", None, None, prefixed("docker", str(exc)))
    if answer.code == curl.TIMED_OUT:  # the check's deadline: one cause, however far the answer came
        return ProbeResult("down", None, None, "docker: timeout")
    if answer.cause is not None:
        return _failed(answer, path)
    latency_ms = elapsed_ms(start, time.perf_counter())
    try:
        found = json.loads(bytes(answer.body)) if answer.whole else None
    except ValueError:
        found = None
    message = found.get("message") if isinstance(found, dict) else None
    if answer.status == 404 and isinstance(message, str):
        return ProbeResult("down", latency_ms, None, "docker: no such container")  # the Engine's own 404
    if isinstance(message, str) and message.lower().startswith(_AMBIGUOUS):  # whatever the status
        return ProbeResult("down", latency_ms, None, "docker: ambiguous id: more than one container matches")
    if answer.status not in (200, 404):
        return ProbeResult("down", latency_ms, None, f"docker: the engine answered {answer.status}")
    container = found if answer.status == 200 else None
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


def _failed(answer: Any, path: str | None) -> ProbeResult:
    """The result of a request to the engine that failed (`path`: its socket, None over tcp).
    Over a unix socket, a connection that failed says why by its errno (curl.Exchange.os_errno):
    a socket this user may not open is this machine's configuration, not the engine's state."""
    if answer.os_errno == errno.EACCES and path is not None:
        return not_here(f"docker: permission denied on {path}: this user may not use the engine's socket")
    if answer.os_errno in (errno.ENOENT, errno.ECONNREFUSED):
        return ProbeResult("down", None, None, "docker: engine not running")
    return ProbeResult("down", None, None, prefixed("docker", answer.cause))


def _check(monitor: Monitor) -> None:
    parts = urlsplit(monitor.url)
    if not re.fullmatch(NAME, parts.netloc):
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
