"""What Gatus writes inside an endpoint's values, as monitor-tick reads it: Go durations, the
environment variables Gatus expands ($NAME, ${NAME}; $$ a literal $), and the conditions
([STATUS] == 200, [RESPONSE_TIME] < 500, ...), each turned into an option or listed with its
reason (importers/gatus.py, above this, reads the endpoints)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlsplit

from monitor_tick.core.redact import ENV_REFERENCE
from monitor_tick.importers import channels
from monitor_tick.importers.plan import Planned

_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_GO_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_OPERATORS = ("==", "!=", "<=", ">=", ">", "<")  # Gatus' own order of looking for them
_STATUS_RANGE = (100, 599)
# What Go's os.ExpandEnv reads after Gatus turned $$ into a literal $: $$; ${anything}; $NAME;
# and, kept by neither tool as a name, a shell special ($1, $*, ...) or a ${ left open
_GATUS_REFERENCE = re.compile(r"\$(?:(\$)|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*)|(\{|[*#@!?0-9-]))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ONLY_IN = "only in URLs, headers and bodies"


def go_duration_s(value: object) -> float:
    """A Go duration ('30s', '1h30m', '500ms') in seconds. Raises ValueError."""
    text = str(value).strip()
    pieces = _GO_DURATION.findall(text)
    if not pieces or "".join(n + u for n, u in pieces) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * _GO_UNIT_S[u] for n, u in pieces)


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
    if len(re.findall(ENV_REFERENCE, written)) != kept:
        raise channels.Unmapped(f"{where}: a literal ${{...}} ($${{...}}) would be read as a reference by monitor-tick")
    return written


def texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(dotted path, text) of every string in a YAML value."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from texts(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from texts(inner, f"{path}[{index}]")
    elif isinstance(value, str):
        yield path, value


def are(references: list[str], one: str, more: str) -> str:
    """'$A is `one`' or '$A, $B are `more`'."""
    return f"{', '.join(references)} is {one}" if len(references) == 1 else f"{', '.join(references)} are {more}"


def _split(condition: str) -> tuple[str, str, str] | None:
    for op in _OPERATORS:
        if f" {op} " in condition:
            left, right = condition.split(f" {op} ", 1)
            return left.strip(), op, right.strip()
    return None


def read_conditions(conditions: list[str], planned: Planned, kind: str) -> None:
    statuses = [_STATUS_RANGE]
    status_seen = False
    for condition in conditions:
        references = gatus_references(condition)
        if references:  # a keyword or value taken as written would never match: always down
            what = are(references, "an environment variable", "environment variables")
            planned.notes.append(
                f"condition {condition!r} not carried over: {what}, which monitor-tick resolves {ONLY_IN}"
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


def whole(value: object) -> bool:
    """Whether a YAML value reads as a whole number (3, '3'), as Gatus' thresholds must."""
    return not isinstance(value, bool) and (isinstance(value, int) or str(value).strip().isdigit())
