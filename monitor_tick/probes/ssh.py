"""ssh://host[:port] (port 22 by default): an SSH server's identification line, no login.

Up when the server identifies itself as speaking SSH 2 (`SSH-2.0-...`, or `SSH-1.99-...`, which
speaks both) within the deadline; the probe then sends its own identification line, as an SSH
client does first (RFC 4253 4.2), and closes before any key exchange. Nothing is logged in to,
so no key or password is needed, and no library: the banner is one line of text. The latency
is the time to the server's line. Lines a server sends before it (RFC 4253 allows them) are
skipped, as OpenSSH skips them.
"""

from __future__ import annotations

import re
import time

from monitor_tick import __version__
from monitor_tick.core.clock import elapsed_ms
from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes import latency
from monitor_tick.probes.base import Kind, ProbeContext
from monitor_tick.probes.net import address, cause_of_os_error, check_address, close_stream, open_stream, prefixed

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import asyncio

DEFAULT_PORT = 22
MAX_LINES_BEFORE = 1024  # lines a server may send before its identification (OpenSSH's limit)
IDENTIFICATION = f"SSH-2.0-monitor_tick_{__version__}\r\n".encode("ascii")
_SSH_2 = ("2.0", "1.99")
_VERSION = rb"SSH-([0-9.]{1,10})-"  # compiled on first use (re's cache): a tick of other kinds never needs it


class BannerError(Exception):
    """The server's first lines were not an SSH 2 identification; str() is the cause after `ssh: `."""


async def probe_ssh(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    import asyncio

    host, port = address(monitor, DEFAULT_PORT)
    start = time.perf_counter()
    deadline = asyncio.get_running_loop().time() + monitor.timeout_s
    writer: asyncio.StreamWriter | None = None
    lines: list[bytes] = []
    try:
        async with asyncio.timeout_at(deadline):
            reader, writer = await open_stream(host, port, ctx.guard)
            await _identification(reader, lines)
            latency_ms = elapsed_ms(start, time.perf_counter())
            writer.write(IDENTIFICATION)
            await writer.drain()
    except TimeoutError:  # a server that said something else, and waits for us to speak first
        return ProbeResult("down", None, None, "ssh: not an SSH server" if lines else "ssh: timeout")
    except BannerError as exc:
        return ProbeResult("down", None, None, f"ssh: {exc}")
    except OSError as exc:
        return ProbeResult("down", None, None, prefixed("ssh", cause_of_os_error(exc)))
    finally:
        if writer is not None:
            await close_stream(writer, deadline)
    return ProbeResult("up", latency_ms)


async def _identification(reader: asyncio.StreamReader, lines: list[bytes]) -> None:
    """Read up to the server's `SSH-protoversion-softwareversion` line, each line read into
    `lines`. Raises BannerError."""
    while len(lines) <= MAX_LINES_BEFORE:
        try:
            line = await reader.readline()
        except ValueError:  # a line longer than the stream's limit
            raise BannerError("not an SSH server") from None
        if not line.endswith(b"\n"):
            raise BannerError("connection closed")
        lines.append(line)
        if line.startswith(b"SSH-"):
            version = re.match(_VERSION, line)
            if version is None:
                raise BannerError("not an SSH server")
            if version[1].decode("ascii") not in _SSH_2:
                raise BannerError(f"protocol {version[1].decode('ascii')}, not 2.0")
            return
    raise BannerError("not an SSH server")


def _check(monitor: Monitor) -> None:
    check_address(monitor, port_required=False)
    latency.check(monitor)


KIND = Kind(
    name="ssh",
    schemes=("ssh",),
    usage="ssh://host[:port]",
    probe=latency.judged(probe_ssh),
    check=_check,
    options=frozenset({"timeout_s", "retries", latency.OPTION}),
)
