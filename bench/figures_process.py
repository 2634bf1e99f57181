"""Figures 3, 6, 8 and 9 of bench/run.py: `monitor-tick` as a fresh process, as cron runs it,
timed with its peak memory: the idle tick (3), a tick with 10,000 due (6), the small tick against
nginx (8) and the whole process's throughput against nginx (9)."""

from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path

import nginx  # bench/nginx.py
from common import (  # bench/common.py: what the figures share with bench/kuma.py
    MINUTE,
    OUT,
    Figure,
    assert_all_up,
    base_argv,
    base_install,
    base_template,
    db_with,
    installed_python,
    lean_server,
    median,
    monitor_row,
    monitor_tick_argv,
    raw_client,
    run_child,
    run_child_usage,
    spread,
)

from monitor_tick import store
from monitor_tick.core import clock

# ---------------------------------------------------------------------------------------------
# 3. Idle tick


def idle_rows(count: int, first_minute: int, window_min: int, rng: random.Random) -> list[tuple[object, ...]]:
    """`count` monitors (15 min to 1 day, a tenth aligned) none of which is due in the minutes
    [first_minute, first_minute + window_min): ids are skipped where their phase would be."""
    window = range(first_minute, first_minute + window_min)
    periods = [15, 30, 60, 60, 360, 720, 1_440, 1_440]
    rows: list[tuple[object, ...]] = []
    monitor_id = 0
    while len(rows) < count:
        period = rng.choice(periods)
        aligned = rng.random() < 0.1 and all(m % period != 0 for m in window)
        monitor_id += 1
        while not aligned and any(m % period == monitor_id % period for m in window):
            monitor_id += 1
        rows.append(monitor_row(monitor_id, f"https://site-{monitor_id}.example/", period * 60, aligned=aligned))
    return rows


def idle() -> Figure:
    """The idle tick's wall time against `python -c 'import sqlite3'`'s, run in pairs: each pair
    back to back, which of the two goes first alternating from pair to pair, so that both see the
    same phase of a shared machine; the ratio is the median of the pairs' ratios."""
    count, runs, window_min = 10_000, 21, 5
    argv, python = monitor_tick_argv(), installed_python()  # made before the window opens
    first_minute = clock.minute_of_ms(clock.now_ms())
    template = db_with("idle.db", idle_rows(count, first_minute, window_min, random.Random(3)))
    conn = store.open_db(template)
    for minute in range(first_minute, first_minute + window_min):
        assert not store.select_due(conn, minute, clock.minute_start_ms(minute)), minute
    conn.close()
    copy = str(OUT / "idle-run.db")
    bare: list[tuple[float, int]] = []
    tick: list[tuple[float, int]] = []
    for run in range(runs):
        shutil.copy(template, copy)  # a fresh copy: each run claims its minute, as cron's does
        for suffix in ("-wal", "-shm"):
            Path(copy + suffix).unlink(missing_ok=True)
        if run % 2:
            tick.append(run_child([*argv, "--db", copy]))
        bare.append(run_child([python, "-c", "import sqlite3"]))
        if not run % 2:
            tick.append(run_child([*argv, "--db", copy]))
    if clock.minute_of_ms(clock.now_ms()) >= first_minute + window_min:
        raise RuntimeError("idle bench outran its window of no-due minutes; rerun")
    bare_s, tick_s = median([w for w, _ in bare]), median([w for w, _ in tick])
    bare_mb, tick_mb = median([r for _, r in bare]) / 1024, median([r for _, r in tick]) / 1024
    ratios = [t / b for (t, _), (b, _) in zip(tick, bare, strict=True)]
    ratio = median(ratios)
    return Figure(
        3,
        "idle tick, 10,000 monitors, none due",
        f"{tick_s * 1000:.0f} ms, {tick_mb:.1f} MB",
        f"python -c 'import sqlite3' {bare_s * 1000:.0f} ms, {bare_mb:.1f} MB",
        ratio,
        "<= 2.5x, <= 25 MB",
        ratio <= 2.5 and tick_mb <= 25,
        [
            f"`{' '.join(Path(a).name for a in argv)} --db COPY` as a fresh process, in {runs} pairs with the "
            "reference (back to back, each first in turn); the ratio is the median of the pairs', times are medians",
            f"spread: tick {spread([w for w, _ in tick], 1000)} ms, bare {spread([w for w, _ in bare], 1000)} ms, "
            f"pair by pair {spread(ratios, digits=2)}x; the ratio of the medians {tick_s / bare_s:.2f}x",
        ],
    )


# ---------------------------------------------------------------------------------------------
# 6. Peak memory


def memory() -> Figure:
    count, runs = 10_000, 3
    with lean_server() as port:
        template = db_with(
            "memory.db", [monitor_row(i, f"http://127.0.0.1:{port}/?m={i}") for i in range(1, count + 1)]
        )
        measured = timed_ticks(template, runs, retry_delay=True)
    assert_all_up(copy_of(template), count)
    wall = median([w for w, _ in measured])
    peak_mb = median([k for _, k in measured]) / 1024
    return Figure(
        6,
        "peak memory, tick with 10,000 due",
        f"{peak_mb:.0f} MB",
        "goal 100 MB",
        peak_mb / 100,
        "<= 100 MB",
        peak_mb <= 100,
        [
            f"`monitor-tick --minute` as a fresh process against the lean server, {wall:.1f} s; median of {runs}, "
            f"spread {spread([k / 1024 for _, k in measured])} MB",
        ],
    )


# ---------------------------------------------------------------------------------------------
# 8. The small tick

SMALL_RUNS = 7


def small_tick_rows(count: int, http_url: str, tls_url: str | None = None, enabled: bool = True) -> list[tuple]:
    """`count` one-minute monitors; with `tls_url`, every other one is https://."""
    return [
        monitor_row(i, f"{tls_url if tls_url and i % 2 else http_url}?m={i}", enabled=enabled)
        for i in range(1, count + 1)
    ]


def copy_of(template: str) -> str:
    """Where timed_ticks copies `template` (the last copy stays, for the figure's checks)."""
    return str(OUT / f"run-{Path(template).name}")


def fresh_copy(template: str) -> str:
    """A fresh copy of `template` at copy_of(template): a tick on it claims its minute, as cron's does."""
    copy = copy_of(template)
    shutil.copy(template, copy)
    for suffix in ("-wal", "-shm"):
        Path(copy + suffix).unlink(missing_ok=True)
    return copy


def timed_ticks(
    template: str, runs: int, extra_env: dict[str, str] | None = None, *, retry_delay: bool = False
) -> list[tuple[float, int]]:
    """(wall s, peak KiB) of `runs` fresh `monitor-tick --db COPY --minute MINUTE` processes, each
    on a fresh copy of `template` (each claims its minute, as cron's tick does); `retry_delay`:
    with --retry-delay 0."""
    measured = []
    for _ in range(runs):
        copy = fresh_copy(template)
        argv = [*monitor_tick_argv(), "--db", copy, "--minute", str(MINUTE), *(["--retry-delay", "0"] * retry_delay)]
        measured.append(run_child(argv, extra_env))
    return measured


def tick_usage(
    template: str, script: list[str] | None = None, extra_env: dict[str, str] | None = None
) -> tuple[float, int, float]:
    """(wall s, peak KiB, CPU s) of one fresh `monitor-tick --db COPY --minute MINUTE` process on
    a fresh copy of `template`; `script`: another install's console script (the base's)."""
    copy = fresh_copy(template)
    return run_child_usage([*(script or monitor_tick_argv()), "--db", copy, "--minute", str(MINUTE)], extra_env)


def small_tick() -> Figure:
    """10 due HTTP monitors against nginx: the CPU of the tick beside the base revision's (with
    --base), and beside the idle tick of the same 10 monitors, paused."""
    count = 10
    base = base_install()
    with nginx.nginx_server() as server:
        http_url = f"http://127.0.0.1:{server.port}/"
        due = db_with("small-due.db", small_tick_rows(count, http_url))
        paused = db_with("small-idle.db", small_tick_rows(count, http_url, enabled=False))
        mixed = db_with("small-tls.db", small_tick_rows(count, http_url, f"https://localhost:{server.tls_port}/"))
        base_due = base_template("base-small-due.db", http_url, count) if base else None
        idle_runs: list[tuple[float, int, float]] = []
        due_runs: list[tuple[float, int, float]] = []
        tls_runs: list[tuple[float, int, float]] = []
        base_runs: list[tuple[float, int, float]] = []
        for _ in range(SMALL_RUNS):  # interleaved, so that all of them see the same machine
            idle_runs.append(tick_usage(paused))
            due_runs.append(tick_usage(due))
            tls_runs.append(tick_usage(mixed, extra_env={"SSL_CERT_FILE": server.ca_file}))
            if base_due is not None:
                base_runs.append(tick_usage(base_due, base_argv()))
    for template in (due, mixed):  # the last copy of each: every check came back up
        assert_all_up(copy_of(template), count)
    idle_ms, due_ms, tls_ms = (median([cpu for _, _, cpu in r]) * 1000 for r in (idle_runs, due_runs, tls_runs))
    due_mb, tls_mb = (median([k for _, k, _ in r]) / 1024 for r in (due_runs, tls_runs))
    notes = [
        f"CPU (user + system) of `monitor-tick --db COPY --minute M` as a fresh process, medians of {SMALL_RUNS} "
        "interleaved runs",
        "spread (CPU ms): "
        + ", ".join(
            f"{name} {spread([cpu for _, _, cpu in runs], 1000)}"
            for name, runs in (("due", due_runs), ("idle", idle_runs), ("https", tls_runs), ("base", base_runs))
            if runs
        ),
        f"the idle tick (the same 10 monitors, paused): {idle_ms:.0f} ms; 10 due = {due_ms / idle_ms:.2f}x idle",
        f"half of them https:// (local nginx, a test CA through SSL_CERT_FILE): {tls_ms:.0f} ms "
        f"= {tls_ms / idle_ms:.2f}x idle, {tls_mb:.1f} MB",
    ]
    if base is None:
        notes.append("not measured: the base revision's tick (bench/run.py --base REV 8)")
        ratio = due_ms / idle_ms
        return Figure(
            8,
            "small tick, 10 due HTTP monitors (nginx)",
            f"{due_ms:.0f} ms CPU, {due_mb:.1f} MB",
            f"idle tick {idle_ms:.0f} ms",
            ratio,
            "<= 25 MB (and <= 1.5x the base revision's CPU: --base)",
            due_mb <= 25,
            notes,
        )
    base_ms = median([cpu for _, _, cpu in base_runs]) * 1000
    base_mb = median([k for _, k, _ in base_runs]) / 1024
    ratio = due_ms / base_ms
    notes.append(f"the base revision {base[0]}: {base_ms:.0f} ms CPU, {base_mb:.1f} MB")
    return Figure(
        8,
        "small tick, 10 due HTTP monitors (nginx)",
        f"{due_ms:.0f} ms CPU, {due_mb:.1f} MB",
        f"base revision {base_ms:.0f} ms",
        ratio,
        "<= 1.5x the base, <= 25 MB",
        ratio <= 1.5 and due_mb <= 25,
        notes,
    )


# ---------------------------------------------------------------------------------------------
# 9. Whole-process throughput


def whole_process_throughput() -> Figure:
    """3,000 due against nginx: `monitor-tick --minute` as a fresh process, start-up, selection
    and writes included, against the raw asyncio client, alternating in one run. With --base,
    also the CPU per check at 1,000 due beside the base revision's."""
    count, rounds = 3_000, 5
    raw_rates: list[float] = []
    tick_rates: list[float] = []
    peaks: list[int] = []
    base = base_install()
    per_check: dict[str, list[float]] = {"tick": [], "base": []}
    with nginx.nginx_server() as server:
        url = f"http://127.0.0.1:{server.port}/"
        template = db_with("whole.db", [monitor_row(i, f"{url}?m={i}") for i in range(1, count + 1)])
        for _ in range(rounds):
            raw_rates.append(asyncio.run(raw_client(server.port, count)))
            seconds, peak_kib, _ = tick_usage(template)
            tick_rates.append(count / seconds)
            peaks.append(peak_kib)
        if base is not None:
            thousand = db_with("thousand.db", [monitor_row(i, f"{url}?m={i}") for i in range(1, 1_001)])
            base_thousand = base_template("base-thousand.db", url, 1_000)
            for _ in range(rounds):  # alternating, so that both see the same machine
                per_check["tick"].append(tick_usage(thousand)[2] / 1_000)
                per_check["base"].append(tick_usage(base_thousand, base_argv())[2] / 1_000)
            assert_all_up(copy_of(thousand), 1_000)
    assert_all_up(copy_of(template), count)
    raw, tick = median(raw_rates), median(tick_rates)
    ratio = tick / raw
    passed = ratio >= 0.8
    notes = [
        f"`monitor-tick --db COPY --minute M` as a fresh process (start-up, selection, probes, writes), "
        f"medians of {rounds} rounds alternating with the raw client; peak {median(peaks) / 1024:.0f} MB",
        f"spread: tick {spread(tick_rates)}/s, raw {spread(raw_rates)}/s, "
        f"round by round {spread([t / r for t, r in zip(tick_rates, raw_rates, strict=True)], digits=2)}x",
    ]
    if base is None:
        notes.append("not measured: CPU per check at 1,000 due beside the base revision (bench/run.py --base REV 9)")
    else:
        ours, theirs = (median(per_check[k]) * 1000 for k in ("tick", "base"))
        met = ours / theirs <= 0.9
        passed = passed and met
        notes.append(
            f"CPU per check at 1,000 due: {ours:.3f} ms, the base revision {base[0]} {theirs:.3f} ms = "
            f"{ours / theirs:.2f}x ({'PASS' if met else 'MISS'}: goal <= 0.9x; medians of {rounds} alternating runs)"
        )
    return Figure(
        9,
        "whole-process throughput, 3,000 due (nginx)",
        f"{tick:,.0f} checks/s",
        f"raw asyncio {raw:,.0f}/s",
        ratio,
        ">= 0.8x" + ("; CPU per check at 1,000 due <= 0.9x the base" if base else ""),
        passed,
        notes,
    )
