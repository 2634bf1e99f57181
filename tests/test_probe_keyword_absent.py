"""--keyword-absent: an HTTP monitor is down when the body's first 1 MiB contains the text;
against real local servers, through the tick."""

from __future__ import annotations

import asyncio
import sqlite3

from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.probes.http import MAX_BODY_BYTES
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add
from tests.servers import Handler, LocalServer, response_head

runner = CliRunner()


def test_a_page_that_contains_the_unwanted_text_is_down_and_one_without_it_is_up(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with LocalServer() as server:
        maintenance = add(conn, server.url("/keyword/Down%20for%20maintenance"), name="m", keyword_absent="maintenance")
        fine = add(conn, server.url("/keyword/All%20good"), name="fine", keyword_absent="maintenance")
        both = add(conn, server.url("/keyword/All%20good"), name="both", keyword="good", keyword_absent="maintenance")
        report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0))
    results = {r["id"]: (r["status"], r["cause"]) for r in report.results_json()}
    assert results == {maintenance: ("down", "keyword present"), fine: ("up", None), both: ("up", None)}
    assert store.incidents_for(conn, maintenance)[0][2] == "keyword present"


def body_of(body: bytes) -> Handler:
    async def send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        writer.write(response_head(200, {"Content-Length": str(len(body))}) + body)
        await writer.drain()

    return send


def test_only_the_first_mebibyte_is_searched(conn: sqlite3.Connection, db_path: str) -> None:
    with LocalServer() as server:
        server.route("/late-word", body_of(b"a" * MAX_BODY_BYTES + b"maintenance"))
        server.route("/early-word", body_of(b"a" * (MAX_BODY_BYTES - 20) + b"maintenance" + b"a" * 4096))
        late = add(conn, server.url("/late-word"), name="late", keyword_absent="maintenance", retries=0)
        early = add(conn, server.url("/early-word"), name="early", keyword_absent="maintenance", retries=0)
        report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0))
    assert {r["id"]: r["status"] for r in report.results_json()} == {late: "up", early: "down"}


def test_keyword_absent_needs_a_body_and_an_http_url() -> None:
    head = runner.invoke(app, ["add", "http://example.test/", "--method", "HEAD", "--keyword-absent", "x"])
    assert head.exit_code == 2 and "a keyword needs the body: use --method GET" in head.stderr
    tcp = runner.invoke(app, ["add", "tcp://example.test:80", "--keyword-absent", "x"])
    assert tcp.exit_code == 2 and "--keyword-absent does not apply to tcp monitors" in tcp.stderr
