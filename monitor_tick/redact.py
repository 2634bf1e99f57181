"""Keep secrets out of output: URLs may carry credentials and tokens."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "***"


def redact_url(url: str) -> str:
    """The URL with user:password and every query value replaced by ***.

    'https://u:p@h/x?token=abc&a=1' -> 'https://***@h/x?token=***&a=***'. Never raises; text
    that does not parse as a URL is returned with everything after the host hidden.
    """
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
        query = parts.query
        if query:
            query = urlencode([(k, REDACTED) for k, _ in parse_qsl(query, keep_blank_values=True)], safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except (ValueError, AttributeError, TypeError):
        return f"{str(url)[:8]}{REDACTED}"


# a scheme, '://', then anything up to whitespace or a quote or bracket that would end it in prose
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


def redact_text(text: str) -> str:
    """Free text (a monitor's name, an incident's cause) with every URL in it redacted."""
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)
