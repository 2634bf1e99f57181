"""Gatus: its YAML configuration (read with PyYAML, the `gatus` extra) as a Plan.

    Gatus endpoint                 monitor-tick
    http(s)://                     an http(s):// monitor; url, method, headers, body (graphql
                                   wrapped as Gatus does), interval, client.timeout/insecure
    tcp://, icmp://, tls://        tcp://, icmp://, tls://
    starttls://host:port           smtp://host:port?starttls=1
    ssh:// without a login         ssh:// (Gatus then reads the banner only, as monitor-tick does)
    ws://, wss://                  ws://, wss:// (the handshake; Gatus' message is not sent)
    a dns: block                   dns://NAME?type=T&server=URL
    group                          the monitor's group (its status-page section)

    condition                      option
    [STATUS] == N, any(..), <, <=, >, >=, !=    --expect (their intersection)
    [RESPONSE_TIME] < N / <= N                  --max-latency
    [CERTIFICATE_EXPIRATION] > D                --expires-within D
    [BODY] == V                    http: --keyword V (contains); dns: expect=V
    [BODY] == / != pat(*TEXT*)     --keyword / --keyword-absent
    [BODY].path == V               --json-field path=V (one per monitor)
    [CONNECTED] == true            implied by every check
    [DNS_RCODE] == NOERROR         implied by a dns check
    [STATUS] == 0                  implied by an ssh check without a login

An http endpoint without a [STATUS] condition accepts any status, as in Gatus. Everything else
is listed, per endpoint, with its reason.

Environment variables. Gatus expands $NAME and ${NAME} anywhere in its file when it reads it
($$ is a literal $). In an endpoint's URL (a dns: block's name and type are part of it), header
values and body they become monitor-tick's ${NAME}, which each tick resolves from its own
environment. A condition or an alerting provider holding one is not carried over, saying why;
anywhere else one line per endpoint says it was taken as written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from monitor_tick.core import urls
from monitor_tick.core.model import AlertSettings, InvalidMonitor, check_typed_name
from monitor_tick.importers import channels
from monitor_tick.importers.gatusvalues import (
    ONLY_IN,
    are,
    gatus_references,
    go_duration_s,
    kept_references,
    read_conditions,
    texts,
    whole,
)
from monitor_tick.importers.plan import (
    ImportProblem,
    Plan,
    Planned,
    assign_names,
    confirm_checks,
    timeout_s,
    whole_minutes,
)
from monitor_tick.probes import PROBES

SOURCE = "gatus"
EXTRA = "monitor-tick[gatus]"
_UNSUPPORTED_SCHEMES = {
    "sctp": "SCTP",
    "udp": "UDP (no connection to check)",
    "grpc": "gRPC health checks",
    "grpcs": "gRPC health checks",
}
# Gatus' scheme -> the kind its endpoint becomes
_KINDS = {"tcp": "tcp", "icmp": "icmp", "tls": "tls", "starttls": "smtp", "ssh": "ssh", "ws": "ws", "wss": "ws"}
_SELF = {
    "storage": "where Gatus keeps results",
    "web": "Gatus' web server",
    "ui": "Gatus' dashboard",
    "metrics": "Gatus' Prometheus endpoint (see --metrics-file)",
    "security": "Gatus' dashboard login",
    "concurrency": "Gatus' concurrency",
    "announcements": "Gatus' dashboard announcements",
    "maintenance": "a global maintenance window (add one with `maintenance add --owner`)",
    "skip-invalid-config-update": "Gatus' reloads",
}
# an endpoint's settings that keep references (converted where they are read) or that say
# themselves why they cannot (conditions, alerts); any other holding one is named in a note
_KEEPING = ("url", "headers", "body", "dns", "conditions", "alerts")
_THRESHOLDS = ("failure-threshold", "success-threshold")


def load_yaml(path: str) -> Any:
    """The parsed file. Raises ImportProblem (no PyYAML, a missing file, bad YAML)."""
    try:
        import yaml  # the `gatus` extra: only this command needs it
    except ImportError:
        raise ImportProblem(f"reading Gatus configuration needs PyYAML: pip install '{EXTRA}'") from None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportProblem(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise ImportProblem(f"{path} is not valid YAML{line}") from None


def read(path: str) -> Plan:
    config = load_yaml(path)
    if not isinstance(config, dict) or not isinstance(config.get("endpoints"), list):
        raise ImportProblem(f"{path} is not a Gatus configuration (no `endpoints` list)")
    return plan_of(config)


def plan_of(config: dict[str, Any]) -> Plan:
    plan = Plan(SOURCE)
    alerting = config.get("alerting") or {}
    providers = {name: _provider(name, settings) for name, settings in alerting.items()}
    for endpoint in config["endpoints"]:
        name = str((endpoint or {}).get("name") or "")
        try:
            plan.monitors.append(_endpoint(endpoint, alerting, providers))
        except channels.Unmapped as exc:
            plan.skipped.append((name, str(exc)))
    for external in config.get("external-endpoints") or []:
        plan.skipped.append(
            (
                str(external.get("name") or ""),
                "an external endpoint is pushed to Gatus' own API; add a heartbeat "
                "(`monitor-tick add heartbeat`) and point the job at `serve`",
            )
        )
    for key in config:
        if key in _SELF:
            plan.notes.append(f"{key}: {_SELF[key]}, not imported")
        elif key not in ("endpoints", "alerting", "external-endpoints"):
            plan.notes.append(f"{key}: not a Gatus setting monitor-tick knows, not imported")
    if any(p.channels for p in plan.monitors):
        plan.notes.append("send-on-resolved: monitor-tick always tells its channels when an incident resolves")
    assign_names(plan, "gatus endpoint {}")
    return plan


def _provider(name: str, settings: Any) -> tuple[str | None, str]:
    """(Apprise URL, '') or (None, why not) for one `alerting.<type>` block."""
    s = settings if isinstance(settings, dict) else {}
    references = [ref for _, text in texts(s, "") for ref in gatus_references(text)]
    if references:  # a channel's URL is stored as Apprise takes it, with nothing left to resolve
        variables = "an environment variable" if len(references) == 1 else "environment variables"
        return None, (
            f"{name}: its settings hold {', '.join(references)}, {variables} monitor-tick cannot keep "
            "in a channel: add it with `notify add`"
        )
    try:
        if name == "slack":
            return channels.slack(s.get("webhook-url")), ""
        if name == "discord":
            return channels.discord(s.get("webhook-url")), ""
        if name == "telegram":
            return channels.telegram(s.get("token"), s.get("id"), topic=s.get("topic-id"), api_url=s.get("api-url")), ""
        if name == "ntfy":
            return channels.ntfy(s.get("url"), s.get("topic"), priority=s.get("priority"), token=s.get("token")), ""
        if name == "gotify":
            return channels.gotify(s.get("server-url"), s.get("token"), s.get("priority")), ""
        if name == "email":
            return channels.email(
                host=s.get("host"),
                port=s.get("port"),
                sender=s.get("from"),
                to=s.get("to"),
                username=s.get("username"),
                password=s.get("password"),
                tls=int(s.get("port") or 0) == 465,
            ), ""
        if name == "custom":
            raise channels.Unmapped("custom: a request template of its own; Apprise sends its own JSON")
    except channels.Unmapped as exc:
        return None, str(exc)
    return None, f"{name}: no Apprise mapping here; add it with `notify add`"


def _endpoint(e: dict[str, Any], alerting: dict[str, Any], providers: dict[str, tuple[str | None, str]]) -> Planned:
    url = kept_references(str(e.get("url") or ""), "url")
    notes: list[str] = []
    elsewhere = [
        (path, refs)
        for path, text in texts({k: v for k, v in e.items() if k not in _KEEPING}, "")
        if (refs := gatus_references(text))
    ]
    if elsewhere:
        references = [ref for _, refs in elsewhere for ref in refs]
        notes.append(
            f"{', '.join(path for path, _ in elsewhere)}: "
            f"{are(references, 'not kept as a reference', 'not kept as references')} "
            f"(monitor-tick resolves environment variables {ONLY_IN}): taken as written"
        )
    try:
        seconds = go_duration_s(e.get("interval", "60s"))
    except ValueError as exc:
        raise channels.Unmapped(f"interval: {exc}") from None
    planned = Planned(str(e.get("name") or ""), url, whole_minutes(seconds, notes), notes=notes)
    planned.enabled = e.get("enabled", True) is not False
    group = e.get("group")
    if group:
        try:
            check_typed_name(str(group), "group")
            planned.group = str(group)
        except InvalidMonitor as exc:
            notes.append(f"group not carried over: {exc}")
    kind = _kind(e, url)
    if urlsplit(url).scheme.lower() == "starttls":
        planned.url = f"smtp://{urlsplit(url).netloc}?starttls=1"
    if kind == "dns":
        query = e["dns"] or {}
        server = url.split("://", 1)[-1]
        params = {"type": kept_references(str(query.get("query-type") or "A"), "dns.query-type"), "server": server}
        name = kept_references(str(query.get("query-name")), "dns.query-name")
        planned.url = f"dns://{name}?{urlencode(params, safe='${}')}"  # references stay readable
    client = e.get("client") or {}
    _client(client, planned, kind)
    if kind == "http":
        _request(e, planned)
    elif kind == "ws":
        notes.append("messages not carried over: monitor-tick's ws check opens and closes, sending and reading none")
        if e.get("headers"):
            notes.append("headers not carried over: monitor-tick's ws check sends none of its own")
    elif e.get("body"):
        notes.append(f"body not carried over: monitor-tick's {kind} check sends nothing")
    read_conditions([str(c) for c in e.get("conditions") or []], planned, kind)
    planned.given.pop("expect", None)
    _expiry_judged(planned, kind)
    _alerts(e.get("alerts") or [], alerting, providers, planned)
    for key in ("maintenance-windows", "ui", "extra-labels"):
        if e.get(key):
            notes.append(f"{key} not carried over")
    return planned


def _expiry_judged(planned: Planned, kind: str) -> None:
    """A note when the kind judges the certificate's expiry by default (tls://, STARTTLS) and the
    endpoint set no [CERTIFICATE_EXPIRATION]: Gatus showed it up until the day it expired, and
    the monitor is down days before. The default is kept (such a kind always judges expiry),
    and said, as the Kuma importer says it."""
    default_s = PROBES[kind].defaults.get("expires_within_sec")
    if default_s is not None and "expires_within_sec" not in planned.given:
        planned.notes.append(
            f"certificate expiry: down when it expires within {default_s / 86_400:g} days "
            "(Gatus only checked the connection)"
        )


def _kind(e: dict[str, Any], url: str) -> str:
    if e.get("dns"):
        return "dns"
    try:
        scheme = urls.split(url).scheme.lower()
    except InvalidMonitor as exc:  # said in our words: the parser's quote the URL
        raise channels.Unmapped(str(exc)) from None
    if not scheme and url.startswith("${"):
        raise channels.Unmapped(
            "url: monitor-tick needs its scheme written out (https://${HOST}/...) to know the kind of check"
        )
    if scheme in _UNSUPPORTED_SCHEMES:
        raise channels.Unmapped(f"{scheme}:// ({_UNSUPPORTED_SCHEMES[scheme]}) has no monitor-tick kind")
    if scheme in ("http", "https"):
        return "http"
    if scheme == "ssh" and any((e.get("ssh") or {}).get(key) for key in ("username", "password", "private-key")):
        raise channels.Unmapped(
            "ssh:// with a login (a command run over SSH) has no monitor-tick kind: "
            "an ssh:// monitor reads the server's identification, logging in to nothing"
        )
    if scheme in _KINDS:
        return _KINDS[scheme]
    # the scheme alone: the rest of an unknown kind's URL may hold a password
    raise channels.Unmapped(f"url: {scheme}:// is not an endpoint type monitor-tick knows")


def _client(client: dict[str, Any], planned: Planned, kind: str) -> None:
    notes = planned.notes
    if "timeout" in client:
        try:
            planned.given["timeout_s"] = timeout_s(go_duration_s(client["timeout"]), notes)
        except ValueError as exc:
            notes.append(f"client.timeout not carried over: {exc}")
    if client.get("insecure"):
        if kind == "http" and urlsplit(planned.url).scheme == "https":
            planned.given["insecure"] = True
        else:
            notes.append(f"client.insecure not carried over: monitor-tick's {kind} check always verifies")
    if client.get("ignore-redirect"):
        notes.append("client.ignore-redirect not carried over: monitor-tick follows up to 5 redirects")
    for key in sorted(set(client) - {"timeout", "insecure", "ignore-redirect"}):
        notes.append(f"client.{key} not carried over")


def _request(e: dict[str, Any], planned: Planned) -> None:
    given = planned.given
    given["method"] = str(e.get("method") or "GET").upper()
    headers = [(str(k), kept_references(str(v), f"headers.{k}")) for k, v in (e.get("headers") or {}).items()]
    body = kept_references(str(e["body"]), "body") if e.get("body") else None
    if body and e.get("graphql"):
        # Gatus sends a graphql endpoint's body as {"query": BODY}
        body = json.dumps({"query": str(body)})
        if not any(k.lower() == "content-type" for k, _ in headers):
            headers.append(("Content-Type", "application/json"))
    if body:
        given["body"] = str(body)
        if re.search(r"\[(ENDPOINT_NAME|ENDPOINT_GROUP|ENDPOINT_URL|LOCAL_ADDRESS|RANDOM_STRING_\d+)\]", str(body)):
            planned.notes.append("body placeholders ([ENDPOINT_NAME], ...) are sent as written")
    if headers:
        given["headers"] = "\n".join(f"{k}: {v}" for k, v in headers)
    given["expect_status"] = "100-599"  # Gatus checks a status only when a condition says so


def _alerts(
    alerts: list[Any], alerting: dict[str, Any], providers: dict[str, tuple[str | None, str]], planned: Planned
) -> None:
    failures: list[int] = []
    successes: list[int] = []
    remind: int | None = None
    for alert in alerts:
        kind = str((alert or {}).get("type") or "")
        defaults = ((alerting.get(kind) or {}) if isinstance(alerting.get(kind), dict) else {}).get(
            "default-alert"
        ) or {}
        merged = {**defaults, **alert}
        if merged.get("enabled", True) is False:
            planned.notes.append(f"alert {kind}: disabled in Gatus, not imported")
            continue
        url, reason = providers.get(kind, (None, f"{kind}: no `alerting.{kind}` settings"))
        if url is None:
            planned.notes.append(f"alert {kind} not imported: {reason}")
            continue
        thresholds = [merged.get("failure-threshold", 3), merged.get("success-threshold", 2)]
        unusable = [(key, value) for key, value in zip(_THRESHOLDS, thresholds, strict=True) if not whole(value)]
        if unusable:
            key, value = unusable[0]
            why = f" (monitor-tick resolves environment variables {ONLY_IN})" if gatus_references(str(value)) else ""
            planned.notes.append(f"alert {kind} not imported: {key} {value} is not a whole number{why}")
            continue
        if merged.get("provider-override"):
            planned.notes.append(f"alert {kind}: provider-override not carried over")
        planned.channels.append((kind, url))
        failures.append(int(thresholds[0]))
        successes.append(int(thresholds[1]))
        if merged.get("minimum-reminder-interval"):
            try:
                remind = round(go_duration_s(merged["minimum-reminder-interval"])) or None
            except ValueError:
                planned.notes.append(f"alert {kind}: minimum-reminder-interval not carried over")
    if failures:
        if len(set(failures)) > 1 or len(set(successes)) > 1:
            planned.notes.append("alerts with different thresholds: the smallest applies to all")
        planned.alerts = AlertSettings(
            alert_after_checks=confirm_checks(min(failures), planned.notes, "failure-threshold"),
            resolve_after_checks=confirm_checks(min(successes), planned.notes, "success-threshold"),
            remind_every_sec=remind,
        )
