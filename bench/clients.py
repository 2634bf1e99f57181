"""The design note's client table (docs/development.md, "HTTP checks on libcurl"): what an HTTP
check costs on each client, measured side by side in one run.

    .venv/bin/python bench/clients.py              # from the repository root; about 2 minutes
    .venv/bin/python bench/clients.py --rounds 3   # fewer rounds (default 5)
    .venv/bin/python bench/clients.py --checks 300 --rounds 1   # a quick look, not a figure

Against nginx on 127.0.0.1 (bench/nginx.py: every connection closed after its response), each
client sends CHECKS GETs, a fresh connection each, CONCURRENCY at a time:

- bare: libcurl's multi interface via pycurl, curl's own select loop (figures_engine.bare_curl);
- thread: the same loop in a thread of its own, the main thread waiting for it;
- tick: the tick's probes driven by asyncio's loop: fan-out, lookup, probe and engine, no
  database (figures_engine.tick_probes);
- raw: a minimal raw-asyncio client, open_connection, write, read to EOF (common.raw_client);
- httpx: one AsyncClient, no keep-alive. httpx is in the `test` extra, not a dependency of the
  tick: without it, its row says so and the ratios to it are left out.

CPU per check = (user + system CPU of this process, every thread) / CHECKS, the whole of a
round's run included (its loop, client and engine set up and closed). Rounds alternate: each
round runs every client once, in an order rotated from round to round; each figure is the median
of the rounds, with their range. Each client first runs 100 checks unmeasured (imports and
first-use costs are not a per-check cost).

Import CPU: a fresh `python -c "import ..."` of what each client imports, in the bench's
installed interpreter (common.installed_python: the tree as a user installs it), user + system
CPU and peak RSS of that process, median of IMPORT_RUNS alternating runs; beside it, the same
for `python -c pass`, the interpreter alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass

from common import CONCURRENCY, installed_python, median, raw_client, run_child_usage  # bench/common.py
from figures_engine import bare_curl, bare_curl_in_a_thread, tick_probes  # bench/figures_engine.py
from nginx import nginx_server  # bench/nginx.py

CHECKS = 3_000
ROUNDS = 5
WARM_UP = 100
IMPORT_RUNS = 5


@dataclass(frozen=True)
class Client:
    key: str
    label: str
    run: Callable[[list[str], int], float]  # (urls, nginx's port) -> CPU seconds of sending them
    imports: str  # the statement a fresh `python -c` runs for its import CPU


def raw_asyncio(urls: list[str], port: int) -> float:
    """CPU seconds of common.raw_client sending len(urls) GETs to `port`."""
    started = time.process_time()
    asyncio.run(raw_client(port, len(urls)))
    return time.process_time() - started


def httpx_client(urls: list[str], port: int) -> float:
    """CPU seconds of one httpx.AsyncClient with no keep-alive sending `urls`, CONCURRENCY at a
    time (its construction included, once per round)."""
    import httpx

    async def main() -> None:
        limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=0)
        slots = asyncio.Semaphore(CONCURRENCY)
        async with httpx.AsyncClient(limits=limits) as client:

            async def one(url: str) -> None:
                async with slots:
                    response = await client.get(url)
                    if response.status_code != 200:
                        raise RuntimeError(f"httpx: {response.status_code}")

            await asyncio.gather(*(one(url) for url in urls))

    started = time.process_time()
    asyncio.run(main())
    return time.process_time() - started


CLIENTS = [
    Client(
        "bare",
        "libcurl's multi interface via pycurl, curl's own select loop",
        lambda urls, _port: bare_curl(urls),
        "import pycurl",
    ),
    Client(
        "thread",
        "the same loop in a thread of its own",
        lambda urls, _port: bare_curl_in_a_thread(urls),
        "import threading, pycurl",
    ),
    Client(
        "tick",
        "the tick's probes on it, driven by asyncio's loop (fan-out, lookup, probe, engine)",
        lambda urls, _port: tick_probes(urls),
        "import asyncio, pycurl, monitor_tick.run.fanout, monitor_tick.probes.http, monitor_tick.probes.curl",
    ),
    Client(
        "raw",
        "a minimal raw-asyncio client (open_connection, write, read)",
        raw_asyncio,
        "import asyncio",
    ),
    Client("httpx", "httpx, one client, no keep-alive", httpx_client, "import httpx"),
]


def httpx_version() -> str | None:
    try:
        import httpx
    except ImportError:
        return None
    return str(httpx.__version__)


def cpu_per_check(clients: list[Client], rounds: int, checks: int) -> dict[str, list[float]]:
    """Each client's ms of CPU per check, one value a round, the rounds alternating."""
    ms: dict[str, list[float]] = {client.key: [] for client in clients}
    with nginx_server() as server:
        urls = [f"http://127.0.0.1:{server.port}/?m={n}" for n in range(checks)]
        for client in clients:
            client.run(urls[:WARM_UP], server.port)
        for turn in range(rounds):
            shift = turn % len(clients)
            for client in clients[shift:] + clients[:shift]:
                ms[client.key].append(client.run(urls, server.port) * 1000 / checks)
    return ms


def import_costs(clients: list[Client]) -> dict[str, tuple[list[float], list[float]]]:
    """Each client's import, and `pass` (key ""): CPU ms and peak RSS MB of IMPORT_RUNS fresh
    processes of the installed interpreter, run in turn."""
    python = installed_python()
    statements = {"": "pass", **{client.key: client.imports for client in clients}}
    for statement in statements.values():  # the first run of each writes its caches
        run_child_usage([python, "-c", statement])
    costs: dict[str, tuple[list[float], list[float]]] = {key: ([], []) for key in statements}
    for _ in range(IMPORT_RUNS):
        for key, statement in statements.items():
            _, peak_kib, cpu = run_child_usage([python, "-c", statement])
            costs[key][0].append(cpu * 1000)
            costs[key][1].append(peak_kib / 1024)
    return costs


def per_check_cell(values: list[float]) -> str:
    return f"{median(values):.3f} ms ({min(values):.3f}-{max(values):.3f})"


def table(
    clients: list[Client], ms: dict[str, list[float]], imports: dict[str, tuple[list[float], list[float]]]
) -> list[str]:
    """The manual's table, with each client's ratio to the bare loop and to httpx."""
    bare = median(ms["bare"])
    httpx = median(ms["httpx"]) if "httpx" in ms else None
    bare_python = median(imports[""][0])
    lines = [
        "| client | CPU per check | to the bare loop | to httpx | import: CPU, peak RSS |",
        "|---|---|---|---|---|",
    ]
    for client in clients:
        per_check = median(ms[client.key])
        cpu, rss = imports[client.key]
        to_httpx = f"{per_check / httpx:.2f}x" if httpx else "-"
        lines.append(
            f"| {client.label} | {per_check_cell(ms[client.key])} | {per_check / bare:.2f}x | {to_httpx} "
            f"| {median(cpu):.0f} ms (+{median(cpu) - bare_python:.0f}), {median(rss):.1f} MB |"
        )
    cpu, rss = imports[""]
    lines.append(f"| (the interpreter alone: `python -c pass`) | | | | {median(cpu):.0f} ms, {median(rss):.1f} MB |")
    lines.append("")
    lines.extend(f"import of {client.key}: python -c {client.imports!r}" for client in clients)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"alternating rounds (default {ROUNDS})")
    parser.add_argument("--checks", type=int, default=CHECKS, help=f"GETs per client and round (default {CHECKS:,})")
    args = parser.parse_args()
    rounds, checks = args.rounds, args.checks
    import pycurl

    versions = [f"Python {platform.python_version()}", pycurl.version.split(" zlib")[0]]
    clients = CLIENTS
    if (found := httpx_version()) is None:
        print("httpx is not installed (it is in the `test` extra: pip install -e '.[test]'): its row is skipped")
        clients = [client for client in CLIENTS if client.key != "httpx"]
    else:
        versions.append(f"httpx {found}")
    load_before = os.getloadavg()
    started = time.perf_counter()
    ms = cpu_per_check(clients, rounds, checks)
    imports = import_costs(clients)
    load_after = os.getloadavg()
    print(
        f"{checks:,} GETs to nginx on 127.0.0.1, a fresh connection each, {CONCURRENCY} at a time; "
        f"CPU per check (user + system of this process): median of {rounds} alternating rounds (range); "
        f'import: a fresh `python -c "import ..."` of the installed interpreter, CPU (user + system, '
        f"+ over `python -c pass`) and peak RSS, medians of {IMPORT_RUNS}"
    )
    print(f"{'; '.join(versions)}; {os.cpu_count()} cores")
    print(
        "load average (1, 5, 15 min): before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
        + f"; {time.perf_counter() - started:.0f} s\n"
    )
    print("\n".join(table(clients, ms, imports)))
    print("\nrounds, ms per check: " + "; ".join(f"{key} " + " ".join(f"{v:.3f}" for v in ms[key]) for key in ms))


if __name__ == "__main__":
    main()
