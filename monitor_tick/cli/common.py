"""What the Typer commands share: the --db and --json options, one-line failures, opening the
database, reading durations and instants, and what `list` and `report` add to a monitor's row."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from monitor_tick import store
from monitor_tick.cli.options import DB_ENVVAR, DB_HELP, DEFAULT_DB
from monitor_tick.core import clock, quorum
from monitor_tick.core.model import MAX_NAME_CHARS, InvalidMonitor, check_typed_name, expiry_text, joins_emoji
from monitor_tick.core.redact import ENV_REFERENCE, REDACTED_SETTINGS, redact_settings, redact_text

# No envvar here: $MONITOR_TICK_DB is read by the root's --db (the tick's option), so that an
# explicit --db wins wherever it stands: `--db b.db list` and `list --db b.db` (db_path).
DbOption = Annotated[
    str | None,
    typer.Option("--db", help=f"{DB_HELP}, or ${DB_ENVVAR} when set."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]

_T = TypeVar("_T")


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr, then exit: 1 for our failures, 2 for bad input."""
    typer.echo(f"monitor-tick: {message}", err=True)
    raise typer.Exit(code)


def db_path(ctx: typer.Context, db: str | None) -> str:
    """The command's --db, else the root's (`monitor-tick --db PATH COMMAND`, or
    $MONITOR_TICK_DB, which only the root reads), else the default; a path that is not a file
    (``--db ""``, ``--db :memory:``) exits 2."""
    if db is None:
        db = (ctx.find_root().obj or {}).get("db")
    path = DEFAULT_DB if db is None else db
    problem = store.db_path_problem(path)
    if problem:
        fail(f"--db: {problem}", 2)
    return path


def counted(count: int, noun: str) -> str:
    """`count` and `noun`, plural unless one: "1 incident", "0 channels"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def shown_name(name: str) -> str:
    """A name for a text table or line: as shown_text, and one longer than a name may be now (a
    row stored before names were bounded) cut to its first MAX_NAME_CHARS characters and '…'."""
    return shown_text(name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS] + "…")


def shown_text(text: str) -> str:
    """Text for one line of output: what the name rules accept as it is (a joiner inside an emoji,
    👩‍💻, too), anything else that cannot be printed (a row stored before names were checked:
    control characters, bidi overrides, zero-width spaces) escaped as Python does (\\u200b,
    \\x1b) and a backslash doubled, so that two names never look the same."""
    return "".join(_shown_char(text, i) for i in range(len(text)))


def _shown_char(text: str, i: int) -> str:
    ch = text[i]
    if ch == "\\":
        return "\\\\"
    if ch.isprintable() or joins_emoji(text, i):
        return ch
    return ch.encode("unicode_escape").decode("ascii")


def warn_unset_references(monitor: str, *texts: object) -> None:
    """One line on stderr for each `${VAR}` that `texts` (a monitor's URL, headers, basic
    auth and body) refer to and this command's environment lacks. Not an error: the tick resolves them
    from its own environment (cron's), which may hold them; but said now, not found at the hour."""
    names = dict.fromkeys(name for text in texts if isinstance(text, str) for name in re.findall(ENV_REFERENCE, text))
    for name in names:
        if name not in os.environ:
            typer.echo(
                f"monitor-tick: monitor {shown_name(monitor)}: ${{{name}}} is not set here; the tick reads it from "
                "its own environment (set it there, e.g. in the crontab), or it cannot probe this monitor",
                err=True,
            )


def connect(path: str, *, create: bool = False) -> store.Connection:
    """The database at `path` for a command that writes. `create`: only for a command that can
    succeed on a new, empty database (`add` without --owner, `plan add`, ...); the others fail
    with 'no database at PATH' and leave no file behind."""
    try:
        return store.open_db(path, create=create)
    except store.StoreError as exc:
        fail(str(exc))


def checked_name(name: str, what: str) -> None:
    """Exit 2 with one line unless `name` is one a user may set (model.check_typed_name)."""
    try:
        check_typed_name(name, what)
    except InvalidMonitor as exc:
        fail(str(exc), 2)


def read(path: str, reader: Callable[[store.Connection], _T], *, dry_run: bool = False) -> _T:
    """`reader(conn)` on the database opened read-only (store.read_db); a StoreError exits 1.
    A command that only reads upgrades an older SQLite file first, as a tick would, when it may
    write it; a `dry_run`, which promises to change nothing, never does."""
    try:
        return store.read_db(path, reader, upgrade=not dry_run)
    except store.StoreError as exc:
        fail(str(exc))


def duration_s(text: str, option: str) -> float:
    try:
        return clock.parse_duration_s(text)
    except ValueError as exc:
        fail(f"{option}: {exc}", 2)


def duration_or_zero_s(text: str, option: str) -> float:
    """A duration where 0 (or 0s) means none."""
    try:
        return clock.parse_duration_or_zero_s(text)
    except ValueError as exc:
        fail(f"{option}: {exc}", 2)


def instant_ms(text: str, option: str) -> int:
    try:
        return clock.parse_iso_ms(text)
    except ValueError as exc:
        fail(f"{option}: {exc}", 2)


def change(ctx: typer.Context, db: str | None, action: Any, *, create: bool = False) -> Any:
    """Run `action(conn)` on the database and return what it returns; a StoreError exits 1.
    `create`: see connect."""
    conn = connect(db_path(ctx, db), create=create)
    try:
        return action(conn)
    except store.StoreError as exc:
        fail(str(exc))
    finally:
        conn.close()


def latest_results(row: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """What list and report add to a monitor's row: why the newest tick that had it due could not
    probe it (with that tick's host and when it found so), the open incident's cause, the
    certificate's days left (derived from its stored expiry and `now_ms`), a heartbeat's last
    ping, and all of it as one short `note` for the text tables."""
    invalid = redact_text(row["invalid_cause"]) if row["invalid_cause"] else None
    notes = []
    if invalid:
        found = f"found by {shown_name(row['invalid_host'])} at {clock.display_from_ms(row['invalid_since_ms'])}"
        notes.append(f"{invalid} ({found})")
    cause = redact_text(row["cause"]) if row["cause"] else None  # a stored cause may quote a URL
    notes += [cause] if cause else []
    if row.get("insecure"):
        notes.append("INSECURE: TLS not verified")
    expires_ms = row["cert_expires_at_ms"]
    tls_failed = any(part.startswith("tls: ") for part in (row["cause"] or "").split("; "))  # one of several conditions
    if expires_ms is not None and not tls_failed:
        notes.append(f"cert {expiry_text(expires_ms, now_ms)}")
    if row["kind"] == "heartbeat":
        notes.append(_ping_note(row, now_ms))
    return {
        "invalid_cause": invalid,
        "invalid_host": row["invalid_host"],
        "invalid_since_ms": row["invalid_since_ms"],
        "cause": cause,
        "cert_expires_at_ms": expires_ms,
        "cert_days_left": None if expires_ms is None else clock.days_left(expires_ms, now_ms),
        "last_ping_ms": row["last_ping_ms"],
        "last_ping_failed": None if row["last_ping_ms"] is None else bool(row["last_ping_failed"]),
        "last_duration_ms": row["last_duration_ms"],
        "note": "; ".join(notes),
    }


# the monitors columns of alert settings, with the `add`/`edit` option that sets each
ALERT_FLAGS = {
    "alert_after_checks": "--alert-after",
    "resolve_after_checks": "--resolve-after",
    "remind_every_sec": "--remind",
}


def setting_text(column: str, value: Any) -> str:
    """A monitor's stored setting as people read it: durations as 5m (a latency as 500ms), flags
    as yes/no, the URL, headers, basic auth and body through redact_settings (secrets hidden),
    any other text with URLs in it redacted."""
    if value is None:
        return "none"
    if column in REDACTED_SETTINGS:
        return shown_text(str(redact_settings({column: value})[column]))
    if column in ("aligned", "private", "insecure", "notify_partial"):
        return "yes" if value else "no"
    if column.endswith("_sec") or column == "timeout_s":
        return clock.format_duration_s(float(value))
    if column == "max_latency_ms":
        return f"{value}ms"
    return shown_text(redact_text(str(value)))


def change_text(column: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """'BEFORE -> AFTER' of one of a monitor's settings (`before`, `after`: its columns), as
    `edit` and `apply` say what they change."""
    return f"{_shown_setting(column, before)} -> {_shown_setting(column, after)}"


def _shown_setting(column: str, row: Mapping[str, Any]) -> str:
    if column != "quorum" or row.get("locations") is None:
        return setting_text(column, row.get(column))
    # the default quorum is a majority: in numbers when the locations are named ('all' grows)
    k, stored = row["quorum"], row["locations"]
    if k is not None:
        return str(k)
    if stored == quorum.ALL:
        return "a majority"
    return f"a majority ({quorum_in_numbers(stored, None, 0)})"


def quorum_in_numbers(stored: str, k: int | None, all_count: int) -> str:
    """A monitor's quorum as numbers, 'K of N' ('from all': N is the locations 'all' names now,
    `all_count`), never only "a majority": a user must see how many places an outage needs."""
    n = all_count if stored == quorum.ALL else len(stored.split(","))
    if n == 0:
        return f"{k if k is not None else 'a majority'} (no location has ticked yet)"
    return f"{k if k is not None else quorum.majority(n)} of {n}"


# the states of a monitor that no tick probes
NOT_PROBED = ("paused", "auto-paused", "invalid")


def next_check_ms(row: dict[str, Any], state: str) -> int | None:
    """When a listed monitor (store.list_monitors' row, its state) is next checked, as the start
    of that minute: the row's next_check_ms, the first minute after this one that the due query
    will select (maintenance windows skipped). None when it is not probed (paused, auto-paused,
    invalid) or never due again."""
    if state in NOT_PROBED:
        return None
    return row["next_check_ms"]  # type: ignore[no-any-return]


def _ping_note(row: dict[str, Any], now_ms: int) -> str:
    def ago(ms: int) -> str:
        return clock.format_duration_s(clock.ms_to_s(max(0, now_ms - ms)))

    if row["last_ping_ms"] is None:
        note = "no ping yet"
    else:
        note = f"last ping {ago(row['last_ping_ms'])} ago{': failure' if row['last_ping_failed'] else ''}"
        if row["last_duration_ms"] is not None:
            note += f" (ran {clock.format_duration_s(clock.ms_to_s(row['last_duration_ms']))})"
    if row["started_at_ms"] is not None:
        note += f"; started {ago(row['started_at_ms'])} ago"
    return note
