"""Uptime Kuma (1.23, 2.0 and 2.1): its SQLite database, read directly and read-only, as a Plan.

Columns are read by name (2.0 added 18 to `monitor`, later versions more), and every Kuma
setting that changes what a check does is either carried over or named in a note.

    Kuma type              monitor-tick
    http                   an http(s):// monitor
    keyword                ... with --keyword (invert keyword: --keyword-absent)
    json-query             ... with --json-field when the JSONata is a plain path and the
                           operator is == (2.0's json_path_operator)
    port                   tcp://host:port
    ping                   icmp://host
    dns                    dns://name?type=T&server=IP[:PORT] (2.0: one `record equals V`
                           condition becomes &expect=V)
    docker                 docker://CONTAINER, ?host=unix://PATH for another socket or
                           ?host=tcp://HOST:PORT for a tcp:// or http:// engine (an https:// one,
                           with client certificates, is skipped)
    smtp                   smtp://host:port; "Use STARTTLS" adds ?starttls=1 (SMTPS: skipped)
    websocket-upgrade      the ws(s):// URL as it is (2.1)
    push                   a heartbeat keeping its token (`serve` takes /api/push/TOKEN)
    postgres, mysql,       its connection string as the URL (postgresql://, mysql://, redis://);
    redis                  a MySQL monitor's radius_password, Kuma's override of the string's
                           own password, becomes the URL's; a custom query is not run
    group                  not a check: its monitors get its name as their group
    anything else          skipped, with the reason

Kuma's `maxretries` counts failures before it alerts: --alert-after is maxretries + 1.
`resend_interval` (re-notify every N down beats) becomes --remind N x interval.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from monitor_tick.core import urls
from monitor_tick.core.clock import format_duration_s
from monitor_tick.core.model import AlertSettings, InvalidMonitor, check_typed_name, parse_expect
from monitor_tick.importers import channels
from monitor_tick.importers.plan import (
    ImportProblem,
    Plan,
    Planned,
    assign_names,
    confirm_checks,
    timeout_s,
    whole_minutes,
)

SOURCE = "uptime-kuma"
DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock"  # Kuma's default, and docker://'s
# Kuma's monitor columns the importer cannot do without: a table lacking one is not Kuma's
_REQUIRED = frozenset({"id", "name", "active", "interval", "url", "type", "hostname", "port", "maxretries"})
_CERT_DAYS = 14  # Kuma warns 7, 14 and 21 days ahead; monitor-tick's default is 14
# Kuma's database monitor types: a connection string each, imported as a URL of the same kind
_DATABASES = ("postgres", "mysql", "redis")
_PLAIN_PATH = re.compile(r"^\$?\.?([A-Za-z_][\w-]*|\[\d+\])((\.[A-Za-z_][\w-]*)|(\.\d+)|(\[\d+\]))*$")
_UNSUPPORTED_TYPES = {
    "grpc-keyword": "gRPC",
    "real-browser": "a page loaded in a browser",
    "steam": "a Steam game server",
    "gamedig": "a game server (GameDig)",
    "mqtt": "an MQTT topic",
    "kafka-producer": "a Kafka producer",
    "sqlserver": "a SQL Server query",
    "mongodb": "a MongoDB query",
    "radius": "a RADIUS login",
    "tailscale-ping": "a Tailscale ping",
    "snmp": "an SNMP query",
    "rabbitmq": "a RabbitMQ node",
    "manual": "a status set by hand",
}


def read(path: str) -> Plan:
    """The plan for a Kuma database file. Raises ImportProblem (missing file, not Kuma's)."""
    if not Path(path).is_file():
        raise ImportProblem(f"no Uptime Kuma database at {path}")
    try:
        # read-only: Kuma may be running, and its file must stay as it is
        conn = sqlite3.connect(f"file:{quote(str(Path(path).absolute()))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ImportProblem(f"cannot open {path}: {exc}") from None
    try:
        conn.row_factory = sqlite3.Row
        columns = {row[1] for row in conn.execute("PRAGMA table_info(monitor)")}
        if not _REQUIRED <= columns:
            raise ImportProblem(f"{path} is not an Uptime Kuma database (no monitor table with Kuma's columns)")
        monitors = [dict(row) for row in conn.execute("SELECT * FROM monitor ORDER BY id")]
        docker_hosts = {row["id"]: dict(row) for row in conn.execute("SELECT * FROM docker_host")}
        notifications = [dict(row) for row in conn.execute("SELECT * FROM notification ORDER BY id")]
        links = [tuple(row) for row in conn.execute("SELECT monitor_id, notification_id FROM monitor_notification")]
        tags = [
            tuple(row)
            for row in conn.execute(
                "SELECT mt.monitor_id, t.name, mt.value FROM monitor_tag mt "
                "JOIN tag t ON t.id = mt.tag_id ORDER BY mt.id"
            )
        ]
    except sqlite3.DatabaseError as exc:
        raise ImportProblem(f"{path} is not an Uptime Kuma database ({exc})") from None
    finally:
        conn.close()
    return plan_of(monitors, notifications, links, tags, docker_hosts)


def plan_of(
    monitors: list[dict[str, Any]],
    notifications: list[dict[str, Any]],
    links: list[tuple[int, int]],
    tags: list[tuple[int, str, str | None]],
    docker_hosts: Mapping[int, dict[str, Any]] | None = None,
) -> Plan:
    plan = Plan(SOURCE)
    by_id = {m["id"]: m for m in monitors}
    urls = {n["id"]: _notification(n) for n in notifications}
    attached: dict[int, list[int]] = {}
    for monitor_id, notification_id in links:
        attached.setdefault(monitor_id, []).append(notification_id)
    tags_of: dict[int, list[str]] = {}
    for monitor_id, tag, value in tags:
        tags_of.setdefault(monitor_id, []).append(f"{tag}:{value}" if value else tag)
    for row in monitors:
        if row["type"] == "group":
            continue
        try:
            planned = _monitor(row, docker_hosts or {})
        except channels.Unmapped as exc:
            plan.skipped.append((str(row["name"]), str(exc)))
            continue
        parent = by_id.get(row.get("parent"))
        if parent is not None:
            _group(planned, str(parent["name"] or ""))
        if tags_of.get(row["id"]):
            planned.notes.append(f"tags not carried over: {', '.join(tags_of[row['id']])}")
        for notification_id in attached.get(row["id"], []):
            url, label = urls.get(notification_id, (None, ""))
            if url is not None:
                planned.channels.append((label, url))
        plan.monitors.append(planned)
    for n in notifications:
        url, reason = urls[n["id"]]
        covered = sum(n["id"] in ids for ids in attached.values())
        if url is None:
            plan.notes.append(f"notification {n['name']!r} not imported: {reason}")
        elif not covered:
            plan.notes.append(f"notification {n['name']!r} not imported: attached to no monitor")
        elif json.loads(n["config"] or "{}").get("type") == "webhook":
            plan.notes.append(
                f"notification {n['name']!r}: Apprise posts its own JSON ({{title, message, type}}), not Kuma's"
            )
    assign_names(plan, "kuma monitor {}")
    return plan


def _group(planned: Planned, name: str) -> None:
    try:
        check_typed_name(name, "group")
    except InvalidMonitor as exc:
        planned.notes.append(f"group not carried over: {exc}")
        return
    planned.group = name


def _monitor(row: dict[str, Any], docker_hosts: Mapping[int, dict[str, Any]]) -> Planned:
    """One Kuma monitor as a Planned one (`docker_hosts`: Kuma's by id). Raises Unmapped when
    it cannot be expressed at all."""
    kind = row["type"]
    if kind in _UNSUPPORTED_TYPES:
        raise channels.Unmapped(f"Kuma type {kind} ({_UNSUPPORTED_TYPES[kind]}) has no monitor-tick kind")
    if kind not in (
        "http",
        "keyword",
        "json-query",
        "port",
        "ping",
        "dns",
        "docker",
        "push",
        "smtp",
        "websocket-upgrade",
        *_DATABASES,
    ):
        raise channels.Unmapped(f"Kuma type {kind!r} has no monitor-tick kind")
    if row.get("upside_down"):
        raise channels.Unmapped("upside-down mode (up when the check fails) has no monitor-tick equivalent")
    notes: list[str] = []
    interval = whole_minutes(float(row["interval"] or 60), notes)
    planned = Planned(str(row["name"] or ""), "", interval, notes=notes, enabled=bool(row["active"]))
    retries = int(row["maxretries"] or 0)
    remind = int(row.get("resend_interval") or 0) * interval or None
    planned.alerts = AlertSettings(
        alert_after_checks=confirm_checks(retries + 1, notes, "alert after"), remind_every_sec=remind
    )
    retry_interval = int(row.get("retry_interval") or 0)
    if retry_interval and retry_interval != row["interval"]:
        notes.append(
            f"retry interval {retry_interval}s not carried over: a failed check is retried within the tick "
            "and checked again at its next interval"
        )
    if kind == "push":
        token = row.get("push_token")
        if not token:
            raise channels.Unmapped("a push monitor without a push token")
        planned.url, planned.token = "heartbeat", str(token)
        # Kuma marks it down as soon as a period passes without a push; a grace of one period
        # lets one late push pass, since the heartbeat is judged once per period
        planned.given["grace_sec"] = interval
        notes.append(f"grace {format_duration_s(interval)} (one period) for a late push")
        return planned
    if row.get("timeout") is not None:
        seconds = float(row["timeout"]) if float(row["timeout"]) > 0 else 0.8 * float(row["interval"] or 60)
        planned.given["timeout_s"] = timeout_s(round(seconds, 3), notes)
    if kind == "port":
        planned.url = f"tcp://{_host(row['hostname'])}:{row['port']}"
    elif kind == "ping":
        planned.url = f"icmp://{_host(row['hostname'])}"
        if int(row.get("packet_size") or 56) != 56:
            notes.append(f"packet size {row['packet_size']} not carried over: monitor-tick sends 56 bytes")
    elif kind == "dns":
        planned.url = _dns_url(row, notes)
    elif kind == "smtp":
        planned.url = _smtp_url(row, notes)
    elif kind == "websocket-upgrade":
        planned.url = _websocket(row, notes)
    elif kind in _DATABASES:
        planned.url = _database_url(row, notes)
    elif kind == "docker":
        planned.url = _docker_url(row, docker_hosts)
    else:
        _http(row, planned)
    return planned


def _host(hostname: object) -> str:
    host = str(hostname or "").strip()
    return f"[{host}]" if ":" in host else host


def _smtp_url(row: dict[str, Any], notes: list[str]) -> str:
    """Kuma's SMTP security: "starttls" (require it), "nostarttls" (plain), unset (nodemailer's
    default: STARTTLS when the server offers it), or "secure" (SMTPS, TLS from the first byte)."""
    security = row.get("smtp_security")
    url = f"smtp://{_host(row['hostname'])}:{int(row['port'] or 25)}"
    if security == "secure":
        raise channels.Unmapped(
            "Kuma type smtp over SMTPS (TLS from the first byte) has no monitor-tick kind: smtp:// speaks "
            "plain SMTP, and upgrades with ?starttls=1; tls://HOST:PORT checks the certificate alone"
        )
    if security == "starttls":
        notes.append(f"certificate expiry: down when it expires within {_CERT_DAYS} days (Kuma only verified it)")
        return f"{url}?starttls=1"
    if security != "nostarttls":
        notes.append("STARTTLS when offered not carried over: the greeting is checked; ?starttls=1 requires it")
    return url


def _websocket(row: dict[str, Any], notes: list[str]) -> str:
    """Kuma 2.1's websocket-upgrade: its URL; up on a clean close (1000), Kuma's default."""
    accepted = json.loads(row.get("accepted_statuscodes_json") or '["1000"]')
    if [str(code) for code in accepted] != ["1000"]:
        notes.append(
            f"accepted close codes {', '.join(map(str, accepted))} not carried over: up only when it closes with 1000"
        )
    if row.get("ws_subprotocol"):
        notes.append(f"subprotocol {row['ws_subprotocol']} not carried over: monitor-tick asks for none")
    if row.get("ws_ignore_sec_websocket_accept_header"):
        notes.append("ignore Sec-WebSocket-Accept not carried over: monitor-tick checks the header")
    return str(row["url"] or "")


def _docker_url(row: dict[str, Any], docker_hosts: Mapping[int, dict[str, Any]]) -> str:
    """docker://CONTAINER for a Kuma docker monitor, with its Docker host as ?host= unless it
    is the default socket. Kuma reaches a `socket` host at its path, and a `tcp` one at its
    URL, tcp:// read as http://; an https:// one with the client certificates Kuma keeps in its
    data directory, which a docker:// monitor has no setting for. Raises Unmapped."""
    container = str(row.get("docker_container") or "").strip()
    host = docker_hosts.get(row.get("docker_host"))
    if host is None:
        raise channels.Unmapped("a docker monitor without its Docker host")
    daemon = str(host.get("docker_daemon") or "").strip()
    try:
        parts = urls.split(daemon, "the Docker host's URL")
    except InvalidMonitor as exc:  # said in our words: the parser's quote the URL
        raise channels.Unmapped(str(exc)) from None
    if host.get("docker_type") == "socket":
        engine = f"unix://{daemon}"
    elif parts.scheme in ("tcp", "http"):
        engine = f"tcp://{parts.netloc}"
    elif parts.scheme == "https":
        raise channels.Unmapped(
            f"Docker host {host.get('name')!r} is reached over https with client certificates: "
            "docker:// takes a unix socket or plain tcp://"
        )
    else:
        raise channels.Unmapped(f"Docker host {host.get('name')!r} is neither a socket nor a tcp:// or http:// URL")
    if engine == f"unix://{DEFAULT_DOCKER_SOCKET}":
        return f"docker://{container}"
    return f"docker://{container}?host={engine}"


def _dns_url(row: dict[str, Any], notes: list[str]) -> str:
    server = str(row.get("dns_resolve_server") or "1.1.1.1")
    port = int(row["port"] or 53)
    params = {
        "type": str(row.get("dns_resolve_type") or "A"),
        "server": server if port == 53 else f"{_host(server)}:{port}",
    }
    conditions = json.loads(row.get("conditions") or "[]")
    if conditions:
        first = conditions[0]
        simple = (
            len(conditions) == 1
            and first.get("type") == "expression"
            and first.get("variable") == "record"
            and first.get("operator") == "equals"
        )
        if simple:
            params["expect"] = str(first.get("value"))
        else:
            notes.append("DNS conditions not carried over: only one `record equals VALUE` maps (to expect=)")
    return f"dns://{row['hostname']}?{urlencode(params)}"


def _database_url(row: dict[str, Any], notes: list[str]) -> str:
    """A postgres, mysql or redis monitor's connection string, as the URL of its kind."""
    url = str(row.get("database_connection_string") or "").strip()
    if row["type"] == "mysql" and row.get("radius_password"):
        url = _with_password(url, str(row["radius_password"]))
    query = " ".join(str(row.get("database_query") or "").split()).rstrip(";").upper()
    if query not in ("", "SELECT 1"):
        notes.append("custom query not carried over: monitor-tick logs in and makes its own round trip")
    if json.loads(row.get("conditions") or "[]"):
        notes.append("query result conditions not carried over")
    if row["type"] == "redis" and row.get("ignore_tls") and url.lower().startswith("rediss:"):
        notes.append("ignore TLS errors not carried over: rediss:// verifies the certificate")
    return url


def _with_password(url: str, password: str) -> str:
    """`url` with `password` as its password (percent-encoded), the user kept as written."""
    scheme, sep, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not sep or not at:  # no user to give it to: the URL is imported as it is, and checked
        return url
    return f"{scheme}://{userinfo.partition(':')[0]}:{quote(password, safe='')}@{host}{slash}{tail}"


def _http(row: dict[str, Any], planned: Planned) -> None:
    notes, given = planned.notes, planned.given
    url = str(row["url"] or "")
    planned.url = url
    given["method"] = str(row.get("method") or "GET").upper()
    accepted = json.loads(row.get("accepted_statuscodes_json") or '["200-299"]')
    expect = ",".join(str(code) for code in accepted)
    try:
        parse_expect(expect)
        given["expect_status"] = expect
    except InvalidMonitor as exc:
        notes.append(f"accepted status codes not carried over ({exc}): 200-399")
    if row["type"] == "keyword" and row.get("keyword"):
        given["keyword_absent" if row.get("invert_keyword") else "keyword"] = row["keyword"]
    if row["type"] == "json-query":
        _json_query(row, given, notes)
    headers = _headers(row, notes)
    if row.get("body"):
        encoding = (row.get("http_body_encoding") or "json").lower()
        if encoding == "form":
            notes.append("form-encoded body not carried over: monitor-tick sends a body as given")
        else:
            given["body"] = row["body"]
            if not any(name.lower() == "content-type" for name, _ in headers):
                headers.append(("Content-Type", "text/xml" if encoding == "xml" else "application/json"))
    if headers:
        given["headers"] = "\n".join(f"{name}: {value}" for name, value in headers)
    auth = row.get("auth_method")
    if auth == "basic" and row.get("basic_auth_user"):
        given["basic_auth"] = f"{row['basic_auth_user']}:{row.get('basic_auth_pass') or ''}"
    elif auth not in (None, "", "basic"):
        what = {"ntlm": "NTLM", "oauth2-cc": "OAuth2 client credentials", "mtls": "a client certificate (mTLS)"}
        notes.append(f"authentication not carried over: {what.get(auth, auth)}; monitor-tick sends basic auth only")
    if row.get("ignore_tls"):
        given["insecure"] = True
    # the scheme as written: a URL that does not parse is refused, saying why, when it is added
    if row.get("expiry_notification") and url.lower().startswith("https://") and not row.get("ignore_tls"):
        given["expires_within_sec"] = _CERT_DAYS * 86_400
        notes.append(f"certificate expiry: down when it expires within {_CERT_DAYS} days (Kuma only notified)")
    redirects = int(row["maxredirects"]) if row.get("maxredirects") is not None else 10
    if redirects < 5:
        notes.append(f"max redirects {redirects} not carried over: monitor-tick follows up to 5")
    if row.get("proxy_id"):
        notes.append("proxy not carried over: monitor-tick connects directly")
    if row.get("cache_bust"):
        notes.append("cache busting not carried over")


def _json_query(row: dict[str, Any], given: dict[str, Any], notes: list[str]) -> None:
    path = str(row.get("json_path") or "").strip()
    operator = row.get("json_path_operator") or "=="
    if not _PLAIN_PATH.match(path) or operator != "==" or row.get("expected_value") is None:
        notes.append(
            f"json query not carried over: only a plain path compared with == maps to --json-field "
            f"(got {path!r} {operator})"
        )
        return
    dotted = re.sub(r"\[(\d+)\]", r".\1", path.lstrip("$")).lstrip(".")
    given["json_field"] = f"{dotted}={row['expected_value']}"


def _headers(row: dict[str, Any], notes: list[str]) -> list[tuple[str, str]]:
    text = row.get("headers")
    if not text or not str(text).strip():
        return []
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        notes.append("headers not carried over: not a JSON object")
        return []
    return [(str(name), str(value)) for name, value in parsed.items()]


def _notification(row: dict[str, Any]) -> tuple[str | None, str]:
    """(Apprise URL, Kuma's name for it) or (None, why not)."""
    try:
        config = json.loads(row.get("config") or "{}")
    except ValueError:
        return None, "its settings are not JSON"
    kind = config.get("type")
    label = f"{row['name']!r} ({kind})"
    if not row.get("active", 1):
        return None, "disabled in Kuma"
    try:
        return _notification_url(kind, config), label
    except channels.Unmapped as exc:
        return None, str(exc)


def _notification_url(kind: object, c: dict[str, Any]) -> str:
    if kind == "telegram":
        return channels.telegram(
            c.get("telegramBotToken"),
            c.get("telegramChatID"),
            topic=c.get("telegramMessageThreadID"),
            api_url=c.get("telegramServerUrl"),
            silent=bool(c.get("telegramSendSilently")),
        )
    if kind == "discord":
        return channels.discord(c.get("discordWebhookUrl"), c.get("discordUsername"), c.get("threadId"))
    if kind == "slack":
        return channels.slack(c.get("slackwebhookURL"), c.get("slackchannel"))
    if kind == "ntfy":
        method = c.get("ntfyAuthenticationMethod") or "none"
        return channels.ntfy(
            c.get("ntfyserverurl"),
            c.get("ntfytopic"),
            priority=c.get("ntfyPriority"),
            username=c.get("ntfyusername") if method == "usernamePassword" else None,
            password=c.get("ntfypassword") if method == "usernamePassword" else None,
            token=c.get("ntfyaccesstoken") if method == "accessToken" else None,
        )
    if kind == "gotify":
        return channels.gotify(c.get("gotifyserverurl"), c.get("gotifyapplicationToken"), c.get("gotifyPriority"))
    if kind == "smtp":
        return channels.email(
            host=c.get("smtpHost"),
            port=c.get("smtpPort"),
            sender=c.get("smtpFrom"),
            to=c.get("smtpTo"),
            username=c.get("smtpUsername"),
            password=c.get("smtpPassword"),
            tls=bool(c.get("smtpSecure")),
            cc=c.get("smtpCC"),
            bcc=c.get("smtpBCC"),
        )
    if kind == "webhook":
        content = c.get("webhookContentType") or "json"
        if content == "custom":
            raise channels.Unmapped("webhook with a custom body (a Liquid template): Apprise sends its own")
        extra = c.get("webhookAdditionalHeaders")
        try:
            headers = json.loads(extra) if extra else {}
        except ValueError:
            raise channels.Unmapped("webhook's additional headers are not JSON") from None
        return channels.webhook(c.get("webhookURL"), form=content == "form-data", headers=headers or {})
    raise channels.Unmapped(f"Kuma notification type {kind!r} has no Apprise mapping here; add it with notify add")
