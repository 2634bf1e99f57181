"""Values that cross module borders: a monitor's settings and a check's result.

`monitor_from_row` is where a database row becomes a Monitor: a row edited by hand may hold
anything, so every field is checked and a bad row raises InvalidMonitor with a short cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

Status = Literal["up", "down", "unknown"]

METHODS = ("GET", "HEAD")
MAX_TIMEOUT_S = 60.0
MAX_RETRIES = 3
# scheme -> probe kind; probes/__init__.py maps kinds to probe functions
KIND_OF_SCHEME = {"http": "http", "https": "http"}


class InvalidMonitor(ValueError):
    """A monitor setting that cannot be used; str() is a one-line cause."""


@dataclass(frozen=True)
class Monitor:
    id: int
    name: str
    kind: str
    url: str
    interval_sec: int
    effective_interval_sec: int
    aligned: bool = False
    method: str = "GET"
    expect_status: str = "200-399"
    keyword: str | None = None
    timeout_s: float = 10.0
    retries: int = 1


@dataclass(frozen=True)
class ProbeResult:
    """One probe's outcome. `unknown`: we could not tell (our own limits), counted neither way."""

    status: Status
    latency_ms: int | None = None
    http_status: int | None = None
    cause: str | None = None


@dataclass(frozen=True)
class CheckResult:
    monitor_id: int
    status: Status
    latency_ms: int | None = None
    http_status: int | None = None
    cause: str | None = None

    @classmethod
    def of(cls, monitor_id: int, probe: ProbeResult) -> CheckResult:
        return cls(monitor_id, probe.status, probe.latency_ms, probe.http_status, probe.cause)


def kind_of_url(url: str) -> str:
    """The probe kind for a URL; raises InvalidMonitor when it is not a usable URL."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidMonitor("url is empty")
    if any(ch.isspace() for ch in url):
        raise InvalidMonitor("url contains whitespace")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError as exc:
        raise InvalidMonitor(f"url is not valid: {exc}") from None
    if not parts.scheme:
        raise InvalidMonitor("url has no scheme (e.g. https://)")
    kind = KIND_OF_SCHEME.get(parts.scheme.lower())
    if kind is None:
        raise InvalidMonitor(f"unsupported scheme {parts.scheme!r}")
    if not parts.hostname:
        raise InvalidMonitor("url has no host")
    return kind


def parse_expect(text: str) -> list[tuple[int, int]]:
    """'200-399' or '200,204,301-302' -> inclusive ranges. Raises InvalidMonitor."""
    ranges: list[tuple[int, int]] = []
    if not isinstance(text, str) or not text.strip():
        raise InvalidMonitor("expected status is empty")
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise InvalidMonitor(f"expected status is not a code or range: {part.strip()!r}") from None
        if not (100 <= first <= last <= 599):
            raise InvalidMonitor(f"expected status out of range 100-599: {part.strip()!r}")
        ranges.append((first, last))
    return ranges


def status_accepted(status: int, ranges: list[tuple[int, int]]) -> bool:
    return any(first <= status <= last for first, last in ranges)


def check_settings(
    *,
    url: str,
    interval_sec: int,
    method: str,
    expect_status: str,
    keyword: str | None,
    timeout_s: float,
    retries: int,
) -> str:
    """Validate a monitor's settings; returns its probe kind. Raises InvalidMonitor."""
    kind = kind_of_url(url)
    if isinstance(interval_sec, bool) or not isinstance(interval_sec, int):
        raise InvalidMonitor(f"interval is not a whole number of seconds: {interval_sec!r}")
    if interval_sec < 60 or interval_sec % 60:
        raise InvalidMonitor(f"interval must be a whole number of minutes, at least 1m (got {interval_sec}s)")
    if method not in METHODS:
        raise InvalidMonitor(f"method must be GET or HEAD (got {method!r})")
    parse_expect(expect_status)
    if keyword is not None and (not isinstance(keyword, str) or not keyword):
        raise InvalidMonitor("keyword is empty")
    if keyword is not None and method == "HEAD":
        raise InvalidMonitor("a keyword needs the body: use --method GET")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not (0 < timeout_s <= MAX_TIMEOUT_S):
        raise InvalidMonitor(f"timeout must be more than 0s and at most {MAX_TIMEOUT_S:g}s (got {timeout_s!r})")
    if isinstance(retries, bool) or not isinstance(retries, int) or not (0 <= retries <= MAX_RETRIES):
        raise InvalidMonitor(f"retries must be 0 to {MAX_RETRIES} (got {retries!r})")
    return kind


def check_row_settings(row: dict[str, Any]) -> str:
    """check_settings for a database row (which may hold anything); returns its probe kind."""
    return check_settings(
        url=row.get("url"),  # type: ignore[arg-type]
        interval_sec=row.get("interval_sec"),  # type: ignore[arg-type]
        method=row.get("method"),  # type: ignore[arg-type]
        expect_status=row.get("expect_status"),  # type: ignore[arg-type]
        keyword=row.get("keyword"),
        timeout_s=row.get("timeout_s"),  # type: ignore[arg-type]
        retries=row.get("retries"),  # type: ignore[arg-type]
    )


def monitor_from_row(row: dict[str, Any]) -> Monitor:
    """A due row as a Monitor. Raises InvalidMonitor naming what is wrong with the row."""
    if row.get("owner_missing"):
        raise InvalidMonitor(f"owner {row.get('owner_id')!r} does not exist")
    if row.get("plan_missing"):
        raise InvalidMonitor(f"the plan of owner {row.get('owner_id')!r} does not exist")
    kind = check_row_settings(row)
    if row.get("kind") != kind:
        raise InvalidMonitor(f"kind {row.get('kind')!r} does not match the url's scheme")
    return Monitor(
        id=int(row["id"]),
        name=str(row["name"]),
        kind=kind,
        url=row["url"],
        interval_sec=row["interval_sec"],
        effective_interval_sec=int(row["effective_interval_sec"]),
        aligned=bool(row["aligned"]),
        method=row["method"],
        expect_status=row["expect_status"],
        keyword=row["keyword"],
        timeout_s=float(row["timeout_s"]),
        retries=row["retries"],
    )


# ---------------------------------------------------------------------------------------------
# Alerts


MAX_CONFIRM_CHECKS = 10
MIN_REMIND_EVERY_SEC = 60


@dataclass(frozen=True)
class AlertSettings:
    """When a monitor's incidents are announced: after `alert_after_checks` consecutive down
    checks; resolved after `resolve_after_checks` consecutive up checks; reminded every
    `remind_every_sec` while confirmed and open (None: never)."""

    alert_after_checks: int = 2
    resolve_after_checks: int = 1
    remind_every_sec: int | None = None


def check_alert_settings(settings: AlertSettings) -> AlertSettings:
    """Return `settings` when usable; raises InvalidMonitor naming the bad value."""
    for name, value in (
        ("alert after", settings.alert_after_checks),
        ("resolve after", settings.resolve_after_checks),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not (1 <= value <= MAX_CONFIRM_CHECKS):
            raise InvalidMonitor(f"{name} must be 1 to {MAX_CONFIRM_CHECKS} checks (got {value!r})")
    remind = settings.remind_every_sec
    bad_remind = isinstance(remind, bool) or not isinstance(remind, int) or remind < MIN_REMIND_EVERY_SEC
    if remind is not None and bad_remind:
        raise InvalidMonitor(f"reminders must be at least {MIN_REMIND_EVERY_SEC}s apart (got {remind!r}s)")
    return settings


def monitor_state(row: dict[str, Any]) -> str:
    """A monitor's state from its settings and current-state columns (enabled, auto_paused,
    in_maintenance, down_since_ms, last_check_ms): invalid (a setting cannot be used), paused,
    auto-paused, maintenance, down, new (never checked) or up."""
    try:
        check_row_settings(row)
    except InvalidMonitor:
        return "invalid"
    if not row["enabled"]:
        return "paused"
    if row["auto_paused"]:
        return "auto-paused"
    if row["in_maintenance"]:
        return "maintenance"
    if row["down_since_ms"] is not None:
        return "down"
    if row["last_check_ms"] is None:
        return "new"
    return "up"
