"""Uptime figures, as pure values: how they are counted, rounded and graded.

Uptime is counted by checks, not by time: (checks - failures) / checks over rollup hours.
Minutes when monitor-tick was not running hold no checks, so they are "no data" and count
neither way; a window with no checks at all has no uptime figure (None), never 0 %.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor_tick.core.clock import MS_PER_DAY

# (label, length in ms) of the windows shown on the status page, shortest first
WINDOWS: tuple[tuple[str, int], ...] = (
    ("24h", MS_PER_DAY),
    ("7d", 7 * MS_PER_DAY),
    ("30d", 30 * MS_PER_DAY),
    ("90d", 90 * MS_PER_DAY),
)

# grades, best first: (name, the least uptime in hundredths of a percent that earns it)
LEVELS: tuple[tuple[str, int], ...] = (("ok", 9990), ("minor", 9900), ("major", 9500), ("bad", 0))
NO_DATA = "none"


@dataclass(frozen=True)
class Totals:
    """Decided checks over some hours; latency is summed over the up checks only."""

    checks: int = 0
    failures: int = 0
    latency_ms_sum: int = 0

    def __add__(self, other: Totals) -> Totals:
        return Totals(
            self.checks + other.checks,
            self.failures + other.failures,
            self.latency_ms_sum + other.latency_ms_sum,
        )

    @property
    def hundredths(self) -> int | None:
        """Uptime in hundredths of a percent, rounded down (so 1 failure in 100,000 checks is
        99.99, never 100.00); None without checks."""
        if not self.checks:
            return None
        return (self.checks - self.failures) * 10_000 // self.checks

    @property
    def avg_latency_ms(self) -> float | None:
        up = self.checks - self.failures
        return self.latency_ms_sum / up if up else None

    @property
    def level(self) -> str:
        """'ok' (>= 99.9 %), 'minor' (>= 99 %), 'major' (>= 95 %), 'bad', or 'none' (no checks)."""
        value = self.hundredths
        if value is None:
            return NO_DATA
        return next(name for name, least in LEVELS if value >= least)


def format_pct(hundredths: int | None, *, none: str = "no data") -> str:
    """9993 -> '99.93%', 10000 -> '100%', None -> `none`."""
    if hundredths is None:
        return none
    if hundredths == 10_000:
        return "100%"
    return f"{hundredths // 100}.{hundredths % 100:02d}%"


def format_latency_ms(latency_ms: float | None, *, none: str = "no data") -> str:
    return none if latency_ms is None else f"{latency_ms:.0f} ms"
