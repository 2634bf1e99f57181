"""Somebody watches the watcher: with --ping-url (or MONITOR_TICK_PING_URL) every tick ends with
a GET of the URL when it ran, of URL/fail when it failed, healthchecks.io-style; the ping never
holds the tick past its short deadline nor changes its exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor_tick.publish.ping import PING_TIMEOUT_S
from tests.commands import clock_at
from tests.receivers import JsonReceiver
from tests.servers import refused_port

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")


@pytest.fixture
def rx() -> Iterator[JsonReceiver]:
    with JsonReceiver() as receiver:
        yield receiver


def tick(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = subprocess.run(
        [MONITOR_TICK, *args],
        capture_output=True,
        text=True,
        # bounded: the ping's deadline and a tick of nothing due, with room for a loaded machine
        timeout=PING_TIMEOUT_S + 20,
        # none of our own settings from outside; a clock away from the hourly and daily lines
        env={**{k: v for k, v in os.environ.items() if not k.startswith("MONITOR_TICK_")}, **clock_at(), **(env or {})},
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def test_a_tick_that_ran_pings_the_url_and_one_that_failed_pings_url_fail(rx: JsonReceiver, db_path: str) -> None:
    url = f"http://127.0.0.1:{rx.port}/ping/5f2c"
    assert tick("--db", db_path, "--ping-url", url) == (0, "", "")
    assert tick("--db", db_path, "--ping-url", url) == (0, "", "")  # ran: the minute was already run
    assert tick("--db", "/nonexistent-dir/x.db", "--ping-url", url) == (
        1,
        "",
        "monitor-tick: database directory does not exist: /nonexistent-dir\n",
    )
    assert tick("--db", db_path, "--retry-delay", "soon", env={"MONITOR_TICK_PING_URL": url + "/?rid=1"})[0] == 2
    # through Typer (--status-page is not the fast path's) it is the same
    assert tick("--db", db_path, "--status-page", str(Path(db_path).parent / "page"), "--ping-url", url)[0] == 0
    assert rx.gets == ["/ping/5f2c", "/ping/5f2c", "/ping/5f2c/fail", "/ping/5f2c/fail?rid=1", "/ping/5f2c"]
    assert rx.posts == 0


def test_a_ping_url_that_never_answers_costs_the_tick_its_deadline_only(rx: JsonReceiver, db_path: str) -> None:
    rx.hang()
    code, out, err = tick("--db", db_path, "--ping-url", f"http://127.0.0.1:{rx.port}/ping/5f2c")
    assert (code, out) == (0, "")
    assert err == f"monitor-tick: --ping-url: no ping to 127.0.0.1:{rx.port}: no answer within {PING_TIMEOUT_S:g}s\n"
    assert rx.gets == ["/ping/5f2c"]


def test_a_ping_that_fails_is_one_line_and_keeps_the_exit_code(db_path: str) -> None:
    port = refused_port()
    code, out, err = tick("--db", db_path, "--ping-url", f"http://127.0.0.1:{port}/p")
    assert (code, out, err) == (0, "", f"monitor-tick: --ping-url: no ping to 127.0.0.1:{port}: connect refused\n")


def test_a_ping_url_that_cannot_be_used_is_refused_before_the_tick(db_path: str) -> None:
    assert tick("--db", db_path, "--ping-url", "ftp://hc-ping.example/uuid") == (
        2,
        "",
        "monitor-tick: --ping-url: must be an http:// or https:// URL with a host\n",
    )
