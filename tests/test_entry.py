"""The console entry point's fast path: a plain tick without Typer, the same as through Typer.

Both parsers are made from one option table (cli/options.py); these tests hold that they read
a table of command lines alike, that the fast path hands Typer everything else, and that a
plain tick runs the same either way."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import typer
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick.cli import entry
from monitor_tick.cli.app import app
from monitor_tick.cli.options import parse_tick_args
from tests.commands import MONITOR_TICK
from tests.conftest import add, rollup
from tests.hostile_origin import scripted
from tests.servers import LocalServer, TLSPair, refused_port, valid_cert

MINUTE = 29_934_720  # 2026-12-01T00:00Z
NOW = "2026-12-01 00:00:20"
runner = CliRunner()


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
def site_cert() -> TLSPair:
    return valid_cert()


@pytest.fixture
def site(site_cert: TLSPair) -> Iterator[LocalServer]:
    """The HTTPS server of the due monitor `a` (its certificate from the CA the monitor trusts)."""
    with LocalServer(tls=site_cert.server_context) as server:
        yield server


@pytest.fixture
def world(
    conn: sqlite3.Connection, db_path: str, tmp_path: Path, site: LocalServer, site_cert: TLSPair
) -> tuple[str, str]:
    """Two copies of one database with a due monitor (on `site`), a broken one and one not due:
    one copy for each path, so that each can claim the minute."""
    url = f"https://user:secret@127.0.0.1:{site.port}/?token=x"
    add(conn, url, name="a", retries=0, ca_file=site_cert.ca_pem)
    add(conn, "http://b.test/", every_s=300, name="b")
    broken = add(conn, "http://c.test/", name="c")
    conn.execute("UPDATE monitors SET url = 'ftp://c.test/' WHERE id = ?", (broken,))
    conn.close()
    other = str(tmp_path / "other.db")
    shutil.copy(db_path, other)
    return db_path, other


# both paths run the same function on what they read; these show it end to end
TICK_COMMAND_LINES = [
    [],
    ["--verbose", "--json"],
    ["--minute=" + str(MINUTE + 5), "--dry-run", "--json"],
    ["--force", "-v"],
    ["--retry-delay", "soon"],
    ["--ping-url", "http://127.0.0.1:PORT/ping/x", "--json"],  # nothing listens (the test's PORT): one line
    ["--ping-url=ftp://hc-ping.test/x", "-v"],
]


@pytest.mark.parametrize("args", TICK_COMMAND_LINES, ids=lambda a: " ".join(a) or "(none)")
def test_the_fast_path_and_typer_run_the_tick_alike(
    args: list[str], world: tuple[str, str], site: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [arg.replace(":PORT/", f":{refused_port()}/") for arg in args]
    scripted(site, "/", 503)
    fast_db, typer_db = world
    assert parse_tick_args(["--db", fast_db, *args], {}) is not None  # the fast path takes it
    with freeze_time(NOW, real_asyncio=True):
        fast = _fast(["--db", fast_db, *args], capsys)
        sent_by_fast = site.requests
        through_typer = _typer(["--db", typer_db, *args])
    assert fast == through_typer
    # each sent the same requests: the due monitor's, when the command line probes
    assert [r.target for r in site.requests] == [r.target for r in sent_by_fast] * 2
    assert {r.target for r in site.requests} <= {"/?token=x"}
    if args in ([], ["--force", "-v"]):
        assert fast[0] == 0 and fast[1] == "" and "skipped: invalid monitor" in fast[2]
        assert [r.target for r in sent_by_fast] == ["/?token=x"]


def test_a_rerun_and_an_unusable_database_read_the_same_through_either(
    world: tuple[str, str], site: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fast_db, typer_db = world  # `a` is up
    with freeze_time(NOW, real_asyncio=True):
        _fast(["--db", fast_db], capsys), _typer(["--db", typer_db])
        assert _fast(["--db", fast_db, "-v"], capsys) == _typer(["--db", typer_db, "-v"])
        assert "already run" in _typer(["--db", typer_db, "-v"])[2]
    assert site.hits == {"/": 2}  # one check by each path; the reruns probed nothing
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


def typer_reads(args: list[str]) -> dict[str, object] | None:
    """The tick's options as the Typer app's root callback would get them; None when Typer would
    not run a plain tick (a usage error, --help, a subcommand)."""
    root = typer.core.TyperCommand("monitor-tick", params=typer.main.get_command(app).params)  # no subcommands
    try:
        with root.make_context("monitor-tick", list(args)) as ctx:
            return dict(ctx.params)
    except (click.exceptions.Exit, click.UsageError):
        return None


# (command line, environment) the fast path takes, each read exactly as Typer reads it
FAST_PATH = [
    ([], {}),
    (["--db", "x.db", "-v"], {}),
    (["--verbose", "--json", "--dry-run", "--dry-run"], {}),
    (["--minute", "0", "--force"], {}),
    (["--minute=4223371679", "--concurrency=1000", "--catch-up", "0"], {}),
    (["--concurrency", "1", "--catch-up=1440", "--retry-delay", "soon", "--budget", "5s"], {}),
    (["--busy-timeout=1s", "--block-private", "--status-page", "site", "--metrics-file=m.prom"], {}),
    (["--db="], {}),
    (["--dry-run"], {"MONITOR_TICK_DB": "env.db"}),  # the database from the environment ...
    (["--db", "given.db"], {"MONITOR_TICK_DB": "env.db"}),  # ... unless --db is given
    ([], {"MONITOR_TICK_DB": ""}),
    (["--ping-url", "https://hc-ping.test/x", "--force"], {}),
    (["--ping-url=ftp://not-pingable.test/", "--dry-run"], {}),  # refused by the tick, not the parser
    ([], {"MONITOR_TICK_PING_URL": "https://hc-ping.test/env"}),  # the ping URL from the environment ...
    (["--ping-url", "https://hc-ping.test/given"], {"MONITOR_TICK_PING_URL": "https://hc-ping.test/env"}),  # ... or not
    ([], {"MONITOR_TICK_PING_URL": ""}),
]
# command lines the fast path hands to Typer: usage errors, help, subcommands, and what it does
# not read exactly as Typer would
TO_TYPER = [
    ["--help"],
    ["list"],
    ["--db", "x.db", "list"],
    ["--concurrency", "0"],
    ["--concurrency", "1001"],
    ["--catch-up", "1441"],
    ["--minute", "soon"],
    ["--minute", "-5"],
    ["--db"],
    ["--db", "--json"],
    ["--bogus"],
    ["-vv"],
    ["--json=yes"],
    ["--", "list"],
    ["--dry"],
    ["--ping-url"],
    ["--ping-url", "--json"],
]


@pytest.mark.parametrize(("args", "environ"), FAST_PATH, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_the_fast_path_reads_a_command_line_as_typer_does(
    args: list[str], environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    fast = parse_tick_args(args, environ)
    assert fast is not None and fast == typer_reads(args)


@pytest.mark.parametrize("args", TO_TYPER, ids=" ".join)
def test_anything_but_the_ticks_own_options_goes_to_typer(args: list[str]) -> None:
    assert parse_tick_args(args, {}) is None


def test_boolean_environment_variables_go_to_typer() -> None:
    assert parse_tick_args([], {"MONITOR_TICK_BLOCK_PRIVATE": "1"}) is None


def test_the_database_comes_from_monitor_tick_db_through_either(
    world: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fast_db, typer_db = world
    monkeypatch.setenv("MONITOR_TICK_DB", fast_db)
    args = ["--minute", str(MINUTE), "--dry-run", "--json"]
    fast = _fast(args, capsys)
    assert fast == _typer(args, env={"MONITOR_TICK_DB": typer_db})
    assert '"name":"a"' in fast[1]


def test_shell_completion_goes_to_typer() -> None:
    assert parse_tick_args([], {"_MONITOR_TICK_COMPLETE": "bash_source"}) is None


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


# the libraries of kinds other than http (and the test servers'), imported only when a monitor
# of their kind is due: dnspython, the database drivers, websockets, the SMTP server library
OTHER_KINDS_LIBRARIES = {"dns", "psycopg", "redis", "aiomysql", "pymysql", "websockets", "aiosmtpd"}


def imported_by_a_tick(db_path: str) -> set[str]:
    """The modules a tick imports, as cron runs it: a fresh process; `python -X importtime`
    lists every module imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "monitor_tick", "--db", db_path],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == ""
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def test_an_idle_tick_imports_no_typer_pycurl_asyncio_psycopg_dataclasses_or_typing(db_path: str) -> None:
    imported = imported_by_a_tick(db_path)
    assert "monitor_tick.run.tick" in imported and "sqlite3" in imported  # the list is real
    heavy = {
        # importing dataclasses (and inspect, which it imports) costs an idle tick a sixth of
        # its instructions, and each dataclass about 1 ms to define: the tick's records are
        # NamedTuples (bench/run.py, figure 3)
        "dataclasses",
        "inspect",
        # typing is a sixth of what is left: the records are made without it (core/records.py)
        "typing",
        # json (its decoder, scanner and C speedups): only for ids when there are some
        # (store/db.py, to_json), and for --json
        "json",
        "typer",
        "click",
        "httpx",
        "httpcore",
        "asyncio",
        "pycurl",
        "uvloop",
        "rich",
        "pydantic",
        "anyio",
        "yaml",
        *OTHER_KINDS_LIBRARIES,
    }
    assert not {name.split(".")[0] for name in imported} & heavy
    assert not any(name.startswith("monitor_tick.importers") for name in imported)
    # what only apply/export, migrate and import use (store/__init__.py defers them)
    assert not {"monitor_tick.store.config", "monitor_tick.store.copy", "monitor_tick.store.imports"} & imported
    with sqlite3.connect(db_path) as check:
        assert check.execute("SELECT count(*) FROM ticks WHERE finished_at_ms IS NOT NULL").fetchone()[0] == 1


def test_a_tick_of_http_monitors_imports_no_other_kinds_library(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    for n in range(10):
        add(conn, local_server.url(f"/ok?{n}"), name=f"site {n}")
    imported = imported_by_a_tick(db_path)
    assert (
        "monitor_tick.probes.curl" in imported and "monitor_tick.probes.ws" in imported
    )  # it probed, with every kind's module
    assert local_server.hits["/ok"] == 10 and rollup(conn, 1) == (1, 0)
    assert not {name.split(".")[0] for name in imported} & OTHER_KINDS_LIBRARIES


@pytest.fixture(scope="module")
def long_lists(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database whose `list`, `export` and dry run print several pipes' worth (a pipe holds
    64 KiB on Linux): 1,000 monitors with long names, every minute, so that all are due."""
    db = str(tmp_path_factory.mktemp("pipe") / "m.db")
    file = tmp_path_factory.getbasetemp() / "long_lists.toml"
    file.write_text(
        "".join(
            f'[monitors."monitor {i:04d} {"x" * 90}"]\nurl = "http://127.0.0.1:9/{i}"\ninterval_sec = 60\n'
            for i in range(1000)
        )
    )
    applied = subprocess.run([MONITOR_TICK, "apply", str(file), "--db", db], capture_output=True, text=True, timeout=60)
    assert applied.returncode == 0, applied.stderr
    return db


@pytest.mark.parametrize("args", [["list"], ["export"], ["--dry-run"]], ids=" ".join)
def test_a_reader_that_stops_early_ends_the_command_quietly(long_lists: str, args: list[str]) -> None:
    """`monitor-tick list | head -1`: the reader takes a line and closes the pipe while the
    command still writes. The command ends at once, without a word, with the status a shell
    gives a command a closed pipe stopped (128 + SIGPIPE), as `seq 1000000 | head -1` does."""
    command = [MONITOR_TICK, *args, "--db", long_lists]
    # Python's own buffering: with PYTHONUNBUFFERED set, CPython drops the rest of one large
    # write (export's) that a closed pipe cut short, silently, before monitor-tick sees anything
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as piped:
        assert piped.stdout is not None and piped.stderr is not None
        assert piped.stdout.readline()
        capacity = fcntl.fcntl(piped.stdout.fileno(), fcntl.F_GETPIPE_SZ)
        piped.stdout.close()
        stderr = piped.stderr.read()  # to the command's end
        code = piped.wait(timeout=60)
    assert (code, stderr) == (141, b"")
    whole = subprocess.run(command, capture_output=True, timeout=60)
    assert whole.returncode == 0 and len(whole.stdout) > 2 * capacity  # it was still writing


def test_the_command_ends_a_tick_with_all_it_printed_and_its_exit_code(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, tmp_path: Path
) -> None:
    """The command's tick ends its process without the interpreter's teardown (cli/entry.py):
    what it printed is all there, even to files, which are written in blocks, and its exit
    code is the tick's."""
    add(conn, local_server.url("/ok"), name="up")
    broken = add(conn, "http://c.test/", name="c")
    conn.execute("UPDATE monitors SET url = 'ftp://c.test/' WHERE id = ?", (broken,))
    conn.commit()

    def run(*args: str) -> tuple[int, str, str]:
        out, err = tmp_path / "out", tmp_path / "err"
        with out.open("w") as stdout, err.open("w") as stderr:
            code = subprocess.run([MONITOR_TICK, "--db", *args], stdout=stdout, stderr=stderr, timeout=60).returncode
        return code, out.read_text(), err.read_text()

    code, out, err = run(db_path, "--json")
    assert code == 0 and err == f"monitor-tick: monitor {broken} skipped: invalid monitor: unsupported scheme 'ftp'\n"
    printed = json.loads(out)
    assert [(r["name"], r["status"]) for r in printed["results"]] == [("up", "up")]
    assert local_server.hits["/ok"] == 1 and rollup(conn, 1) == (1, 0)
    refused = "monitor-tick: --retry-delay: not a duration: 'soon' (use e.g. 30s, 5m, 1h, 1d or seconds)\n"
    assert run(db_path, "--retry-delay", "soon") == (2, "", refused)
    missing = "monitor-tick: database directory does not exist: /nonexistent-dir\n"
    assert run("/nonexistent-dir/x.db") == (1, "", missing)
    # run with stderr closed (Python has no sys.stderr then), its exit code is still the tick's
    closed = [MONITOR_TICK, "--db", db_path, "--retry-delay", "soon"]
    assert subprocess.run(["sh", "-c", '"$@" 2>&-', "sh", *closed], capture_output=True, timeout=60).returncode == 2
    # and with stdout closed (no sys.stdout), a tick ends with its own exit code too
    ended = subprocess.run(["sh", "-c", '"$@" >&-', "sh", *closed], capture_output=True, text=True, timeout=60)
    assert (ended.returncode, ended.stderr) == (2, refused)
