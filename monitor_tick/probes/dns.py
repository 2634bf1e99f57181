"""dns://name?type=A&server=IP[:PORT][&expect=VALUE]: ask one DNS server for a record.

Up when the server answers within the deadline with rcode NOERROR and at least one record of
the type (type A unless given), and, with `expect`, one of them equals it. Records are compared
in their text form (`192.0.2.1`; `10 mail.example.org.` for MX; TXT without its quotes); names
compare without case and with or without the final dot. The query goes over UDP, and over TCP
when the answer was truncated (dnspython's udp_with_fallback).

The server is an IP address (a name would need a resolver to find the resolver), port 53 unless
given (`[::1]:5353` for IPv6). --block-private applies to it like to any address probed.

dnspython is imported only when a dns:// monitor is checked or probed (about 25 ms on top of
the HTTP engine): a tick whose due monitors are all HTTP never pays it.
"""

from __future__ import annotations

import ipaddress
import time
from types import ModuleType
from urllib.parse import parse_qsl, urlsplit

from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import latency
from monitor_tick.probes.base import Kind, ProbeContext, loopback
from monitor_tick.probes.net import cause_of_os_error, prefixed

DEFAULT_TYPE = "A"
DEFAULT_PORT = 53
SHOWN_CHARS = 60
_PARAMS = frozenset({"type", "server", "expect"})


def query_of(monitor: Monitor) -> tuple[str, str, str, int, str | None]:
    """(name, record type, server address, port, expected value) of a checked dns:// URL."""
    parts = urlsplit(monitor.url)
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    server, port = _server(params.get("server", ""))
    name = parts.netloc  # as written: urlsplit's hostname would drop a trailing dot's meaning
    return name, params.get("type", DEFAULT_TYPE).upper(), server, port, params.get("expect")


async def probe_dns(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    name, rdtype, server, port, expected = query_of(monitor)
    dns = _dns()
    start = time.perf_counter()
    try:
        async with asyncio.timeout(monitor.timeout_s):
            if ctx.guard is not None:
                await ctx.guard.resolve(server, port)  # raises BlockedAddress
            query = dns.message.make_query(name, rdtype)
            answer, _ = await dns.asyncquery.udp_with_fallback(query, server, port=port, timeout=monitor.timeout_s)
    except TimeoutError:
        return ProbeResult("down", None, None, "dns: timeout")
    except OSError as exc:
        return ProbeResult("down", None, None, prefixed("dns", cause_of_os_error(exc)))
    except dns.exception.DNSException as exc:  # a malformed or mismatched answer
        return ProbeResult("down", None, None, f"dns: bad answer ({type(exc).__name__})")
    latency_ms = elapsed_ms(start, time.perf_counter())
    cause = answer_cause(answer, rdtype, expected)
    return ProbeResult("down" if cause else "up", latency_ms, None, cause)


def answer_cause(answer: object, rdtype: str, expected: str | None) -> str | None:
    """Why a dnspython answer fails the check, or None."""
    dns = _dns()
    rcode = answer.rcode()  # type: ignore[attr-defined]
    if rcode != dns.rcode.NOERROR:
        return f"dns: {dns.rcode.to_text(rcode)}"
    wanted = dns.rdatatype.from_text(rdtype)
    records = [rd for rrset in answer.answer if rrset.rdtype == wanted for rd in rrset]  # type: ignore[attr-defined]
    if not records:
        return f"dns: no {rdtype} record"
    if expected is None:
        return None
    seen = sorted(_text(rd) for rd in records)  # an RRset has no order: a stable cause
    if any(_same(value, expected) for value in seen):
        return None
    got = ", ".join(seen)
    got = got if len(got) <= SHOWN_CHARS else got[: SHOWN_CHARS - 3] + "..."
    return f"dns: expected {expected}, got {got}"


def _text(rdata: object) -> str:
    text = rdata.to_text()  # type: ignore[attr-defined]
    return text[1:-1] if text.startswith('"') and text.endswith('"') else text  # a TXT's quotes


def _same(value: str, expected: str) -> bool:
    return value.rstrip(".").lower() == expected.rstrip(".").lower()


def _server(text: str) -> tuple[str, int]:
    """'IP', 'IP:PORT' or '[IPv6]:PORT' -> (address, port). Raises InvalidMonitor."""
    host, port = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise InvalidMonitor(
            "dns:// server is not an address: it needs server=IP[:PORT], e.g. server=1.1.1.1"
            if text
            else "dns:// needs server=IP[:PORT], e.g. dns://example.org?type=A&server=1.1.1.1"
        ) from None
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise InvalidMonitor("dns:// server port must be 1 to 65535")
    return host, int(port) if port else DEFAULT_PORT


def _check(monitor: Monitor) -> None:
    parts = urlsplit(monitor.url)
    if not parts.netloc or parts.path not in ("", "/") or parts.fragment or any(c in parts.netloc for c in "@:"):
        raise InvalidMonitor("dns:// takes a name and a query: dns://name?type=A&server=IP[:PORT][&expect=VALUE]")
    params = parse_qsl(parts.query, keep_blank_values=True)
    unknown = sorted({key for key, _ in params} - _PARAMS)
    if unknown:
        raise InvalidMonitor("dns:// takes only type, server and expect in its query")
    if len({key for key, _ in params}) != len(params):
        raise InvalidMonitor("dns:// takes each of type, server and expect once")
    values = dict(params)
    _server(values.get("server", ""))
    dns = _dns()
    try:
        dns.name.from_text(parts.netloc)
        rdtype = dns.rdatatype.from_text(values.get("type", DEFAULT_TYPE))
    except dns.exception.DNSException as exc:
        raise InvalidMonitor(f"dns:// name or type is not valid: {type(exc).__name__}") from None
    if dns.rdatatype.is_metatype(rdtype):
        raise InvalidMonitor("dns:// type must be a record type such as A, AAAA, MX or TXT, not a query type")
    if "expect" in values and not values["expect"]:
        raise InvalidMonitor("dns:// expect is empty")
    latency.check(monitor)


KIND = Kind(
    name="dns",
    schemes=("dns",),
    usage="dns://name?type=A&server=IP[:PORT][&expect=VALUE]",
    probe=latency.judged(probe_dns),
    check=_check,
    options=frozenset({"timeout_s", "retries", latency.OPTION}),
    host_local=lambda monitor: loopback(query_of(monitor)[2]),  # the server asked, not the name
)


# dnspython, imported when a dns:// monitor is first checked or probed (see the docstring)
def _dns() -> ModuleType:
    import dns.asyncquery
    import dns.exception
    import dns.message
    import dns.name
    import dns.rcode
    import dns.rdatatype

    return dns
