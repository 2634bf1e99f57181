"""Time and units: the only module that reads the clock or converts between units.

The clock gives epoch *seconds*; everything stored is epoch *milliseconds* (`*_ms`). A tick
reads the clock once (`now_ms`) and derives the rest from that one value:

    minute        = epoch_s // 60          (the schedule's unit, "minute of the epoch")
    minute_ms     = minute * 60_000        (a minute as a stored instant)
    hour_start_ms = ms - ms % 3_600_000    (the rollup bucket)

Test-only: MONITOR_TICK_TEST_CLOCK_OFFSET_MS (integer ms, read once at import) moves `now_ms`
by that much, so tests can step the clock of the installed command run as a subprocess. It is
not a setting: nothing documents it for users, and a value that is not an integer is ignored.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime

MS_PER_S = 1_000
S_PER_MINUTE = 60
MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000
MS_PER_DAY = 86_400_000
MINUTES_PER_DAY = 1_440
LAST_MINUTE = 4_223_371_679  # 9999-12-31T23:59Z: the last minute a datetime can show


def _test_offset_ms() -> int:
    try:
        return int(os.environ.get("MONITOR_TICK_TEST_CLOCK_OFFSET_MS", "0"))
    except ValueError:
        return 0


_TEST_OFFSET_MS = _test_offset_ms()  # see the module docstring: tests only


def now_ms() -> int:
    """Read the wall clock once, as integer epoch milliseconds."""
    return int(time.time() * MS_PER_S) + _TEST_OFFSET_MS


def minute_of_ms(ms: int) -> int:
    """The minute of the epoch that contains instant `ms`."""
    return ms // MS_PER_MINUTE


def minute_of_s(epoch_s: float) -> int:
    """The minute of the epoch for epoch seconds (the card's `epoch_seconds // 60`)."""
    return int(epoch_s // S_PER_MINUTE)


def minute_start_ms(minute: int) -> int:
    """The first millisecond of minute `minute`."""
    return minute * MS_PER_MINUTE


def first_minute_from_ms(ms: int) -> int:
    """The first minute that starts at or after instant `ms` (after a half-open window ending at `ms`)."""
    return minute_of_ms(ms - 1) + 1


def hour_start_ms(ms: int) -> int:
    """The first millisecond of the UTC hour that contains `ms` (the rollup bucket)."""
    return ms - ms % MS_PER_HOUR


def s_to_ms(seconds: float) -> int:
    return round(seconds * MS_PER_S)


def ms_to_s(ms: int) -> float:
    return ms / MS_PER_S


def elapsed_ms(start_perf_s: float, end_perf_s: float) -> int:
    """Whole milliseconds between two `time.perf_counter()` readings."""
    return max(0, round((end_perf_s - start_perf_s) * MS_PER_S))


def minutes_to_s(minutes: int) -> int:
    return minutes * S_PER_MINUTE


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3_600, "d": 86_400, None: 1}


def parse_duration_s(text: str) -> float:
    """Parse '30s', '5m', '1h', '1d', '250ms' or plain seconds ('90') into seconds.

    Raises ValueError with a readable message for anything else, including zero.
    """
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 5m, 1h, 1d or seconds)")
    value = float(match.group(1)) * _UNIT_S[match.group(2)]
    if value <= 0:
        raise ValueError(f"duration must be positive: {text!r}")
    return value


def parse_duration_or_zero_s(text: str) -> float:
    """parse_duration_s, where '0' or '0s' means none (0.0)."""
    return 0.0 if text.strip() in ("0", "0s") else parse_duration_s(text)


def format_duration_s(seconds: float) -> str:
    """A short human form of a duration: 90 -> '1m30s', 3600 -> '1h'."""
    total = int(round(seconds))
    if total < 60:
        return f"{total}s"
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if total >= size:
            parts.append(f"{total // size}{unit}")
            total %= size
    return "".join(parts[:2])


def parse_iso_ms(text: str) -> int:
    """Parse an ISO-8601 instant into epoch ms. A value without an offset is taken as UTC.

    Raises ValueError with a readable message.
    """
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO-8601 time: {text!r} (e.g. 2026-12-01T02:00Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return round(parsed.timestamp() * MS_PER_S)


def iso_from_ms(ms: int) -> str:
    """Epoch ms as an ISO-8601 UTC string, to the second: '2026-11-30T04:05:00Z'."""
    return datetime.fromtimestamp(ms / MS_PER_S, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------
# Days and display (status page, badges, metrics, report)


def day_of_ms(ms: int) -> int:
    """The UTC day of the epoch (days since 1970-01-01) that contains instant `ms`."""
    return ms // MS_PER_DAY


def day_start_ms(day: int) -> int:
    """The first millisecond of UTC day `day` of the epoch."""
    return day * MS_PER_DAY


def date_from_ms(ms: int) -> str:
    """The UTC date of `ms`: '2026-11-30'."""
    return datetime.fromtimestamp(ms / MS_PER_S, tz=UTC).strftime("%Y-%m-%d")


def display_from_ms(ms: int) -> str:
    """An instant for people, to the minute: '2026-11-30 04:05 UTC'."""
    return datetime.fromtimestamp(ms / MS_PER_S, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def format_duration_ms(ms: int) -> str:
    """A short human form of a span of epoch ms, to the minute once it is a minute or more."""
    seconds = ms / MS_PER_S
    return format_duration_s(seconds if seconds < 60 else seconds - seconds % 60)


def days_left(until_ms: int, now_ms: int) -> int:
    """Whole days from `now_ms` until `until_ms`, rounded down (negative once it has passed)."""
    return (until_ms - now_ms) // MS_PER_DAY
