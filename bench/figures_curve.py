"""Figure 11 of bench/run.py: the curve of a tick's CPU from 10 to 300 due checks, in steps of 10,
against nginx: `monitor-tick --minute` as a fresh process, whole process (start-up, selection,
probes, writes), the median of RUNS at each size. No cliff: a tick's total CPU never falls by
more than 5% when 10 checks are added, and the CPU per check stays within 15% of a fitted a + b/N
(a: what a check costs, b: what a tick costs whatever it checks).

CPU is the tick's own, user + system, from wait4 on its process (common.run_child_usage): not
the launcher's, nor nginx's. On a shared machine that CPU still moves with the machine: a busy
neighbour on the same core slows every instruction (caches, the core's other thread), and the
load comes in phases that last seconds, longer than a tick. Ten more checks cost about 2 ms of a
160 ms tick, so those phases would decide the verdict. Hence:
- each round runs every size once, in an order shuffled anew each round (seeded), so that a phase
  of the machine falls on sizes at random, never on a run of neighbouring sizes;
- each sample is divided by the machine's factor at its time: the median, over its NEIGHBOURS
  samples either side in the order run (other sizes, at random), of their ratio to their own
  size's median (drift_factors). What is left is the tick's own cost, and the noise of one
  sample. Both verdicts are printed: the figure's (drift taken out) and that of the raw medians.
Nothing in the tick makes its CPU fall as checks are added (looked for: the fan-out's concurrency
limit of 50, gc generations, lookup threads: none for an address literal).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

import nginx  # bench/nginx.py
from common import MINUTE, Figure, assert_all_up, db_with, median, monitor_row, monitor_tick_argv, run_child_usage
from figures_process import fresh_copy

SIZES = range(10, 301, 10)
RUNS = 41  # at each size (a median of 5 or more outlasts the machine's noise): a round of the 30 sizes takes about 8 s
NEIGHBOURS = 3  # samples either side in the order run that tell the machine's factor at a sample
MAX_FALL = 0.05  # the most a tick's total CPU may fall when 10 checks are added
MAX_DEVIATION = 0.15  # the most CPU per check may stray from the fitted a + b/N

Sample = tuple[int, float]  # (due checks, CPU seconds), in the order run


def fit(sizes: Sequence[int], per_check: Sequence[float]) -> tuple[float, float]:
    """(a, b) of the least-squares fit of per_check = a + b / N."""
    xs = [1 / n for n in sizes]
    mean_x, mean_y = sum(xs) / len(xs), sum(per_check) / len(per_check)
    b = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, per_check, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    return mean_y - b * mean_x, b


def medians(samples: Sequence[Sample]) -> dict[int, float]:
    """Each size's median CPU."""
    by_size: dict[int, list[float]] = {}
    for n, cpu in samples:
        by_size.setdefault(n, []).append(cpu)
    return {n: median(values) for n, values in sorted(by_size.items())}


def drift_factors(samples: Sequence[Sample], neighbours: int = NEIGHBOURS, passes: int = 3) -> list[float]:
    """The machine's factor at each sample: the median ratio of its `neighbours` samples either
    side (in the order run) to their sizes' medians. Repeated `passes` times, each on the medians
    of the samples divided by the last factors (a size's median is then less the machine's)."""
    factors = [1.0] * len(samples)
    for _ in range(passes):
        level = medians([(n, cpu / f) for (n, cpu), f in zip(samples, factors, strict=True)])
        ratios = [cpu / level[n] for n, cpu in samples]
        factors = [
            median(ratios[max(0, i - neighbours) : i] + ratios[i + 1 : i + 1 + neighbours]) for i in range(len(samples))
        ]
    return factors


def verdict(total: dict[int, float]) -> tuple[float, float, dict[int, float], list[tuple[int, float, float]]]:
    """(a, b, deviation from a + b/N by size, falls: (N, total at N - 10, total at N))."""
    sizes = list(total)
    per_check = [total[n] / n for n in sizes]
    a, b = fit(sizes, per_check)
    deviation = {n: abs(c - (a + b / n)) / (a + b / n) for n, c in zip(sizes, per_check, strict=True)}
    falls = [
        (n, total[n - 10], total[n]) for n in sizes if n - 10 in total and total[n] < total[n - 10] * (1 - MAX_FALL)
    ]
    return a, b, deviation, falls


def _spread(samples: Sequence[Sample]) -> float:
    """The median over sizes of the samples' relative standard deviation."""
    level = medians(samples)
    by_size: dict[int, list[float]] = {}
    for n, cpu in samples:
        by_size.setdefault(n, []).append(cpu / level[n])
    return median([statistics.pstdev(values) for values in by_size.values()])


def _lag_one(samples: Sequence[Sample]) -> float:
    """Autocorrelation of consecutive samples' ratios to their sizes' medians: how much of one
    sample's noise the next one shares (the machine's phases), 0 when none."""
    level = medians(samples)
    ratios = [cpu / level[n] for n, cpu in samples]
    mean = statistics.fmean(ratios)
    return sum((x - mean) * (y - mean) for x, y in zip(ratios, ratios[1:], strict=False)) / sum(
        (x - mean) ** 2 for x in ratios
    )


def curve() -> Figure:
    samples: list[Sample] = []
    rng = random.Random(11)
    with nginx.nginx_server() as server:
        url = f"http://127.0.0.1:{server.port}/"
        templates = {
            n: db_with(f"curve-{n}.db", [monitor_row(i, f"{url}?m={i}") for i in range(1, n + 1)]) for n in SIZES
        }
        for _ in range(RUNS):
            order = list(SIZES)
            rng.shuffle(order)
            for n in order:
                copy = fresh_copy(templates[n])
                _, _, seconds = run_child_usage([*monitor_tick_argv(), "--db", copy, "--minute", str(MINUTE)])
                samples.append((n, seconds))
                assert_all_up(copy, n)
    factors = drift_factors(samples)
    steady = [(n, cpu / f) for (n, cpu), f in zip(samples, factors, strict=True)]
    total = medians(steady)
    a, b, deviation, falls = verdict(total)
    raw_a, raw_b, raw_deviation, raw_falls = verdict(medians(samples))
    worst_n = max(deviation, key=deviation.__getitem__)
    passed = not falls and deviation[worst_n] <= MAX_DEVIATION
    raw_passed = not raw_falls and max(raw_deviation.values()) <= MAX_DEVIATION

    def shown_falls(found: list[tuple[int, float, float]]) -> str:
        return ", ".join(f"{n - 10}->{n}: {x * 1000:.0f}->{y * 1000:.0f} ms" for n, x, y in found) or "none"

    notes = [
        f"`monitor-tick --db COPY --minute M` as a fresh process against nginx, its own CPU (user + system, "
        f"wait4), median of {RUNS} at each size; each round runs every size once, shuffled anew",
        "N: total ms CPU (ms per check) -- "
        + ", ".join(f"{n}: {t * 1000:.0f} ({t / n * 1000:.2f})" for n, t in total.items()),
        f"fit: {a * 1000:.2f} ms a check + {b * 1000:.0f} ms a tick / N; worst deviation {deviation[worst_n]:.1%} "
        f"at {worst_n} (goal <= {MAX_DEVIATION:.0%})",
        f"steps where total CPU fell by more than {MAX_FALL:.0%} with 10 checks more: {shown_falls(falls)}",
        f"the machine: its factor ran {min(factors):.2f}-{max(factors):.2f} over the run; consecutive samples share "
        f"{_lag_one(samples):.0%} of their noise (lag-1 autocorrelation); one sample's spread (relative sd) "
        f"{_spread(samples):.1%} raw, {_spread(steady):.1%} with the machine's factor taken out",
        f"raw medians (the machine's factor left in): fit {raw_a * 1000:.2f} + {raw_b * 1000:.0f}/N ms, "
        f"worst deviation {max(raw_deviation.values()):.1%}, falls {shown_falls(raw_falls)}: "
        + ("PASS" if raw_passed else "MISS"),
    ]
    return Figure(
        11,
        "the curve: CPU of a tick, 10 to 300 due checks (nginx)",
        f"{total[SIZES[0]] / SIZES[0] * 1000:.2f} ms a check at 10, {total[SIZES[-1]] / SIZES[-1] * 1000:.2f} at 300",
        f"a + b/N: {a * 1000:.2f} + {b * 1000:.0f}/N ms",
        1 + deviation[worst_n],
        "no fall > 5%; within 15% of a + b/N",
        passed,
        notes,
    )
