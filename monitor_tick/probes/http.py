"""The HTTP(S) probe: one request under one hard deadline, turned into a ProbeResult.

Options: accepted statuses (--expect), text the body must contain (--keyword) or must not
(--keyword-absent), a field of its JSON (--json-field, jsonfield.py), the longest it may take
(--max-latency, latency.py), and for https:// the certificate's expiry (--expires-within,
judged as for tls:// monitors on the final response's connection). What the request carries
(method, headers, basic auth, body, its own CA or none) is request.py's.

Every request goes through libcurl (curl.py), on a connection of its own. Names are looked up
here, in daemon threads (run/fanout.DaemonThreads), checked against --block-private, and
pinned for curl; so redirects are followed here, each hop's host looked up and pinned alike.
The whole check -- lookups, connects, redirects, the body -- runs under one deadline: a lookup
waits for what is left of it under `asyncio.timeout`, and each hop's transfer is given what is
left of it after its lookups as curl's own timeout (curl times its transfers on the tick's loop
already, so a check sets no timer of its own for them).
Every failure a remote end can cause becomes a `down` result with a short cause (curl.CAUSES).
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import time
from urllib.parse import urljoin, urlsplit, urlunsplit

from monitor_tick.core import urls
from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import (
    InvalidMonitor,
    Monitor,
    Phases,
    ProbeResult,
    check_text,
    parse_expect,
    status_accepted,
)
from monitor_tick.probes import curl, jsonfield, latency, request
from monitor_tick.probes.base import Kind, ProbeContext, failed_conditions
from monitor_tick.probes.guard import AddressGuard, BlockedAddress
from monitor_tick.probes.net import check_expires_within, expiry_cause

MAX_BODY_BYTES = 1024 * 1024  # at most this much of a decoded body is read, to look for keywords
MAX_REDIRECTS = 5
REDIRECTS = frozenset({301, 302, 303, 307, 308})
DEFAULT_PORTS = {"http": 80, "https": 443}


class Refused(Exception):
    """A hop that cannot be sent; str() is the check's cause ('dns', 'blocked: ...')."""


async def probe_http(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    """One check: the request, its redirects (up to MAX_REDIRECTS, to http and https only) and
    the final answer's body, under the monitor's one deadline. Never raises for remote behaviour.
    `ctx.now_ms` (the tick's time) is what a certificate's days left are counted from; the
    latency runs from the first lookup to the final answer's end."""
    assert ctx.engine is not None and ctx.contexts is not None
    ranges = parse_expect(monitor.expect_status)
    method, url, body = monitor.method, monitor.url, request.request_body(monitor)
    headers = request.request_headers(monitor)
    if not any(name.lower() == "user-agent" for name in headers):  # --header's or the location's wins
        headers["User-Agent"] = request.USER_AGENT

    def read_body(status: int, location: bool) -> bool:
        return not (status in REDIRECTS and location) and status_accepted(status, ranges)

    start = time.perf_counter()
    deadline = start + monitor.timeout_s
    try:
        for hop in range(MAX_REDIRECTS + 1):
            answer = curl.Exchange()
            sent = await _request(url, method, headers, body, ctx, monitor, read_body, deadline)
            looked_up = time.perf_counter()
            await curl.exchange(ctx.engine, sent, answer)  # curl's code 28 when the deadline passes
            if answer.cause is not None:
                return ProbeResult("down", None, answer.status or None, answer.cause)
            if answer.status not in REDIRECTS or not answer.location:
                break
            if hop == MAX_REDIRECTS:
                return ProbeResult("down", None, None, "too many redirects")
            url, method, body, headers = _redirected(url, answer.location, answer.status, method, body, headers)
    except TimeoutError:  # the deadline passed in a lookup, or between hops
        return ProbeResult("down", None, None, "timeout")
    except Refused as exc:
        return ProbeResult("down", None, None, str(exc))
    latency_ms = elapsed_ms(start, time.perf_counter())
    expires_at_ms = curl.expires_at_ms(answer.certs) if monitor.expires_within_sec is not None else None
    accepted = status_accepted(answer.status, ranges)
    text = _decoded(answer) if accepted and (monitor.keyword or monitor.keyword_absent) else None
    # the final hop's phases, counted from the check's start: earlier hops are in each of them
    phases = curl.phases_ms(answer, (looked_up - start) * 1000, latency_ms)
    return judged(
        monitor,
        answer.status,
        answer.body if accepted else None,
        text,
        answer.whole,
        expires_at_ms,
        ctx.now_ms,
        latency_ms,
        phases,
    )


async def _request(
    url: str,
    method: str,
    headers: dict[str, str],
    body: bytes | None,
    ctx: ProbeContext,
    monitor: Monitor,
    read_body: object,
    deadline: float,
) -> curl.Request:
    """One hop's request: its host looked up (and checked by the tick's guard) and pinned, its
    proxy (from the environment) looked up and pinned, and for https its trust (the CA bundle:
    a tick of plain HTTP checks never reads one). The check's `deadline` (a perf_counter time)
    bounds the lookup, and what is left of it after the lookup is the transfer's timeout.
    Raises Refused, and TimeoutError when the deadline has passed."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise Refused("unsupported protocol")
    try:
        host = urls.http_host(parts)
        port = parts.port or DEFAULT_PORTS[scheme]
    except (InvalidMonitor, ValueError):
        raise Refused("invalid url") from None
    pinned: list[str] = []
    assert ctx.contexts is not None
    proxy = proxy_for(ctx.contexts.proxies(), scheme, host)
    if proxy:  # the proxy connects to the host: only the proxy's name is ours to look up
        proxy_parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        proxy_host = proxy_parts.hostname or ""
        proxy_port = proxy_parts.port or 1080
        pinned += pin(proxy_host, proxy_port, await lookup(proxy_host, proxy_port, None, deadline))
    else:
        pinned += pin(host, port, await lookup(host, port, ctx.guard, deadline))
    if host != parts.hostname:  # an IDNA name: curl is handed its ASCII form
        netloc = parts.netloc.rpartition("@")[0] + ("@" if "@" in parts.netloc else "")
        netloc += f"[{host}]" if ":" in host else host
        netloc += f":{parts.port}" if parts.port else ""
        url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    left_s = deadline - time.perf_counter()
    if left_s <= 0:
        raise TimeoutError
    lines = [f"{name}: {value}" for name, value in headers.items()]
    keep = MAX_BODY_BYTES if keeps_body(monitor) else 0
    return curl.Request(
        url.partition("#")[0],
        method,
        lines,
        body,
        pinned=pinned,
        proxy=proxy,
        trust=ctx.contexts.curl_trust(request.tls_setting(monitor)) if scheme == "https" else {},
        keep=keep,
        read_body=read_body,
        certinfo=monitor.expires_within_sec is not None,
        timeout_s=left_s,
    )


def pin(host: str, port: int, addresses: list[str]) -> list[str]:
    """CURLOPT_RESOLVE's entry for `host`: curl connects to `host`:`port` at these addresses
    only; none for an IP address, which curl never looks up."""
    if addresses == [host.strip("[]")]:  # an address of its own (lookup)
        return []
    shown = ",".join(f"[{a}]" if ":" in a else a for a in addresses)
    return [f"{host}:{port}:{shown}"]


async def lookup(host: str, port: int, guard: AddressGuard | None, deadline: float) -> list[str]:
    """The addresses of `host`, in the resolver's order, from a daemon thread (the loop's
    default executor: fanout.DaemonThreads), waited for until `deadline` (a perf_counter time).
    Raises Refused: 'dns' when it has none, the guard's cause when any of them is blocked (a
    name that also resolves to a private address); TimeoutError when the resolver outlasts the
    deadline."""
    import asyncio

    name = host.strip("[]")
    literal = _literal(name)
    if literal is not None:
        _guarded(guard, [literal])
        return [name]
    try:
        async with asyncio.timeout(deadline - time.perf_counter()):
            infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise Refused("dns") from None
    found = list(dict.fromkeys(info[4][0].partition("%")[0] for info in infos))
    if not found:
        raise Refused("dns")
    if guard is not None:
        _guarded(guard, [ipaddress.ip_address(address) for address in found])
    return found


def _guarded(guard: AddressGuard | None, addresses: list[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> None:
    """Raises Refused with the guard's cause when any of `addresses` is blocked."""
    if guard is not None:
        try:
            guard.check(addresses)
        except BlockedAddress as exc:
            raise Refused(str(exc)) from None


@functools.lru_cache(maxsize=1024)  # a tick's monitors often share a host: each parsed once
def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address when `host` is an IP address, else None (a name, to look up)."""
    if ":" not in host and not host.replace(".", "").isdigit():
        return None  # a name: not worth the two failed parses
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def proxy_for(proxies: dict[str, str], scheme: str, host: str) -> str:
    """The proxy a request to `host` goes through, of the environment's `proxies` as httpx read
    them (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY in either case, NO_PROXY), or "" for none."""
    if not proxies:
        return ""
    import urllib.request  # only with a proxy set: it costs a tick about 10 ms to import

    if urllib.request.proxy_bypass_environment(host, proxies):
        return ""
    return proxies.get(scheme) or proxies.get("all") or ""


def _redirected(
    url: str, location: str, status: int, method: str, body: bytes | None, headers: dict[str, str]
) -> tuple[str, str, bytes | None, dict[str, str]]:
    """The next hop's (url, method, body, headers), as httpx followed a redirect: 303 and 302
    make a GET of all but HEAD, 301 of a POST, the body goes only with the method; credentials
    never go to another origin."""
    target = urljoin(url, location)
    if (status in (302, 303) and method != "HEAD") or (status == 301 and method == "POST"):
        method, body = "GET", None
    old, new = urlsplit(url), urlsplit(target)
    same_origin = old.hostname == new.hostname and (
        (old.scheme, old.port) == (new.scheme, new.port) or (old.scheme, new.scheme) == ("http", "https")
    )
    if not same_origin:
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    return target, method, body, headers


def _decoded(answer: curl.Exchange) -> str:
    """The kept body as text: in the charset its Content-Type declares, else UTF-8."""
    charset = "utf-8"
    for param in (answer.content_type or "").split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.lower() == "charset" and value.strip('"'):
            charset = value.strip('"')
    try:
        return answer.body.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        return answer.body.decode("utf-8", errors="replace")


def judged(
    monitor: Monitor,
    status: int,
    body: bytearray | None,
    text: str | None,
    whole: bool,
    expires_at_ms: int | None,
    now_ms: int,
    latency_ms: int,
    phases: Phases | None = None,
) -> ProbeResult:
    """The result of an answer: `status`, and `body` (None: not read, as the status was not
    accepted; `text`: it decoded, when a keyword is looked for; `whole`: all of it) and the
    certificate's expiry judged against the monitor's conditions; `phases` go with it."""
    cause = failed_conditions(
        f"status {status}" if body is None else None,
        *(_body_causes(monitor, body, text, whole) if body is not None else ()),
        expiry_cause(monitor, now_ms, expires_at_ms) if monitor.expires_within_sec is not None else None,
    )
    return ProbeResult("down" if cause is not None else "up", latency_ms, status, cause, expires_at_ms, phases)


def keeps_body(monitor: Monitor) -> bool:
    """Whether a check reads its body for a condition (a keyword, a JSON field)."""
    return bool(monitor.keyword or monitor.keyword_absent or monitor.json_field)


def _body_causes(monitor: Monitor, body: bytearray, text: str | None, whole: bool) -> tuple[str | None, ...]:
    """What an accepted answer's body fails: its keywords, its JSON field (None: passed)."""
    return (
        "keyword missing" if monitor.keyword and monitor.keyword not in (text or "") else None,
        "keyword present" if monitor.keyword_absent and monitor.keyword_absent in (text or "") else None,
        jsonfield.cause(monitor, bytes(body), whole) if monitor.json_field is not None else None,
    )


def _check(monitor: Monitor) -> None:
    parts = urls.check_http(monitor.url)
    request.check(monitor)
    parse_expect(monitor.expect_status)
    check_text(monitor.keyword, "keyword")
    check_text(monitor.keyword_absent, "--keyword-absent")
    if (monitor.keyword or monitor.keyword_absent) and monitor.method == "HEAD":
        raise InvalidMonitor("a keyword needs the body: use --method GET")
    jsonfield.check(monitor)
    if monitor.json_field is not None and monitor.method == "HEAD":
        raise InvalidMonitor("--json-field needs the body: use --method GET")
    latency.check(monitor)
    if monitor.expires_within_sec is not None and parts.scheme.lower() != "https":
        raise InvalidMonitor("--expires-within needs an https:// url (or use tls://host)")
    check_expires_within(monitor)


KIND = Kind(
    name="http",
    schemes=("http", "https"),
    usage="http(s)://host/path",
    probe=latency.judged(probe_http),
    check=_check,
    unusable=request.unresolved,
    options=frozenset(
        {
            "method",
            "expect_status",
            "keyword",
            "keyword_absent",
            "expires_within_sec",
            "timeout_s",
            "retries",
            latency.OPTION,
            jsonfield.OPTION,
            "headers",
            "basic_auth",
            "body",
            "ca_file",
            "insecure",
        }
    ),
)
