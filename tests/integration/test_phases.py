"""Where an HTTP check's time went, through the installed command on each engine: the tick's
--json gives each check's phases, and `show` and `show --json` the newest check's, kept in its
hour's rollup."""

from __future__ import annotations

import json

from monitor_tick.core import clock
from tests.commands import ok_at
from tests.servers import LocalServer

MINUTE = 29_934_751  # 2026-12-01T00:31Z (tests/commands.py's ORDINARY_MS)


def at(minute: int) -> int:
    return clock.minute_start_ms(minute) + 5_000


def test_each_check_says_where_its_time_went_and_show_gives_the_newest(any_db: str, local_server: LocalServer) -> None:
    ok_at(any_db, at(MINUTE - 1), "add", local_server.url("/slow/200"), "--name", "slow", "--every", "1m")
    ok_at(any_db, at(MINUTE - 1), "add", local_server.url("/status/503"), "--name", "down", "--every", "1m")
    ok_at(any_db, at(MINUTE - 1), "add", "tcp://127.0.0.1:9", "--name", "port", "--every", "1m")
    report = json.loads(ok_at(any_db, at(MINUTE), "--json"))
    checks = {r["name"]: r for r in report["results"]}
    slow = checks["slow"]["phases"]
    assert list(slow) == ["lookup_ms", "connect_ms", "tls_ms", "first_byte_ms", "total_ms"]
    assert slow["tls_ms"] is None and slow["total_ms"] == checks["slow"]["latency_ms"]
    assert slow["lookup_ms"] <= slow["connect_ms"] < 200 <= slow["first_byte_ms"] <= slow["total_ms"]
    assert checks["down"]["phases"] is not None  # a 503 is an answer: its time is known
    assert checks["port"]["phases"] is None  # not an HTTP check

    shown = json.loads(ok_at(any_db, at(MINUTE + 1), "show", "slow", "--json"))
    assert shown["monitor"]["phases"] == slow
    text = ok_at(any_db, at(MINUTE + 1), "show", "slow")
    expected = (
        f"  timing     lookup {slow['lookup_ms']}, connect {slow['connect_ms']}, first byte {slow['first_byte_ms']}, "
        f"total {slow['total_ms']} (the newest check, ms from its start)"
    )
    assert expected in text.splitlines(), text
    assert json.loads(ok_at(any_db, at(MINUTE + 1), "show", "port", "--json"))["monitor"]["phases"] is None
    assert "timing" not in ok_at(any_db, at(MINUTE + 1), "show", "port")
