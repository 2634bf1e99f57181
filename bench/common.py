"""What bench/run.py's figures and bench/kuma.py share: the Figure and how it is printed, the
bench's constants, databases of monitors under bench/out/, the lean server, fresh processes
timed with their peak memory and CPU, and the raw client that figures 2 and 9 measure against.

Imported by its bare name (`import common`), as the scripts beside it import each other: each
runs with bench/ first on sys.path.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import bulk  # bench/bulk.py, beside this module

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.run.tick import TickOptions, run_tick

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
MINUTE = 29_934_721  # 2026-12-01T00:01Z: a replayed minute, away from the :00 boundaries
CONCURRENCY = 50


@dataclass
class Figure:
    number: int
    title: str
    measured: str
    reference: str
    ratio: float
    goal: str
    passed: bool
    notes: list[str] = field(default_factory=list)


def print_figure(figure: Figure, seconds: float) -> None:
    print(
        f"\n{figure.number}. {figure.title}  [{seconds:.0f} s]\n"
        f"   measured {figure.measured}   reference {figure.reference}   "
        f"ratio {figure.ratio:.2f}x   goal {figure.goal}   {'PASS' if figure.passed else 'MISS'}"
    )
    for note in figure.notes:
        print(f"   - {note}")


# ---------------------------------------------------------------------------------------------
# Helpers


@contextmanager
def lean_server() -> Iterator[int]:
    """bench/server.py in its own process; yields its port on 127.0.0.1."""
    process = subprocess.Popen(
        [sys.executable, str(BENCH / "server.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline())
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)


def fresh_db(name: str) -> str:
    OUT.mkdir(exist_ok=True)
    path = OUT / name
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return str(path)


def monitor_row(
    monitor_id: int,
    url: str,
    interval_sec: int = 60,
    *,
    owner_id: int | None = None,
    aligned: bool = False,
    timeout_s: float = 10.0,
    enabled: bool = True,
    auto_paused: bool = False,
) -> tuple[object, ...]:
    """A row for bulk.insert_monitors (its _BULK_MONITOR_COLUMNS order)."""
    return (
        monitor_id,
        owner_id,
        f"m{monitor_id}",
        "http",
        url,
        interval_sec,
        int(aligned),
        "GET",
        "200-399",
        None,
        timeout_s,
        0,  # retries: the bench's servers never fail
        int(enabled),
        int(auto_paused),
        0,
    )


def db_with(name: str, rows: Sequence[tuple[object, ...]]) -> str:
    path = fresh_db(name)
    conn = store.open_db(path)
    bulk.insert_monitors(conn, rows)
    conn.close()
    return path


def timed_tick(path: str, minute: int, **options: object) -> tuple[float, dict[str, object]]:
    """Wall seconds of one real tick (run_tick) of a replayed minute, and its JSON report."""
    started = time.perf_counter()
    report = run_tick(TickOptions(db_path=path, minute=minute, retry_delay_s=0, **options))  # type: ignore[arg-type]
    return time.perf_counter() - started, report.as_json()


# Runs one command and reports its wall time and peak RSS. Linux counts the RSS of the process
# that forked a child into the child's peak (exec keeps the old memory's high-water mark), so
# the command is started from this small launcher (python -S, ~7 MB), not from the bench (~50 MB).
_LAUNCHER = """
import os, sys, time
started = time.perf_counter()
quiet = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]  # our stdout carries the figures
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=quiet)
_, status, usage = os.wait4(pid, 0)
cpu = usage.ru_utime + usage.ru_stime
print(time.perf_counter() - started, usage.ru_maxrss, cpu, os.waitstatus_to_exitcode(status))
"""


# Children run as on a user's machine, where `pip install` has compiled every module: with
# PYTHONDONTWRITEBYTECODE set (as in some sandboxes) each fresh process would compile the whole
# package again, and the bench would time the compiler. Timed figures take medians, and their
# first run writes the caches.
CHILD_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def run_child(argv: Sequence[str], extra_env: dict[str, str] | None = None) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of a fresh process; raises if it fails."""
    wall, peak_kib, _ = run_child_usage(argv, extra_env)
    return wall, peak_kib


def run_child_usage(argv: Sequence[str], extra_env: dict[str, str] | None = None) -> tuple[float, int, float]:
    """(wall seconds, peak RSS in KiB, CPU seconds: user + system) of a fresh process; raises if
    it fails."""
    done = subprocess.run(
        [sys.executable, "-S", "-c", _LAUNCHER, *argv],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        env={**CHILD_ENV, **(extra_env or {})},
    )
    wall, peak_kib, cpu, code = done.stdout.split()
    if int(code) != 0:
        raise RuntimeError(f"{argv} exited {code}: {done.stderr}")
    return float(wall), int(peak_kib), float(cpu)


# The working tree as a user installs it (the README's first line: a venv, then `pip install .`),
# where the timed figures run their children. Not the bench's own venv: there the project is
# installed in editable mode, and every process of that venv, `python -c 'import sqlite3'`
# included, first imports setuptools' editable finder (pathlib, urllib.parse, re, enum:
# two-thirds again the instructions of `python -c 'import sqlite3'` itself), which a user's
# install never does. The dependencies are the bench venv's, named by a path in a .pth file
# (a path line runs no code). It lives outside the repository, whose tests read every module
# under bench/, in the user's cache directory, one per checkout.
INSTALLED = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "monitor-tick-bench"
    / hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
)


@functools.cache
def installed_python() -> str:
    """The interpreter of INSTALLED, made on first use and made again when the tree's package,
    or the bench's interpreter or venv, has changed since (about 25 s: a wheel built from the
    tree, installed in a new venv). Checked once per process, so that a tree edited while a
    figure runs never gives it two trees."""
    python = INSTALLED / "bin" / "python"
    stamp = INSTALLED / "source.sha256"
    digest = _source_digest()
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return str(python)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(INSTALLED)], check=True)
    with tempfile.TemporaryDirectory(prefix="monitor-tick-wheel-") as parent:
        # built from a copy: setuptools writes build/ and *.egg-info beside what it builds
        source, wheels = Path(parent) / "source", Path(parent) / "wheels"
        shutil.copytree(ROOT / "monitor_tick", source / "monitor_tick", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md", "schema.sql"):
            shutil.copy(ROOT / name, source / name)
        quiet = ["--quiet", "--disable-pip-version-check", "--no-deps"]
        subprocess.run([sys.executable, "-m", "pip", "wheel", *quiet, "-w", str(wheels), str(source)], check=True)
        built = [str(path) for path in wheels.glob("*.whl")]
        subprocess.run([str(python), "-m", "pip", "install", *quiet, "--no-index", *built], check=True)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "bench-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "compileall", "-q", site], check=True, env=CHILD_ENV, capture_output=True)
    stamp.write_text(digest)
    return str(python)


def _source_digest() -> str:
    """A digest of what the copy is made of: the package, the build settings and the schema it
    is built from, and the interpreter and the dependencies' directory it is installed with."""
    digest = hashlib.sha256(f"{sys.version}\0{sys.executable}\0{sysconfig.get_paths()['purelib']}\0".encode())
    files = [*sorted((ROOT / "monitor_tick").rglob("*")), ROOT / "pyproject.toml", ROOT / "schema.sql"]
    for path in files:
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


# The base revision of `bench/run.py --base REV`: a venv of its own with REV installed as a user
# installs it (its own dependencies), and REV's files beside it, for the templates its figures
# need (a database of its schema, through its own bench code). Made once per commit, next to
# INSTALLED; run.py names it to the figures' processes through this variable.
BASE_ENV = "MONITOR_TICK_BENCH_BASE"


def install_base(revision: str) -> str:
    """The directory of `revision`'s install (see BASE_ENV), made on first use (about a minute)."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    target = INSTALLED.parent / f"base-{commit[:12]}"
    if (target / "installed").exists():
        return str(target)
    shutil.rmtree(target, ignore_errors=True)
    tree = target / "tree"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "venv", str(target / "venv")], check=True)
    python = str(target / "venv" / "bin" / "python")
    quiet = ["--quiet", "--disable-pip-version-check"]
    subprocess.run([python, "-m", "pip", "install", *quiet, str(tree)], check=True)
    subprocess.run([python, "-m", "compileall", "-q", str(target / "venv")], env=CHILD_ENV, capture_output=True)
    (target / "installed").write_text(commit + "\n")
    return str(target)


def base_install() -> tuple[str, Path] | None:
    """(the name of the base revision, its install directory), or None without --base."""
    found = os.environ.get(BASE_ENV)
    if not found:
        return None
    return (Path(found) / "installed").read_text().strip()[:12], Path(found)


# The base revision's own bench code makes a template of its own schema: REV's monitor_row and
# db_with, run by REV's interpreter from REV's files.
_BASE_TEMPLATE = """
import sys
sys.path.insert(0, sys.argv[1])
from common import db_with, monitor_row
name, url, count, enabled = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
print(db_with(name, [monitor_row(i, f"{url}?m={i}", enabled=enabled) for i in range(1, count + 1)]))
"""


def base_template(name: str, url: str, count: int, *, enabled: bool = True) -> str:
    """A database of the base revision's schema with `count` one-minute http monitors of `url`."""
    found = base_install()
    assert found is not None
    _, target = found
    argv = [str(target / "venv" / "bin" / "python"), "-c", _BASE_TEMPLATE, str(target / "tree" / "bench"), name, url]
    made = subprocess.run(  # in REV's tree, whose monitor_tick the working tree's would otherwise shadow
        [*argv, str(count), "1" if enabled else "0"], capture_output=True, text=True, check=True, cwd=target / "tree"
    )
    return made.stdout.strip().splitlines()[-1]


def base_argv() -> list[str]:
    """The base revision's console script, as cron runs it."""
    found = base_install()
    assert found is not None
    return [str(found[1] / "venv" / "bin" / "monitor-tick")]


def monitor_tick_argv() -> list[str]:
    """The installed console script, as cron runs it: INSTALLED's."""
    return [str(Path(installed_python()).parent / "monitor-tick")]


def assert_all_up(path: str, count: int, minutes: int = 1) -> None:
    """Every one of `count` monitors was checked once a minute in the `minutes` from MINUTE, up."""
    conn = store.open_db(path)
    rows = store.report(conn, clock.minute_start_ms(MINUTE), clock.minute_start_ms(MINUTE + minutes))
    conn.close()
    checks, failures = sum(r["checks"] for r in rows), sum(r["failures"] for r in rows)
    assert checks == count * minutes and not failures, f"{path}: {checks} checks, {failures} failures"


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float], scale: float = 1.0, digits: int = 0) -> str:
    """'min-max' of repeats, times `scale` (1000: seconds shown as ms), `digits` after the point."""
    return f"{min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f}"


# ---------------------------------------------------------------------------------------------
# The raw client: the reference of figures 2 and 9


async def raw_client(port: int, count: int) -> float:
    """Checks per second of a minimal raw-asyncio HTTP client: open, GET, read to EOF, close."""
    request = (
        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: raw\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    ).encode()
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one() -> None:
        async with slots:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            data = await reader.read()
            writer.close()
            if not data.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(data[:40])

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    return count / (time.perf_counter() - started)
