"""Figure 11 of bench/run.py: the curve of a tick's CPU from 10 to 300 due checks, in steps of 10,
against nginx: `monitor-tick --minute` as a fresh process, whole process (start-up, selection,
probes, writes), the median of 5 at each size. No cliff: a tick's total CPU never falls by more
than 5% when 10 checks are added, and the CPU per check stays within 15% of a fitted a + b/N
(a: what a check costs, b: what a tick costs whatever it checks)."""

from __future__ import annotations

from collections.abc import Sequence

import nginx  # bench/nginx.py
from common import MINUTE, Figure, assert_all_up, db_with, median, monitor_row, monitor_tick_argv, run_child_usage
from figures_process import fresh_copy

SIZES = range(10, 301, 10)
RUNS = 5
MAX_FALL = 0.05  # the most a tick's total CPU may fall when 10 checks are added
MAX_DEVIATION = 0.15  # the most CPU per check may stray from the fitted a + b/N


def fit(sizes: Sequence[int], per_check: Sequence[float]) -> tuple[float, float]:
    """(a, b) of the least-squares fit of per_check = a + b / N."""
    xs = [1 / n for n in sizes]
    mean_x, mean_y = sum(xs) / len(xs), sum(per_check) / len(per_check)
    b = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, per_check, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    return mean_y - b * mean_x, b


def curve() -> Figure:
    cpu: dict[int, list[float]] = {n: [] for n in SIZES}
    with nginx.nginx_server() as server:
        url = f"http://127.0.0.1:{server.port}/"
        rows = {n: [monitor_row(i, f"{url}?m={i}") for i in range(1, n + 1)] for n in SIZES}
        templates = {n: db_with(f"curve-{n}.db", rows[n]) for n in SIZES}
        for run in range(RUNS):  # every size once a round, so that all see the same phases of the
            # machine; every other round from the largest down, so that a drifting load tilts no step
            for n in SIZES if run % 2 == 0 else reversed(SIZES):
                copy = fresh_copy(templates[n])
                _, _, seconds = run_child_usage([*monitor_tick_argv(), "--db", copy, "--minute", str(MINUTE)])
                cpu[n].append(seconds)
                assert_all_up(copy, n)
    total = {n: median(cpu[n]) for n in SIZES}
    per_check = [total[n] / n for n in SIZES]
    a, b = fit(list(SIZES), per_check)
    deviation = {n: abs(c - (a + b / n)) / (a + b / n) for n, c in zip(SIZES, per_check, strict=True)}
    steps = [(n, total[n - 10], total[n]) for n in SIZES if n - 10 in total]
    falls = [(n, before, after) for n, before, after in steps if after < before * (1 - MAX_FALL)]
    worst_n = max(deviation, key=deviation.__getitem__)
    spreads = {n: (max(cpu[n]) - min(cpu[n])) / total[n] for n in SIZES}
    widest_n = max(spreads, key=spreads.__getitem__)
    widest = spreads[widest_n]
    notes = [
        f"`monitor-tick --db COPY --minute M` as a fresh process against nginx, CPU (user + system) of the whole "
        f"process, median of {RUNS} at each size (sizes interleaved, in turn upwards and downwards)",
        "N: total ms CPU (ms per check) -- "
        + ", ".join(f"{n}: {total[n] * 1000:.0f} ({per_check[i] * 1000:.2f})" for i, n in enumerate(SIZES)),
        f"fit: {a * 1000:.2f} ms a check + {b * 1000:.0f} ms a tick / N; worst deviation {deviation[worst_n]:.1%} "
        f"at {worst_n} (goal <= {MAX_DEVIATION:.0%})",
        "steps where total CPU fell by more than 5% with 10 checks more: "
        + (", ".join(f"{n - 10}->{n}: {x * 1000:.0f}->{y * 1000:.0f} ms" for n, x, y in falls) or "none"),
        f"spread: the widest of a size's {RUNS} is {widest:.0%} of its median, at {widest_n}",
    ]
    return Figure(
        11,
        "the curve: CPU of a tick, 10 to 300 due checks (nginx)",
        f"{per_check[0] * 1000:.2f} ms a check at 10, {per_check[-1] * 1000:.2f} at 300",
        f"a + b/N: {a * 1000:.2f} + {b * 1000:.0f}/N ms",
        1 + deviation[worst_n],
        "no fall > 5%; within 15% of a + b/N",
        not falls and deviation[worst_n] <= MAX_DEVIATION,
        notes,
    )
