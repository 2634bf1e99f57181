"""tcp:// monitors against real listening and closed ports on 127.0.0.1, through the tick."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.probes.net import cause_of_os_error
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add, rollup
from tests.servers import refused_port

runner = CliRunner()


@contextmanager
def listening_port() -> Iterator[int]:
    """A 127.0.0.1 port that accepts connections (the kernel completes them) and never answers.

    (Not a LocalServer: a client that connects and leaves without a request can race its stop
    and leak the accepted socket.)"""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def test_an_open_port_is_up_and_a_closed_one_is_down_with_connect_refused(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with listening_port() as port:
        open_port = add(conn, f"tcp://127.0.0.1:{port}", name="open")
        closed = add(conn, f"tcp://127.0.0.1:{refused_port()}", name="closed", retries=0)
        report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0))
    results = {r["name"]: r for r in report.results_json()}
    assert (results["open"]["kind"], results["open"]["status"], results["open"]["cause"]) == ("tcp", "up", None)
    assert isinstance(results["open"]["latency_ms"], int)
    assert (results["closed"]["status"], results["closed"]["cause"]) == ("down", "tcp: connect refused")
    assert rollup(conn, open_port) == (1, 0) and rollup(conn, closed) == (1, 1)
    assert store.incidents_for(conn, closed)[0][2] == "tcp: connect refused"

    listed = {row["name"]: row for row in json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)}
    assert (listed["open"]["state"], listed["closed"]["state"]) == ("up", "down")
    assert listed["closed"]["note"] == "tcp: connect refused"
    report_text = runner.invoke(app, ["report", "--db", db_path]).stdout
    assert "tcp: connect refused" in report_text


def test_a_refusal_from_every_address_of_a_host_is_still_connect_refused() -> None:
    # asyncio raises one plain OSError when each address of a name (::1, 127.0.0.1) fails differently
    both = OSError(
        "Multiple exceptions: [Errno 111] Connect call failed ('::1', 9, 0, 0), "
        "[Errno 111] Connect call failed ('127.0.0.1', 9)"
    )
    assert cause_of_os_error(both) == "connect refused"
    assert cause_of_os_error(OSError("Multiple exceptions: [Errno 113] No route to host")) == "connect error"
