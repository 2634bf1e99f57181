"""A monitor's latency over the last 24 hours as a small inline SVG chart, for the status page:
one point an hour, the average of the hour's up checks (its rollup row), joined while hours have
one, broken where an hour has none. Drawn on the server: the page loads no script."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from monitor_tick.publish.uptime import format_latency_ms

HOURS = 24
WIDTH, HEIGHT, MARGIN = 240, 36, 3  # the chart's own units (viewBox); the page scales it


def hour_averages(rows: Sequence[dict[str, int]], first_hour_ms: int, ms_per_hour: int) -> list[float | None]:
    """HOURS averages (ms; None: no up check), oldest first, from rollup rows (hour_start_ms,
    checks, failures, latency_ms_sum) of the hours from `first_hour_ms` on."""
    averages: list[float | None] = [None] * HOURS
    for row in rows:
        index = (row["hour_start_ms"] - first_hour_ms) // ms_per_hour
        answered = row["checks"] - row["failures"]
        if 0 <= index < HOURS and answered > 0:
            averages[index] = row["latency_ms_sum"] / answered
    return averages


def chart_svg(averages: Sequence[float | None]) -> str:
    """The chart of `averages` (hour_averages), scaled to its highest hour; "" when no hour has
    one. Each hour's figure is also in data-latency-ms, comma-separated (empty: none)."""
    known = [v for v in averages if v is not None]
    if not known:
        return ""
    top = max(known) or 1.0
    step = (WIDTH - 2 * MARGIN) / (len(averages) - 1)

    def point(hour: int, value: float) -> str:
        return f"{MARGIN + hour * step:.1f},{MARGIN + (HEIGHT - 2 * MARGIN) * (1 - value / top):.1f}"

    runs: list[list[str]] = []
    previous: float | None = None
    for hour, value in enumerate(averages):
        if value is not None:
            if previous is None:
                runs.append([])
            runs[-1].append(point(hour, value))
        previous = value
    shapes = "".join(
        f'<polyline points="{" ".join(run)}"/>'
        if len(run) > 1
        else f'<circle cx="{run[0].split(",")[0]}" cy="{run[0].split(",")[1]}" r="1.5"/>'
        for run in runs
    )
    label = escape(f"Latency per hour, last {HOURS} hours: {format_latency_ms(min(known))} to {format_latency_ms(top)}")
    data = ",".join("" if v is None else f"{v:.0f}" for v in averages)
    return (
        f'<svg class="latency-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{label}" '
        f'data-latency-ms="{data}"><title>{label}</title>{shapes}</svg>'
    )
