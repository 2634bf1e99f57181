"""Real ticks against real HTTP servers on 127.0.0.1 and a real SQLite file, through the
installed `monitor-tick` command, minute by minute with --minute."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core import clock, schedule
from tests.servers import LocalServer, send_response

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
START = 29_934_720  # 2026-12-01T00:00Z


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MONITOR_TICK, "--db", db, *args] if args and not args[0].isalpha() else [MONITOR_TICK, *args, "--db", db],
        capture_output=True,
        text=True,
        timeout=60,
    )


class Switch:
    """A route whose status the test flips between minutes."""

    def __init__(self, server: LocalServer, path: str) -> None:
        self.status = 200
        server.route(path, self.handle)

    async def handle(self, reader: object, writer: object, path: str, method: str) -> None:
        await send_response(writer, self.status, b"flip", method=method)  # type: ignore[arg-type]


def test_three_monitors_over_a_sequence_of_minutes_are_probed_exactly_on_schedule(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    flip = Switch(local_server, "/flip")
    assert cli(db, "add", local_server.url("/ok"), "--name", "every-minute", "--every", "1m").stdout == "1\n"
    assert (
        cli(db, "add", local_server.url("/flip"), "--name", "flip", "--every", "2m", "--retries", "0").stdout == "2\n"
    )
    assert (
        cli(
            db,
            "add",
            local_server.url("/keyword/hello"),
            "--name",
            "kw",
            "--every",
            "5m",
            "--keyword",
            "hello",
            "--aligned",
        ).stdout
        == "3\n"
    )
    # the replayed minutes are before the monitors were added: date them back, or replays would
    # rightly record nothing for them
    raw = sqlite3.connect(db)
    raw.execute("UPDATE monitors SET created_at_ms = ?", (clock.minute_start_ms(START),))
    raw.commit()
    raw.close()
    expected_hits = {"/ok": 0, "/flip": 0, "/keyword/hello": 0}
    flip_plan = {START + 2: 503, START + 4: 503, START + 6: 200}  # flip (id 2, phase 0) runs on even minutes
    for minute in range(START, START + 12):
        flip.status = flip_plan.get(minute, flip.status)
        run = cli(db, "--minute", str(minute), "--json")
        assert run.returncode == 0 and run.stderr == "", run.stderr
        report = json.loads(run.stdout)
        due_paths = ["/ok"] + (["/flip"] if minute % 2 == 0 else []) + (["/keyword/hello"] if minute % 5 == 0 else [])
        assert report["due"] == len(due_paths), minute
        for path in due_paths:
            expected_hits[path] += 1
        assert local_server.hits.snapshot() == expected_hits, minute
        rerun = cli(db, "--minute", str(minute), "--json")  # a doubled cron run: probes nothing
        assert json.loads(rerun.stdout)["claimed"] is False
        assert local_server.hits.snapshot() == expected_hits, minute

    conn = sqlite3.connect(db)
    rollups = dict(conn.execute("SELECT monitor_id, checks || '/' || failures FROM rollups").fetchall())
    assert rollups == {1: "12/0", 2: "6/2", 3: "3/0"}
    incidents = conn.execute("SELECT monitor_id, started_at_ms, resolved_at_ms, cause FROM incidents").fetchall()
    assert incidents == [(2, clock.minute_start_ms(START + 2), clock.minute_start_ms(START + 6), "status 503")]
    ledger = conn.execute("SELECT count(*), count(finished_at_ms) FROM ticks").fetchone()
    assert ledger == (12, 12)
    conn.close()

    report = json.loads(cli(db, "report", "--json", "--since", "3650d").stdout)
    flip_row = next(r for r in report if r["name"] == "flip")
    assert (flip_row["checks"], flip_row["failures"], flip_row["uptime_pct"]) == (6, 2, 66.667)
    assert flip_row["open_incident"] is False


@pytest.mark.parametrize(
    ("path", "settings", "status", "cause"),
    [
        ("/ok", {}, "up", None),
        ("/status/503", {}, "down", "status 503"),
        ("/slow/300", {"timeout_s": 5.0}, "up", None),
        ("/hang", {"timeout_s": 0.5}, "down", "timeout"),
        ("/drip", {"timeout_s": 0.5}, "down", "timeout reading body"),
        ("/keyword/hello", {"keyword": "hello"}, "up", None),
        ("/keyword/hello", {"keyword": "goodbye"}, "down", "keyword missing"),
        ("/redirect/3", {}, "up", None),
        ("/redirect-loop", {}, "down", "too many redirects"),
        ("/garbage", {}, "down", "protocol error"),
    ],
)
def test_real_servers_give_the_expected_result_and_cause(
    conn: sqlite3.Connection,
    db_path: str,
    local_server: LocalServer,
    path: str,
    settings: dict[str, object],
    status: str,
    cause: str | None,
) -> None:
    from monitor_tick.run.tick import TickOptions, run_tick
    from tests.conftest import add

    monitor = add(conn, local_server.url(path), retries=0, **settings)
    report = run_tick(TickOptions(db_path=db_path, minute=START, retry_delay_s=0))
    (result,) = report.results
    assert (result.monitor_id, result.status, result.cause) == (monitor, status, cause)
    if status == "up":
        assert result.latency_ms is not None and (result.latency_ms >= 300 if "slow" in path else True)


class Redirecting:
    """A route that redirects to /ok, or answers itself once the test says so; it keeps what each
    request asked for in Accept-Encoding (the fast path asks for `identity`, httpx for gzip)."""

    def __init__(self, server: LocalServer, path: str) -> None:
        self.redirects = True
        self.encodings: list[str] = []
        server.route(path, self.handle)

    async def handle(self, reader: object, writer: object, path: str, method: str) -> None:
        from tests.servers import current_request

        self.encodings.append(current_request.get().headers.get("accept-encoding", ""))
        if self.redirects:
            await send_response(writer, 302, "", method=method, headers=[("Location", "/ok")])  # type: ignore[arg-type]
        else:
            await send_response(writer, 200, "here", method=method)  # type: ignore[arg-type]


def _every_minute_since_start(db: str, url: str) -> None:
    assert cli(db, "add", url, "--every", "1m").stdout == "1\n"
    raw = sqlite3.connect(db)  # replayed minutes before the monitor was added would record nothing
    raw.execute("UPDATE monitors SET created_at_ms = ?", (clock.minute_start_ms(START),))
    raw.commit()
    raw.close()


def _tick(db: str, minute: int) -> None:
    run = cli(db, "--minute", str(minute))
    assert run.returncode == 0 and run.stderr == "", run.stderr


def test_a_redirected_monitors_request_is_sent_once_a_tick(tmp_path: Path, local_server: LocalServer) -> None:
    """One request a tick, its redirect followed once, asking for the body compressed."""
    db = str(tmp_path / "m.db")
    route = Redirecting(local_server, "/moved")
    _every_minute_since_start(db, local_server.url("/moved"))
    for minute in (START, START + 1, START + 2):
        _tick(db, minute)
    assert local_server.hits.snapshot() == {"/moved": 3, "/ok": 3}
    assert all("gzip" in e for e in route.encodings)


def test_a_refused_port_is_down_with_connect_refused(conn: sqlite3.Connection, db_path: str) -> None:
    from monitor_tick.run.tick import TickOptions, run_tick
    from tests.conftest import add
    from tests.servers import refused_port

    add(conn, f"http://127.0.0.1:{refused_port()}/", retries=0)
    (result,) = run_tick(TickOptions(db_path=db_path, minute=START, retry_delay_s=0)).results
    assert (result.status, result.cause) == ("down", "connect refused")


def test_every_command_explains_itself_in_help() -> None:
    commands = [
        [],
        ["add"],
        ["list"],
        ["pause"],
        ["resume"],
        ["remove"],
        ["report"],
        ["plan", "add"],
        ["owner", "add"],
        ["maintenance", "add"],
        ["edit"],
        ["show"],
        ["apply"],
        ["export"],
        ["heartbeat", "rotate"],
        ["plan", "list"],
        ["plan", "edit"],
        ["plan", "remove"],
        ["owner", "list"],
        ["owner", "edit"],
        ["owner", "remove"],
        ["maintenance", "list"],
        ["maintenance", "remove"],
        ["backup"],
        ["check"],
    ]
    for command in commands:
        run = subprocess.run([MONITOR_TICK, *command, "--help"], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, command
        assert "Usage: monitor-tick" in run.stdout and "--db" in run.stdout, command


def test_bad_values_at_add_get_one_line_and_exit_2(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    cases = [
        (["add", "not a url"], "url contains whitespace"),
        (["add", "ftp://example.org/"], "unsupported scheme 'ftp'"),
        (["add", "http://127.0.0.1/", "--every", "90s"], "whole number of minutes"),
        (["add", "http://127.0.0.1/", "--every", "soon"], "not a duration"),
        (["add", "http://127.0.0.1/", "--timeout", "0"], "duration must be positive"),
        (["add", "http://127.0.0.1/", "--expect", "200-abc"], "expected status"),
        (
            ["add", "http://127.0.0.1/", "--method", "BREW"],
            "method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
        ),
    ]
    for args, message in cases:
        run = cli(db, *args)
        assert run.returncode == 2, args
        assert run.stderr.count("\n") == 1 and message in run.stderr, (args, run.stderr)
    assert not Path(db).exists()  # refused before the database was even created


def test_the_housekeeping_minute_is_a_fixed_minute_of_the_day() -> None:
    assert schedule.HOUSEKEEPING_MINUTE_OF_DAY == 3 * 60 + 17
    assert store.RETENTION_DEFAULT_MS == 400 * clock.MS_PER_DAY
