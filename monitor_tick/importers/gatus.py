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
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from monitor_tick.core.model import AlertSettings, InvalidMonitor, check_typed_name
from monitor_tick.core.redact import ENV_REFERENCE
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

SOURCE = "gatus"
EXTRA = "monitor-tick[gatus]"
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_GO_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_OPERATORS = ("==", "!=", "<=", ">=", ">", "<")  # Gatus' own order of looking for them
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
_STATUS_RANGE = (100, 599)
# What Go's os.ExpandEnv reads after Gatus turned $$ into a literal $: $$; ${anything}; $NAME;
# and, kept by neither tool as a name, a shell special ($1, $*, ...) or a ${ left open
_GATUS_REFERENCE = re.compile(r"\$(?:(\$)|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*)|(\{|[*#@!?0-9-]))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ONLY_IN = "only in URLs, headers and bodies"
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


def go_duration_s(value: object) -> float:
    """A Go duration ('30s', '1h30m', '500ms') in seconds. Raises ValueError."""
    text = str(value).strip()
    pieces = _GO_DURATION.findall(text)
    if not pieces or "".join(n + u for n, u in pieces) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * _GO_UNIT_S[u] for n, u in pieces)


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


def gatus_references(text: str) -> list[str]:
    """The environment references Gatus would expand in `text`, as written ($$ is none)."""
    return [m.group(0) for m in _GATUS_REFERENCE.finditer(text) if m.group(1) is None]


def kept_references(text: str, where: str) -> str:
    """`text` with Gatus' references written as monitor-tick's ${NAME} ($$ as a literal $).
    Raises channels.Unmapped, naming `where`, for one monitor-tick cannot keep: a name it cannot
    hold, or a literal ${NAME} it would read as a reference."""
    parts: list[str] = []
    kept = 0
    end = 0
    for match in _GATUS_REFERENCE.finditer(text):
        literal, braced, bare, _ = match.groups()
        parts.append(text[end : match.start()])
        end = match.end()
        name = braced if braced is not None else bare
        if literal:
            parts.append("$")
        elif name is not None and _NAME.fullmatch(name):
            parts.append("${" + name + "}")
            kept += 1
        else:
            raise channels.Unmapped(
                f"{where}: {match.group(0)} is not a reference monitor-tick can keep (${{NAME}}: letters, digits and _)"
            )
    written = "".join([*parts, text[end:]])
    if len(ENV_REFERENCE.findall(written)) != kept:
        raise channels.Unmapped(f"{where}: a literal ${{...}} ($${{...}}) would be read as a reference by monitor-tick")
    return written


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(dotted path, text) of every string in a YAML value."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _texts(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _texts(inner, f"{path}[{index}]")
    elif isinstance(value, str):
        yield path, value


def _are(references: list[str], one: str, more: str) -> str:
    """'$A is `one`' or '$A, $B are `more`'."""
    return f"{', '.join(references)} is {one}" if len(references) == 1 else f"{', '.join(references)} are {more}"


def _provider(name: str, settings: Any) -> tuple[str | None, str]:
    """(Apprise URL, '') or (None, why not) for one `alerting.<type>` block."""
    s = settings if isinstance(settings, dict) else {}
    references = [ref for _, text in _texts(s, "") for ref in gatus_references(text)]
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
        for path, text in _texts({k: v for k, v in e.items() if k not in _KEEPING}, "")
        if (refs := gatus_references(text))
    ]
    if elsewhere:
        references = [ref for _, refs in elsewhere for ref in refs]
        notes.append(
            f"{', '.join(path for path, _ in elsewhere)}: "
            f"{_are(references, 'not kept as a reference', 'not kept as references')} "
            f"(monitor-tick resolves environment variables {_ONLY_IN}): taken as written"
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
    _conditions([str(c) for c in e.get("conditions") or []], planned, kind)
    planned.given.pop("expect", None)
    _alerts(e.get("alerts") or [], alerting, providers, planned)
    for key in ("maintenance-windows", "ui", "extra-labels"):
        if e.get(key):
            notes.append(f"{key} not carried over")
    return planned


def _kind(e: dict[str, Any], url: str) -> str:
    if e.get("dns"):
        return "dns"
    scheme = urlsplit(url).scheme.lower()
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
    raise channels.Unmapped(f"url {url!r}: not an endpoint type monitor-tick knows")


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


def _split(condition: str) -> tuple[str, str, str] | None:
    for op in _OPERATORS:
        if f" {op} " in condition:
            left, right = condition.split(f" {op} ", 1)
            return left.strip(), op, right.strip()
    return None


def _conditions(conditions: list[str], planned: Planned, kind: str) -> None:
    statuses = [_STATUS_RANGE]
    status_seen = False
    for condition in conditions:
        references = gatus_references(condition)
        if references:  # a keyword or value taken as written would never match: always down
            what = _are(references, "an environment variable", "environment variables")
            planned.notes.append(
                f"condition {condition!r} not carried over: {what}, which monitor-tick resolves {_ONLY_IN}"
            )
            continue
        parts = _split(condition)
        reason = "not a condition Gatus reads" if parts is None else _condition(*parts, planned, kind, statuses)
        if parts is not None and parts[0] == "[STATUS]" and reason is None and kind == "http":
            status_seen = True
        if reason:
            planned.notes.append(f"condition {condition!r} not carried over: {reason}")
    if status_seen:
        if not statuses:
            planned.notes.append("[STATUS] conditions accept no status: 200-399")
            planned.given.pop("expect_status", None)
        else:
            planned.given["expect_status"] = ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in statuses)


def _condition(
    left: str, op: str, right: str, planned: Planned, kind: str, statuses: list[tuple[int, int]]
) -> str | None:
    """Carry one condition over; returns why not, or None."""
    given = planned.given
    if left == "[CONNECTED]":
        return None if op == "==" and right == "true" else "only [CONNECTED] == true (every check needs a connection)"
    if left == "[DNS_RCODE]":
        if kind == "dns" and op == "==" and right == "NOERROR":
            return None
        return "a dns check is up only with NOERROR"
    if left == "[STATUS]":
        if kind == "ssh" and op == "==" and right == "0":  # Gatus' status of a banner read
            return None
        return _status(op, right, statuses) if kind == "http" else f"a {kind} check has no status"
    if left == "[RESPONSE_TIME]":
        if kind not in ("http", "tcp", "tls", "smtp", "ssh", "ws") or op not in ("<", "<="):
            return "only [RESPONSE_TIME] < N (--max-latency) on http, tcp, tls, starttls, ssh and ws"
        try:
            limit = int(right) - (1 if op == "<" else 0)
        except ValueError:
            return "not a number of milliseconds"
        if limit >= given.get("timeout_s", 10) * 1000 or limit < 1:
            return "--max-latency must be shorter than the timeout"
        given["max_latency_ms"] = limit
        return None
    if left == "[CERTIFICATE_EXPIRATION]":
        verified = urlsplit(planned.url).scheme in ("https", "tls", "wss") or kind == "smtp"
        if not verified or op not in (">", ">="):
            return "only [CERTIFICATE_EXPIRATION] > D on https://, tls://, starttls:// and wss://"
        try:
            seconds = go_duration_s(right) if not right.isdigit() else int(right) / 1000
        except ValueError as exc:
            return str(exc)
        given["expires_within_sec"] = max(1, round(seconds))
        return None
    if left == "[DOMAIN_EXPIRATION]":
        return "monitor-tick does not look up domain registrations (RDAP/WHOIS)"
    if left == "[IP]":
        return "monitor-tick does not check the address a name resolves to"
    if left == "[BODY]":
        return _body(op, right, planned, kind)
    if left.startswith("[BODY]."):
        return _json_field(left[len("[BODY].") :], op, right, given, kind)
    if left.startswith(("len(", "has(")):
        return "only the equality of one JSON field (--json-field)"
    return "no monitor-tick equivalent"


def _status(op: str, right: str, statuses: list[tuple[int, int]]) -> str | None:
    if right.startswith("pat("):
        return "a pattern of statuses"
    try:
        codes = [int(c) for c in right[4:-1].split(",")] if right.startswith("any(") else [int(right)]
    except ValueError:
        return "not a status code"
    if op == "==":
        allowed = [(c, c) for c in sorted(set(codes))]
    elif op == "!=" and len(codes) == 1:
        allowed = [(_STATUS_RANGE[0], codes[0] - 1), (codes[0] + 1, _STATUS_RANGE[1])]
    elif len(codes) == 1 and op in ("<", "<=", ">", ">="):
        c = codes[0]
        allowed = {"<": [(100, c - 1)], "<=": [(100, c)], ">": [(c + 1, 599)], ">=": [(c, 599)]}[op]
    else:
        return "any() works only with =="
    intersected = [(max(a, c), min(b, d)) for a, b in statuses for c, d in allowed if max(a, c) <= min(b, d)]
    statuses[:] = sorted(intersected)
    return None


def _body(op: str, right: str, planned: Planned, kind: str) -> str | None:
    given = planned.given
    if kind == "dns":
        if op == "==" and not right.startswith(("pat(", "any(", "[")) and "expect" not in given:
            planned.url += "&" + urlencode({"expect": right})
            given["expect"] = right  # marks it taken; not a Monitor option (removed in _endpoint)
            return None
        return "a dns check compares one record's value (expect=)"
    if kind != "http":
        return f"a {kind} check reads no body"
    pattern = re.fullmatch(r"pat\(\*([^*?\[\]]+)\*\)", right)
    if pattern and op in ("==", "!="):
        key = "keyword" if op == "==" else "keyword_absent"
        if key in given:
            return f"one --{key.replace('_', '-')} per monitor"
        given[key] = pattern.group(1)
        return None
    if op == "==" and not right.startswith(("pat(", "any(", "[")) and "keyword" not in given:
        given["keyword"] = right
        planned.notes.append(f"[BODY] == {right}: the body must contain it (monitor-tick has no whole-body equality)")
        return None
    return "patterns other than pat(*TEXT*), and any(), have no monitor-tick equivalent"


def _json_field(path: str, op: str, right: str, given: dict[str, Any], kind: str) -> str | None:
    if kind != "http":
        return f"a {kind} check reads no JSON"
    if op != "==" or right.startswith(("pat(", "any(", "[", "len(", "has(")):
        return "only [BODY].path == VALUE (--json-field)"
    if "json_field" in given:
        return "monitor-tick checks one JSON field per monitor"
    dotted = re.sub(r"\[(\d+)\]", r".\1", path)
    given["json_field"] = f"{dotted}={right}"
    return None


def _whole(value: object) -> bool:
    """Whether a YAML value reads as a whole number (3, '3'), as Gatus' thresholds must."""
    return not isinstance(value, bool) and (isinstance(value, int) or str(value).strip().isdigit())


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
        unusable = [(key, value) for key, value in zip(_THRESHOLDS, thresholds, strict=True) if not _whole(value)]
        if unusable:
            key, value = unusable[0]
            why = f" (monitor-tick resolves environment variables {_ONLY_IN})" if gatus_references(str(value)) else ""
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
