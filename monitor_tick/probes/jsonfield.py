"""--json-field PATH=VALUE: the JSON body's field at a dotted path must equal a value.

PATH is dotted keys; a segment of digits indexes an array (`checks.0.status`); a key that
itself contains a dot cannot be named. VALUE is text, compared with the field by the field's
JSON type, so that what a user types matches what the body means:

    string            VALUE equals its text exactly (`status=UP`; `version=42` matches "42")
    number            VALUE is a number of the same value (`count=3` matches 3 and 3.0)
    true/false/null   VALUE is spelled the same (`ok=true`)
    object, array     never equal: name a field inside it

Causes: `json: body is not JSON`, `json: body larger than 1 MiB`, `json: no field data.db.ok`,
`json: data.db.ok is false, not true` (the value seen is cut to 40 characters, escaped).
"""

from __future__ import annotations

import json
import math

from monitor_tick.core.model import InvalidMonitor, Monitor

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

OPTION = "json_field"
SHOWN_CHARS = 40
_MISSING = object()


def parse(spec: str) -> tuple[list[str], str]:
    """'data.db.ok=true' -> (['data', 'db', 'ok'], 'true'). Raises InvalidMonitor."""
    path, sep, value = spec.partition("=") if isinstance(spec, str) else ("", "", "")
    keys = path.strip().split(".")
    if not sep or not path.strip() or any(not key for key in keys):
        raise InvalidMonitor(f"--json-field must be PATH=VALUE with a dotted PATH, e.g. status=UP (got {spec!r})")
    return keys, value


def check(monitor: Monitor) -> None:
    if monitor.json_field is not None:
        parse(monitor.json_field)


def cause(monitor: Monitor, body: bytes, whole: bool) -> str | None:
    """Why `body` fails the monitor's --json-field, or None when it passes. `whole`: the body
    is all there (False: it was longer than what was kept)."""
    assert monitor.json_field is not None
    keys, expected = parse(monitor.json_field)
    if not whole:
        return "json: body larger than 1 MiB"
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return "json: body is not JSON"
    field = _lookup(document, keys)
    path = ".".join(keys)
    if field is _MISSING:
        return f"json: no field {path}"
    if matches(field, expected):
        return None
    return f"json: {path} is {_shown(field)}, not {_cut(json.dumps(expected)[1:-1])}"


def matches(field: Any, expected: str) -> bool:
    """Whether a JSON value equals the text VALUE (see the module's docstring)."""
    if isinstance(field, bool) or field is None:
        return expected == json.dumps(field)
    if isinstance(field, str):
        return field == expected
    if isinstance(field, int | float):
        try:  # exactly, for integers past a float's 53 bits
            return int(expected) == field
        except ValueError:
            pass
        try:
            number = float(expected)
        except ValueError:
            return False
        return math.isfinite(number) and number == field
    return False


def _lookup(document: Any, keys: list[str]) -> Any:
    for key in keys:
        if isinstance(document, dict) and key in document:
            document = document[key]
        elif isinstance(document, list) and key.isdigit() and int(key) < len(document):
            document = document[int(key)]
        else:
            return _MISSING
    return document


def _shown(value: Any) -> str:
    """A value for a one-line cause: JSON-escaped (no control characters), at most SHOWN_CHARS."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return _cut(json.dumps(value))


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
