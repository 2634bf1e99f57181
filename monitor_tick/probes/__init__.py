"""Probe kinds, in one table.

A probe is `async (monitor, ctx) -> ProbeResult`; it never raises for anything a remote end
does. A kind (base.Kind) holds everything that differs between kinds: the URL schemes that
select it, its usage line, which options apply and their defaults, the check of its URL and
options, and the probe.

Adding a kind is two lines of work outside its own module:

    1. monitor_tick/probes/<kind>.py defines `KIND = Kind(...)` and its probe;
    2. its module joins KINDS below (PROBES and KIND_OF_SCHEME are derived from it);

plus its usage in `add`'s help and in the manual (docs/monitors.md), which tests/test_kinds.py
requires for every kind in PROBES. Validation on `add` and on every due row, due selection, fan-out, retries,
rollups, incidents, `list`, `report` and the tick's --json are shared and need no edit. Only a
kind with an option of its own adds a Monitor field with its column (schema.sql) and an `add`
option; only a kind with results of its own (heartbeats' pings) adds a table, its SQL
(store/pings.py) and a line in run/tick.py's KIND_READS, which hands them to its probe in
ctx.loaded.

Importing this package imports neither asyncio nor pycurl: a kind's probe imports asyncio when
it runs on asyncio's loop, and an HTTP check imports pycurl when it starts (curl.py). The tick
and the CLI import this package only when a monitor is due or being added, so an idle tick
stays lighter still.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote

from monitor_tick.core import urls
from monitor_tick.core.model import (
    MAX_NAME_CHARS,
    MAX_TIMEOUT_S,
    OPTION_FLAGS,
    OPTIONS,
    STORED_MAX_TIMEOUT_S,
    TYPED_SETTINGS,
    InvalidMonitor,
    Monitor,
    check_common,
    check_name,
    check_typed,
    line_breaker,
    normal_name,
)
from monitor_tick.core.redact import ENV_REFERENCE, redact_url
from monitor_tick.probes import (
    dns,
    docker,
    heartbeat,
    http,
    icmp,
    mysql,
    postgresql,
    redis,
    request,
    smtp,
    ssh,
    tcp,
    tls,
    ws,
)
from monitor_tick.probes.base import NOT_HERE, Kind, Probe, ProbeContext, is_not_here

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["KINDS", "KIND_OF_SCHEME", "PROBES", "Kind", "Probe", "ProbeContext", "is_not_here"]

KINDS: tuple[Kind, ...] = (
    http.KIND,
    tls.KIND,
    tcp.KIND,
    heartbeat.KIND,
    dns.KIND,
    icmp.KIND,
    smtp.KIND,
    ssh.KIND,
    ws.KIND,
    postgresql.KIND,
    mysql.KIND,
    redis.KIND,
    docker.KIND,
)

PROBES: dict[str, Kind] = {kind.name: kind for kind in KINDS}
KIND_OF_SCHEME: dict[str, str] = {scheme: kind.name for kind in KINDS for scheme in kind.schemes}

_WHITESPACE = re.compile(r"\s")
_MONITOR_DEFAULTS = Monitor._field_defaults
# the columns monitor_from_row reads: every field of Monitor's, by the same name
_FIELDS = Monitor._fields
_ID, _EFFECTIVE, _ALIGNED, _PRIVATE, _TIMEOUT = map(
    _FIELDS.index, ("id", "effective_interval_sec", "aligned", "private", "timeout_s")
)


def kind_of_url(url: str) -> str:
    """The kind a URL selects; raises InvalidMonitor when it is not usable for any kind."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidMonitor("url is empty")
    if _WHITESPACE.search(url):
        raise InvalidMonitor("url contains whitespace")
    parts = urls.split(url)
    kind = KIND_OF_SCHEME.get((parts.scheme or url).lower())  # a bare word: a kind with no address
    if kind is None:
        raise InvalidMonitor(
            f"unsupported scheme {parts.scheme!r}" if parts.scheme else "url has no scheme (e.g. https://)"
        )
    return kind


def default_of(kind: Kind, option: str) -> Any:
    return kind.defaults.get(option, _MONITOR_DEFAULTS[option])


def check_monitor(monitor: Monitor) -> Kind:
    """Check every setting of a monitor against its kind; returns the kind. Raises InvalidMonitor."""
    kind = PROBES[kind_of_url(monitor.url)]
    if monitor.kind != kind.name:
        raise InvalidMonitor(f"kind {monitor.kind!r} does not match the url's scheme")
    check_common(monitor)
    for option in OPTIONS:
        if option not in kind.options and getattr(monitor, option) != default_of(kind, option):
            raise _not_for(kind, option)
    kind.check(monitor)
    return kind


def _not_for(kind: Kind, option: str) -> InvalidMonitor:
    """The refusal of an option `kind` does not take, saying what to write instead if anything."""
    instead = f": {kind.instead[option]}" if option in kind.instead else ""
    return InvalidMonitor(f"{OPTION_FLAGS[option]} does not apply to {kind.name} monitors{instead}")


def new_monitor(
    *, url: str, given: Mapping[str, Any], typed: Iterable[str] = TYPED_SETTINGS, **settings: Any
) -> Monitor:
    """A monitor as `add` creates it: its kind's defaults, then the options the user gave;
    `settings` are draft_monitor's others (name, interval_sec, aligned, private, group_name).
    `typed`: the settings held to what anyone types (model.check_typed); `edit` names those it
    changes, so a value stored before the bounds stays. Raises InvalidMonitor (an option given
    for a kind it does not apply to included, and a name or URL that would break a one-line
    output)."""
    problem = line_breaker(url)
    if problem:  # checked here, not on stored rows: it would become the default name
        raise InvalidMonitor(f"url contains {problem}")
    kind = PROBES[kind_of_url(url)]
    for option in given:
        if option not in kind.options:
            raise _not_for(kind, option)
    monitor = draft_monitor(url=url, given=given, **settings)
    check_name(monitor.name, may_be_number=False)
    check_monitor(monitor)
    check_typed(monitor, typed)
    return monitor


def draft_monitor(
    *,
    name: str | None,
    url: str,
    interval_sec: int,
    aligned: bool,
    given: Mapping[str, Any],
    private: bool = False,
    group_name: str | None = None,
) -> Monitor:
    """The unchecked monitor for a URL of a known kind: its kind's defaults, then `given`; its
    name and group in NFC (model.normal_name)."""
    kind = PROBES[kind_of_url(url)]
    return Monitor(
        id=0,
        name=_default_name(url) if name is None else normal_name(name),
        kind=kind.name,
        url=url,
        interval_sec=interval_sec,
        effective_interval_sec=interval_sec,
        aligned=aligned,
        private=private,
        group_name=group_name if not isinstance(group_name, str) else normal_name(group_name),
        **{**kind.defaults, **given},
    )


def _default_name(url: str) -> str:
    """The URL as a name: shown everywhere, the public status page too, so without secrets nor
    any query value (a Docker engine's socket path or host, a DNS server), and cut to a name's
    length."""
    name = normal_name(redact_url(url, every_query=True))
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"


def monitor_from_row(row: Mapping[str, Any]) -> Monitor:
    """A due row as a Monitor. Raises InvalidMonitor naming what is wrong with the row."""
    if row.get("owner_missing"):
        raise InvalidMonitor(f"owner {row.get('owner_id')!r} does not exist")
    if row.get("plan_missing"):
        raise InvalidMonitor(f"the plan of owner {row.get('owner_id')!r} does not exist")
    # the fields in Monitor's order, each its column's value (None for a column the row lacks);
    # built as a list, checked, then converted in place: a tick makes one of these a due row
    values = list(map(row.get, _FIELDS))
    values[_ID] = int(row["id"])
    values[_EFFECTIVE] = row["effective_interval_sec"]  # a number once the interval is checked
    timeout_s = values[_TIMEOUT]
    if isinstance(timeout_s, int | float) and MAX_TIMEOUT_S < timeout_s <= STORED_MAX_TIMEOUT_S:
        values[_TIMEOUT] = MAX_TIMEOUT_S  # an older version's timeout: see model.MAX_TIMEOUT_S
    check_monitor(Monitor._make(values))
    # the checked values in their own types
    values[_EFFECTIVE] = int(values[_EFFECTIVE])
    values[_ALIGNED] = bool(values[_ALIGNED])
    values[_PRIVATE] = bool(values[_PRIVATE])
    values[_TIMEOUT] = float(values[_TIMEOUT])
    return Monitor._make(values)


def resolved(monitor: Monitor, env: Mapping[str, str] | None = None) -> Monitor:
    """The monitor as its probe sees it: the ${ENV_VAR} references in its URL (any kind) resolved
    from the tick's environment, checked as a stored row is. Elsewhere (list, show, the tick's
    output) the URL stays as stored. Raises request.UnresolvedReference: a variable not set, or
    a URL that is no longer usable once resolved (said without its values)."""
    if "${" not in monitor.url:
        return monitor
    probed = monitor._replace(url=_resolved_url(monitor.url, env))
    try:
        check_monitor(probed)
    except InvalidMonitor:
        names = ", ".join(dict.fromkeys(re.findall(ENV_REFERENCE, monitor.url)))
        raise request.UnresolvedReference(f"the url is not usable with {names} resolved (check their values)") from None
    return probed


def _resolved_url(url: str, env: Mapping[str, str] | None) -> str:
    """`url` with its references resolved; a value in the user info (a password, say) is
    percent-encoded there, so that its '@', ':' or '/' stay part of it and its '%' is its own."""
    start, userinfo, host, rest = request.split_authority(url)
    if "${" not in userinfo:
        return request.resolve(url, env, carrier="a URL")
    encoded = request.resolve(userinfo, env, carrier="a URL", encode=lambda value: quote(value, safe=""))
    return start + encoded + request.resolve(host + rest, env, carrier="a URL")


def _unresolved_url(monitor: Monitor) -> str | None:
    try:
        resolved(monitor)
    except request.UnresolvedReference as exc:
        return str(exc)
    return None


def split_usable(monitors: list[Monitor]) -> tuple[list[Monitor], list[tuple[int, str]]]:
    """(monitors this tick can probe, (id, cause) of those it cannot here and now: Kind.unusable,
    or a reference in the URL that cannot be resolved)."""
    usable: list[Monitor] = []
    unusable: list[tuple[int, str]] = []
    for monitor in monitors:
        kind = PROBES[monitor.kind]
        reason = kind.host_check() or _unresolved_url(monitor) or kind.unusable(monitor)
        if reason is None:
            usable.append(monitor)
        else:
            unusable.append((monitor.id, f"{NOT_HERE}{reason}"))
    return usable, unusable


def host_local(monitor: Monitor) -> str | None:
    """What makes a checked monitor's target this machine itself ('a loopback address', 'a unix
    socket'), or None (Kind.host_local)."""
    return PROBES[monitor.kind].host_local(monitor)


def fleet_refusal(monitor: Monitor, hosts: int) -> str | None:
    """Why a monitor may not be added to (or moved to a new URL in) a database that `hosts`
    hosts tick (store.fleet_hosts), or None. On a fleet, one of this machine itself (a loopback
    address, a unix socket) would be each host probing itself, its results mixed as one
    monitor's: it needs locations, which monitors do not have yet, so it is refused."""
    local = host_local(monitor) if hosts > 1 else None
    if local is None:
        return None
    return (
        f"{local} is host-local, and {hosts} hosts tick this database (monitor-tick hosts): "
        "each would probe itself; monitors of one host need a database of their own"
    )
