"""smtp://host[:port][?starttls=1] (port 25 by default): a mail server's greeting.

Up when the server greets with 220; then the probe says QUIT and closes, sending no mail and
logging in to nothing. With `?starttls=1` it also says EHLO, asks for STARTTLS and upgrades the
connection, and the certificate is judged as a tls:// monitor's is: verified like an HTTPS
request, down when it expires within --expires-within (14 days unless given), with the same
`tls: ...` causes. The latency is the time to the greeting, or with STARTTLS to the end of the
TLS handshake. The standard library's smtplib blocks a thread; a few lines on asyncio's streams
keep the probe inside the tick's loop and deadline.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qsl, urlsplit

from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import latency, request
from monitor_tick.probes.base import Kind, ProbeContext
from monitor_tick.probes.net import (
    address,
    certificate_result,
    check_address,
    check_expires_within,
    close_stream,
    goodbye,
    open_stream,
    tls_handshake,
    upgraded_cause,
)
from monitor_tick.probes.tls import DEFAULT_EXPIRES_WITHIN_SEC

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import asyncio
    import ssl

DEFAULT_PORT = 25
MAX_REPLY_LINES = 100  # of one reply; a server sending more is not speaking SMTP


class SmtpError(Exception):
    """The server's answer was not what the probe needs; str() is the cause after `smtp: `."""


def starttls(monitor: Monitor) -> bool:
    """Whether a checked smtp:// monitor upgrades with STARTTLS."""
    return dict(parse_qsl(urlsplit(monitor.url).query)).get("starttls") == "1"


async def probe_smtp(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    host, port = address(monitor, DEFAULT_PORT)
    upgrade = starttls(monitor)
    start = time.perf_counter()
    deadline = asyncio.get_running_loop().time() + monitor.timeout_s
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout_at(deadline):
            reader, writer = await open_stream(host, port, ctx.guard)
            code = await _reply(reader)
            if code != 220:
                raise SmtpError(f"greeting {code}, not 220")
            if upgrade:
                await _starttls(reader, writer, host, ctx.tls())
            latency_ms = elapsed_ms(start, time.perf_counter())
            cert = writer.get_extra_info("peercert") if upgrade else None
        await _quit(reader, writer, deadline)
    except TimeoutError:
        return ProbeResult("down", None, None, "smtp: timeout")
    except SmtpError as exc:
        return ProbeResult("down", None, None, f"smtp: {exc}")
    except OSError as exc:  # ssl.SSLError too
        return ProbeResult("down", None, None, upgraded_cause("smtp", exc))
    finally:
        if writer is not None:
            await close_stream(writer, deadline)
    if not upgrade:
        return ProbeResult("up", latency_ms)
    return certificate_result(monitor, ctx.now_ms, latency_ms, cert)


async def _quit(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, deadline: float) -> None:
    """Say QUIT and wait for the server's answer (221) a moment, as RFC 5321 asks (a server
    cut off mid-reply logs a lost connection), within the check's deadline (net.goodbye).
    Nothing it does here changes the result."""
    try:
        async with goodbye(deadline):
            writer.write(b"QUIT\r\n")
            await reader.readline()
    except (OSError, ValueError):  # TimeoutError and ssl.SSLError too; ValueError: a line over the stream's limit
        pass


async def _starttls(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, context: ssl.SSLContext
) -> None:
    """EHLO, STARTTLS and the TLS handshake. Raises SmtpError, OSError or ssl.SSLError."""
    writer.write(f"EHLO {_ehlo_name(writer)}\r\n".encode("ascii"))
    code, lines = await _reply_lines(reader)
    if code != 250:
        raise SmtpError(f"EHLO refused ({code})")
    if not any(line.upper().split()[:1] == ["STARTTLS"] for line in lines[1:]):
        raise SmtpError("STARTTLS not offered")
    writer.write(b"STARTTLS\r\n")
    code = await _reply(reader)
    if code != 220:
        raise SmtpError(f"STARTTLS refused ({code})")
    with tls_handshake():
        await writer.start_tls(context, server_hostname=host)


def _ehlo_name(writer: asyncio.StreamWriter) -> str:
    """Our own address as an address literal (RFC 5321 4.1.3): a name would need a lookup."""
    local = writer.get_extra_info("sockname")
    ip = str(local[0]) if local else "127.0.0.1"
    return f"[IPv6:{ip}]" if ":" in ip else f"[{ip}]"


async def _reply(reader: asyncio.StreamReader) -> int:
    return (await _reply_lines(reader))[0]


async def _reply_lines(reader: asyncio.StreamReader) -> tuple[int, list[str]]:
    """One reply, `250-first` ... `250 last`: (its code, the text of each line). Raises
    SmtpError for a closed connection or lines that are not an SMTP reply."""
    lines: list[str] = []
    while len(lines) < MAX_REPLY_LINES:
        try:
            raw = await reader.readline()
        except ValueError:  # a line longer than the stream's limit
            raise SmtpError("not an SMTP server") from None
        if not raw.endswith(b"\n"):
            raise SmtpError("connection closed" if not lines and not raw else "not an SMTP server")
        line = raw.decode("ascii", "replace").rstrip("\r\n")
        code, separator = line[:3], line[3:4]
        if not (code.isdigit() and separator in ("", " ", "-")) or (lines and code != lines[0][:3]):
            raise SmtpError("not an SMTP server")
        lines.append(line)
        if separator != "-":
            return int(code), [text[4:] for text in lines]
    raise SmtpError("not an SMTP server")


def _check(monitor: Monitor) -> None:
    parts = check_address(monitor, port_required=False, query=True)
    if parts.query and parse_qsl(parts.query, keep_blank_values=True) != [("starttls", "1")]:
        raise InvalidMonitor("smtp:// takes only ?starttls=1: smtp://host[:port][?starttls=1]")
    check_expires_within(monitor)
    if not starttls(monitor) and monitor.expires_within_sec != DEFAULT_EXPIRES_WITHIN_SEC:
        raise InvalidMonitor("--expires-within needs ?starttls=1: smtp://host[:port]?starttls=1")
    request.check_own_trust(monitor, starttls(monitor), "?starttls=1: smtp://host[:port]?starttls=1")
    latency.check(monitor)


KIND = Kind(
    name="smtp",
    schemes=("smtp",),
    usage="smtp://host[:port][?starttls=1]",
    probe=latency.judged(request.own_trust(probe_smtp)),
    check=_check,
    options=frozenset({"timeout_s", "retries", "expires_within_sec", latency.OPTION, "ca_file"}),
    defaults={"expires_within_sec": DEFAULT_EXPIRES_WITHIN_SEC},
)
