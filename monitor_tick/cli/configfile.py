"""Monitors as a file: the TOML that `export` writes and `apply` reads, and the plan that turns
one into the other.

The file holds what the commands set, keyed by name: `[settings]` (the network canary),
`[plans.NAME]`, `[owners.NAME]`, `[monitors.NAME]`, and `[[maintenance]]` and `[[channels]]`
entries. A monitor's keys are the columns of `monitors` (Monitor's fields: url, interval_sec,
aligned, every option, the alert settings), plus `owner`, `paused` and a heartbeat's
`token_sha256`: an option added to the model is a key of the file with no change here.

Secrets: a string may hold `${VAR}` references, resolved from the environment when the file is
read (`apply`) and remembered (store.env_refs) so that `export` writes the reference again. A
secret typed in directly (a channel's URL, credentials or query values in a monitor's URL) is
exported as a `${...}` placeholder, with a warning naming it; never the secret. A heartbeat's
token is never in the file: its SHA-256 is, so a database rebuilt from the file accepts the same
pings. A monitor's headers, basic auth and body are the exception: their `${VAR}` references
are stored as written and resolved by each tick (as `add --header` stores them), so they stay
references; a header value, password or body typed in is exported as a placeholder, but for the
values of a few headers that never carry secrets (Content-Type, Accept, ...) and a JSON body
with no key named like a secret.

Reading never writes: `read_plan` checks the whole file and returns the changes (`+ ~ -`) with
their actions; `apply` runs them all in one transaction, or none.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.common import setting_text
from monitor_tick.core import clock, schedule
from monitor_tick.core.model import (
    COMMON_SETTINGS,
    MAX_INTERVAL_SEC,
    OPTION_FLAGS,
    OPTIONS,
    AlertSettings,
    InvalidMonitor,
    check_alert_settings,
    check_name,
)
from monitor_tick.core.redact import (
    REDACTED,
    header_lines,
    redact_channel_url,
    redact_settings,
    redact_text,
    redact_url,
    redact_value,
)

# The file holds no secret (placeholders and digests instead), but it describes what is watched
# and who owns it: readable by its owner only, like the database.
EXPORT_MODE = 0o600
HEADER = "# monitor-tick configuration: `monitor-tick apply FILE` makes a database match it.\n"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# a monitor's keys whose ${VAR} references the tick resolves (probes/request.py), not `apply`
_TICK_RESOLVED = ("headers", "basic_auth", "body")
# a monitor's keys that the file spells true or false (0 and 1 in their columns)
_FLAGS = ("aligned", "private", "insecure")
_ALERT_COLUMNS = {
    f: getattr(AlertSettings(), f) for f in ("alert_after_checks", "resolve_after_checks", "remind_every_sec")
}
# a monitor's keys in the file, in the order export writes them
MONITOR_KEYS = (
    "url",
    "interval_sec",
    "aligned",
    "private",
    "group_name",
    *OPTIONS,
    *_ALERT_COLUMNS,
    "owner",
    "paused",
    "token_sha256",
)
_KEYS = {
    "plans": ("min_interval_sec",),
    "owners": ("plan", "plan_expires_at"),
    "maintenance": ("monitor", "owner", "from", "until", "daily", "weekly", "for"),
    "channels": ("url", "monitor", "owner"),
    "settings": (store.CANARY_SETTING,),
}


class FileError(ValueError):
    """A file that cannot be applied; `path` locates the value (section, name or index, key)."""

    def __init__(self, message: str, *path: str | int) -> None:
        super().__init__(message)
        self.path = path


@dataclass
class Change:
    """One line of the plan, and what doing it takes."""

    sign: str  # '+', '~' or '-'
    text: str
    action: Callable[[store.Connection], None]


@dataclass
class Plan:
    changes: list[Change] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # what --prune would remove
    tokens: list[tuple[str, str]] = field(default_factory=list)  # (heartbeat, new token), filled by apply


# ---------------------------------------------------------------------------------------------
# Reading


def line_of(text: str, path: tuple[str | int, ...]) -> int | None:
    """The line (1-based) of the value at `path` in TOML `text`: the key's line inside its table,
    else the table's header; None when neither is found (an inline table, say)."""
    table: tuple[str | int, ...] = ()
    counts: dict[str, int] = {}
    header_line = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        try:
            if stripped.startswith("[["):
                name = next(iter(tomllib.loads(stripped.replace("[[", "[", 1).replace("]]", "]", 1))))
                counts[name] = counts.get(name, -1) + 1
                table = (name, counts[name])
            elif stripped.startswith("["):
                parsed, keys = tomllib.loads(stripped), []
                while isinstance(parsed, dict) and parsed:
                    key = next(iter(parsed))
                    keys.append(key)
                    parsed = parsed[key]
                table = tuple(keys)
            elif "=" in stripped and not stripped.startswith("#"):
                key = next(iter(tomllib.loads(stripped.split("=", 1)[0] + "= 0")))
                if (*table, key) == path:
                    return number
                continue
            else:
                continue
        except (tomllib.TOMLDecodeError, StopIteration):
            continue
        if table == path[: len(table)] and len(table) >= min(2, len(path)):
            header_line = number
    return header_line


def _resolve(value: Any, where: tuple[str | int, ...], templates: dict[tuple[str | int, ...], str]) -> Any:
    """`value` with `${VAR}` references resolved from the environment (strings only)."""
    if not isinstance(value, str) or "${" not in value:
        return value

    def lookup(match: re.Match[str]) -> str:
        found = os.environ.get(match.group(1))
        if found is None:
            raise FileError(f"${{{match.group(1)}}} is not set in the environment", *where)
        return found

    templates[where] = value
    return _ENV_REF.sub(lookup, value)


def _table(data: dict[str, Any], section: str) -> dict[str, Any]:
    found = data.get(section, {})
    if not isinstance(found, dict) or not all(isinstance(v, dict) for v in found.values()):
        raise FileError(f"[{section}] must hold one table per name, e.g. [{section}.NAME]", section)
    return found


def _array(data: dict[str, Any], section: str) -> list[dict[str, Any]]:
    found = data.get(section, [])
    if not isinstance(found, list) or not all(isinstance(v, dict) for v in found):
        raise FileError(f"{section} must be [[{section}]] entries", section)
    return found


def _check_keys(entry: dict[str, Any], allowed: tuple[str, ...], *where: str | int) -> None:
    for key in entry:
        if key not in allowed:
            raise FileError(f"unknown key {key!r} (expected one of: {', '.join(allowed)})", *where, key)


def _instant_ms(value: Any, *where: str | int) -> int:
    if isinstance(value, datetime):
        value = value.isoformat()
    try:
        return clock.parse_iso_ms(value) if isinstance(value, str) else _bad()
    except ValueError:
        raise FileError(f"not an ISO-8601 time: {value!r}", *where) from None


def _bad() -> int:
    raise ValueError


def _name(name: str, what: str, *where: str | int, may_be_number: bool = True) -> None:
    try:
        check_name(name, what, may_be_number=may_be_number)
    except InvalidMonitor as exc:
        raise FileError(str(exc), *where) from None


def read_file(text: str) -> tuple[dict[str, Any], dict[tuple[str | int, ...], str]]:
    """The parsed file, its `${VAR}` references resolved, and the references by path. Raises
    FileError (with a path) or tomllib.TOMLDecodeError (its message names the line)."""
    data = tomllib.loads(text)
    for section in data:
        if section not in ("settings", "plans", "owners", "monitors", "maintenance", "channels"):
            raise FileError(f"unknown section [{section}]", section)
    templates: dict[tuple[str | int, ...], str] = {}
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise FileError("[settings] must be a table", "settings")
    _check_keys(settings, _KEYS["settings"], "settings")
    for section in ("plans", "owners", "monitors"):
        for name, entry in _table(data, section).items():
            _check_keys(entry, MONITOR_KEYS if section == "monitors" else _KEYS[section], section, name)
            for key, value in entry.items():
                if not (section == "monitors" and key in _TICK_RESOLVED):
                    entry[key] = _resolve(value, (section, name, key), templates)
    for section in ("maintenance", "channels"):
        for index, entry in enumerate(_array(data, section)):
            _check_keys(entry, _KEYS[section], section, index)
            for key, value in entry.items():
                entry[key] = _resolve(value, (section, index, key), templates)
    for key, value in settings.items():
        settings[key] = _resolve(value, ("settings", key), templates)
    return data, templates


# ---------------------------------------------------------------------------------------------
# The desired state, checked


def _plan_floor(name: str, entry: dict[str, Any]) -> int:
    floor = entry.get("min_interval_sec")
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < 60 or floor % 60 or floor > MAX_INTERVAL_SEC:
        raise FileError(
            "min_interval_sec must be whole minutes in seconds, 60 to 31536000", "plans", name, "min_interval_sec"
        )
    return floor


def _desired_monitor(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A monitor's columns as the file wants them (kind defaults filled in). Raises FileError."""
    probes = deferred.probes()
    _name(name, "monitor name", "monitors", name, may_be_number=False)
    for key in ("url", "interval_sec"):
        if key not in entry:
            raise FileError(f"{key} is missing", "monitors", name)
    for key in _FLAGS:
        if entry.get(key, False) not in (True, False):  # 0 and 1 still read as before
            raise FileError(f"{key} must be true or false (got {entry[key]!r})", "monitors", name, key)
    try:
        monitor = probes.new_monitor(
            name=name,
            url=entry["url"],
            interval_sec=entry["interval_sec"],
            aligned=entry.get("aligned", False),
            given={option: entry[option] for option in OPTIONS if option in entry},
            private=entry.get("private", False),
            group_name=entry.get("group_name"),
        )
        alerts = check_alert_settings(AlertSettings(**{c: entry.get(c, d) for c, d in _ALERT_COLUMNS.items()}))
    except (InvalidMonitor, TypeError) as exc:
        raise FileError(str(exc), "monitors", name, *_key_named(str(exc), entry)) from None
    desired = {column: getattr(monitor, column) for column in (*COMMON_SETTINGS, *OPTIONS)}
    desired.update(
        aligned=int(monitor.aligned), private=int(monitor.private), **{c: getattr(alerts, c) for c in _ALERT_COLUMNS}
    )
    paused = entry.get("paused", False)
    if not isinstance(paused, bool):
        raise FileError("paused must be true or false", "monitors", name, "paused")
    desired["enabled"] = 0 if paused else 1
    desired["owner"] = entry.get("owner")
    token = entry.get("token_sha256")
    if token is not None:
        if not probes.PROBES[monitor.kind].pinged:
            raise FileError("token_sha256 is for heartbeats only", "monitors", name, "token_sha256")
        try:
            desired["token_sha256"] = bytes.fromhex(token) if isinstance(token, str) else _bad()
            if len(desired["token_sha256"]) != 32:
                raise ValueError
        except ValueError:
            raise FileError("token_sha256 must be 64 hex digits", "monitors", name, "token_sha256") from None
    return desired


def _key_named(message: str, entry: dict[str, Any]) -> list[str]:
    """The key of `entry` that a model's message is about ('timeout must be ...': timeout_s;
    '--grace does not apply ...': grace_sec), as a path suffix; [] when none is named."""
    for key in entry:
        stem = key.removesuffix("_sec").removesuffix("_s").replace("_", " ")
        flag = OPTION_FLAGS.get(key, "\0")
        # 'expected status ...': expect_status, whose flag is --expect
        if message.startswith((stem, flag.removeprefix("--").replace("-", " "))) or flag in message:
            return [key]
    return []


def _scope(entry: dict[str, Any], monitors: set[str], owners: set[str], *where: str | int, optional: bool) -> None:
    monitor, owner = entry.get("monitor"), entry.get("owner")
    if monitor is not None and owner is not None or (monitor is None and owner is None and not optional):
        raise FileError("give exactly one of monitor or owner" if not optional else "give monitor or owner", *where)
    if monitor is not None and monitor not in monitors:
        raise FileError(f"no monitor {monitor!r} in the file or the database", *where, "monitor")
    if owner is not None and owner not in owners:
        raise FileError(f"no owner {owner!r} in the file or the database", *where, "owner")


# ---------------------------------------------------------------------------------------------
# The plan


def _changed(current: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in desired.items() if current.get(k) != v}


def _diff_text(current: dict[str, Any], changed: dict[str, Any]) -> str:
    return ", ".join(f"{k} {setting_text(k, current.get(k))} -> {setting_text(k, v)}" for k, v in changed.items())


def _ref_actions(
    conn: store.Connection, target: str, value: str, template: str | None
) -> Iterator[Callable[[store.Connection], None]]:
    """An action that records (or forgets) where `value` came from, when that changes."""
    if store.env_ref(conn, target, value) != template:
        yield lambda c: store.set_env_ref(c, target, template, value)


def read_plan(conn: store.Connection, text: str, *, prune: bool, now_ms: int, allow_token_change: bool = False) -> Plan:
    """The changes that make the database on `conn` match the file `text`, checked whole.
    A heartbeat whose token the file would replace is refused unless `allow_token_change`: the
    database keeps no older digests, so a file written before `heartbeat rotate` cannot be told
    from one meant to change the token. Raises FileError or tomllib.TOMLDecodeError; writes nothing."""
    data, templates = read_file(text)
    now = store.configuration(conn, now_ms)
    plan = Plan()

    def remove(sign_text: str, action: Callable[[store.Connection], None]) -> None:
        if prune:
            plan.changes.append(Change("-", sign_text, action))
        else:
            plan.kept.append(sign_text)

    # plans
    file_plans = _table(data, "plans")
    plans = {row["name"]: row for row in now["plans"]}
    for name, entry in file_plans.items():
        _name(name, "plan name", "plans", name)
        floor = _plan_floor(name, entry)
        if name not in plans:
            plan.changes.append(Change("+", f"plan {name} ({clock.format_duration_s(floor)})", _add_plan(name, floor)))
        elif plans[name]["min_interval_sec"] != floor:
            old = clock.format_duration_s(plans[name]["min_interval_sec"])
            plan.changes.append(
                Change("~", f"plan {name}: floor {old} -> {clock.format_duration_s(floor)}", _edit_plan(name, floor))
            )
    plan_names = set(file_plans) | ({"default"} | (set() if prune else set(plans)))
    # owners
    file_owners = _table(data, "owners")
    owners = {row["name"]: row for row in now["owners"]}
    for name, entry in file_owners.items():
        _name(name, "owner name", "owners", name)
        plan_name = entry.get("plan", "default")
        if plan_name not in plan_names:
            raise FileError(f"no plan {plan_name!r} in the file or the database", "owners", name, "plan")
        expires = entry.get("plan_expires_at")
        expires_ms = None if expires is None else _instant_ms(expires, "owners", name, "plan_expires_at")
        if name not in owners:
            plan.changes.append(
                Change("+", f"owner {name} (plan {plan_name})", _add_owner(name, plan_name, expires_ms))
            )
        else:
            row = owners[name]
            if (row["plan"], row["plan_expires_at_ms"]) != (plan_name, expires_ms):
                plan.changes.append(
                    Change(
                        "~",
                        f"owner {name}: plan {row['plan']} -> {plan_name}, expires "
                        f"{_expiry(row['plan_expires_at_ms'])} -> {_expiry(expires_ms)}",
                        _edit_owner(name, plan_name, expires_ms),
                    )
                )
    owner_names = set(file_owners) | (set() if prune else set(owners))
    # monitors
    file_monitors = _table(data, "monitors")
    monitors = {row["name"]: row for row in now["monitors"]}
    for name, entry in file_monitors.items():
        desired = _desired_monitor(name, entry)
        if desired["owner"] is not None and desired["owner"] not in owner_names:
            raise FileError(f"no owner {desired['owner']!r} in the file or the database", "monitors", name, "owner")
        string_refs = {
            column: templates[("monitors", name, column)]
            for column in MONITOR_KEYS
            if ("monitors", name, column) in templates
        }
        if name not in monitors:
            plan.changes.append(
                Change("+", f"monitor {name} ({redact_url(desired['url'])})", _add_monitor(plan, desired, string_refs))
            )
            continue
        row = monitors[name]
        token = desired.pop("token_sha256", None)
        new_token = token is not None and token != row["token_sha256"]
        if new_token and row["token_sha256"] is not None and not allow_token_change:
            raise FileError(
                f"not the token heartbeat {name} has now (rotated since this file was written?): nothing applied; "
                "--allow-token-change makes the file's token work again and the current one stop",
                "monitors",
                name,
                "token_sha256",
            )
        changed = _changed(row, desired)
        actions: list[Callable[[store.Connection], None]] = []
        if new_token:
            actions.append(lambda c, i=row["id"], t=token: store.set_token_digest(c, i, t))
        for column in MONITOR_KEYS:
            value = desired.get(column)
            if isinstance(value, str) and column != "owner":
                actions.extend(_ref_actions(conn, f"monitors:{row['id']}:{column}", value, string_refs.get(column)))
        if changed:
            actions.insert(0, _update_monitor(row["id"], changed))
        if changed or actions:
            said = [_diff_text(row, changed)] if changed else []
            if new_token:
                said.append("token_sha256 from the file (the token it had stops working)")
            text = ", ".join(said) or "${VAR} references"
            plan.changes.append(Change("~", f"monitor {name}: {text}", _all(actions)))
    monitor_names = set(file_monitors) | (set() if prune else set(monitors))
    # maintenance windows: identified by what they cover and when (or how they recur)
    windows: dict[tuple[Any, ...], dict[str, Any]] = {
        (w["monitor"], w["owner"], w["starts_at_ms"], w["ends_at_ms"]): w for w in now["maintenance"]
    }
    windows.update(
        {
            (w["monitor"], w["owner"], "every", w["start_minute"], w["duration_min"], w["days_mask"]): w
            for w in now["schedules"]
        }
    )
    wanted = set()
    for index, entry in enumerate(_array(data, "maintenance")):
        _scope(entry, monitor_names, owner_names, "maintenance", index, optional=False)
        key = _window_key(entry, index)
        wanted.add(key)
        if key not in windows:
            plan.changes.append(Change("+", f"maintenance {_window_text(*key)}", _add_window(*key)))
    for key, window in windows.items():
        if key not in wanted:
            remove(
                f"maintenance {window['id']} {_window_text(*key)}",
                lambda c, i=window["id"]: _discard(store.remove_maintenance(c, i)),
            )
    # channels: identified by URL and what they cover
    channels = {(c["url"], c["monitor"], c["owner"]): c for c in now["channels"]}
    wanted_channels = set()
    for index, entry in enumerate(_array(data, "channels")):
        if not isinstance(entry.get("url"), str) or not entry["url"]:
            raise FileError("url is missing", "channels", index)
        _scope(entry, monitor_names, owner_names, "channels", index, optional=True)
        key = (entry["url"], entry.get("monitor"), entry.get("owner"))
        wanted_channels.add(key)
        template = templates.get(("channels", index, "url"))
        if key not in channels:
            plan.changes.append(Change("+", f"channel {_channel_text(*key)}", _add_channel(*key, template)))
        else:
            refs = list(_ref_actions(conn, f"channels:{channels[key]['id']}:url", key[0], template))
            if refs:
                plan.changes.append(Change("~", f"channel {_channel_text(*key)}: ${{VAR}} reference", _all(refs)))
    for key, channel in channels.items():
        if key not in wanted_channels:
            remove(
                f"channel {channel['id']} {_channel_text(*key)}", lambda c, i=channel["id"]: store.remove_channel(c, i)
            )
    # settings
    settings = data.get("settings", {})
    canary = settings.get(store.CANARY_SETTING)
    if canary is not None and not isinstance(canary, str):
        raise FileError("must be a URL", "settings", store.CANARY_SETTING)
    current_canary = now["settings"].get(store.CANARY_SETTING)
    if canary != current_canary and (canary is not None or prune):
        sign = "+" if current_canary is None else "-" if canary is None else "~"
        plan.changes.append(
            Change(
                sign,
                f"network canary {redact_url(canary or current_canary or '')}",
                _all([lambda c: store.set_setting(c, store.CANARY_SETTING, canary)]),
            )
        )
    if canary is not None:
        template = templates.get(("settings", store.CANARY_SETTING))
        refs = list(_ref_actions(conn, f"settings:{store.CANARY_SETTING}", canary, template))
        if refs and canary == current_canary:
            plan.changes.append(Change("~", "network canary: ${VAR} reference", _all(refs)))
        elif refs:
            plan.changes[-1].action = _all([plan.changes[-1].action, *refs])
    # monitors, owners and plans pruned last, each after what refers to it: a monitor after its
    # own windows and channels (removed above; its removal would take them with it, and their
    # own removal would then fail), an owner after its monitors, a plan after its owners
    for name, row in monitors.items():
        if name not in file_monitors:
            remove(f"monitor {name}", lambda c, i=row["id"]: _discard(store.remove_monitor(c, str(i))))
    for name in owners:
        if name not in file_owners:
            remove(f"owner {name}", lambda c, n=name: _discard(store.remove_owner(c, n)))
    for name in plans:
        if name not in file_plans and name != "default":
            remove(f"plan {name}", lambda c, n=name: _discard(store.remove_plan(c, n)))
    return plan


def _discard(_: object) -> None:
    return None


def _all(actions: list[Callable[[store.Connection], None]]) -> Callable[[store.Connection], None]:
    def run(conn: store.Connection) -> None:
        for action in actions:
            action(conn)

    return run


def _expiry(ms: int | None) -> str:
    return "never" if ms is None else clock.iso_from_ms(ms)


def _window_key(entry: dict[str, Any], index: int) -> tuple[Any, ...]:
    """(monitor, owner, starts_at_ms, ends_at_ms) of a one-off window, or (monitor, owner,
    'every', start_minute, duration_min, days_mask) of a recurring one. Raises FileError."""
    scope = (entry.get("monitor"), entry.get("owner"))
    recurring = [key for key in ("daily", "weekly") if key in entry]
    if recurring:
        if len(recurring) > 1 or "from" in entry or "until" in entry:
            raise FileError("give from and until, or one of daily and weekly (with for)", "maintenance", index)
        try:
            value = entry[recurring[0]]
            if recurring[0] == "daily":
                start, mask = schedule.parse_time_of_day(value), schedule.EVERY_DAY
            else:
                start, mask = schedule.parse_weekly(value)
        except ValueError as exc:
            raise FileError(str(exc), "maintenance", index, recurring[0]) from None
        try:
            length_s = clock.parse_duration_s(entry["for"]) if isinstance(entry.get("for"), str) else _bad()
            if length_s % 60 or not 60 <= length_s <= 86_400:
                raise ValueError
        except ValueError:
            raise FileError('for must be whole minutes, 1m to 24h, e.g. "30m"', "maintenance", index, "for") from None
        return (*scope, "every", start, int(length_s // 60), mask)
    for key in ("from", "until"):
        if key not in entry:
            raise FileError(f"{key} is missing", "maintenance", index)
    starts = _instant_ms(entry["from"], "maintenance", index, "from")
    ends = _instant_ms(entry["until"], "maintenance", index, "until")
    if ends <= starts:
        raise FileError("until must be after from", "maintenance", index, "until")
    return (*scope, starts, ends)


def _window_text(monitor: str | None, owner: str | None, *when: Any) -> str:
    covers = f"monitor {monitor}" if monitor is not None else f"owner {owner}"
    if when[0] == "every":
        kind, at = schedule.describe_repeats(when[1], when[3])
        return f"{kind} {at} for {when[2]}m ({covers})"
    return f"{clock.iso_from_ms(when[0])} to {clock.iso_from_ms(when[1])} ({covers})"


def _channel_text(url: str, monitor: str | None, owner: str | None) -> str:
    covers = f"monitor {monitor}" if monitor else f"owner {owner}" if owner else "all"
    return f"{redact_channel_url(url)} ({covers})"


def _add_plan(name: str, floor: int) -> Callable[[store.Connection], None]:
    return lambda c: _discard(store.add_plan(c, name, floor))


def _edit_plan(name: str, floor: int) -> Callable[[store.Connection], None]:
    return lambda c: _discard(store.edit_plan(c, name, min_interval_sec=floor))


def _add_owner(name: str, plan: str, expires_ms: int | None) -> Callable[[store.Connection], None]:
    return lambda c: _discard(store.add_owner(c, name, plan, expires_ms))


def _edit_owner(name: str, plan: str, expires_ms: int | None) -> Callable[[store.Connection], None]:
    return lambda c: _discard(
        store.edit_owner(c, name, plan_name=plan, expires_at_ms=expires_ms, clear_expiry=expires_ms is None)
    )


def _add_window(monitor: str | None, owner: str | None, *when: Any) -> Callable[[store.Connection], None]:
    if when[0] == "every":
        _, start, length, mask = when
        return lambda c: _discard(
            store.add_maintenance_schedule(
                c, monitor_ref=monitor, owner_name=owner, start_minute=start, duration_min=length, days_mask=mask
            )
        )
    starts, ends = when
    return lambda c: _discard(
        store.add_maintenance(c, monitor_ref=monitor, owner_name=owner, starts_at_ms=starts, ends_at_ms=ends)
    )


def _add_channel(url: str, monitor: str | None, owner: str | None, template: str | None) -> Callable[[Any], None]:
    def run(conn: store.Connection) -> None:
        new = store.add_channel(conn, url, monitor_ref=monitor, owner_name=owner, created_at_ms=clock.now_ms())
        if template is not None:
            store.set_env_ref(conn, f"channels:{new}:url", template, url)

    return run


def _add_monitor(plan: Plan, desired: dict[str, Any], refs: dict[str, str]) -> Callable[[store.Connection], None]:
    def run(conn: store.Connection) -> None:
        probes = deferred.probes()
        columns = dict(desired)
        owner, enabled, token = columns.pop("owner"), columns.pop("enabled"), columns.pop("token_sha256", None)
        alerts = AlertSettings(**{c: columns.pop(c) for c in _ALERT_COLUMNS})
        monitor = probes.draft_monitor(
            name=columns.pop("name"),
            url=columns.pop("url"),
            interval_sec=columns.pop("interval_sec"),
            aligned=bool(columns.pop("aligned")),
            given={k: v for k, v in columns.items() if k in OPTIONS},
            private=bool(columns.pop("private")),
            group_name=columns.pop("group_name"),
        )
        if probes.PROBES[monitor.kind].pinged and token is None:
            new_token, token = probes.heartbeat.new_token()
            plan.tokens.append((monitor.name, new_token))
        new = store.add_monitor(conn, monitor, owner, clock.now_ms(), alerts, token_sha256=token)
        if not enabled:
            store.set_paused(conn, str(new), True, clock.now_ms())
        for column, template in refs.items():
            store.set_env_ref(conn, f"monitors:{new}:{column}", template, str(desired[column]))

    return run


def _update_monitor(monitor: int, changed: dict[str, Any]) -> Callable[[store.Connection], None]:
    values = {k: v for k, v in changed.items() if k != "owner"}
    owner = (changed["owner"] or "") if "owner" in changed else None  # '' clears it, None keeps it
    return lambda c: store.update_monitor(c, str(monitor), values, clock.now_ms(), owner)


# ---------------------------------------------------------------------------------------------
# Writing


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _placeholder(*parts: str | int) -> str:
    return "${" + re.sub(r"[^A-Z0-9]+", "_", "_".join(map(str, parts)).upper()).strip("_") + "}"


# Headers that never carry a secret: their values are written as they are. An allow-list, not
# a pattern of secret-looking names, which would let X-Signature into a file meant for git.
_PLAIN_HEADERS = frozenset(
    {"content-type", "accept", "accept-language", "accept-encoding", "user-agent", "cache-control"}
)
# A JSON body is written as it is unless a key, at any depth, holds one of these (any case):
# the auth, key, token, secret, password, credential and session, with password
# widened to passw (passwd) and pwd and signature added. More placeholders, never fewer.
_SECRET_KEY_PARTS = ("auth", "key", "token", "secret", "passw", "pwd", "credential", "session", "signature")


def _plain_json(body: str) -> bool:
    """Whether `body` is a JSON object or array none of whose keys, at any depth, is named like
    a secret (a bare JSON string or number may be the secret itself)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return False
    if not isinstance(parsed, dict | list):
        return False
    found: list[Any] = [parsed]
    while found:
        value = found.pop()
        if isinstance(value, dict):
            if any(part in str(key).lower() for key in value for part in _SECRET_KEY_PARTS):
                return False
            found.extend(value.values())
        elif isinstance(value, list):
            found.extend(value)
    return True


def _hides_only_references(url: str) -> bool:
    """Whether all that redact_url hides of `url` (its user info, its query's values) is whole
    ${VAR} references, which the tick resolves (`add 'https://h/x?key=${KEY}'`, an import from
    Gatus): no secret typed in, so the file may hold the URL as stored."""
    marked = _ENV_REF.sub(REDACTED, url)
    return marked != url and redact_url(marked) == marked


def _request_setting(key: str, value: str, monitor: str, warnings: list[str]) -> str:
    """A monitor's headers, basic auth or body for the file: as stored where redact_settings
    would show it whole (no value, or only values holding ${VAR} references), where a header is
    on _PLAIN_HEADERS, and for a _plain_json body; else each part that may be a secret as a
    placeholder (a header's value, the password, the body), with a warning."""
    where = f"monitors.{_key(monitor)}.{key}"
    if redact_settings({key: value})[key] == value:
        return value
    hidden = []
    if key == "headers":
        lines = []
        for name, text in header_lines(value):
            if redact_value(text) != text and name.lower() not in _PLAIN_HEADERS:
                text = _placeholder("monitor", monitor, "header", name)
                hidden.append(text)
            lines.append(f"{name}: {text}")
        written = "\n".join(lines)
    elif key == "basic_auth":
        user, _, _password = value.partition(":")
        hidden.append(_placeholder("monitor", monitor, "password"))
        written = f"{user}:{hidden[-1]}"
    elif not _plain_json(value):
        written = _placeholder("monitor", monitor, key)
        hidden.append(written)
    if not hidden:
        return value
    names = ", ".join(h[2:-1] for h in hidden)
    warnings.append(
        f"{where} holds a secret typed in: written as {', '.join(hidden)}; "
        f"set {names} in the tick's environment (cron's) before applying the file"
    )
    return written


def export_text(conn: store.Connection, now_ms: int) -> tuple[str, list[str]]:
    """The file for the database on `conn`, and a warning per secret written as a placeholder."""
    probes = deferred.probes()
    now = store.configuration(conn, now_ms)
    warnings: list[str] = []

    def secret(target: str, value: str, hidden: str, where: str, *name: str | int) -> str:
        """`value`, or its ${VAR} reference, or a placeholder named after `name` (with a warning
        naming `where`) when it holds a secret typed in."""
        template = store.env_ref(conn, target, value)
        if template is not None:
            return template
        if hidden == value:
            return value
        placeholder = _placeholder(*name)
        warnings.append(
            f"{where} holds a secret typed in: written as {placeholder}; "
            f"set {placeholder[2:-1]} before applying the file"
        )
        return placeholder

    out = [HEADER]
    canary = now["settings"].get(store.CANARY_SETTING)
    if canary is not None:
        canary = secret(
            f"settings:{store.CANARY_SETTING}",
            canary,
            redact_url(canary),
            "settings.network_canary_url",
            "network_canary",
            "url",
        )
        out.append(f"\n[settings]\n{store.CANARY_SETTING} = {_value(canary)}\n")
    for row in now["plans"]:
        out.append(f"\n[plans.{_key(row['name'])}]\nmin_interval_sec = {row['min_interval_sec']}\n")
    for row in now["owners"]:
        out.append(f"\n[owners.{_key(row['name'])}]\nplan = {_value(row['plan'])}\n")
        if row["plan_expires_at_ms"] is not None:
            out.append(f"plan_expires_at = {_value(clock.iso_from_ms(row['plan_expires_at_ms']))}\n")
    for row in now["monitors"]:
        kind = probes.PROBES.get(row["kind"])
        lines = [f"\n[monitors.{_key(row['name'])}]\n"]
        for key in MONITOR_KEYS:
            value = row.get(key)
            if key in OPTIONS and (kind is None or value == probes.default_of(kind, key)):
                continue
            if key in _ALERT_COLUMNS and value == _ALERT_COLUMNS[key]:
                continue
            if key in _FLAGS:
                value = bool(value) or None
            elif key == "paused":
                value = not row["enabled"] or None
            elif key == "token_sha256":
                value = None if value is None else bytes(value).hex()
            elif key == "url":
                value = secret(
                    f"monitors:{row['id']}:url",
                    value,
                    value if _hides_only_references(value) else redact_url(value),
                    f"monitors.{_key(row['name'])}.url",
                    "monitor",
                    row["name"],
                    "url",
                )
            elif key in _TICK_RESOLVED and isinstance(value, str):
                value = _request_setting(key, value, row["name"], warnings)
            elif isinstance(value, str) and key not in ("owner", "group_name"):
                where = f"monitors.{_key(row['name'])}.{key}"
                value = secret(
                    f"monitors:{row['id']}:{key}", value, redact_text(value), where, "monitor", row["name"], key
                )
            if value is not None:
                lines.append(f"{key} = {_value(value)}\n")
        out.extend(lines)
    for row in now["maintenance"]:
        covers = (
            f"monitor = {_value(row['monitor'])}" if row["monitor"] is not None else f"owner = {_value(row['owner'])}"
        )
        out.append(
            f"\n[[maintenance]]\n{covers}\nfrom = {_value(clock.iso_from_ms(row['starts_at_ms']))}\n"
            f"until = {_value(clock.iso_from_ms(row['ends_at_ms']))}\n"
        )
    for row in now["schedules"]:
        scope = "monitor" if row["monitor"] is not None else "owner"
        kind, at = schedule.describe_repeats(row["start_minute"], row["days_mask"])
        out.append(f"\n[[maintenance]]\n{scope} = {_value(row[scope])}\n{kind} = {_value(at)}\n")
        out.append(f"for = {_value(str(row['duration_min']) + 'm')}\n")
    for row in now["channels"]:
        hidden = redact_channel_url(row["url"])
        where = f"channel {row['id']} url"
        url = secret(f"channels:{row['id']}:url", row["url"], hidden, where, "channel", row["id"], "url")
        out.append(f"\n[[channels]]\nurl = {_value(url)}\n")
        if row["monitor"] is not None:
            out.append(f"monitor = {_value(row['monitor'])}\n")
        if row["owner"] is not None:
            out.append(f"owner = {_value(row['owner'])}\n")
    return "".join(out), warnings
