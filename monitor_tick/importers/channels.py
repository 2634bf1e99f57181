"""Notification settings of other tools as Apprise URLs (what `notify add` takes).

Each builder takes the settings as the tool holds them and returns the URL, or raises Unmapped
with the reason it cannot be expressed. Apprise itself judges each URL before it is stored
(importers/apply.py). URLs hold secrets: show them only through core.redact.redact_channel_url.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import SplitResult, parse_qsl, quote, urlencode, urlsplit


class Unmapped(ValueError):
    """A setting that has no monitor-tick equivalent; str() is the reason, one line."""


_SLACK_HOOK = re.compile(r"https://hooks\.slack\.com/services/([^/]+)/([^/]+)/([^/?#]+)/?")
_DISCORD_HOOK = re.compile(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/(\d+)/([^/?#]+)/?")
# ntfy's priorities 1-5 by Apprise's names
_NTFY_PRIORITY = {1: "min", 2: "low", 3: "default", 4: "high", 5: "max"}
TELEGRAM_API = "https://api.telegram.org"


def _q(text: object) -> str:
    return quote(str(text), safe="")


def _text(value: object) -> str | None:
    """A setting as text: None when unset or empty."""
    if value is None or value is False:
        return None
    text = str(value).strip()
    return text or None


def slack(webhook_url: object, channel: object = None) -> str:
    match = _SLACK_HOOK.fullmatch(_text(webhook_url) or "")
    if match is None:
        raise Unmapped("slack: not an incoming-webhook URL (https://hooks.slack.com/services/...)")
    url = "slack://" + "/".join(match.groups())
    channel_name = _text(channel)
    return f"{url}/{_q('#' + channel_name.lstrip('#'))}" if channel_name else url


def discord(webhook_url: object, username: object = None, thread_id: object = None) -> str:
    match = _DISCORD_HOOK.fullmatch(_text(webhook_url) or "")
    if match is None:
        raise Unmapped("discord: not a webhook URL (https://discord.com/api/webhooks/ID/TOKEN)")
    user = _text(username)
    url = f"discord://{_q(user) + '@' if user else ''}{match.group(1)}/{match.group(2)}"
    thread = _text(thread_id)
    return f"{url}?thread={_q(thread)}" if thread else url


def telegram(
    bot_token: object, chat_id: object, *, topic: object = None, api_url: object = None, silent: bool = False
) -> str:
    token, chat = _text(bot_token), _text(chat_id)
    if not token or not chat:
        raise Unmapped("telegram: no bot token or chat id")
    server = _text(api_url)
    if server and server.rstrip("/") != TELEGRAM_API:
        host = _parts(server, "telegram: its server is not a URL").hostname
        raise Unmapped(f"telegram: a server of its own ({host}); Apprise talks to {TELEGRAM_API}")
    thread = _text(topic)
    params = {"silent": "yes"} if silent else {}
    url = f"tgram://{_q(token).replace('%3A', ':')}/{_q(chat)}{':' + _q(thread) if thread else ''}"
    return f"{url}?{urlencode(params)}" if params else url


def _parts(url: str, error: str) -> SplitResult:
    """`url` split, or Unmapped(`error`): urlsplit's own error quotes nothing, but is no reason."""
    try:
        return urlsplit(url)
    except ValueError:
        raise Unmapped(error) from None


def _server(server_url: object, what: str) -> tuple[bool, str]:
    """(https?, host[:port][/path]) of a server URL."""
    text = _text(server_url)
    parts = _parts(text or "", f"{what}: the server is not an http(s) URL")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Unmapped(f"{what}: the server is not an http(s) URL")
    return parts.scheme == "https", parts.netloc.rpartition("@")[2] + parts.path.rstrip("/")


def ntfy(
    server_url: object,
    topic: object,
    *,
    priority: object = None,
    username: object = None,
    password: object = None,
    token: object = None,
) -> str:
    name = _text(topic)
    if not name:
        raise Unmapped("ntfy: no topic")
    secure, where = _server(server_url or "https://ntfy.sh", "ntfy")
    user, secret, access = _text(username), _text(password), _text(token)
    auth = f"{_q(user)}:{_q(secret or '')}@" if user else ""
    params: dict[str, str] = {}
    if access:
        params["token"] = access
    if priority not in (None, ""):
        try:
            params["priority"] = _NTFY_PRIORITY[int(str(priority))]
        except (KeyError, ValueError):
            raise Unmapped(f"ntfy: priority {priority!r} is not 1 to 5") from None
    url = f"{'ntfys' if secure else 'ntfy'}://{auth}{where}/{_q(name)}"
    return f"{url}?{urlencode(params)}" if params else url


def gotify(server_url: object, app_token: object, priority: object = None) -> str:
    token = _text(app_token)
    if not token:
        raise Unmapped("gotify: no application token")
    secure, where = _server(server_url, "gotify")
    url = f"{'gotifys' if secure else 'gotify'}://{where}/{_q(token)}"
    if priority in (None, ""):
        return url
    try:
        level = int(str(priority))
    except ValueError:
        raise Unmapped(f"gotify: priority {priority!r} is not a number") from None
    # Apprise's five levels stand for gotify's 1, 3, 5, 8 and 10
    name = (
        "emergency"
        if level >= 10
        else "high"
        if level >= 8
        else "normal"
        if level >= 5
        else "moderate"
        if level >= 3
        else "low"
    )
    return f"{url}?priority={name}"


def _addresses(value: object) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return [part.strip() for part in str(value or "").split(",") if part.strip()]


def email(
    *,
    host: object,
    port: object,
    sender: object,
    to: object,
    username: object = None,
    password: object = None,
    tls: bool | None = None,
    cc: object = None,
    bcc: object = None,
) -> str:
    """`tls`: True for TLS from the start (port 465), False or None for STARTTLS."""
    server, recipients = _text(host), _addresses(to)
    if not server or not recipients:
        raise Unmapped("email: no SMTP host or no recipient")
    from_address = _text(sender)
    if not from_address:
        raise Unmapped("email: no sender address")
    user = _text(username)
    auth = f"{_q(user)}:{_q(_text(password) or '')}@" if user else ""
    if _text(port) and not str(port).strip().isdigit():
        raise Unmapped("email: the SMTP port is not a number")
    at_port = f":{int(str(port))}" if _text(port) else ""
    params = {"smtp": server, "from": from_address, "to": ",".join(recipients), "mode": "ssl" if tls else "starttls"}
    for key, value in (("cc", cc), ("bcc", bcc)):
        if _addresses(value):
            params[key] = ",".join(_addresses(value))
    return f"mailtos://{auth}{server}{at_port}?{urlencode(params)}"


def webhook(url: object, *, form: bool = False, headers: Mapping[str, object] | None = None) -> str:
    """A POST of Apprise's JSON ({title, message, type}) or form fields to `url`."""
    parts = _parts(_text(url) or "", "webhook: not an http(s) URL")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Unmapped("webhook: not an http(s) URL")
    scheme = ("form" if form else "json") + ("s" if parts.scheme == "https" else "")
    query = [(key, value) for key, value in _pairs(parts.query)]
    query += [(f"+{name}", str(value)) for name, value in (headers or {}).items()]
    return f"{scheme}://{parts.netloc}{parts.path}" + (f"?{urlencode(query)}" if query else "")


def _pairs(query: str) -> Iterable[tuple[str, str]]:
    # Apprise reads `-name` as a query parameter of the target and plain names as its own options
    return ((f"-{key}", value) for key, value in parse_qsl(query, keep_blank_values=True))
