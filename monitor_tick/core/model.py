"""Values that cross module borders: a monitor's settings and a check's result.

The checks every kind shares live here (`check_common`); what each kind accepts is checked by
its module in monitor_tick/probes/, and `probes.monitor_from_row` is where a database row
becomes a Monitor: a row edited by hand may hold anything, so every field is checked and a bad
row raises InvalidMonitor with a short cause.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping

from monitor_tick.core.clock import date_from_ms, days_left, format_duration_s
from monitor_tick.core.records import NamedTuple

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any, Literal

    Status = Literal["up", "down", "unknown"]

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
DEFAULT_EXPECT = "200-399"  # the statuses an HTTP check accepts unless --expect says otherwise
# The largest --timeout: 5 s under the tick's 30 s probe budget, so a probe that starts late
# (behind others holding their slots, fanout.probe_all) still ends as `timeout`, never cut off.
MAX_TIMEOUT_S = 25.0
# What older versions accepted (and the schema's CHECK still does): such rows are probed at
# MAX_TIMEOUT_S (probes.monitor_from_row).
STORED_MAX_TIMEOUT_S = 30.0
MAX_RETRIES = 3
# The longest interval (and plan floor). The schedule's rule, minute % n == phase, holds for any
# n, but rollups are kept 400 days (store.RETENTION_DEFAULT_MS): past a year a monitor's last
# check could be pruned before the next one. A year is the longest period that keeps one.
MAX_INTERVAL_SEC = 365 * 86_400
# The most anyone types, and so the most add, edit, apply and import take (check_typed): a name
# read on one line; a keyword, header value, JSON field or basic-auth pair; a request body. Rows
# stored before these bounds still run; `list` and `report` cut a longer name (cli/common.py).
MAX_NAME_CHARS = 200
MAX_TEXT_BYTES = 4 * 1024
MAX_REQUEST_BODY_BYTES = 64 * 1024


class InvalidMonitor(ValueError):
    """A monitor setting that cannot be used; str() is a one-line cause."""


class Monitor(NamedTuple):
    id: int
    name: str
    kind: str
    url: str
    interval_sec: int
    effective_interval_sec: int
    aligned: bool = False
    method: str = "GET"
    expect_status: str = DEFAULT_EXPECT
    keyword: str | None = None
    timeout_s: float = 10.0
    retries: int = 1
    # http: the body (first 1 MiB) must not contain this text
    keyword_absent: str | None = None
    # tls:// and https://: down when the certificate expires within this many seconds
    expires_within_sec: int | None = None
    # heartbeat: how long past its period (interval_sec) a ping may be late
    grace_sec: int | None = None
    # down when an up check took longer than this (its own time, not the wait for a slot)
    max_latency_ms: int | None = None
    # http: 'PATH=VALUE', a dotted path into the JSON body and the value it must hold
    json_field: str | None = None
    # http: request headers, one 'Name: value' a line; values may hold ${ENV_VAR} references
    headers: str | None = None
    # http: 'USER:PASSWORD', either part may be (or hold) ${ENV_VAR} references
    basic_auth: str | None = None
    # http: the request body (e.g. for POST)
    body: str | None = None
    # https: a PEM file of the certificate authorities to trust instead of the system's
    ca_file: str | None = None
    # https: do not verify the certificate at all (shown plainly in `list`)
    insecure: bool = False
    # the status page: left out (no badge, not in the summary); the section it is shown in
    private: bool = False
    group_name: str | None = None


# Settings every kind has, and the options that apply only to the kinds that list them
# (probes.Kind.options). Each is a column of `monitors` with the same name.
COMMON_SETTINGS = ("name", "kind", "url", "interval_sec", "aligned", "private", "group_name")
OPTIONS = tuple(f for f in Monitor._fields if f not in {"id", "effective_interval_sec", *COMMON_SETTINGS})
# the `add` option that sets each, for messages
OPTION_FLAGS = {
    "method": "--method",
    "expect_status": "--expect",
    "keyword": "--keyword",
    "timeout_s": "--timeout",
    "retries": "--retries",
    "keyword_absent": "--keyword-absent",
    "expires_within_sec": "--expires-within",
    "grace_sec": "--grace",
    "max_latency_ms": "--max-latency",
    "json_field": "--json-field",
    "headers": "--header",
    "basic_auth": "--basic-auth",
    "body": "--body",
    "ca_file": "--ca-file",
    "insecure": "--insecure",
}


class Phases(NamedTuple):
    """Where an HTTP check's time went, each in ms from the check's start, as curl times a
    request: its name looked up (ours), connected, TLS done (None: plain http), first byte of
    the answer, and the whole check (its latency). A redirect's earlier hops are in each."""

    lookup_ms: int
    connect_ms: int
    tls_ms: int | None
    first_byte_ms: int
    total_ms: int

    def text(self) -> str:
        """As stored (rollups.phases): 'lookup connect tls first_byte total', '-' for no TLS."""
        return " ".join("-" if v is None else str(v) for v in self)

    @classmethod
    def parse(cls, text: str | None) -> Phases | None:
        """The stored text back (None: none stored, or not five numbers)."""
        values = (text or "").split()
        if len(values) != 5 or not all(v.isdigit() for i, v in enumerate(values) if not (i == 2 and v == "-")):
            return None
        lookup, connect, tls, first_byte, total = values
        return cls(int(lookup), int(connect), None if tls == "-" else int(tls), int(first_byte), int(total))

    def as_json(self) -> dict[str, int | None]:
        return self._asdict()


class ProbeResult(NamedTuple):
    """One probe's outcome. `unknown`: we could not tell (our own limits), counted neither way.

    `cert_expires_at_ms`: the peer certificate's notAfter, when the probe saw one (tls://, and
    https:// monitors with --expires-within). `phases`: an HTTP check's that got an answer."""

    status: Status
    latency_ms: int | None = None
    http_status: int | None = None
    cause: str | None = None
    cert_expires_at_ms: int | None = None
    phases: Phases | None = None


# A monitor's newest rollup hour, as the tick reads it before probing (store.recent_rollups), for
# the start order (run/fanout.py, start_order): (failures, latency_ms_max, last_check_ms). A
# tuple, not a NamedTuple: the idle tick imports this module, and making one costs it about a
# millisecond.
Recent = tuple[int, int | None, int]


class CheckResult(NamedTuple):
    monitor_id: int
    status: Status
    latency_ms: int | None = None
    http_status: int | None = None
    cause: str | None = None
    cert_expires_at_ms: int | None = None
    phases: Phases | None = None

    @classmethod
    def of(cls, monitor_id: int, probe: ProbeResult) -> CheckResult:
        return cls(
            monitor_id,
            probe.status,
            probe.latency_ms,
            probe.http_status,
            probe.cause,
            probe.cert_expires_at_ms,
            probe.phases,
        )


class Pings(NamedTuple):
    """A heartbeat monitor's last signals, as its probe reads them (store.heartbeat_pings)."""

    created_at_ms: int
    last_ping_ms: int | None
    last_ping_failed: bool
    last_duration_ms: int | None


def monitor_state(row: Mapping[str, Any]) -> str:
    """A monitor's state from its current-state columns (enabled, auto_paused, invalid_cause,
    in_maintenance, down_since_ms, partial_since_ms, last_check_ms): paused, auto-paused, invalid
    (the newest tick that had it due could not probe it: its stored finding,
    store.record_invalid), maintenance, down, partial (down from fewer of its locations than its
    quorum), new (never checked) or up. Never judged here from the settings: whether a monitor
    can be probed depends on the tick's environment and host, not the reader's."""
    if not row["enabled"]:
        return "paused"
    if row["auto_paused"]:
        return "auto-paused"
    if row["invalid_cause"] is not None:
        return "invalid"
    if row["in_maintenance"]:
        return "maintenance"
    if row["down_since_ms"] is not None:
        return "down"
    if row.get("partial_since_ms") is not None:  # down from fewer locations than its quorum
        return "partial"
    if row["last_check_ms"] is None:
        return "new"
    return "up"


def expiry_text(expires_at_ms: int, now_ms: int) -> str:
    """'expires in 3 days (2026-12-03)', 'expires in 5h (2026-12-01)', 'expired 2 days ago (...)'."""
    date = date_from_ms(expires_at_ms)
    if expires_at_ms <= now_ms:
        ago = days_left(now_ms, expires_at_ms)  # whole days since it expired
        return f"expired {ago} day{'s' if ago != 1 else ''} ago ({date})" if ago else f"expired ({date})"
    days = days_left(expires_at_ms, now_ms)
    if days == 0:
        return f"expires in {format_duration_s((expires_at_ms - now_ms) / 1000)} ({date})"
    return f"expires in {days} day{'s' if days != 1 else ''} ({date})"


def parse_expect(text: str) -> list[tuple[int, int]]:
    """'200-399' or '200,204,301-302' -> inclusive ranges. Raises InvalidMonitor."""
    if text == DEFAULT_EXPECT:  # most monitors': read for each due row, and again by its check
        return [(200, 399)]
    ranges: list[tuple[int, int]] = []
    if not isinstance(text, str):  # a file's `expect_status = 200`
        raise InvalidMonitor(f'expected status must be text, e.g. "200" or "200-299,418" (got {text!r})')
    if not text.strip():
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


def check_common(monitor: Monitor) -> None:
    """The checks every kind shares (interval, timeout, retries). Raises InvalidMonitor."""
    interval_sec, timeout_s, retries = monitor.interval_sec, monitor.timeout_s, monitor.retries
    if isinstance(interval_sec, bool) or not isinstance(interval_sec, int):
        raise InvalidMonitor(f"interval is not a whole number of seconds: {interval_sec!r}")
    if interval_sec < 60 or interval_sec % 60:
        raise InvalidMonitor(f"interval must be a whole number of minutes, at least 1m (got {interval_sec}s)")
    if interval_sec > MAX_INTERVAL_SEC:
        raise InvalidMonitor(
            f"interval must be at most {format_duration_s(MAX_INTERVAL_SEC)} (got {format_duration_s(interval_sec)})"
        )
    if monitor.aligned not in (0, 1):
        raise InvalidMonitor(f"aligned must be 0 or 1 (got {monitor.aligned!r})")
    if monitor.private not in (0, 1):
        raise InvalidMonitor(f"private must be 0 or 1 (got {monitor.private!r})")
    if monitor.group_name is not None:
        if not isinstance(monitor.group_name, str):
            raise InvalidMonitor(f"group is not text (got {monitor.group_name!r})")
        check_name(monitor.group_name, "group")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not (0 < timeout_s <= MAX_TIMEOUT_S):
        raise InvalidMonitor(f"timeout must be more than 0s and at most {MAX_TIMEOUT_S:g}s (got {timeout_s!r})")
    if isinstance(retries, bool) or not isinstance(retries, int) or not (0 <= retries <= MAX_RETRIES):
        raise InvalidMonitor(f"retries must be 0 to {MAX_RETRIES} (got {retries!r})")


def line_breaker(text: str) -> str | None:
    """What in `text` breaks a one-line output or an SVG/XML file, as a short phrase; None when
    nothing does. Control characters (C0, DEL, C1: an escape sequence rewrites a terminal, and
    XML forbids most of them), line and paragraph separators, and lone surrogates (undecodable
    bytes of a command line, which SQLite cannot store as text)."""
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Cc":
            return f"a control character (U+{ord(ch):04X})"
        if category in ("Zl", "Zp"):
            return f"a line or paragraph separator (U+{ord(ch):04X})"
        if category == "Cs" or ch in "\ufffe\uffff":
            return f"a character that is not text (U+{ord(ch):04X})"
    return None


def invisible(text: str) -> str | None:
    """What in `text` cannot be seen, as a short phrase; None when everything can. Format
    characters (zero-width spaces and joiners, bidi overrides, soft hyphens) -- except a joiner
    inside an emoji sequence (👩‍💻) -- and private-use or unassigned code points: two names
    that differ only by one would look the same in every table, page and badge."""
    for i, ch in enumerate(text):
        category = unicodedata.category(ch)
        if category == "Cf" and not joins_emoji(text, i):
            return f"an invisible format character (U+{ord(ch):04X})"
        if category in ("Co", "Cn"):
            return f"a private-use or unassigned character (U+{ord(ch):04X})"
    return None


def joins_emoji(text: str, i: int) -> bool:
    """A zero-width joiner between two symbols (a variation selector or modifier may follow the
    first): it draws one emoji out of two."""
    if text[i] != "\u200d" or i == 0 or i + 1 == len(text):
        return False
    return unicodedata.category(text[i - 1]) in ("So", "Sk", "Mn") and unicodedata.category(text[i + 1]) == "So"


def check_name(name: str, what: str = "name", *, may_be_number: bool = True) -> None:
    """A name as a user sets it (a monitor's, a plan's, an owner's): shown on one line in tables,
    pages and badges. Raises InvalidMonitor. Monitor names (`may_be_number` False) must not be all
    digits: `pause 42` reads 42 as an id (store.monitor_id), so such a name could not be used."""
    if not name.strip():
        raise InvalidMonitor(f"{what} is empty or only whitespace")
    problem = line_breaker(name) or invisible(name)
    if problem:
        raise InvalidMonitor(f"{what} contains {problem}")
    # isdecimal, as int() reads it: "٤٢" is 42, but "²" is no number (isdigit says it is)
    if not may_be_number and name.isdecimal():
        raise InvalidMonitor(f"{what} {name!r} is all digits, which reads as a monitor id; choose another")


def normal_name(name: str) -> str:
    """`name` as names are stored and compared: in Unicode NFC, so that 'café' typed with é as one
    character or as e and a combining accent (which print the same) is one name."""
    return unicodedata.normalize("NFC", name)


def check_typed_name(name: str, what: str = "name", *, may_be_number: bool = True) -> None:
    """check_name, and what a name being written must also meet (one stored before still runs):
    no white space at either end, and at most MAX_NAME_CHARS characters. A name is a key (`pause
    NAME`, a file's [monitors.NAME], a maintenance window's monitor), so a stray space is refused,
    not trimmed out of sight. Raises InvalidMonitor."""
    check_name(name, what, may_be_number=may_be_number)
    if name != name.strip():
        raise InvalidMonitor(f"{what} {name!r} starts or ends with white space")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidMonitor(f"{what} is {len(name):,} characters long; at most {MAX_NAME_CHARS}")


# the settings check_typed bounds, and the most bytes each may hold
_TYPED_BYTES = {
    "keyword": MAX_TEXT_BYTES,
    "keyword_absent": MAX_TEXT_BYTES,
    "json_field": MAX_TEXT_BYTES,
    "basic_auth": MAX_TEXT_BYTES,
    "headers": MAX_TEXT_BYTES,  # each value
    "body": MAX_REQUEST_BODY_BYTES,
}
TYPED_SETTINGS = ("name", "group_name", *_TYPED_BYTES)


def check_typed(monitor: Monitor, settings: Iterable[str] = TYPED_SETTINGS) -> None:
    """Hold the `settings` of `monitor` that a user typed (add, edit, apply, import) to what
    anyone types: its name and group to check_typed_name, a keyword, header value, JSON field or
    basic-auth pair to MAX_TEXT_BYTES of UTF-8, a body to MAX_REQUEST_BODY_BYTES. Raises
    InvalidMonitor naming the option."""
    for setting in settings:
        value = getattr(monitor, setting)
        if setting in ("name", "group_name"):
            if value is not None:
                check_typed_name(value, "name" if setting == "name" else "group", may_be_number=setting != "name")
        elif setting == "headers" and isinstance(value, str):
            for line in value.split("\n"):
                name, _, text = line.partition(":")
                _check_bytes(f"--header {name.strip()}: its value", text.strip(), _TYPED_BYTES[setting])
        elif setting in _TYPED_BYTES and isinstance(value, str):
            _check_bytes(OPTION_FLAGS[setting], value, _TYPED_BYTES[setting])


def _check_bytes(what: str, text: str, limit: int) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise InvalidMonitor(f"{what} is {size:,} bytes long; at most {limit // 1024} KiB")


def check_text(value: object, what: str) -> None:
    """An optional text setting: None, or a non-empty string. Raises InvalidMonitor."""
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidMonitor(f"{what} is empty")


def check_seconds(value: object, what: str, *, minimum: int) -> None:
    """An optional whole number of seconds, at least `minimum`. Raises InvalidMonitor."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidMonitor(f"{what} must be whole seconds, at least {minimum}s (got {value!r})")


# ---------------------------------------------------------------------------------------------
# Alerts


MAX_CONFIRM_CHECKS = 10
MIN_REMIND_EVERY_SEC = 60


class AlertSettings(NamedTuple):
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
