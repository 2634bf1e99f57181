"""Figure 12 of bench/run.py: the engine's cost. The CPU per check of a tick's probes (3,000
plain checks to the lean server, bench/server.py, 50 at a time; no database) beside a bare
pycurl multi loop sending the same requests with curl's own select loop, in one run. Also shown:
that bare loop in a thread of its own (what a large fleet could move to), the tick's probes of
the same server by name, each with its lookup in a thread, and the fan-out and engine with a
probe that only sends its request (the rest is the HTTP probe's own work)."""

from __future__ import annotations

import threading
import time

from common import CONCURRENCY, Figure, lean_server, median  # bench/common.py

from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes import PROBES, ProbeContext
from monitor_tick.run import tick as run_tick_module
from monitor_tick.run.rounds import TickOptions

CHECKS = 3_000
ROUNDS = 3


def tick_probes(urls: list[str]) -> float:
    """CPU seconds (user + system, this process: the loop and the lookup threads) of the tick's
    probing of `urls`: its fan-out, probes and engine, no database."""
    monitors = [
        Monitor(id=n + 1, name=f"m{n}", kind="http", url=url, interval_sec=60, effective_interval_sec=60, retries=0)
        for n, url in enumerate(urls)
    ]
    options = TickOptions("unused.db", retry_delay_s=0, concurrency=CONCURRENCY)
    started = time.process_time()
    results = run_tick_module._probe(monitors, options, 0, {})
    spent = time.process_time() - started
    assert all(r.status == "up" for r in results), {r.cause for r in results if r.status != "up"}
    return spent


async def _send_only(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
    """A probe that only sends its request on the tick's engine and reads the answer, judging
    nothing: what the fan-out and the engine cost without the HTTP probe's own work."""
    import pycurl

    assert ctx.engine is not None
    handle = pycurl.Curl()
    for option, value in ((pycurl.URL, monitor.url), (pycurl.FRESH_CONNECT, 1), (pycurl.FORBID_REUSE, 1)):
        handle.setopt(option, value)
    handle.setopt(pycurl.NOSIGNAL, 1)
    handle.setopt(pycurl.WRITEFUNCTION, lambda data: None)
    code = await ctx.engine.perform(handle)
    return ProbeResult("up" if code == 0 else "down", 0, handle.getinfo(pycurl.RESPONSE_CODE))


def send_only_probes(urls: list[str]) -> float:
    """tick_probes with the HTTP kind's probe replaced by _send_only, for this call."""
    http = PROBES["http"]
    PROBES["http"] = http._replace(probe=_send_only)
    try:
        return tick_probes(urls)
    finally:
        PROBES["http"] = http


def bare_curl(urls: list[str]) -> float:
    """CPU seconds of a bare pycurl multi loop (curl's own select loop) sending the same
    requests, CONCURRENCY handles at a time, each on a fresh connection closed after it."""
    import pycurl

    started = time.process_time()
    multi = pycurl.CurlMulti()
    pending = list(reversed(urls))
    running = 0
    done = 0

    def add() -> None:
        nonlocal running
        handle = pycurl.Curl()
        handle.setopt(pycurl.URL, pending.pop())
        handle.setopt(pycurl.FRESH_CONNECT, 1)
        handle.setopt(pycurl.FORBID_REUSE, 1)
        handle.setopt(pycurl.NOSIGNAL, 1)
        handle.setopt(pycurl.WRITEFUNCTION, lambda data: None)
        multi.add_handle(handle)
        running += 1

    while pending and running < CONCURRENCY:
        add()
    while running:
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        while True:
            queued, ok, failed = multi.info_read()
            for handle in ok:
                assert handle.getinfo(pycurl.RESPONSE_CODE) == 200
                multi.remove_handle(handle)
                handle.close()
                running -= 1
                done += 1
            for _handle, code, message in failed:
                raise AssertionError(f"bare curl: {code} {message}")
            if not queued:
                break
        while pending and running < CONCURRENCY:
            add()
        if running:
            multi.select(1.0)
    multi.close()
    assert done == len(urls)
    return time.process_time() - started


def bare_curl_in_a_thread(urls: list[str]) -> float:
    """bare_curl in a thread of its own, the main thread waiting for it (process CPU)."""
    started = time.process_time()
    worker = threading.Thread(target=bare_curl, args=(urls,))
    worker.start()
    worker.join()
    return time.process_time() - started


def engine_cost() -> Figure:
    ms_per_check: dict[str, list[float]] = {"tick": [], "bare": [], "thread": [], "named": [], "send": []}
    with lean_server() as port:
        urls = [f"http://127.0.0.1:{port}/?m={n}" for n in range(CHECKS)]
        # the same server by name (/etc/hosts): each check's lookup runs in a thread, as most
        # monitors' do (a name is what users monitor)
        named = [f"http://localhost:{port}/?m={n}" for n in range(CHECKS)]
        tick_probes(urls[:100])  # imports and first-use costs are not the engine's per-check cost
        bare_curl(urls[:100])
        for _ in range(ROUNDS):  # alternate, so that all of them see the same machine
            ms_per_check["tick"].append(tick_probes(urls) * 1000 / CHECKS)
            ms_per_check["bare"].append(bare_curl(urls) * 1000 / CHECKS)
            ms_per_check["thread"].append(bare_curl_in_a_thread(urls) * 1000 / CHECKS)
            ms_per_check["named"].append(tick_probes(named) * 1000 / CHECKS)
            ms_per_check["send"].append(send_only_probes(urls) * 1000 / CHECKS)
    tick, bare, thread, by_name, send = (median(ms_per_check[k]) for k in ("tick", "bare", "thread", "named", "send"))
    ratio = tick / bare
    return Figure(
        12,
        f"the engine's cost, CPU per check of a tick's probes, {CHECKS:,} plain checks",
        f"{tick:.3f} ms",
        f"bare pycurl multi loop {bare:.3f} ms",
        ratio,
        "<= 2.50x",
        ratio <= 2.5,
        [
            f"medians of {ROUNDS} alternating rounds, {CONCURRENCY} at a time; CPU = user + system of this process",
            f"curl's own loop in a thread of its own: {thread:.3f} ms/check = {thread / bare:.2f}x the bare loop",
            f"the tick's probes of the same server by name (localhost, a lookup each): {by_name:.3f} ms/check "
            f"= {by_name / bare:.2f}x the bare loop",
            f"the fan-out and engine with a probe that only sends its request: {send:.3f} ms/check = "
            f"{send / bare:.2f}x the bare loop (so the HTTP probe's own work: {tick - send:.3f} ms)",
            "rounds (tick, bare, thread, by name, send only) ms/check: "
            + "; ".join(
                " ".join(f"{v:.3f}" for v in values)
                for values in zip(*(ms_per_check[k] for k in ("tick", "bare", "thread", "named", "send")), strict=True)
            ),
        ],
    )
