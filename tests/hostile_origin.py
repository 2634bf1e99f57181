"""An origin that misbehaves on purpose, for HTTP checks run through the tick.

Built on tests/servers.py's LocalServer: each function here registers routes on a server (or
starts one) that answer the way a hostile or broken origin does, byte for byte, so that a test
can hold what a check records against what the server sent and received. Everything listens on
127.0.0.1 only.

- `tick_check`: one monitor, one tick on a real SQLite file, through the tick's Python entry;
  the check's result.
- `scripted`: a route answering each request with the next response of a list.
- `unaccepting_port`: a port whose accept queue is full, so a connection to it times out.
- `tick_without_network`: the installed command in a network namespace of its own.
- `unresolvable`: a fixture, a name the resolver says does not exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core.model import CheckResult
from monitor_tick.run.tick import TickOptions, run_tick
from tests.commands import MONITOR_TICK
from tests.conftest import add
from tests.servers import HOST, Handler, LocalServer, send_response

MINUTE = 29_934_720  # 2026-12-01T00:00Z: a replayed minute, so that every monitor is due


def tick_check(db_path: str | Path, url: str, **settings: object) -> CheckResult:
    """Add one monitor for `url` (with `settings`, as `add` takes them, retries 0 unless given) to
    the SQLite file at `db_path` (made when missing; one check a file), run one tick through
    run_tick, and return its check."""
    conn = store.open_db(str(db_path))
    try:
        monitor = add(conn, url, **{"retries": 0, **settings})
    finally:
        conn.close()
    report = run_tick(TickOptions(db_path=str(db_path), minute=MINUTE, retry_delay_s=0))
    [result] = [r for r in report.results if r.monitor_id == monitor]
    return result


def scripted(server: LocalServer, prefix: str, *answers: int | tuple[int, dict[str, str]] | Handler) -> list[int]:
    """Answer the requests to `prefix` in turn with `answers`: a status (its body `status N`), a
    (status, headers) pair, or a handler of the server's own; the last one answers every request
    after it. Returns the list of statuses answered so far (a handler's as 0), in order."""
    lock = threading.Lock()
    answered: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        with lock:
            turn = answers[min(len(answered), len(answers) - 1)]
            answered.append(turn if isinstance(turn, int) else turn[0] if isinstance(turn, tuple) else 0)
        if callable(turn):
            await turn(reader, writer, path, method)
            return
        status, headers = (turn, {}) if isinstance(turn, int) else turn
        await send_response(writer, status, f"status {status}\n", method=method, headers=headers)

    server.route(prefix, answer)
    return answered


@contextlib.contextmanager
def unaccepting_port() -> Iterator[int]:
    """A 127.0.0.1 port that listens but never accepts, its one-slot accept queue already full:
    the kernel drops every further SYN, so a connection to it neither succeeds nor is refused."""
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind((HOST, 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        filler.connect((HOST, port))
        yield port


def tick_without_network(db_path: str) -> subprocess.CompletedProcess[str]:
    """Run the installed command's tick with --json on `db_path` in an empty network namespace
    (`unshare -n`): no name resolves and no address is reached from it, its loopback included.
    Asserts that it exits 0."""
    done = subprocess.run(
        ["unshare", "-n", MONITOR_TICK, "--db", db_path, "--retry-delay", "0", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def unresolvable(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A name the resolver says does not exist, without asking any real resolver."""
    real = socket.getaddrinfo

    def lookup(host: object, *args: object, **kwargs: object) -> object:
        if host in ("no-such-host.test", b"no-such-host.test"):  # anyio passes IDNA bytes
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    yield "no-such-host.test"
