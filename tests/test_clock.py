from __future__ import annotations

import pytest
from freezegun import freeze_time

from monitor_tick.core import clock


@freeze_time("2026-11-30 12:34:56.789")
def test_now_is_epoch_milliseconds_and_minute_is_seconds_over_sixty() -> None:
    now_ms = clock.now_ms()
    assert now_ms == 1_796_042_096_789
    assert clock.minute_of_ms(now_ms) == 1_796_042_096 // 60
    assert clock.minute_of_s(1_796_042_096.789) == clock.minute_of_ms(now_ms)


def test_minute_start_is_in_milliseconds_not_seconds() -> None:
    minute = 29_935_474
    assert clock.minute_start_ms(minute) == minute * 60 * 1000
    assert clock.minute_of_ms(clock.minute_start_ms(minute)) == minute


@pytest.mark.parametrize(
    ("ms", "hour_ms"),
    [(0, 0), (3_599_999, 0), (3_600_000, 3_600_000), (1_796_042_096_789, 1_796_040_000_000)],
)
def test_hour_start_truncates_to_the_utc_hour(ms: int, hour_ms: int) -> None:
    assert clock.hour_start_ms(ms) == hour_ms


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("1h", 3600), ("1d", 86400), ("90", 90), ("250ms", 0.25), (" 2m ", 120), ("1.5h", 5400)],
)
def test_durations_parse_to_seconds(text: str, seconds: float) -> None:
    assert clock.parse_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "-1m", "0", "0s", "m5", "1w", "abc"])
def test_bad_durations_are_refused_with_a_readable_message(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        clock.parse_duration_s(text)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-12-01T02:00:00Z", 1_796_090_400_000),
        ("2026-12-01T02:00", 1_796_090_400_000),
        ("2026-12-01T03:00:00+01:00", 1_796_090_400_000),
    ],
)
def test_iso_instants_parse_to_epoch_ms_utc_by_default(text: str, ms: int) -> None:
    assert clock.parse_iso_ms(text) == ms
    assert clock.iso_from_ms(ms) == "2026-12-01T02:00:00Z"


def test_a_bad_iso_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="ISO-8601"):
        clock.parse_iso_ms("tomorrow")


@pytest.mark.parametrize(
    ("seconds", "text"), [(30, "30s"), (60, "1m"), (90, "1m30s"), (3600, "1h"), (86400, "1d"), (90000, "1d1h")]
)
def test_durations_format_shortly(seconds: int, text: str) -> None:
    assert clock.format_duration_s(seconds) == text
