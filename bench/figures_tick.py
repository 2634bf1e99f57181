"""Figures 1 and 2 of bench/run.py: the tick itself (run_tick) in the bench's own process,
against the lean server (bench/server.py): how it spreads slow checks (1) and how many checks a
second it makes (2)."""

from __future__ import annotations

import asyncio
import random

from common import (  # bench/common.py: what the figures share with bench/kuma.py
    CONCURRENCY,
    MINUTE,
    Figure,
    db_with,
    lean_server,
    median,
    monitor_row,
    raw_client,
    timed_tick,
)

# ---------------------------------------------------------------------------------------------
# 1. Fan-out efficiency


def fanout() -> Figure:
    """2,000 due monitors; 2% answer after 5 s, the rest after 20-60 ms; concurrency 50."""
    rng = random.Random(1)
    count = 2_000
    latencies_ms = [5_000 if rng.random() < 0.02 else rng.randint(20, 60) for _ in range(count)]
    lower_bound_s = max(sum(latencies_ms) / CONCURRENCY, max(latencies_ms)) / 1000
    # Reference: fixed batches of 50 in monitor order, each waiting for its slowest member.
    batches_s = sum(max(latencies_ms[i : i + CONCURRENCY]) for i in range(0, count, CONCURRENCY)) / 1000
    with lean_server() as port:
        path = db_with(
            "fanout.db",
            [monitor_row(i + 1, f"http://127.0.0.1:{port}/d/{ms}?m={i + 1}") for i, ms in enumerate(latencies_ms)],
        )
        cold_s, cold = timed_tick(path, MINUTE)  # no history yet: probes start in id order
        steady_s, steady = timed_tick(path, MINUTE + 1)  # the next minute: slowest of the last hour first
    assert cold["up"] == steady["up"] == count, (cold, steady)
    ratio = steady_s / lower_bound_s
    return Figure(
        1,
        "fan-out makespan, 2,000 checks (2% 5 s)",
        f"{steady_s:.2f} s",
        f"lower bound {lower_bound_s:.2f} s",
        ratio,
        "<= 1.20x",
        ratio <= 1.2,
        [
            f"fixed batches of 50 (simulated, same latencies): {batches_s:.1f} s; "
            f"the tick takes {steady_s / batches_s:.2f}x of that",
            f"first tick, no history (id order): {cold_s:.2f} s = {cold_s / lower_bound_s:.2f}x the lower bound",
            f"{sum(ms == 5_000 for ms in latencies_ms)} slow checks at random positions; whole tick timed",
        ],
    )


# ---------------------------------------------------------------------------------------------
# 2. Probe throughput


def throughput() -> Figure:
    count, rounds = 5_000, 5
    raw_rates: list[float] = []
    tick_rates: list[float] = []
    with lean_server() as port:
        path = db_with(
            "throughput.db", [monitor_row(i, f"http://127.0.0.1:{port}/?m={i}") for i in range(1, count + 1)]
        )
        for k in range(rounds):  # alternate, so that both see the same machine
            raw_rates.append(asyncio.run(raw_client(port, count)))
            seconds, report = timed_tick(path, MINUTE + k)
            assert report["up"] == count, report
            tick_rates.append(count / seconds)
    raw, tick = median(raw_rates), median(tick_rates)
    ratio = tick / raw
    return Figure(
        2,
        "probe throughput, 5,000 fresh connections",
        f"{tick:,.0f} checks/s",
        f"raw asyncio {raw:,.0f}/s",
        ratio,
        ">= 0.33x",
        ratio >= 0.33,
        [
            f"medians of {rounds} alternating rounds; whole tick (select, probe, write) timed",
        ],
    )
