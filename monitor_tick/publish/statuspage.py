"""The static status page and its badges, derived from rollups, incidents and the ticks ledger.

`collect` reads everything the page shows in a few queries; `render_html` and `badge_files`
are pure; `write_site` writes them atomically. The page is one HTML file with inline CSS, no
script and no external asset (its Content-Security-Policy forbids both), light and dark.

Uptime is counted by checks (see uptime.py). Minutes when monitor-tick was not running (no
row in the ticks ledger, a row claimed too late to probe, or a run that died) hold no checks:
they are "no data", shown grey, never downtime.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from html import escape

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import monitor_state
from monitor_tick.core.redact import redact_text
from monitor_tick.publish import badges, latencychart, pagestyle
from monitor_tick.publish.atomic import write_text_atomic
from monitor_tick.publish.uptime import WINDOWS, Totals, format_latency_ms, format_pct

BAR_DAYS = 90
RECENT_INCIDENTS = 5
# a tick older than this when the page is made is called out: the figures may be stale
STALE_AFTER_MS = 5 * clock.MS_PER_MINUTE
# monitor-tick not running for this long in the last 24 h is called out at the top
NO_DATA_NOTE_AFTER_MS = 5 * clock.MS_PER_MINUTE
WINDOW_WORDS = {"24h": "24 hours", "7d": "7 days", "30d": "30 days", "90d": "90 days"}
REFRESH_S = 60
DEFAULT_TITLE = "Status"
BADGES_DIR = "badges"
# (file name suffix, window label) of the uptime badges; the status badge is '<id>-status.svg'
UPTIME_BADGES = (("uptime-24h", "24h"), ("uptime-30d", "30d"))
_BADGE_FILE = re.compile(r"^\d+-(status|uptime-24h|uptime-30d)\.svg$")


@dataclass(frozen=True)
class DayBar:
    day: int  # UTC day of the epoch
    totals: Totals
    monitored_ms: int  # the part of the day the monitor existed, up to the current minute
    no_data_ms: int  # of that, the time monitor-tick was not running

    @property
    def date(self) -> str:
        return clock.date_from_ms(clock.day_start_ms(self.day))


@dataclass(frozen=True)
class Incident:
    started_at_ms: int
    resolved_at_ms: int | None
    cause: str  # URLs redacted


@dataclass(frozen=True)
class MonitorStatus:
    id: int
    name: str  # URLs redacted
    state: str  # see model.monitor_state (an invalid monitor's cause is not published)
    last_check_ms: int | None
    windows: dict[str, Totals]  # by uptime.WINDOWS label
    days: list[DayBar]  # BAR_DAYS, oldest first, today last
    incidents: list[Incident]  # newest first, at most RECENT_INCIDENTS
    incident_count: int  # incidents open at any time in the longest window
    group: str | None = None  # the page's section (None: the first, untitled one)
    # a monitor checked from several locations: (location, checks, failures, average latency ms of
    # its up checks or None) over the last 24 hours; its uptime figures are the quorum's verdicts
    places: list[tuple[str, int, int, float | None]] = field(default_factory=list)
    # the average latency of each of the last 24 hours' up checks (None: none), oldest first
    latency_hours: list[float | None] = field(default_factory=list)


@dataclass(frozen=True)
class Status:
    now_ms: int
    monitors: list[MonitorStatus]
    last_tick_ms: int | None  # when the newest tick that probed finished
    no_data_24h_ms: int  # time in the last 24 h (since the first live tick) monitor-tick was not running


# ---------------------------------------------------------------------------------------------
# Reading


def collect(conn: sqlite3.Connection, now_ms: int) -> Status:
    """Everything the page and badges show, as of `now_ms`: seven queries, plus one per run of
    days in which the ledger is short of minutes (usually none)."""
    longest_ms = WINDOWS[-1][1]
    # tier k of a rollup row: how many of these starts its hour is at or after (30d, 7d, 24h)
    tier_starts_ms = [now_ms - length for _, length in reversed(WINDOWS[:-1])]
    today = clock.day_of_ms(now_ms)
    first_day = today - BAR_DAYS + 1
    now_minute = clock.minute_of_ms(now_ms)
    # the current minute is excluded everywhere: its tick may still be running
    until_ms = clock.minute_start_ms(now_minute)

    # private monitors are not published: no section, no badge, not counted in the summary
    rows = [row for row in store.status_monitors(conn, now_ms) if not row["private"]]
    by_monitor: dict[int, list[dict]] = defaultdict(list)
    for row in store.rollups_by_day(conn, now_ms - longest_ms, tier_starts_ms):
        by_monitor[row["monitor_id"]].append(row)
    first_hour_ms = clock.hour_start_ms(now_ms) - (latencychart.HOURS - 1) * clock.MS_PER_HOUR
    hours: dict[int, list[dict]] = defaultdict(list)
    for row in store.rollup_hours(conn, first_hour_ms):
        hours[row["monitor_id"]].append(row)
    incidents: dict[int, list[dict]] = defaultdict(list)
    for row in store.recent_incidents(conn, now_ms - longest_ms, RECENT_INCIDENTS):
        incidents[row["monitor_id"]].append(row)
    gaps_ms = [
        (clock.minute_start_ms(start), clock.minute_start_ms(end))
        for start, end in _tick_gaps(conn, first_day, now_minute)
    ]
    last = store.last_tick(conn)

    gap_pieces = _gaps_by_day(gaps_ms)
    monitors = []
    for row in rows:
        tiers = by_monitor.get(row["id"], [])
        windows = {
            label: sum(
                (_totals(t) for t in tiers if t["tier"] >= len(WINDOWS) - 1 - index),
                Totals(),
            )
            for index, (label, _) in enumerate(WINDOWS)
        }
        per_day: dict[int, Totals] = defaultdict(Totals)
        for t in tiers:
            per_day[t["day"]] += _totals(t)
        days = [
            _day_bar(day, per_day.get(day, Totals()), row["created_at_ms"], until_ms, gap_pieces.get(day, []))
            for day in range(first_day, today + 1)
        ]
        own = incidents.get(row["id"], [])
        monitors.append(
            MonitorStatus(
                id=row["id"],
                name=redact_text(row["name"], every_query=True),
                state=monitor_state(row),
                last_check_ms=row["last_check_ms"],
                windows=windows,
                days=days,
                incidents=[
                    Incident(i["started_at_ms"], i["resolved_at_ms"], redact_text(i["cause"], every_query=True))
                    for i in own
                ],
                incident_count=own[0]["total"] if own else 0,
                group=None if row["group_name"] is None else redact_text(row["group_name"], every_query=True),
                places=_places(conn, row, now_ms),
                latency_hours=latencychart.hour_averages(hours[row["id"]], first_hour_ms, clock.MS_PER_HOUR),
            )
        )
    no_data_24h_ms = sum(_overlap_ms(gap, (now_ms - clock.MS_PER_DAY, until_ms)) for gap in gaps_ms)
    return Status(
        now_ms=now_ms,
        monitors=monitors,
        last_tick_ms=None if last is None else last["finished_at_ms"],
        no_data_24h_ms=no_data_24h_ms,
    )


def _places(conn: sqlite3.Connection, row: dict, now_ms: int) -> list[tuple[str, int, int, float | None]]:
    """Each location's last 24 hours of a monitor with locations (none for the others)."""
    if row.get("locations") is None:
        return []
    since_ms = clock.hour_start_ms(now_ms - clock.MS_PER_DAY)
    found = []
    for place in store.locationsql.location_figures(conn, row["id"], since_ms):
        answered = place["checks"] - place["failures"]
        latency = place["latency_ms_sum"] / answered if answered else None
        found.append((place["location"], place["checks"], place["failures"], latency))
    return found


def _tick_gaps(conn: sqlite3.Connection, first_day: int, until_minute: int) -> list[tuple[int, int]]:
    """store.tick_gaps from `first_day` to `until_minute`, searched only in the days a tick
    missed minutes of (one cheap count per day first): a full day holds no gap."""
    first_minute = clock.minute_of_ms(clock.day_start_ms(first_day))
    ran = store.ticks_per_day(conn, first_minute, until_minute)
    gaps: list[tuple[int, int]] = []
    run_start = None  # the first minute of a run of days short of minutes
    for day in range(first_day, clock.day_of_ms(clock.minute_start_ms(until_minute)) + 1):
        start = max(first_minute, day * clock.MINUTES_PER_DAY)
        end = min(until_minute, (day + 1) * clock.MINUTES_PER_DAY)
        if ran.get(day, 0) < end - start:
            run_start = start if run_start is None else run_start
            continue
        if run_start is not None:
            gaps += store.tick_gaps(conn, run_start, start)
            run_start = None
    if run_start is not None:
        gaps += store.tick_gaps(conn, run_start, until_minute)
    return gaps


def _totals(row: dict) -> Totals:
    return Totals(row["checks"], row["failures"], row["latency_ms_sum"])


def _overlap_ms(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def _gaps_by_day(gaps_ms: list[tuple[int, int]]) -> dict[int, list[tuple[int, int]]]:
    """Gap ranges cut at UTC midnights, by day."""
    pieces: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for start, end in gaps_ms:
        while start < end:
            day = clock.day_of_ms(start)
            cut = min(end, clock.day_start_ms(day + 1))
            pieces[day].append((start, cut))
            start = cut
    return pieces


def _day_bar(day: int, totals: Totals, created_at_ms: int, until_ms: int, gaps: list[tuple[int, int]]) -> DayBar:
    span = (max(clock.day_start_ms(day), created_at_ms), min(clock.day_start_ms(day + 1), until_ms))
    monitored_ms = max(0, span[1] - span[0])
    no_data_ms = sum(_overlap_ms(gap, span) for gap in gaps) if monitored_ms else 0
    return DayBar(day, totals, monitored_ms, no_data_ms)


# ---------------------------------------------------------------------------------------------
# Describing (shared by the page and the badges)


def overall(status: Status) -> tuple[str, str]:
    """(state, headline) for the top of the page: state is 'up', 'down', 'partial' or 'none'."""
    checked = [m for m in status.monitors if m.state in ("up", "down", "partial")]
    down = [m for m in checked if m.state == "down"]
    partial = [m for m in checked if m.state == "partial"]
    if not status.monitors:
        return "none", "No monitors yet"
    if down:
        if len(checked) == 1:
            return "down", "The monitor is down"
        return "down", f"{len(down)} of {len(checked)} monitors down"
    if partial:  # down from some of their locations, fewer than their quorum
        if len(checked) == 1:
            return "partial", "The monitor is down from some locations"
        return "partial", f"{len(partial)} of {len(checked)} monitors down from some locations"
    if not checked:
        return "none", "No monitor is being checked"
    return "up", "All systems operational" if len(checked) > 1 else "The monitor is up"


STATE_WORDS = {
    "up": "Up",
    "down": "Down",
    "partial": "Partial outage",  # down from fewer of its locations than its quorum
    "paused": "Paused",
    "auto-paused": "Auto-paused",
    "maintenance": "Maintenance",
    # the newest tick could not probe it; why is never published (it may name an address)
    "invalid": "Not checked",
    "new": "Not checked yet",
}


def day_title(bar: DayBar) -> str:
    """The hover text of one day's bar: the date and the figure, and why data is missing."""
    totals = bar.totals
    if not bar.monitored_ms:
        return f"{bar.date}: not monitored"
    if not totals.checks:
        why = "monitor-tick was not running" if bar.no_data_ms >= bar.monitored_ms else "no checks"
        return f"{bar.date}: no data ({why})"
    text = f"{bar.date}: {format_pct(totals.hundredths)} up"
    text += f", {totals.failures} of {totals.checks} checks failed" if totals.failures else f", {totals.checks} checks"
    if bar.no_data_ms:
        text += f"; no data for {clock.format_duration_ms(bar.no_data_ms)} (monitor-tick was not running)"
    return text


def incident_duration(incident: Incident, now_ms: int) -> str:
    if incident.resolved_at_ms is None:
        return f"ongoing, {clock.format_duration_ms(now_ms - incident.started_at_ms)} so far"
    return clock.format_duration_ms(incident.resolved_at_ms - incident.started_at_ms)


# ---------------------------------------------------------------------------------------------
# The page


def render_html(status: Status, title: str = DEFAULT_TITLE) -> str:
    """The whole page. Every text from the database or the user is HTML-escaped here."""
    state, headline = overall(status)
    counts = Counter(m.state for m in status.monitors)
    counts_text = " · ".join(f"{counts[s]} {word.lower()}" for s, word in STATE_WORDS.items() if counts[s])
    down = [m.name for m in status.monitors if m.state == "down"]
    if down:
        counts_text += " · down: " + ", ".join(down[:5]) + (f" and {len(down) - 5} more" if len(down) > 5 else "")
    notes = []
    if status.last_tick_ms is None:
        notes.append("monitor-tick has not run yet.")
    elif status.now_ms - status.last_tick_ms > STALE_AFTER_MS:
        notes.append(
            f"monitor-tick last ran at {clock.display_from_ms(status.last_tick_ms)}, "
            f"{clock.format_duration_ms(status.now_ms - status.last_tick_ms)} before this page was made: "
            "figures may be out of date."
        )
    if status.no_data_24h_ms >= NO_DATA_NOTE_AFTER_MS:
        notes.append(
            f"monitor-tick was not running for {clock.format_duration_ms(status.no_data_24h_ms)} in the last 24 hours; "
            "that time is shown as no data, not as downtime."
        )
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f'<meta http-equiv="Content-Security-Policy" content="{pagestyle.CSP}">',
        f'<meta http-equiv="refresh" content="{REFRESH_S}">',
        f"<title>{escape(title)}: {escape(headline)}</title>",
        f"<style>{pagestyle.CSS}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
        f'<section class="overall st-{state}" data-state="{state}"><span class="dot"></span>'
        f"<div><strong>{escape(headline)}</strong>"
        + (f'<div class="counts">{escape(counts_text)}</div>' if counts_text else "")
        + "</div></section>",
        f'<p class="meta">Updated <time datetime="{clock.iso_from_ms(status.now_ms)}">'
        f"{clock.display_from_ms(status.now_ms)}</time>. All times UTC.</p>",
        *(f'<p class="warn">{escape(note)}</p>' for note in notes),
        *_sections_html(status),
        _footer_html(),
        "</main></body></html>\n",
    ]
    return "\n".join(parts)


def _sections_html(status: Status) -> list[str]:
    """The monitors without a group first, then one titled section per group, groups in the
    order of their first monitor (by id)."""
    groups: dict[str | None, list[MonitorStatus]] = {None: []}
    for m in status.monitors:
        groups.setdefault(m.group, []).append(m)
    parts = [_monitor_html(m, status.now_ms) for m in groups.pop(None)]
    for name, members in groups.items():
        title = escape(name or "")
        parts.append(f'<section class="group" data-group="{title}"><h2 class="group">{title}</h2>')
        parts.extend(_monitor_html(m, status.now_ms) for m in members)
        parts.append("</section>")
    return parts


def _monitor_html(m: MonitorStatus, now_ms: int) -> str:
    word = STATE_WORDS.get(m.state, m.state)
    checked = f" · last check {clock.display_from_ms(m.last_check_ms)}" if m.last_check_ms is not None else ""
    figures = "".join(
        f"<div><dt>{WINDOW_WORDS.get(label, label)}</dt>"
        f'<dd class="lv-{totals.level}" data-window="{label}" data-checks="{totals.checks}" '
        f'data-failures="{totals.failures}" title="{totals.failures} of {totals.checks} checks failed">'
        f"{format_pct(totals.hundredths, none='—')}</dd></div>"
        for label, totals in m.windows.items()
    )
    latency = m.windows["24h"].avg_latency_ms
    figures += (
        f'<div class="latency"><dt>Latency, 24 hours</dt><dd class="{"lv-none" if latency is None else ""}" '
        f'data-latency-ms="{"" if latency is None else f"{latency:.0f}"}" title="average of the up checks">'
        f"{format_latency_ms(latency, none='—')}</dd>{latencychart.chart_svg(m.latency_hours)}</div>"
    )
    bars = "".join(
        f'<li {_bar_look(bar)} data-date="{bar.date}" title="{escape(day_title(bar))}"></li>' for bar in m.days
    )
    places = " · ".join(
        f'<span data-location="{escape(name)}">{escape(name)}: {checks - failures} of {checks} up, '
        f"{format_latency_ms(latency, none='—')}</span>"
        for name, checks, failures, latency in m.places
    )
    if places:
        places = f'<p class="quiet places">From each location, 24 hours: {places}</p>'
    ninety = m.windows[WINDOWS[-1][0]]
    if m.incidents:
        items = "".join(
            f'<li class="{"open" if i.resolved_at_ms is None else "resolved"}">'
            f'<time datetime="{clock.iso_from_ms(i.started_at_ms)}">{clock.display_from_ms(i.started_at_ms)}</time>'
            f'<span class="duration">{escape(incident_duration(i, now_ms))}</span>'
            f'<span class="cause">{escape(i.cause)}</span></li>'
            for i in m.incidents
        )
        more = m.incident_count - len(m.incidents)
        shown = f"{m.incident_count} in {BAR_DAYS} days" + (f", newest {len(m.incidents)} shown" if more else "")
        incidents = f'<h3>Incidents · {shown}</h3><ol class="incidents">{items}</ol>'
    else:
        incidents = f'<p class="quiet">No incidents in {BAR_DAYS} days.</p>'
    return (
        f'<section class="monitor st-{m.state}" id="monitor-{m.id}" data-monitor-id="{m.id}" data-state="{m.state}">'
        f'<div class="head"><span class="dot st-{m.state}"></span><h2>{escape(m.name)}</h2>'
        f'<span class="state st-{m.state}" title="{escape(word + checked)}">{escape(word)}</span></div>'
        f'<dl class="figures">{figures}</dl>{places}'
        f'<ol class="bars" aria-label="Uptime per day, last {BAR_DAYS} days">{bars}</ol>'
        f'<div class="axis"><span>{BAR_DAYS} days ago</span>'
        f"<span>{format_pct(ninety.hundredths)} over {BAR_DAYS} days</span><span>Today</span></div>"
        f"{incidents}</section>"
    )


def _bar_look(bar: DayBar) -> str:
    """The class (and, for a day with hours without data, the share covered) of a day's bar."""
    if not bar.monitored_ms:
        return 'class="lv-void"'
    if not (bar.totals.checks and bar.no_data_ms):
        return f'class="lv-{bar.totals.level}"'
    covered = 100 * (bar.monitored_ms - bar.no_data_ms) / bar.monitored_ms
    return f'class="lv-{bar.totals.level} part" style="--covered:{covered:.1f}%"'


def _footer_html() -> str:
    legend = "".join(
        f'<li><span class="{classes}"{style}></span>{text}</li>'
        for classes, style, text in (
            ("lv-ok", "", "≥ 99.9%"),
            ("lv-minor", "", "≥ 99%"),
            ("lv-major", "", "≥ 95%"),
            ("lv-bad", "", "below 95%"),
            ("lv-none", "", "no data"),
            ("lv-ok part", ' style="--covered:50%"', "no data for part of the day"),
            ("lv-void", "", "not monitored yet"),
        )
    )
    return (
        f'<footer><ul class="legend">{legend}</ul>'
        "<p>Uptime is counted by checks: the share of checks that were up. Times when monitor-tick "
        "itself was not running hold no checks: they are no data, not downtime. A day's bar shows "
        "its figure when you hover it.</p>"
        f"<p>Badges for READMEs: {BADGES_DIR}/&lt;id&gt;-status.svg, -uptime-24h.svg, -uptime-30d.svg. "
        "Made by monitor-tick.</p></footer>"
    )


# ---------------------------------------------------------------------------------------------
# Badges and writing


def badge_files(status: Status) -> dict[str, str]:
    """File name (inside BADGES_DIR) -> SVG, three per monitor."""
    files = {}
    for m in status.monitors:
        files[f"{m.id}-status.svg"] = badges.badge_svg(
            m.name, STATE_WORDS.get(m.state, m.state).lower(), badges.state_color(m.state)
        )
        for suffix, label in UPTIME_BADGES:
            totals = m.windows[label]
            files[f"{m.id}-{suffix}.svg"] = badges.badge_svg(
                f"uptime {label}", format_pct(totals.hundredths), badges.level_color(totals.level)
            )
    return files


def write_site(out_dir: str, status: Status, title: str = DEFAULT_TITLE) -> list[str]:
    """Write index.html and the badges into `out_dir` (created if missing), each file
    atomically; badges of removed monitors are deleted. Returns the paths written. Raises OSError."""
    badge_dir = os.path.join(out_dir, BADGES_DIR)
    os.makedirs(badge_dir, exist_ok=True)
    written = []
    files = badge_files(status)
    for name, svg in files.items():
        path = os.path.join(badge_dir, name)
        if _read(path) != svg:  # badges change rarely: skip rewriting the same bytes
            write_text_atomic(path, svg)
        written.append(path)
    for name in os.listdir(badge_dir):
        if _BADGE_FILE.match(name) and name not in files:
            os.unlink(os.path.join(badge_dir, name))
    index = os.path.join(out_dir, "index.html")
    write_text_atomic(index, render_html(status, title))
    written.append(index)
    return written


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def publish(db_path: str, out_dir: str, now_ms: int, title: str = DEFAULT_TITLE) -> list[str]:
    """Read the database at `db_path` (an older SQLite file upgraded first, as by every command
    that only reads: store.read_db) and write the site. Raises store.StoreError or OSError."""
    return write_site(out_dir, store.read_db(db_path, lambda conn: collect(conn, now_ms), upgrade=True), title)
