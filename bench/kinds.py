"""How the non-HTTP kinds cost in a tick, and how fast `serve` records pings.

    .venv/bin/python bench/kinds.py [N]

Builds a fresh database in a temporary directory with N heartbeat monitors and N tcp://
monitors (against one 127.0.0.1 listening socket), all due at 00:00 UTC (a third of the
heartbeats never pinged, so down: an incident each), runs that minute's tick
and prints its duration; then starts `monitor-tick serve` and times N sequential pings over
HTTP. Touches nothing outside 127.0.0.1. Figures depend on the machine: compare runs, not
absolutes."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.probes import new_monitor
from monitor_tick.probes.heartbeat import new_token
from monitor_tick.run.tick import TickOptions, run_tick

MINUTE = 29_934_720  # 2026-12-01T00:00Z


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4096)
        port = listener.getsockname()[1]
        db_path = str(Path(tmp) / "bench.db")
        conn = store.open_db(db_path)
        tokens = []
        t0 = clock.minute_start_ms(MINUTE)
        for i in range(n):
            hb = new_monitor(name=f"hb{i}", url="heartbeat", interval_sec=86_400, aligned=True, given={})
            token, digest = new_token()
            tokens.append(token)
            # a third never pinged since added two days ago (down), the rest pinged 10 min ago
            added_ms = t0 - 2 * 86_400_000
            hb_id = store.add_monitor(conn, hb, None, added_ms, token_sha256=digest)
            if i % 3:
                store.record_ping(conn, hb_id, "ok", t0 - 600_000)
            url = f"tcp://127.0.0.1:{port}"
            tcp = new_monitor(name=f"tcp{i}", url=url, interval_sec=86_400, aligned=True, given={})
            store.add_monitor(conn, tcp, None, t0)
        conn.close()

        report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, retry_delay_s=0, concurrency=50))
        summary = report.as_json()
        print(
            f"tick: {summary['due']} due ({n} heartbeat, {n} tcp), {summary['up']} up, "
            f"{summary['down']} down in {summary['duration_ms']} ms"
        )

        serve = Path(sys.executable).parent / "monitor-tick"
        with subprocess.Popen(
            [str(serve), "serve", "--port", "0", "--db", db_path], stdout=subprocess.PIPE, text=True
        ) as process:
            assert process.stdout is not None
            base = process.stdout.readline().strip().removeprefix("listening on ")
            with httpx.Client(trust_env=False) as client:
                started = time.perf_counter()
                for token in tokens:
                    client.get(f"{base}/ping/{token}").raise_for_status()
                elapsed = time.perf_counter() - started
            process.terminate()
        print(f"serve: {n} pings over HTTP in {elapsed * 1000:.0f} ms ({n / elapsed:.0f} pings/s, one connection each)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
