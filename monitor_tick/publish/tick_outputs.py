"""What the tick's --status-page and --metrics-file write, after a tick that ran (as of its clock
reading)."""

from __future__ import annotations

from monitor_tick import store
from monitor_tick.publish import metrics, statuspage
from monitor_tick.publish.atomic import describe_os_error


def write(
    db: str, facts: metrics.TickFacts, status_dir: str | None, metrics_file: str | None, title: str | None
) -> list[str]:
    """Write the metrics file and the status page; returns one line per file not written (the
    tick's results are recorded either way, so these are warnings, never the tick's failure)."""
    problems = []
    if metrics_file:
        try:
            metrics.write(db, metrics_file, facts)
        except store.StoreError as exc:
            problems.append(f"metrics not written: {exc}")
        except OSError as exc:
            problems.append(f"metrics not written: {describe_os_error(exc)}")
    if status_dir:
        try:
            statuspage.publish(db, status_dir, facts.now_ms, title or statuspage.DEFAULT_TITLE)
        except store.StoreError as exc:
            problems.append(f"status page not written: {exc}")
        except OSError as exc:
            problems.append(f"status page not written: {describe_os_error(exc)}")
    return problems
