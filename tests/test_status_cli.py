"""The tick's --status-page and --metrics-file flags, and `monitor-tick report`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from freezegun import freeze_time
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from monitor_tick.cli.app import app
from monitor_tick.core import clock
from tests.commands import clock_at
from tests.conftest import add, rollup
from tests.history import DAY, HOSTILE_NAME, HOUR, NOW_MS, History, seed
from tests.hostile_origin import scripted
from tests.servers import LocalServer

runner = CliRunner()


def gauges(text: str) -> dict[str, float]:
    """Unlabelled samples and `name{first label}` keys -> value."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = sample.name + ("{" + next(iter(sample.labels.values())) + "}" if sample.labels else "")
            out[key] = sample.value
    return out


def test_the_tick_flags_rewrite_the_page_and_the_metrics_after_each_tick(
    tmp_path: Path, conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    add(conn, local_server.url("/ok"), name="alpha", retries=0)
    add(conn, local_server.url("/beta"), name="beta", retries=0)
    beta = scripted(local_server, "/beta", 200, 503)
    site, prom = tmp_path / "site", tmp_path / "textfile" / "monitor_tick.prom"
    prom.parent.mkdir()
    args = ["--db", db_path, "--retry-delay", "0", "--status-page", str(site), "--metrics-file", str(prom)]
    with freeze_time("2026-12-01 00:00:05", real_asyncio=True):
        first = runner.invoke(app, args)
    assert first.exit_code == 0 and first.stdout == "" and first.stderr == ""
    assert gauges(prom.read_text())["monitor_tick_up{2}"] == 1
    assert 'data-state="up"' in (site / "index.html").read_text()

    with freeze_time("2026-12-01 00:01:05", real_asyncio=True):
        second = runner.invoke(app, args)
    assert second.exit_code == 0 and second.stdout == "" and second.stderr == ""
    found = gauges(prom.read_text())
    assert found["monitor_tick_up{1}"] == 1 and found["monitor_tick_up{2}"] == 0
    assert found["monitor_tick_tick_due_monitors"] == 2
    assert found["monitor_tick_tick_checks{down}"] == 1
    assert found["monitor_tick_tick_timestamp_seconds"] == clock.parse_iso_ms("2026-12-01T00:01:05Z") / 1000
    assert found["monitor_tick_missed_ticks"] == 0
    page = (site / "index.html").read_text()
    assert "The monitor is down" not in page and "1 of 2 monitors down" in page
    assert "status 503" in page and "ongoing" in page
    assert (site / "badges" / "2-status.svg").read_text().count(">down</text>") == 2
    assert sorted(os.listdir(prom.parent)) == ["monitor_tick.prom"]  # no temporary left behind
    assert beta == [200, 503] and local_server.hits == {"/ok": 2, "/beta": 2}


def test_a_page_that_cannot_be_written_is_one_line_on_stderr_and_the_tick_still_counts(
    tmp_path: Path, conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    monitor = add(conn, local_server.url("/ok"))
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with freeze_time("2026-12-01 00:00:05", real_asyncio=True):
        result = runner.invoke(app, ["--db", db_path, "--status-page", str(blocker / "site")])
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith("monitor-tick: status page not written: ") and result.stderr.count("\n") == 1
    assert rollup(conn, monitor) == (1, 0) and local_server.hits == {"/ok": 1}


def test_a_second_run_for_a_claimed_minute_writes_no_page(
    tmp_path: Path, conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    add(conn, local_server.url("/ok"))
    with freeze_time("2026-12-01 00:00:05", real_asyncio=True):
        assert runner.invoke(app, ["--db", db_path]).exit_code == 0
        again = runner.invoke(app, ["--db", db_path, "--status-page", str(tmp_path / "site")])
    assert again.exit_code == 0 and not (tmp_path / "site").exists()
    assert local_server.hits == {"/ok": 1}  # the second run probed nothing


IMPORTS = """
import sys
from monitor_tick.cli.app import main
sys.argv = ["monitor-tick", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(" ".join(sorted(m for m in sys.modules if m.startswith("monitor_tick."))))
"""


def test_an_idle_tick_imports_neither_the_page_nor_the_metrics_module(tmp_path: Path, db_path: str) -> None:
    def modules(*flags: str) -> set[str]:
        done = subprocess.run(
            [sys.executable, "-c", IMPORTS, "--db", db_path, *flags],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **clock_at()},  # not 03:17 UTC, when an empty database is said once a day
        )
        assert done.stderr == ""
        return set(done.stdout.split())

    idle = modules()
    assert "monitor_tick.cli.status" in idle  # the commands are registered ...
    assert not idle & {
        "monitor_tick.publish.statuspage",
        "monitor_tick.publish.metrics",
        "monitor_tick.publish.badges",
    }  # ... lightly
    flagged = modules("--force", "--status-page", str(tmp_path / "site"), "--metrics-file", str(tmp_path / "m.prom"))
    assert {"monitor_tick.publish.statuspage", "monitor_tick.publish.metrics"} <= flagged
    assert (tmp_path / "site" / "index.html").exists() and (tmp_path / "m.prom").exists()


# ---------------------------------------------------------------------------------------------
# report


def test_the_report_table_shows_state_uptime_incidents_and_the_time_without_data(
    conn: sqlite3.Connection, db_path: str
) -> None:
    history: History = seed(conn)
    with freeze_time(clock.iso_from_ms(NOW_MS)):
        result = runner.invoke(app, ["report", "--since", "7d", "--db", db_path])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # 7 days back from 12:00:30 starts at the hour 2026-11-24 12:00; monitor-tick missed a whole day,
    # three hours and one minute of that
    assert lines[0] == (
        "Since 2026-11-24 12:00 UTC; uptime counted by checks. "
        "monitor-tick was not running for 1d3h: no data, counted neither way."
    )
    assert lines[1].split() == ["ID", "NAME", "STATE", "UPTIME", "CHECKS", "FAILED", "INCIDENTS", "AVG", "MS", "NOTE"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    checks = conn.execute(
        "SELECT sum(checks) FROM rollups WHERE monitor_id = ? AND hour_start_ms >= ?",
        (history.api, NOW_MS - 7 * DAY - (NOW_MS - 7 * DAY) % HOUR),
    ).fetchone()[0]
    hundredths = (checks - 30) * 10_000 // checks
    assert rows[str(history.api)] == [
        str(history.api),
        "api",
        "up",
        f"{hundredths // 100}.{hundredths % 100:02d}%",
        str(checks),
        "30",
        "1",
        "120",
    ]
    (web_line,) = (line for line in lines if line.split()[0] == str(history.web))
    web_row = web_line.split(HOSTILE_NAME)[1].split()  # names are shown whole, spaces and all
    assert web_row[0] == "down" and web_row[4] == "1"
    assert rows[str(history.paused)][2:] == ["paused", "-", "0", "0", "0", "-"]


def test_the_report_json_keeps_its_fields_and_adds_state_and_incidents(conn: sqlite3.Connection, db_path: str) -> None:
    history: History = seed(conn)
    with freeze_time(clock.iso_from_ms(NOW_MS)):
        result = runner.invoke(app, ["report", "--since", "24h", "--json", "--db", db_path])
    assert result.exit_code == 0
    rows = {row["id"]: row for row in json.loads(result.stdout)}
    assert set(rows[history.api]) == {
        "id",
        "name",
        "checks",
        "failures",
        "uptime_pct",
        "avg_latency_ms",
        "open_incident",
        "kind",
        "invalid_cause",
        "invalid_host",
        "invalid_since_ms",
        "cause",
        "cert_expires_at_ms",
        "cert_days_left",
        "last_ping_ms",
        "last_ping_failed",
        "last_duration_ms",
        "note",
        "state",
        "incidents",
    }
    assert rows[history.web]["state"] == "down" and rows[history.web]["open_incident"] is True
    assert rows[history.web]["incidents"] == 1 and rows[history.api]["incidents"] == 0
    assert rows[history.web]["failures"] == 121 and rows[history.web]["avg_latency_ms"] == 300.0
    assert rows[history.paused]["uptime_pct"] is None and rows[history.paused]["state"] == "paused"
    assert "hunter2" not in result.stdout and "<script>" in rows[history.web]["name"]


def test_the_report_on_a_missing_database_fails_without_creating_one(tmp_path: Path) -> None:
    missing = tmp_path / "x.db"
    result = runner.invoke(app, ["report", "--db", str(missing)])
    assert result.exit_code == 1 and result.stderr == f"monitor-tick: no database at {missing}\n"
    assert not missing.exists()
