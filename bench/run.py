"""monitor-tick's benchmark: twelve figures, each next to its reference, with its goal.

    .venv/bin/python bench/run.py            # from the repository root; about 30 minutes
    .venv/bin/python bench/run.py 2 5        # only figures 2 and 5
    .venv/bin/python bench/run.py --base REV 8 9   # and git revision REV, installed beside

Everything runs on this machine: HTTP goes to a lean server (bench/server.py) or to nginx
(bench/nginx.py) on 127.0.0.1 in its own process; databases are real SQLite files under
bench/out/ (git-ignored; the large ones for figure 4 are kept there and reused). Ticks are real:
run_tick (store -> select -> fan-out -> write), or the installed `monitor-tick` command as a
fresh process where a figure is what cron's process costs. Timings on a shared 2-core machine move by 10-20%
between runs; figures that are timed are repeated and their medians shown.

The figures live beside this script, by what they run: the tick in this process
(figures_tick.py: 1, 2), the store and the schedule at scale (figures_scale.py: 4, 5, 7), fresh
`monitor-tick` processes (figures_process.py: 3, 6, 8, 9), Uptime Kuma beside monitor-tick
(kuma.py: 10), the curve of a tick's CPU from 10 to 300 checks (figures_curve.py: 11) and the
HTTP engine's cost beside a bare libcurl loop (figures_engine.py: 12); what they share is
common.py. This script runs each in a fresh interpreter. With --base REV, figures 8 and 9 also
measure git revision REV, installed as a user installs it (a venv of its own, with its own
dependencies; made once per commit), side by side with the working tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

from common import BASE_ENV, Figure, install_base, print_figure  # bench/common.py, beside this script
from figures_curve import curve
from figures_engine import engine_cost
from figures_process import idle, memory, small_tick, whole_process_throughput
from figures_scale import load_shape, selection, storage
from figures_tick import fanout, throughput

# ---------------------------------------------------------------------------------------------


def kuma() -> Figure | str:
    """bench/kuma.py's figure (a string: why it was skipped)."""
    import kuma  # bench/kuma.py, loaded only in the process that measures this figure

    return kuma.kuma_figure()


FIGURES: dict[int, Callable[[], Figure | str]] = {
    1: fanout,
    2: throughput,
    3: idle,
    4: selection,
    5: storage,
    6: memory,
    7: load_shape,
    8: small_tick,
    9: whole_process_throughput,
    10: kuma,
    11: curve,
    12: engine_cost,
}
SKIPPED = 4  # the exit status of `--one N` for a figure that could not be measured here


def main(argv: Sequence[str]) -> int:
    """Each figure runs in a fresh interpreter, so that none inherits another's heap or loop."""
    if argv[:1] == ["--one"]:
        started = time.perf_counter()
        figure = FIGURES[int(argv[1])]()
        if isinstance(figure, str):
            print(f"\n{argv[1]}. skipped: {figure}")
            return SKIPPED
        print_figure(figure, time.perf_counter() - started)
        return 0 if figure.passed else 3
    if argv[:1] == ["--base"]:
        # the figures that have a base goal measure this revision beside the working tree
        os.environ[BASE_ENV] = install_base(argv[1])
        argv = argv[2:]
    chosen = [int(a) for a in argv] or sorted(FIGURES)
    print(f"monitor-tick bench: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} (timings on a shared machine")
    print("vary 10-20% between runs; timed figures are medians of repeats)")
    sys.stdout.flush()
    started = time.perf_counter()
    passed = skipped = 0
    for number in chosen:
        done = subprocess.run([sys.executable, __file__, "--one", str(number)], check=False)
        if done.returncode not in (0, 3, SKIPPED):
            print(f"\n{number}. failed (exit {done.returncode})")
        passed += done.returncode == 0
        skipped += done.returncode == SKIPPED
    print(f"\n{passed}/{len(chosen) - skipped} goals met ({skipped} skipped) in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
