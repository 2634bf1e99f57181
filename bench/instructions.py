"""Instructions, not seconds: an idle tick and a small tick counted by valgrind's callgrind.

    .venv/bin/python bench/instructions.py              # from the repository root; about a minute
    .venv/bin/python bench/instructions.py --base REV   # and the same at git revision REV, side by side

A shared machine's load moves the timed figures (3 and 8 of bench/run.py) by 10-30% from one
run to the next, far more than most changes to a tick's start-up. Callgrind counts the
instructions a process executes, which do not depend on what else the machine is doing: the same
command gives the same count to a fraction of a percent. Counted here, each a fresh process of
the tree as a user installs it (common.INSTALLED, as the timed figures run it):

- `python -c 'import sqlite3'`: figure 3's reference;
- an idle tick: `monitor-tick --db COPY --minute M` of 10 paused monitors;
- a small tick: the same 10 monitors due, against bench/nginx.py's nginx (every check is
  asserted up afterwards).

With --base, REV is checked out in a temporary worktree and counted in the same run
(its modules first on PYTHONPATH, compiled beforehand as the installed tree's are), so that a
change's effect is read side by side. The counts include valgrind's own start-up of the
interpreter, as every fresh process has it; they are not times, and one instruction is not one
cycle (a cache miss costs more), so the timed figures stay what the goals are judged on.
"""

from __future__ import annotations

import argparse
import compileall
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import common  # bench/common.py: monitor_row, db_with, assert_all_up, MINUTE
import nginx  # bench/nginx.py
from figures_process import fresh_copy, small_tick_rows

COLLECTED = re.compile(r"Collected : (\d+)")


def count(argv: list[str], pythonpath: str | None = None) -> int:
    """Instructions one fresh process executes under callgrind (its output file discarded)."""
    env = {**common.CHILD_ENV, **({"PYTHONPATH": pythonpath} if pythonpath else {})}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=pythonpath or common.OUT,  # `python -m` puts its working directory first on sys.path
        timeout=600,
        check=False,
    )
    found = COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{argv} under callgrind exited {done.returncode}: {done.stderr[-500:]}")
    return int(found.group(1))


def tick_count(template: str, pythonpath: str | None, *, due: int = 0) -> int:
    """One tick of a fresh copy of `template`; its `due` monitors must all have been checked up."""
    copy = fresh_copy(template)
    argv = [common.installed_python(), "-m", "monitor_tick", "--db", copy, "--minute", str(common.MINUTE)]
    counted = count(argv, pythonpath)
    if due:
        common.assert_all_up(copy, due)
    return counted


@contextmanager
def base_tree(revision: str) -> Iterator[str]:
    """A worktree of `revision` in a temporary directory (outside the repository, whose tests
    walk its files), its modules compiled; removed on exit."""
    with tempfile.TemporaryDirectory(prefix="monitor-tick-base-") as parent:
        path = str(Path(parent) / "tree")
        added = ["git", "worktree", "add", "--detach", path, revision]
        subprocess.run(added, cwd=common.ROOT, check=True, capture_output=True)
        try:
            compileall.compile_dir(str(Path(path) / "monitor_tick"), quiet=1)
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", path], cwd=common.ROOT, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="a git revision to count side by side with the working tree")
    args = parser.parse_args()
    for needed, found in (("valgrind", shutil.which("valgrind")), ("nginx", nginx.nginx_binary())):
        if found is None:
            print(f"skipped: {needed} is not installed (Debian: apt-get install {needed})")
            return 0
    trees: list[tuple[str, str | None]] = [("this tree", None)]
    bare = count([common.installed_python(), "-c", "import sqlite3"])
    print(f"python -c 'import sqlite3': {bare / 1e6:,.1f}M instructions")
    with ExitStack() as stack:
        if args.base:
            trees.append((args.base, stack.enter_context(base_tree(args.base))))
        server = stack.enter_context(nginx.nginx_server())
        url = f"http://127.0.0.1:{server.port}/"
        idle = common.db_with("instructions-idle.db", small_tick_rows(10, url, enabled=False))
        due = common.db_with("instructions-due.db", small_tick_rows(10, url))
        counts = {name: (tick_count(idle, path), tick_count(due, path, due=10)) for name, path in trees}
    for name, (idle_n, due_n) in counts.items():
        print(
            f"{name}: idle tick {idle_n / 1e6:,.1f}M ({idle_n / bare:.2f}x the reference), "
            f"10 due HTTP checks {due_n / 1e6:,.1f}M ({due_n / idle_n:.2f}x the idle tick)"
        )
    if args.base:
        (idle_now, due_now), (idle_base, due_base) = counts["this tree"], counts[args.base]
        idle_ratio, due_ratio = idle_now / idle_base, due_now / due_base
        print(f"this tree against {args.base}: idle tick {idle_ratio:.2f}x, small tick {due_ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
