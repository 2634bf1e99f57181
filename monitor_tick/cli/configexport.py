"""Monitors as a file, written: the TOML that `export` writes (and `apply` reads, configread.py).

Secrets: a secret typed in directly (a channel's URL, credentials or query values in a monitor's
URL) is exported as a `${...}` placeholder, with a warning naming it; never the secret. A
`${VAR}` reference a file gave is written again as it was (store.env_refs). A heartbeat's token
is never in the file: its SHA-256 is, so a database rebuilt from the file accepts the same
pings. A monitor's headers, basic auth and body keep their `${VAR}` references as stored; a
header value, password or body typed in is exported as a placeholder, but for the values of a
few headers that never carry secrets (Content-Type, Accept, ...) and a JSON body with no key
named like a secret.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from monitor_tick import store
from monitor_tick.cli import deferred
from monitor_tick.cli.configread import (
    ALERT_COLUMNS,
    ENV_REF,
    FLAGS,
    HEADER,
    MONITOR_KEYS,
    TICK_RESOLVED,
)
from monitor_tick.core import clock, schedule
from monitor_tick.core.model import (
    OPTIONS,
)
from monitor_tick.core.quorum import PLACE_COLUMNS
from monitor_tick.core.redact import (
    REDACTED,
    header_lines,
    redact_channel_url,
    redact_settings,
    redact_text,
    redact_url,
    redact_value,
)

# ---------------------------------------------------------------------------------------------
# Writing

# The file holds no secret (placeholders and digests instead), but it describes what is watched
# and who owns it: readable by its owner only, like the database.
EXPORT_MODE = 0o600


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
# auth, key, token, secret, password, credential and session, with password
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
    """Whether all that redact_url hides of `url` (its user info's password, its query's values)
    is whole ${VAR} references, which the tick resolves (`add 'https://h/x?key=${KEY}'`, an import from
    Gatus): no secret typed in, so the file may hold the URL as stored."""
    marked = ENV_REF.sub(REDACTED, url)
    if marked == url:
        return False
    parts = urlsplit(marked)
    if parts.password == REDACTED or (parts.password is None and parts.username == REDACTED):
        # a user name is no secret: user info whose password is a whole reference is fine
        parts = parts._replace(netloc=f"{REDACTED}@{parts.netloc.rsplit('@', 1)[1]}")
    return redact_url(urlunsplit(parts)) == urlunsplit(parts)


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
            if key in ALERT_COLUMNS and value == ALERT_COLUMNS[key]:
                continue
            if key in PLACE_COLUMNS and value == PLACE_COLUMNS[key]:
                continue
            if key in FLAGS:
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
            elif key in TICK_RESOLVED and isinstance(value, str):
                value = _request_setting(key, value, row["name"], warnings)
            elif isinstance(value, str) and key not in ("owner", "group_name", "locations"):
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
