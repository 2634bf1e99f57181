"""Monitors as a file, planned: the changes (`+ ~ -`) that make a database match a file read by
configread.py, each with its action. Reading never writes: `read_plan` checks the whole file and
returns the changes; `apply` runs them all in one transaction, or none.

References are remembered (store.env_refs) so that `export` (configexport.py) writes the
reference again, never the value it resolved to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.common import change_text
from monitor_tick.cli.configread import (
    ALERT_COLUMNS,
    MONITOR_KEYS,
    FileError,
    array,
    checked_name,
    desired_monitor,
    instant_ms,
    plan_floor,
    read_file,
    scope,
    table,
    wrong_type,
)
from monitor_tick.core import clock, quorum, schedule
from monitor_tick.core.model import (
    OPTIONS,
    AlertSettings,
)
from monitor_tick.core.quorum import PLACE_COLUMNS
from monitor_tick.core.redact import (
    redact_channel_url,
    redact_url,
)


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
# The plan


def _changed(current: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in desired.items() if current.get(k) != v}


def _diff_text(current: dict[str, Any], changed: dict[str, Any]) -> str:
    after = {**current, **changed}
    return ", ".join(f"{k} {change_text(k, current, after)}" for k in changed)


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
    file_plans = table(data, "plans")
    plans = {row["name"]: row for row in now["plans"]}
    for name, entry in file_plans.items():
        checked_name(name, "plan name", "plans", name)
        floor = plan_floor(name, entry)
        if name not in plans:
            plan.changes.append(Change("+", f"plan {name} ({clock.format_duration_s(floor)})", _add_plan(name, floor)))
        elif plans[name]["min_interval_sec"] != floor:
            old = clock.format_duration_s(plans[name]["min_interval_sec"])
            plan.changes.append(
                Change("~", f"plan {name}: floor {old} -> {clock.format_duration_s(floor)}", _edit_plan(name, floor))
            )
    plan_names = set(file_plans) | ({"default"} | (set() if prune else set(plans)))
    # owners
    file_owners = table(data, "owners")
    owners = {row["name"]: row for row in now["owners"]}
    for name, entry in file_owners.items():
        checked_name(name, "owner name", "owners", name)
        plan_name = entry.get("plan", "default")
        if plan_name not in plan_names:
            raise FileError(f"no plan {plan_name!r} in the file or the database", "owners", name, "plan")
        expires = entry.get("plan_expires_at")
        expires_ms = None if expires is None else instant_ms(expires, "owners", name, "plan_expires_at")
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
    file_monitors = table(data, "monitors")
    monitors = {row["name"]: row for row in now["monitors"]}
    hosts = store.fleet_hosts(conn)
    for name, entry in file_monitors.items():
        desired, monitor = desired_monitor(name, entry)
        several = desired["locations"] not in (None, quorum.ALL) and "," in desired["locations"]
        if several and conn.engine == "sqlite":
            raise FileError(
                "a SQLite database has one host, so one location; use PostgreSQL for several",
                "monitors",
                name,
                "locations",
            )
        if name not in monitors or monitors[name]["url"] != desired["url"]:  # one kept at its URL stays
            refused = deferred.probes().fleet_refusal(monitor, hosts)
            if refused:
                raise FileError(refused, "monitors", name, "url")
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
    for index, entry in enumerate(array(data, "maintenance")):
        scope(entry, monitor_names, owner_names, "maintenance", index, optional=False)
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
    for index, entry in enumerate(array(data, "channels")):
        if not isinstance(entry.get("url"), str) or not entry["url"]:
            raise FileError("url is missing", "channels", index)
        scope(entry, monitor_names, owner_names, "channels", index, optional=True)
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
            length_s = clock.parse_duration_s(entry["for"]) if isinstance(entry.get("for"), str) else wrong_type()
            if length_s % 60 or not 60 <= length_s <= 86_400:
                raise ValueError
        except ValueError:
            raise FileError('for must be whole minutes, 1m to 24h, e.g. "30m"', "maintenance", index, "for") from None
        return (*scope, "every", start, int(length_s // 60), mask)
    for key in ("from", "until"):
        if key not in entry:
            raise FileError(f"{key} is missing", "maintenance", index)
    starts = instant_ms(entry["from"], "maintenance", index, "from")
    ends = instant_ms(entry["until"], "maintenance", index, "until")
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
        alerts = AlertSettings(**{c: columns.pop(c) for c in ALERT_COLUMNS})
        places = {c: columns.pop(c) for c in PLACE_COLUMNS}
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
        new = store.add_monitor(conn, monitor, owner, clock.now_ms(), alerts, token_sha256=token, places=places)
        if not enabled:
            store.set_paused(conn, str(new), True, clock.now_ms())
        for column, template in refs.items():
            store.set_env_ref(conn, f"monitors:{new}:{column}", template, str(desired[column]))

    return run


def _update_monitor(monitor: int, changed: dict[str, Any]) -> Callable[[store.Connection], None]:
    values = {k: v for k, v in changed.items() if k != "owner"}
    owner = (changed["owner"] or "") if "owner" in changed else None  # '' clears it, None keeps it
    return lambda c: store.update_monitor(c, str(monitor), values, clock.now_ms(), owner)
