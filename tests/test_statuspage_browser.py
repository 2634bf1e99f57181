"""The status page in a real headless browser (Debian's chromium), served from 127.0.0.1.

Chromium loads the generated page from a LocalServer; its DOM (--dump-dom) must show the bars,
figures and incidents the database holds, with no console message at all, and screenshots in
light mode, dark mode and at phone width are saved under test-artifacts/ to look at.

Not skipped without chromium: it fails and says how to install it (.ci/run does).
"""

from __future__ import annotations

import mimetypes
import shutil
import sqlite3
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick.cli.app import app
from monitor_tick.core import clock
from tests.conftest import add
from tests.history import DAY, HOSTILE_NAME, NOW_MS, TODAY_MS, History, seed
from tests.servers import LocalServer, send_response

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_TIMEOUT_S = 60
BROKEN_PAGE = "<!doctype html><title>broken</title><script>console.error('boom'); notDefined();</script>"


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(
            "chromium is not installed; the status page is tested in a real browser. Install it with "
            "`apt-get update && apt-get install -y chromium` (.ci/run does this when it is missing)."
        )
    return found


def run_chromium(chromium: str, profile: Path, url: str, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *flags,
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def console_lines(stderr: str) -> list[str]:
    """Chromium's --enable-logging=stderr lines for page console messages and uncaught errors."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def serve_directory(server: LocalServer, prefix: str, root: Path) -> None:
    async def handler(reader: Any, writer: Any, path: str, method: str) -> None:
        relative = path.split("?", 1)[0].removeprefix(prefix).lstrip("/") or "index.html"
        target = (root / relative).resolve()
        if not target.is_file() or root.resolve() not in target.parents:
            await send_response(writer, 404, "not found", method=method)
            return
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        await send_response(writer, 200, target.read_bytes(), method=method, content_type=f"{kind}; charset=utf-8")

    server.route(prefix, handler)


class Page(HTMLParser):
    """The parts of the status page's DOM that carry figures."""

    def __init__(self) -> None:
        super().__init__()
        self.overall: dict[str, str] = {}
        self.monitors: dict[int, dict[str, Any]] = {}
        self._current: dict[str, Any] | None = None
        self._field: tuple[str, Any] | None = None
        self.groups: list[str] = []
        self.group_titles: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "section" and "group" in classes:  # groups follow the monitors without one
            self.groups.append(a["data-group"])
        elif tag == "h2" and "group" in classes:
            self._field = ("group", None)
            self.group_titles.append("")
        elif tag == "section" and "overall" in classes:
            self.overall = {"state": a["data-state"], "text": ""}
        elif tag == "strong" and self._current is None and self.overall:
            self._field = ("overall", None)
        elif tag == "section" and "monitor" in classes:
            self._current = {
                "state": a["data-state"],
                "name": "",
                "figures": {},
                "bars": [],
                "incidents": [],
                "group": self.groups[-1] if self.groups else None,
            }
            self.monitors[int(a["data-monitor-id"])] = self._current
        elif self._current is None:
            return
        elif tag == "h2":
            self._field = ("name", None)
        elif tag == "dd" and "data-window" in a:
            self._current["figures"][a["data-window"]] = ""
            self._field = ("figure", a["data-window"])
        elif tag == "dd" and "data-latency-ms" in a:
            self._current["latency"] = ""
            self._field = ("latency", None)
        elif tag == "li" and "data-date" in a:
            self._current["bars"].append((a["data-date"], classes[0], a["title"]))
        elif tag == "ol" and "incidents" in classes:
            self._field = None
        elif tag == "li" and classes and classes[0] in ("open", "resolved"):
            self._current["incidents"].append([])
        elif tag in ("time", "span") and self._current["incidents"] and self._field is None:
            self._current["incidents"][-1].append("")
            self._field = ("incident", None)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h2", "dd", "time", "span", "strong", "section"):
            self._field = None

    def handle_data(self, data: str) -> None:
        if self._field is None:
            return
        kind, key = self._field
        if kind == "overall":
            self.overall["text"] += data
        elif kind == "group":
            self.group_titles[-1] += data
        elif kind == "name":
            self._current["name"] += data  # type: ignore[index]
        elif kind == "figure":
            self._current["figures"][key] += data  # type: ignore[index]
        elif kind == "latency":
            self._current["latency"] += data  # type: ignore[index]
        elif kind == "incident":
            self._current["incidents"][-1][-1] += data  # type: ignore[index]


def expected_pct(checks: int, failures: int) -> str:
    if not checks:
        return "no data"
    if not failures:
        return "100%"
    hundredths = (checks - failures) * 10_000 // checks
    return f"{hundredths // 100}.{hundredths % 100:02d}%"


def expected_level(checks: int, failures: int) -> str:
    if not checks:
        return "lv-none"
    share = (checks - failures) / checks
    return "lv-ok" if share >= 0.999 else "lv-minor" if share >= 0.99 else "lv-major" if share >= 0.95 else "lv-bad"


def top_left_rgb(png: Path) -> tuple[int, int, int]:
    """The first pixel of an 8-bit RGB(A) PNG. For the first scanline every filter leaves the
    first pixel as stored, so no unfiltering is needed."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat = 8, b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            assert body[8] == 8 and body[9] in (2, 6), "8-bit RGB or RGBA expected"
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    raw = zlib.decompressobj().decompress(idat, 8)
    return raw[1], raw[2], raw[3]


def test_the_page_in_a_browser_shows_what_the_database_holds(
    chromium: str, tmp_path: Path, conn: sqlite3.Connection, db_path: str
) -> None:
    history: History = seed(conn)
    # a group of two, and a private monitor that is down: not on the page, its summary or badges
    conn.execute("UPDATE monitors SET group_name = 'Public sites' WHERE id IN (?, ?)", (history.fresh, history.paused))
    private = add(conn, "http://private.test/", name="private thing", created_at_ms=NOW_MS - 100 * DAY)
    conn.execute("UPDATE monitors SET private = 1 WHERE id = ?", (private,))
    conn.execute(
        "INSERT INTO incidents (monitor_id, started_at_ms, cause) VALUES (?, ?, 'timeout')", (private, NOW_MS - DAY)
    )
    site = tmp_path / "site"
    with freeze_time(clock.iso_from_ms(NOW_MS)):
        made = CliRunner().invoke(app, ["status-page", "--out", str(site), "--db", db_path, "--title", "Acme"])
    assert made.exit_code == 0, made.output
    profile = tmp_path / "profile"

    with LocalServer() as server:
        serve_directory(server, "/site", site)
        server.route("/broken", lambda r, w, p, m: send_response(w, 200, BROKEN_PAGE, content_type="text/html"))
        url = server.url("/site/index.html")
        dumped = run_chromium(chromium, profile, url, "--enable-logging=stderr", "--v=0", "--dump-dom")
        # the console check can see an error when there is one
        broken = run_chromium(
            chromium, profile, server.url("/broken"), "--enable-logging=stderr", "--v=0", "--dump-dom"
        )
        ARTIFACTS.mkdir(exist_ok=True)
        shots = {
            "light": ["--window-size=1280,1400"],
            "dark": ["--window-size=1280,1400", "--blink-settings=preferredColorScheme=0"],
            "phone": ["--window-size=390,1700"],
        }
        for name, flags in shots.items():
            (ARTIFACTS / f"status-page-{name}.png").unlink(missing_ok=True)
            run_chromium(chromium, profile, url, f"--screenshot={ARTIFACTS / f'status-page-{name}.png'}", *flags)
        assert server.errors == []
        requested = {r.path for r in server.requests}

    assert any("Uncaught ReferenceError" in line for line in console_lines(broken.stderr))
    assert console_lines(dumped.stderr) == []
    assert requested <= {"/site/index.html", "/broken", "/favicon.ico"}  # nothing but the page itself

    page = Page()
    page.feed(dumped.stdout)
    assert page.overall == {"state": "down", "text": "1 of 3 monitors down"}
    assert set(page.monitors) == {history.api, history.web, history.fresh, history.paused}
    assert page.monitors[history.web]["name"] == HOSTILE_NAME
    assert [m["state"] for m in page.monitors.values()] == ["up", "down", "up", "paused"]
    assert [m["group"] for m in page.monitors.values()] == [None, None, "Public sites", "Public sites"]
    assert page.group_titles == ["Public sites"]
    assert "private thing" not in dumped.stdout
    badges = {p.name for p in (site / "badges").iterdir()}
    assert f"{history.api}-status.svg" in badges and not any(b.startswith(f"{private}-") for b in badges)

    for monitor, shown in page.monitors.items():
        for window, length_ms in (("24h", DAY), ("7d", 7 * DAY), ("30d", 30 * DAY), ("90d", 90 * DAY)):
            since = NOW_MS - length_ms
            checks, failures = conn.execute(
                "SELECT coalesce(sum(checks), 0), coalesce(sum(failures), 0) FROM rollups "
                "WHERE monitor_id = ? AND hour_start_ms >= ?",
                (monitor, since - since % 3_600_000),
            ).fetchone()
            assert shown["figures"][window] == (expected_pct(checks, failures) if checks else "—"), (monitor, window)
        days = {
            day: (checks, failures)
            for day, checks, failures in conn.execute(
                "SELECT hour_start_ms / ?, sum(checks), sum(failures) FROM rollups WHERE monitor_id = ? GROUP BY 1",
                (DAY, monitor),
            )
        }
        created = conn.execute("SELECT created_at_ms FROM monitors WHERE id = ?", (monitor,)).fetchone()[0]
        assert len(shown["bars"]) == 90
        for offset, (date, level, title) in enumerate(shown["bars"]):
            day_ms = TODAY_MS - (89 - offset) * DAY
            assert date == clock.date_from_ms(day_ms)
            checks, failures = days.get(day_ms // DAY, (0, 0))
            if created >= day_ms + DAY:
                assert (level, title) == ("lv-void", f"{date}: not monitored")
            elif checks:
                assert level == expected_level(checks, failures)
                assert title.startswith(f"{date}: {expected_pct(checks, failures)} up"), title
            else:
                assert level == "lv-none" and title.startswith(f"{date}: no data ("), title
    api_bars = {date: title for date, _, title in page.monitors[history.api]["bars"]}
    assert api_bars[clock.date_from_ms(history.no_data_day_ms)].endswith("(monitor-tick was not running)")
    assert page.monitors[history.api]["latency"] == "120 ms"
    assert page.monitors[history.paused]["latency"] == "—"

    incidents = conn.execute(
        "SELECT monitor_id, started_at_ms, resolved_at_ms FROM incidents "
        "WHERE resolved_at_ms IS NULL OR resolved_at_ms >= ? ORDER BY started_at_ms DESC",
        (NOW_MS - 90 * DAY,),
    ).fetchall()
    for monitor, shown in page.monitors.items():
        mine = [(clock.display_from_ms(start), end) for m, start, end in incidents if m == monitor]
        assert [i[0] for i in shown["incidents"]] == [start for start, _ in mine]
    assert page.monitors[history.api]["incidents"] == [["2026-11-28 10:00 UTC", "30m", "status 503"]]
    assert page.monitors[history.web]["incidents"] == [
        ["2026-12-01 10:00 UTC", "ongoing, 2h so far", "too many redirects to https://***@web.test/login?token=***"]
    ]

    light = top_left_rgb(ARTIFACTS / "status-page-light.png")
    dark = top_left_rgb(ARTIFACTS / "status-page-dark.png")
    assert min(light) > 200 and max(dark) < 60, (light, dark)
    assert (ARTIFACTS / "status-page-phone.png").stat().st_size > 10_000
