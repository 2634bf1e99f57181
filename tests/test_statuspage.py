"""The status page and badges: figures from rollups, no data from the ticks ledger, escaping,
atomic writes. Expected figures come from plain SQL over the seeded tables (tests/history.py)."""

from __future__ import annotations

import os
import sqlite3
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.publish import badges, latencychart, statuspage
from monitor_tick.publish.atomic import write_text_atomic
from monitor_tick.publish.uptime import Totals, format_pct
from tests.conftest import add
from tests.history import DAY, HOSTILE_NAME, HOUR, MINUTE, NOW_MS, TODAY_MS, History, seed

FROZEN = clock.iso_from_ms(NOW_MS)


@pytest.fixture
def history(conn: sqlite3.Connection) -> History:
    return seed(conn)


def sql_totals(conn: sqlite3.Connection, monitor: int, since_ms: int) -> tuple[int, int]:
    """(checks, failures) over the rollup hours from the hour of `since_ms`, by plain SQL."""
    row = conn.execute(
        "SELECT coalesce(sum(checks), 0), coalesce(sum(failures), 0) FROM rollups "
        "WHERE monitor_id = ? AND hour_start_ms >= ?",
        (monitor, since_ms - since_ms % HOUR),
    ).fetchone()
    return int(row[0]), int(row[1])


def sql_day(conn: sqlite3.Connection, monitor: int, day_start_ms: int) -> tuple[int, int]:
    row = conn.execute(
        "SELECT coalesce(sum(checks), 0), coalesce(sum(failures), 0) FROM rollups "
        "WHERE monitor_id = ? AND hour_start_ms >= ? AND hour_start_ms < ?",
        (monitor, day_start_ms, day_start_ms + DAY),
    ).fetchone()
    return int(row[0]), int(row[1])


def by_id(status: statuspage.Status, monitor: int) -> statuspage.MonitorStatus:
    return next(m for m in status.monitors if m.id == monitor)


def test_uptime_is_counted_by_checks_over_whole_utc_hours_for_each_window(
    conn: sqlite3.Connection, history: History
) -> None:
    status = statuspage.collect(conn, NOW_MS)
    for monitor in (history.api, history.web, history.fresh, history.paused):
        shown = by_id(status, monitor)
        for label, length_ms in (("24h", DAY), ("7d", 7 * DAY), ("30d", 30 * DAY), ("90d", 90 * DAY)):
            checks, failures = sql_totals(conn, monitor, NOW_MS - length_ms)
            assert (shown.windows[label].checks, shown.windows[label].failures) == (checks, failures), (monitor, label)
    api_7d = by_id(status, history.api).windows["7d"]
    assert api_7d.failures == 30
    # rounded down: 30 failures must never show as a rounder figure than they are
    assert format_pct(api_7d.hundredths) == f"{(api_7d.checks - 30) * 10000 // api_7d.checks / 100:.2f}%"
    assert by_id(status, history.paused).windows["90d"] == Totals()


def test_each_of_the_90_bars_is_one_utc_day_with_that_days_checks(conn: sqlite3.Connection, history: History) -> None:
    status = statuspage.collect(conn, NOW_MS)
    for monitor in (history.api, history.web, history.fresh):
        days = by_id(status, monitor).days
        assert len(days) == 90
        assert days[-1].date == "2026-12-01" and days[0].date == clock.date_from_ms(TODAY_MS - 89 * DAY)
        for bar in days:
            start = clock.day_start_ms(bar.day)
            assert (bar.totals.checks, bar.totals.failures) == sql_day(conn, monitor, start), bar.date
    bad_day = by_id(status, history.api).days[-4]
    assert bad_day.totals.failures == 30 and bad_day.totals.level == "major"  # 97.9 %
    assert statuspage.day_title(bad_day) == "2026-11-28: 97.91% up, 30 of 1440 checks failed"


def test_a_day_monitor_tick_did_not_run_is_no_data_not_downtime(conn: sqlite3.Connection, history: History) -> None:
    status = statuspage.collect(conn, NOW_MS)
    api = by_id(status, history.api)
    dark_day = next(bar for bar in api.days if clock.day_start_ms(bar.day) == history.no_data_day_ms)
    assert dark_day.totals.checks == 0 and dark_day.totals.level == "none"
    assert dark_day.no_data_ms == DAY
    assert statuspage.day_title(dark_day) == "2026-11-26: no data (monitor-tick was not running)"
    # the missing day lowers no figure: the 7 days hold exactly the checks that were made
    assert api.windows["7d"].checks == sql_totals(conn, history.api, NOW_MS - 7 * DAY)[0] < 7 * 1440
    assert api.windows["7d"].failures == 30

    gap_day = api.days[-3]
    assert gap_day.no_data_ms == history.gap_ms[1] - history.gap_ms[0] == 3 * HOUR
    assert gap_day.totals.hundredths == 10_000
    assert statuspage.day_title(gap_day).endswith("; no data for 3h (monitor-tick was not running)")
    # drawn as 21 of 24 hours in colour, the rest grey
    page = statuspage.render_html(status)
    assert f'<li class="lv-ok part" style="--covered:87.5%" data-date="{gap_day.date}"' in page
    assert f'<li class="lv-none" data-date="{dark_day.date}"' in page


def test_a_minute_claimed_too_late_to_probe_is_no_data_like_an_unclaimed_one(
    conn: sqlite3.Connection, history: History
) -> None:
    status = statuspage.collect(conn, NOW_MS)
    # the seeded ledger has every minute of the last 24 h but one, which was claimed too late
    assert status.no_data_24h_ms == MINUTE
    assert by_id(status, history.api).days[-1].no_data_ms == MINUTE
    conn.execute("UPDATE ticks SET finished_at_ms = NULL WHERE minute = ?", (clock.minute_of_ms(NOW_MS) - 10,))
    assert statuspage.collect(conn, NOW_MS).no_data_24h_ms == 2 * MINUTE  # a run that died


def test_days_before_a_monitor_existed_are_not_monitored_and_its_first_day_counts_from_creation(
    conn: sqlite3.Connection, history: History
) -> None:
    fresh = by_id(statuspage.collect(conn, NOW_MS), history.fresh)
    first = [bar for bar in fresh.days if bar.monitored_ms]
    assert first[0].date == clock.date_from_ms(TODAY_MS - 10 * DAY)
    assert first[0].monitored_ms == 18 * HOUR  # created at 06:00
    assert statuspage.day_title(fresh.days[0]) == f"{fresh.days[0].date}: not monitored"
    # the day monitor-tick did not run falls after its creation: no data, not "not monitored"
    assert "monitor-tick was not running" in statuspage.day_title(fresh.days[-6])


def test_gaps_are_found_across_midnight_and_only_short_days_are_searched(conn: sqlite3.Connection) -> None:
    first_day = clock.day_of_ms(TODAY_MS) - 3
    until = clock.minute_of_ms(NOW_MS)
    missing = set(range(clock.minute_of_ms(TODAY_MS - DAY - HOUR), clock.minute_of_ms(TODAY_MS + 2 * HOUR)))
    missing |= {first_day * 1440 + 5}
    ledger = [(m, m * MINUTE, m * MINUTE + 500) for m in range(first_day * 1440, until) if m not in missing]
    conn.executemany("INSERT INTO ticks (minute, started_at_ms, finished_at_ms) VALUES (?, ?, ?)", ledger)
    expected = [
        (first_day * 1440 + 5, first_day * 1440 + 6),
        (clock.minute_of_ms(TODAY_MS - DAY - HOUR), clock.minute_of_ms(TODAY_MS + 2 * HOUR)),
    ]
    assert store.tick_gaps(conn, first_day * 1440, until) == expected
    assert statuspage._tick_gaps(conn, first_day, until) == expected


def test_recent_incidents_are_the_newest_within_90_days_with_urls_redacted(
    conn: sqlite3.Connection, history: History
) -> None:
    status = statuspage.collect(conn, NOW_MS)
    api, web = by_id(status, history.api), by_id(status, history.web)
    assert api.incident_count == 1  # the one from 120 days ago is out of the window
    assert [(i.started_at_ms, i.cause) for i in api.incidents] == [(TODAY_MS - 3 * DAY + 10 * HOUR, "status 503")]
    assert statuspage.incident_duration(api.incidents[0], NOW_MS) == "30m"
    (ongoing,) = web.incidents
    assert ongoing.resolved_at_ms is None and statuspage.incident_duration(ongoing, NOW_MS) == "ongoing, 2h so far"
    assert "hunter2" not in ongoing.cause and "s3cret" not in ongoing.cause and "web.test/login" in ongoing.cause
    for n in range(7):
        start = NOW_MS - (20 + n) * HOUR
        conn.execute(
            "INSERT INTO incidents (monitor_id, started_at_ms, resolved_at_ms, cause) VALUES (?, ?, ?, 'timeout')",
            (history.api, start, start + MINUTE),
        )
    api = by_id(statuspage.collect(conn, NOW_MS), history.api)
    assert api.incident_count == 8 and len(api.incidents) == statuspage.RECENT_INCIDENTS
    assert [i.started_at_ms for i in api.incidents] == [NOW_MS - (20 + n) * HOUR for n in range(5)]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_page_escapes_names_and_causes_and_loads_nothing_from_outside(
    conn: sqlite3.Connection, history: History
) -> None:
    page = statuspage.render_html(statuspage.collect(conn, NOW_MS), title='Ops <b>"status"</b>')
    parsed = _Tags()
    parsed.feed(page)
    tags = [tag for tag, _ in parsed.tags]
    assert "script" not in tags and "b" not in tags and "img" not in tags and "link" not in tags
    assert not [a for _, attrs in parsed.tags for k, a in attrs.items() if k in ("src", "href")]
    text = "".join(parsed.text)
    assert HOSTILE_NAME in text and 'Ops <b>"status"</b>' in text  # shown as text, not as markup
    assert "hunter2" not in page and "s3cret" not in page
    csp = next(a["content"] for t, a in parsed.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in (csp or "") and "script-src" not in (csp or "")


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([], ("none", "No monitors yet")),
        (["up", "up", "paused"], ("up", "All systems operational")),
        (["up"], ("up", "The monitor is up")),
        (["up", "down", "down", "new"], ("down", "2 of 3 monitors down")),
        (["down"], ("down", "The monitor is down")),
        (["paused", "new"], ("none", "No monitor is being checked")),
    ],
)
def test_the_overall_state_counts_the_monitors_being_checked(states: list[str], expected: tuple[str, str]) -> None:
    monitors = [statuspage.MonitorStatus(n, f"m{n}", s, None, {}, [], [], 0) for n, s in enumerate(states)]
    assert statuspage.overall(statuspage.Status(NOW_MS, monitors, NOW_MS, 0)) == expected


def test_badges_show_state_and_uptime_as_well_formed_svg(conn: sqlite3.Connection, history: History) -> None:
    files = statuspage.badge_files(statuspage.collect(conn, NOW_MS))
    assert len(files) == 4 * 3
    ns = {"svg": "http://www.w3.org/2000/svg"}

    def texts(name: str) -> tuple[str, list[str], list[str]]:
        root = ET.fromstring(files[name])
        fills = [r.get("fill", "") for r in root.iterfind(".//svg:rect", ns)]
        return root.get("width", ""), [t.text or "" for t in root.iterfind(".//svg:text", ns)][1::2], fills

    _, words, fills = texts(f"{history.web}-status.svg")
    assert words == [HOSTILE_NAME, "down"] and badges.COLORS["down"] in fills
    _, words, fills = texts(f"{history.api}-uptime-30d.svg")
    checks, failures = sql_totals(conn, history.api, NOW_MS - 30 * DAY)
    assert words == ["uptime 30d", f"{(checks - failures) * 10000 // checks / 100:.2f}%"]
    assert texts(f"{history.api}-uptime-24h.svg")[1] == ["uptime 24h", "100%"]
    assert texts(f"{history.paused}-uptime-24h.svg")[1] == ["uptime 24h", "no data"]
    assert badges.GREY in texts(f"{history.paused}-status.svg")[2]
    short, long = badges.badge_svg("a", "up", "#4c1"), badges.badge_svg("a much longer label", "up", "#4c1")
    assert int(ET.fromstring(short).get("width", "")) < int(ET.fromstring(long).get("width", ""))


def test_an_atomic_write_replaces_the_file_and_a_failed_one_leaves_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "index.html"
    write_text_atomic(str(target), "old")
    inode = target.stat().st_ino
    write_text_atomic(str(target), "new")
    assert target.read_text() == "new" and target.stat().st_ino != inode  # a new file, renamed over
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_text_atomic(str(target), "half")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]


def test_the_status_page_command_writes_the_page_and_badges_and_drops_removed_monitors(
    tmp_path: Path, conn: sqlite3.Connection, db_path: str, history: History
) -> None:
    out = tmp_path / "site"
    with freeze_time(FROZEN):
        result = CliRunner().invoke(app, ["status-page", "--out", str(out), "--db", db_path, "--title", "Acme"])
    assert result.exit_code == 0, result.output
    assert result.output == ""
    page = (out / "index.html").read_text()
    assert "<title>Acme: 1 of 3 monitors down</title>" in page
    assert sorted(os.listdir(out / "badges")) == sorted(
        f"{m}-{kind}.svg" for m in (1, 2, 3, 4) for kind in ("status", "uptime-24h", "uptime-30d")
    )
    (out / "badges" / "notes.txt").write_text("mine")
    store.remove_monitor(conn, "paused")
    with freeze_time(FROZEN):
        assert CliRunner().invoke(app, ["status-page", "--out", str(out), "--db", db_path]).exit_code == 0
    left = os.listdir(out / "badges")
    assert "notes.txt" in left and not [n for n in left if n.startswith(f"{history.paused}-")]


def test_the_status_page_command_fails_in_one_line_and_creates_no_database(tmp_path: Path, db_path: str) -> None:
    missing = tmp_path / "nope.db"
    result = CliRunner().invoke(app, ["status-page", "--out", str(tmp_path / "site"), "--db", str(missing)])
    assert result.exit_code == 1 and result.output == f"monitor-tick: no database at {missing}\n"
    assert not missing.exists()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(app, ["status-page", "--out", str(blocker), "--db", db_path])
    assert result.exit_code == 1
    assert result.output.startswith("monitor-tick: status page not written: ") and result.output.count("\n") == 1


def test_a_new_database_gives_a_page_that_says_so(tmp_path: Path, conn: sqlite3.Connection) -> None:
    page = statuspage.render_html(statuspage.collect(conn, NOW_MS))
    assert "No monitors yet" in page and "monitor-tick has not run yet." in page
    add(conn, "http://a.test/", name="a", created_at_ms=NOW_MS)
    status = statuspage.collect(conn, NOW_MS)
    assert [m.state for m in status.monitors] == ["new"] and status.no_data_24h_ms == 0
    assert all(not bar.monitored_ms for bar in status.monitors[0].days)


def test_the_latency_chart_draws_each_of_the_last_24_hours_average_from_the_rollups(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://chart.test/", name="chart", created_at_ms=NOW_MS - 2 * DAY)
    quiet = add(conn, "http://quiet.test/", name="quiet", created_at_ms=NOW_MS - 2 * DAY)
    first = NOW_MS - NOW_MS % HOUR - 23 * HOUR
    # hour: (checks, failures, latency_ms_sum of the up checks); hour 5 failed throughout
    hours = {
        -1: (60, 0, 60 * 999),
        0: (60, 0, 6_000),
        1: (60, 0, 12_000),
        5: (60, 60, 0),
        6: (60, 30, 1_500),
        23: (1, 0, 400),
    }
    conn.executemany(
        "INSERT INTO rollups (monitor_id, hour_start_ms, checks, failures, latency_ms_sum, last_check_ms) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(monitor, first + h * HOUR, c, f, s, first + h * HOUR) for h, (c, f, s) in hours.items()],
    )
    conn.commit()
    expected: list[float | None] = []
    for h in range(24):  # by plain SQL: the hour's latency sum over its up checks
        row = conn.execute(
            "SELECT latency_ms_sum * 1.0 / (checks - failures) FROM rollups "
            "WHERE monitor_id = ? AND hour_start_ms = ? AND checks > failures",
            (monitor, first + h * HOUR),
        ).fetchone()
        expected.append(None if row is None else row[0])
    status = statuspage.collect(conn, NOW_MS)
    assert by_id(status, monitor).latency_hours == expected
    assert by_id(status, quiet).latency_hours == [None] * 24

    svg = ET.fromstring(latencychart.chart_svg(expected))
    assert svg.get("data-latency-ms") == "100,200,,,,,50" + "," * 17 + "400"
    # hours 0-1 joined; 6 and 23 alone; the highest hour (400 ms) at the top, the lowest lowest
    [line] = svg.findall("polyline")
    points = [tuple(map(float, p.split(","))) for p in (line.get("points") or "").split()]
    dots = [(float(c.get("cx") or 0), float(c.get("cy") or 0)) for c in svg.findall("circle")]
    step = (latencychart.WIDTH - 2 * latencychart.MARGIN) / 23
    assert [x for x, _ in points + dots] == pytest.approx(
        [latencychart.MARGIN + h * step for h in (0, 1, 6, 23)], abs=0.05
    )
    assert dots[1][1] == latencychart.MARGIN and max(y for _, y in points + dots) == dots[0][1]
    page = statuspage.render_html(status)
    assert page.count('<svg class="latency-chart"') == 1  # the quiet monitor has none to draw
