"""What one tick found and did (TickReport): its counts as --json gives them, and the lines it
says on stderr (skipped monitors, timeouts that do not fit the budget, auto-pauses). Built by
run/tick.py; printed by cli/tick.py."""

from __future__ import annotations

from collections.abc import Sequence

from monitor_tick import store
from monitor_tick.core import clock, schedule
from monitor_tick.core.model import CheckResult, Monitor
from monitor_tick.core.records import NamedTuple

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

    from monitor_tick.alerts import notify


class TickReport(NamedTuple):
    minute: int
    now_ms: int
    claimed: bool
    covered: Sequence[int] = ()
    missed: int = 0
    due: Sequence[Monitor] = ()
    results: Sequence[CheckResult] = ()
    invalid: Sequence[tuple[int, str]] = ()
    # configuration errors, not recorded: (id, cause) of monitors refused by --block-private, or
    # that cannot be probed here (probes.split_usable)
    refused: Sequence[tuple[int, str]] = ()
    # a live tick: the ids of `invalid` and `refused` this host says now, its first tick of the
    # hour that had them due (store.record_invalid); None: a --force or --minute run
    said: list[int] | None = None
    summary: store.WriteSummary | None = None
    duration_ms: int = 0
    housekeeping: tuple[list[store.AutoPaused], int] | None = None  # (auto-paused, rollups deleted)
    network_lost: bool = False
    delivery: notify.DeliveryReport | None = None
    # the daily housekeeping tick found no monitor at all (said on stderr: a wrong --db?)
    no_monitors: bool = False

    def as_json(self) -> dict[str, Any]:
        s = self.summary
        return {
            "minute": self.minute,
            "claimed": self.claimed,
            "caught_up": len(self.covered),
            "missed": self.missed,
            "due": len(self.due),
            "up": s.up if s else 0,
            "down": s.down if s else 0,
            "unknown": s.unknown if s else 0,
            "invalid": len(self.invalid) + len(self.refused),
            "opened": len(s.opened) if s else 0,
            "resolved": len(s.resolved) if s else 0,
            "confirmed": len(s.confirmed) if s else 0,
            "network_lost": self.network_lost,
            "notified": self.delivery.sent if self.delivery else 0,
            "duration_ms": self.duration_ms,
            "results": self.results_json(),
        }

    def unfit_lines(self, budget_s: float) -> list[str]:
        """Once an hour, one line per due monitor whose timeout does not fit in `budget_s`: were
        its host to hang, it would be cut off as unknown tick after tick, never down. That is the
        configuration's error, said, never a silent unknown."""
        return [
            f"monitor {m.id}: its --timeout {m.timeout_s:g}s does not fit the tick's --budget "
            f"{budget_s:g}s: a host that never answers would be unknown, never down; lower one or raise the other"
            for m in self.due
            if m.timeout_s >= budget_s
            and schedule.is_hourly_report_minute(self.minute, m.effective_interval_sec // clock.S_PER_MINUTE)
        ]

    def skipped_to_say(self) -> list[tuple[int, str]]:
        """The monitors skipped as configuration errors to say on stderr in this tick. A live
        tick says each in this host's first tick of the hour that has it due (`said`). A --force
        or --minute run, which never counts as having said them, says every invalid row, and each
        refused one in the minute of the hour schedule.is_hourly_report_minute picks."""
        if self.said is not None:
            return [(i, c) for i, c in [*self.invalid, *self.refused] if i in self.said]
        periods = {m.id: m.effective_interval_sec // clock.S_PER_MINUTE for m in self.due}
        hourly = [(i, c) for i, c in self.refused if schedule.is_hourly_report_minute(self.minute, periods[i])]
        return [*self.invalid, *hourly]

    def auto_paused_lines(self) -> list[str]:
        """One line per monitor housekeeping auto-paused in this tick (also notified)."""
        paused = self.housekeeping[0] if self.housekeeping else []
        return [
            f"monitor {p.monitor_id} ({p.name}) auto-paused after "
            f"{clock.format_duration_s(clock.ms_to_s(self.now_ms - p.down_since_ms))} down "
            f"(since {clock.iso_from_ms(p.down_since_ms)}); no longer probed until `monitor-tick resume {p.monitor_id}`"
            for p in paused
        ]

    def results_json(self) -> list[dict[str, Any]]:
        """One entry per check, with its kind and cause; days left for certificates; where an HTTP
        check's time went (phases)."""
        monitors = {m.id: m for m in self.due}
        out = []
        for r in self.results:
            monitor = monitors.get(r.monitor_id)
            expires = r.cert_expires_at_ms
            out.append(
                {
                    "id": r.monitor_id,
                    "name": monitor.name if monitor else None,
                    "kind": monitor.kind if monitor else None,
                    "status": r.status,
                    "cause": r.cause,
                    "latency_ms": r.latency_ms,
                    "http_status": r.http_status,
                    "cert_expires_at": None if expires is None else clock.iso_from_ms(expires),
                    "cert_days_left": None if expires is None else clock.days_left(expires, self.now_ms),
                    "phases": None if r.phases is None else r.phases.as_json(),
                }
            )
        return out
