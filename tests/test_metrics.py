"""Prometheus textfile metrics, read back with prometheus_client's own parser."""

from __future__ import annotations

import sqlite3

from prometheus_client.parser import text_string_to_metric_families

from monitor_tick.publish import metrics
from tests.conftest import add
from tests.history import NOW_MS, History, seed

TICK = metrics.TickFacts(now_ms=NOW_MS, due=3, up=2, down=1, unknown=0, duration_ms=1250)


def parse(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """name -> [(labels, value)], asserting every family is a documented gauge."""
    families = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge" and family.documentation, family.name
        assert family.name.startswith("monitor_tick_")
        families[family.name] = [(sample.labels, sample.value) for sample in family.samples]
    return families


def test_metrics_parse_and_match_the_database(conn: sqlite3.Connection) -> None:
    history: History = seed(conn)
    found = parse(metrics.collect(conn, TICK))
    assert set(found) == {
        "monitor_tick_up",
        "monitor_tick_location_up",
        "monitor_tick_latency_seconds",
        "monitor_tick_last_check_timestamp_seconds",
        "monitor_tick_invalid",
        "monitor_tick_monitors",
        "monitor_tick_tick_timestamp_seconds",
        "monitor_tick_tick_due_monitors",
        "monitor_tick_tick_checks",
        "monitor_tick_tick_duration_seconds",
        "monitor_tick_missed_ticks",
    }
    up = {labels["monitor"]: value for labels, value in found["monitor_tick_up"]}
    # the paused monitor has no current up/down: it is absent, not 0
    assert up == {"api": 1.0, history_name(conn, history.web): 0.0, "fresh": 1.0}
    latency = {labels["id"]: value for labels, value in found["monitor_tick_latency_seconds"]}
    # newest rollup hour: api answers in 120 ms, fresh in 45 ms; web's hour holds no up check
    assert latency == {str(history.api): 0.12, str(history.fresh): 0.045}
    newest = dict(conn.execute("SELECT monitor_id, max(last_check_ms) FROM rollups GROUP BY monitor_id").fetchall())
    assert {labels["id"]: value for labels, value in found["monitor_tick_last_check_timestamp_seconds"]} == {
        str(m): ms / 1000 for m, ms in newest.items()
    }
    states = {labels["state"]: value for labels, value in found["monitor_tick_monitors"]}
    assert states == {
        "up": 2,
        "down": 1,
        "partial": 0,
        "new": 0,
        "maintenance": 0,
        "paused": 1,
        "auto-paused": 0,
        "invalid": 0,
    }
    assert found["monitor_tick_location_up"] == []  # no monitor has locations
    assert found["monitor_tick_invalid"] == []  # every monitor could be probed
    assert found["monitor_tick_tick_due_monitors"] == [({}, 3.0)]
    assert found["monitor_tick_tick_duration_seconds"] == [({}, 1.25)]
    assert found["monitor_tick_tick_timestamp_seconds"] == [({}, NOW_MS / 1000)]
    assert {labels["result"]: value for labels, value in found["monitor_tick_tick_checks"]} == {
        "up": 2,
        "down": 1,
        "unknown": 0,
    }
    # one minute of the last 24 h was claimed too late to probe
    assert found["monitor_tick_missed_ticks"] == [({}, 1.0)]


def history_name(conn: sqlite3.Connection, monitor: int) -> str:
    return conn.execute("SELECT name FROM monitors WHERE id = ?", (monitor,)).fetchone()[0]


def test_names_with_quotes_backslashes_newlines_and_secrets_survive_as_label_values(conn: sqlite3.Connection) -> None:
    odd = 'a "quoted" \\ back\nslash'
    first = add(conn, "http://a.test/", name=odd)
    secret = add(conn, "http://u:pw@b.test/?token=t0k")  # named after its URL by default
    conn.execute(
        "INSERT INTO rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum, last_check_ms) "
        "VALUES (?, ?, 1, 0, 10, ?), (?, ?, 1, 0, 10, ?)",
        (first, NOW_MS - NOW_MS % 3_600_000, NOW_MS, secret, NOW_MS - NOW_MS % 3_600_000, NOW_MS),
    )
    text = metrics.collect(conn, TICK)
    assert "pw@" not in text and "t0k" not in text
    names = {labels["id"]: labels["monitor"] for labels, _ in parse(text)["monitor_tick_up"]}
    assert names == {str(first): odd, str(secret): "http://***@b.test/?token=***"}


def test_a_new_database_reports_no_missed_ticks_before_the_first_tick(conn: sqlite3.Connection) -> None:
    found = parse(metrics.collect(conn, TICK))
    assert found["monitor_tick_missed_ticks"] == [({}, 0.0)]
    assert found["monitor_tick_up"] == [] and found["monitor_tick_latency_seconds"] == []
