"""The console entry point's fast path: a plain tick without Typer, the same as through Typer."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import respx
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick import entry
from monitor_tick.cli import app
from tests.conftest import add
from tests.servers import refused_port

MINUTE = 29_934_720  # 2026-12-01T00:00Z
NOW = "2026-12-01 00:00:20"
runner = CliRunner()
PING_PORT = refused_port()


def _masked(text: str) -> str:
    """Tick output without the one thing that differs between runs: how long it took."""
    return re.sub(r'("duration_ms":|in )\d+', r"\1N", text)


def _fast(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        entry.main(args)
    out = capsys.readouterr()
    return int(exited.value.code or 0), _masked(out.out), _masked(out.err)


def _typer(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, args, env=env)
    return result.exit_code, _masked(result.stdout), _masked(result.stderr)


@pytest.fixture
def world(conn: sqlite3.Connection, db_path: str, tmp_path: Path) -> tuple[str, str]:
    """Two copies of one database with a due monitor, a broken one and one not due: one copy
    for each path, so that each can claim the minute."""
    add(conn, "https://user:secret@a.test/?token=x", name="a", retries=0)
    add(conn, "http://b.test/", every_s=300, name="b")
    broken = add(conn, "http://c.test/", name="c")
    conn.execute("UPDATE monitors SET url = 'ftp://c.test/' WHERE id = ?", (broken,))
    conn.close()
    other = str(tmp_path / "other.db")
    shutil.copy(db_path, other)
    return db_path, other


TICK_COMMAND_LINES = [
    [],
    ["-v"],
    ["--verbose", "--json"],
    ["--json"],
    ["--dry-run"],
    ["--dry-run", "--json"],
    ["--minute", str(MINUTE + 2), "--dry-run"],
    ["--minute=" + str(MINUTE + 5), "--dry-run", "--json"],
    ["--minute", str(MINUTE + 5), "-v"],
    ["--force", "-v"],
    ["--concurrency", "3", "--retry-delay", "0", "--json"],
    ["--concurrency=1000", "--retry-delay=1.5s", "-v"],
    ["--retry-delay", "soon"],
    ["--retry-delay", "0s", "--dry-run", "--dry-run"],
    ["--ping-url", f"http://127.0.0.1:{PING_PORT}/ping/x", "--json"],  # nothing listens: one line
    ["--ping-url=ftp://hc-ping.test/x", "-v"],
]


@pytest.mark.respx(assert_all_called=False)
@pytest.mark.parametrize("args", TICK_COMMAND_LINES, ids=lambda a: " ".join(a) or "(none)")
def test_the_fast_path_and_typer_run_the_tick_alike(
    args: list[str], world: tuple[str, str], respx_mock: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    respx_mock.get("https://a.test/?token=x").mock(return_value=httpx.Response(503))
    fast_db, typer_db = world
    assert entry.parse_tick_args(["--db", fast_db, *args], {}) is not None  # the fast path takes it
    with freeze_time(NOW, real_asyncio=True):
        fast = _fast(["--db", fast_db, *args], capsys)
        through_typer = _typer(["--db", typer_db, *args])
    assert fast == through_typer
    if args in ([], ["--force", "-v"]):
        assert fast[0] == 0 and fast[1] == "" and "skipped: invalid monitor" in fast[2]


def test_a_rerun_and_an_unusable_database_read_the_same_through_either(
    world: tuple[str, str], capsys: pytest.CaptureFixture[str], respx_mock: respx.MockRouter
) -> None:
    respx_mock.get("https://a.test/?token=x").mock(return_value=httpx.Response(200))
    fast_db, typer_db = world
    with freeze_time(NOW, real_asyncio=True):
        _fast(["--db", fast_db], capsys), _typer(["--db", typer_db])
        assert _fast(["--db", fast_db, "-v"], capsys) == _typer(["--db", typer_db, "-v"])
        assert "already run" in _typer(["--db", typer_db, "-v"])[2]
    missing = ["--db", "/nonexistent-dir/x.db"]
    assert (
        _fast(missing, capsys)
        == _typer(missing)
        == (
            1,
            "",
            "monitor-tick: database directory does not exist: /nonexistent-dir\n",
        )
    )


def test_the_database_comes_from_monitor_tick_db_unless_db_is_given(
    world: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fast_db, typer_db = world
    monkeypatch.setenv("MONITOR_TICK_DB", fast_db)
    assert entry.parse_tick_args(["--dry-run"], os.environ)["db"] == fast_db  # type: ignore[index]
    assert entry.parse_tick_args(["--db", typer_db], os.environ)["db"] == typer_db  # type: ignore[index]
    assert entry.parse_tick_args([], {"MONITOR_TICK_DB": ""})["db"] is None  # type: ignore[index]
    args = ["--minute", str(MINUTE), "--dry-run", "--json"]
    fast = _fast(args, capsys)
    assert fast == _typer(args, env={"MONITOR_TICK_DB": typer_db})
    assert '"name":"a"' in fast[1]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["list"],
        ["--db", "x.db", "list"],
        ["--concurrency", "0"],
        ["--concurrency", "1001"],
        ["--minute", "soon"],
        ["--minute", "-5"],
        ["--db"],
        ["--db", "--json"],
        ["--bogus"],
        ["-vv"],
        ["--json=yes"],
        ["--", "list"],
        ["--dry"],
    ],
    ids=" ".join,
)
def test_anything_but_the_ticks_own_options_goes_to_typer(args: list[str]) -> None:
    assert entry.parse_tick_args(args, {}) is None


def test_shell_completion_goes_to_typer() -> None:
    assert entry.parse_tick_args([], {"_MONITOR_TICK_COMPLETE": "bash_source"}) is None


@pytest.mark.parametrize("args", [["--help"], ["--concurrency", "0"], ["--minute", "soon"], ["--bogus"]], ids=" ".join)
def test_what_goes_to_typer_gets_typers_own_output_and_exit_code(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["monitor-tick"])  # the program name in usage lines
    with pytest.raises(SystemExit) as exited:
        entry.main(args)
    out = capsys.readouterr()
    expected = runner.invoke(app, args, prog_name="monitor-tick")
    assert (exited.value.code, out.err) == (expected.exit_code, expected.stderr)
    # help is wrapped (and long lines cut) to the terminal's width, which differs here
    assert out.out.splitlines()[:1] == expected.stdout.splitlines()[:1]
    assert exited.value.code == (0 if args == ["--help"] else 2)
    assert ("Commands:" in out.out) is (args == ["--help"])


def test_an_idle_tick_imports_neither_typer_nor_httpx_nor_asyncio(db_path: str) -> None:
    """As cron runs it: a fresh process; `python -X importtime` lists every module imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "monitor_tick", "--db", db_path],
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert done.returncode == 0 and done.stdout == ""
    assert "monitor_tick.tick" in imported and "sqlite3" in imported  # the list is real
    heavy = {"typer", "click", "httpx", "httpcore", "asyncio", "aiohttp", "uvloop", "rich", "pydantic", "anyio"}
    assert not {name.split(".")[0] for name in imported} & heavy
    with sqlite3.connect(db_path) as check:
        assert check.execute("SELECT count(*) FROM ticks WHERE finished_at_ms IS NOT NULL").fetchone()[0] == 1
