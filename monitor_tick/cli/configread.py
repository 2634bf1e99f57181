"""Monitors as a file, read: the TOML that `apply` reads (and `export` writes, configexport.py),
its sections and keys, each value checked and located by its line, and the desired state it
describes (cli/configfile.py plans the change from it).

The file holds what the commands set, keyed by name: `[settings]` (the network canary),
`[plans.NAME]`, `[owners.NAME]`, `[monitors.NAME]`, and `[[maintenance]]` and `[[channels]]`
entries. A monitor's keys are the columns of `monitors` (Monitor's fields: url, interval_sec,
aligned, every option, the alert settings), plus `owner`, `paused` and a heartbeat's
`token_sha256`: an option added to the model is a key of the file with no change here.

A string may hold `${VAR}` references, resolved from the environment when the file is read
(`apply`), but for a monitor's headers, basic auth and body, whose references each tick
resolves (TICK_RESOLVED).
"""

from __future__ import annotations

import os
import re
import tomllib
from datetime import datetime
from typing import Any

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.core import clock, quorum
from monitor_tick.core.model import (
    COMMON_SETTINGS,
    MAX_INTERVAL_SEC,
    OPTION_FLAGS,
    OPTIONS,
    AlertSettings,
    InvalidMonitor,
    Monitor,
    check_alert_settings,
    check_typed_name,
    normal_name,
)
from monitor_tick.core.quorum import PLACE_COLUMNS

HEADER = "# monitor-tick configuration: `monitor-tick apply FILE` makes a database match it.\n"
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# a monitor's keys whose ${VAR} references the tick resolves (probes/request.py), not `apply`
TICK_RESOLVED = ("headers", "basic_auth", "body")
# a monitor's keys that the file spells true or false (0 and 1 in their columns)
FLAGS = ("aligned", "private", "insecure", "notify_partial")
ALERT_COLUMNS = {
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
    *ALERT_COLUMNS,
    *PLACE_COLUMNS,
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
    return ENV_REF.sub(lookup, value)


def table(data: dict[str, Any], section: str) -> dict[str, Any]:
    found = data.get(section, {})
    if not isinstance(found, dict) or not all(isinstance(v, dict) for v in found.values()):
        raise FileError(f"[{section}] must hold one table per name, e.g. [{section}.NAME]", section)
    return found


def array(data: dict[str, Any], section: str) -> list[dict[str, Any]]:
    found = data.get(section, [])
    if not isinstance(found, list) or not all(isinstance(v, dict) for v in found):
        raise FileError(f"{section} must be [[{section}]] entries", section)
    return found


def _check_keys(entry: dict[str, Any], allowed: tuple[str, ...], *where: str | int) -> None:
    for key in entry:
        if key not in allowed:
            raise FileError(f"unknown key {key!r} (expected one of: {', '.join(allowed)})", *where, key)


def instant_ms(value: Any, *where: str | int) -> int:
    if isinstance(value, datetime):
        value = value.isoformat()
    try:
        return clock.parse_iso_ms(value) if isinstance(value, str) else wrong_type()
    except ValueError:
        raise FileError(f"not an ISO-8601 time: {value!r}", *where) from None


def wrong_type() -> int:
    raise ValueError


def checked_name(name: str, what: str, *where: str | int, may_be_number: bool = True) -> None:
    try:
        check_typed_name(name, what, may_be_number=may_be_number)
    except InvalidMonitor as exc:
        raise FileError(str(exc), *where) from None


# the keys whose value names a plan, an owner or a monitor, by section
_NAMING_KEYS = {"owners": ("plan",), "monitors": ("owner",), "maintenance": ("monitor", "owner")}
_NAMING_KEYS["channels"] = _NAMING_KEYS["maintenance"]


def _normal_names(data: dict[str, Any]) -> None:
    """The file's names in NFC, as the commands store and look them up (model.normal_name): the
    keys of [plans], [owners] and [monitors], and the values that name one. Raises FileError
    when one name is there twice, in two Unicode forms that print the same."""
    for section in ("plans", "owners", "monitors"):
        named: dict[str, Any] = {}
        for name, entry in table(data, section).items():
            if normal_name(name) in named:
                what = f"{section.removesuffix('s')} name {name!r}"
                raise FileError(f"{what} is in the file twice, in two Unicode forms", section, name)
            named[normal_name(name)] = entry
        if section in data:
            data[section] = named
    for section, keys in _NAMING_KEYS.items():
        entries = table(data, section).values() if section in ("owners", "monitors") else array(data, section)
        for entry in entries:
            for key in keys:
                if isinstance(entry.get(key), str):
                    entry[key] = normal_name(entry[key])


def tick_resolves_url(value: Any) -> bool:
    """Whether a monitor's URL keeps its `${VAR}` references for each tick to resolve, as `add`
    stores it: when it selects its kind as written (the references stand in its host, user info,
    path or query). One that does not (`${MONITOR_API_URL}`, a placeholder export wrote for a
    URL as a whole) is resolved at apply, and remembered (store.env_refs)."""
    if not isinstance(value, str) or "${" not in value:
        return False
    try:
        deferred.probes().kind_of_url(value)
    except InvalidMonitor:
        return False
    return True


def read_file(text: str) -> tuple[dict[str, Any], dict[tuple[str | int, ...], str]]:
    """The parsed file, its `${VAR}` references resolved, and the references by path. Raises
    FileError (with a path) or tomllib.TOMLDecodeError (its message names the line)."""
    data = tomllib.loads(text)
    for section in data:
        if section not in ("settings", "plans", "owners", "monitors", "maintenance", "channels"):
            raise FileError(f"unknown section [{section}]", section)
    _normal_names(data)
    templates: dict[tuple[str | int, ...], str] = {}
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise FileError("[settings] must be a table", "settings")
    _check_keys(settings, _KEYS["settings"], "settings")
    for section in ("plans", "owners", "monitors"):
        for name, entry in table(data, section).items():
            _check_keys(entry, MONITOR_KEYS if section == "monitors" else _KEYS[section], section, name)
            for key, value in entry.items():
                if not (section == "monitors" and (key in TICK_RESOLVED or key == "url" and tick_resolves_url(value))):
                    entry[key] = _resolve(value, (section, name, key), templates)
    for section in ("maintenance", "channels"):
        for index, entry in enumerate(array(data, section)):
            _check_keys(entry, _KEYS[section], section, index)
            for key, value in entry.items():
                entry[key] = _resolve(value, (section, index, key), templates)
    for key, value in settings.items():
        settings[key] = _resolve(value, ("settings", key), templates)
    return data, templates


# ---------------------------------------------------------------------------------------------
# The desired state, checked


def plan_floor(name: str, entry: dict[str, Any]) -> int:
    floor = entry.get("min_interval_sec")
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < 60 or floor % 60 or floor > MAX_INTERVAL_SEC:
        raise FileError(
            "min_interval_sec must be whole minutes in seconds, 60 to 31536000", "plans", name, "min_interval_sec"
        )
    return floor


def desired_monitor(name: str, entry: dict[str, Any]) -> tuple[dict[str, Any], Monitor]:
    """A monitor's columns as the file wants them (kind defaults filled in), and the monitor
    they make. Raises FileError."""
    probes = deferred.probes()
    checked_name(name, "monitor name", "monitors", name, may_be_number=False)
    for key in ("url", "interval_sec"):
        if key not in entry:
            raise FileError(f"{key} is missing", "monitors", name)
    for key in FLAGS:
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
        alerts = check_alert_settings(AlertSettings(**{c: entry.get(c, d) for c, d in ALERT_COLUMNS.items()}))
    except (InvalidMonitor, TypeError) as exc:
        raise FileError(str(exc), "monitors", name, *_key_named(str(exc), entry)) from None
    desired = {column: getattr(monitor, column) for column in (*COMMON_SETTINGS, *OPTIONS)}
    desired.update(
        aligned=int(monitor.aligned), private=int(monitor.private), **{c: getattr(alerts, c) for c in ALERT_COLUMNS}
    )
    desired.update(_places(name, entry, pinged=probes.PROBES[monitor.kind].pinged))
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
            desired["token_sha256"] = bytes.fromhex(token) if isinstance(token, str) else wrong_type()
            if len(desired["token_sha256"]) != 32:
                raise ValueError
        except ValueError:
            raise FileError("token_sha256 must be 64 hex digits", "monitors", name, "token_sha256") from None
    return desired, monitor


def _places(name: str, entry: dict[str, Any], *, pinged: bool) -> dict[str, Any]:
    """A monitor's locations, quorum and notify_partial as the file wants them (see quorum.py;
    several locations on SQLite are refused by configfile, which knows the engine)."""
    locations, k = entry.get("locations"), entry.get("quorum")
    try:
        if locations is not None:
            locations = quorum.parse_locations(locations) if isinstance(locations, str) else wrong_type()
        if k is not None and (isinstance(k, bool) or not isinstance(k, int)):
            raise FileError("quorum must be a whole number", "monitors", name, "quorum")
        notify_partial = entry.get("notify_partial", False)
        quorum.check_places(locations, k, pinged=pinged, one_host=False, notify_partial=bool(notify_partial))
    except (quorum.LocationError, ValueError) as exc:
        key = "quorum" if "quorum" in str(exc) and locations is not None else "locations"
        key = "notify_partial" if "notify-partial" in str(exc) else key
        raise FileError(str(exc).removeprefix("--locations: "), "monitors", name, key) from None
    return {"locations": locations, "quorum": k, "notify_partial": int(entry.get("notify_partial", False))}


def _key_named(message: str, entry: dict[str, Any]) -> list[str]:
    """The key of `entry` that a model's message is about ('timeout must be ...': timeout_s;
    '--grace does not apply ...': grace_sec), as a path suffix; [] when none is named."""
    for key in sorted(entry, key=len, reverse=True):  # keyword_absent before keyword, which it starts with
        stem = key.removesuffix("_sec").removesuffix("_s").replace("_", " ")
        flag = OPTION_FLAGS.get(key, "\0")
        # 'expected status ...': expect_status, whose flag is --expect
        if message.startswith((stem, flag.removeprefix("--").replace("-", " "))) or flag in message:
            return [key]
    return []


def scope(entry: dict[str, Any], monitors: set[str], owners: set[str], *where: str | int, optional: bool) -> None:
    monitor, owner = entry.get("monitor"), entry.get("owner")
    if monitor is not None and owner is not None or (monitor is None and owner is None and not optional):
        raise FileError("give exactly one of monitor or owner" if not optional else "give monitor or owner", *where)
    if monitor is not None and monitor not in monitors:
        raise FileError(f"no monitor {monitor!r} in the file or the database", *where, "monitor")
    if owner is not None and owner not in owners:
        raise FileError(f"no owner {owner!r} in the file or the database", *where, "owner")
