"""A lean HTTP/1.1 server for the bench, on 127.0.0.1 only, run in its own process.

Every response is `200 ok` with `Connection: close`, and the connection is closed after it, so
each check opens a fresh connection (as checks of distinct hosts do). `GET /d/MS` answers after
MS milliseconds; any other path answers at once. It uses asyncio protocols (no streams) and, if
installed, uvloop, so that the server is not what the bench measures.

    python bench/server.py            # prints the port on stdout, serves until stdin closes
"""

from __future__ import annotations

import asyncio
import sys

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nok"


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if b"\r\n\r\n" not in self.buffer:
            return
        target = self.buffer.split(b" ", 2)[1] if self.buffer.count(b" ") >= 2 else b"/"
        self.buffer = b""
        delay_ms = 0
        if target.startswith(b"/d/"):
            try:
                delay_ms = int(target[3:].split(b"?")[0])
            except ValueError:
                delay_ms = 0
        if delay_ms > 0:
            asyncio.get_running_loop().call_later(delay_ms / 1000, self._respond)
        else:
            self._respond()

    def _respond(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(RESPONSE)
            self.transport.close()


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Protocol, "127.0.0.1", 0, backlog=4096, reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    # serve until the parent closes our stdin (or dies)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


def main() -> None:
    try:
        import uvloop

        uvloop.run(_serve())
    except ImportError:
        asyncio.run(_serve())


if __name__ == "__main__":
    main()
