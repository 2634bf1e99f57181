"""Keep secrets out of output: URLs may carry credentials and tokens."""

from __future__ import annotations

import ipaddress
import re
import string
from urllib.parse import SplitResult, parse_qsl, urlsplit, urlunsplit

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

REDACTED = "***"
# schemes whose query is our own settings, never a secret (dns://name?type=A&server=IP,
# smtp://host?starttls=1, docker://NAME?host=unix:///run/docker.sock)
_PLAIN_QUERY_SCHEMES = frozenset({"dns", "smtp", "docker"})
# ${ENV_VAR} in a monitor's header values, basic auth and body: resolved by the tick, so the
# secret lives in cron's environment, not in the database, and the reference may be shown.
# This module's patterns are compiled on first use, by re's own cache (re.search(PATTERN, ...)):
# a tick whose checks all pass shows nothing, and compiling them is about 3 million
# instructions (a small tick's is 350 million).
ENV_REFERENCE = r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}"


def redact_url(url: str, *, every_query: bool = False) -> str:
    """The URL with user:password and every query value replaced by *** (a dns://, smtp:// or
    docker:// query is kept, unless `every_query`: a public page or a default name shows none of
    them, not a Docker engine's socket path or host either).

    'https://u:p@h/x?token=abc&a=1' -> 'https://***@h/x?token=***&a=***'. Never raises; text
    that does not parse as a URL is returned with everything after its scheme hidden, and so is
    one with user info whose port is not a number: a password typed in with its '@', ':' or
    '/' unencoded, whose pieces stand where the host, port and path should be.
    """
    try:
        parts = urlsplit(url)
        if "@" in parts.netloc and not _port_readable(parts):
            return _scheme_only(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
        query = parts.query
        if query and (every_query or parts.scheme.lower() not in _PLAIN_QUERY_SCHEMES):
            # 'key=value' keeps its key; a bare '?token' may be the secret itself
            query = "&".join(
                f"{part.split('=', 1)[0]}={REDACTED}" if "=" in part else REDACTED for part in query.split("&")
            )
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except (ValueError, AttributeError, TypeError):
        return _scheme_only(url)


def _port_readable(parts: SplitResult) -> bool:
    try:
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:
        return False
    return True


def _scheme_only(url: object) -> str:
    """'scheme://***' of a URL whose parts cannot be told apart, else ***."""
    scheme, sep, _ = str(url).partition("://")
    if sep and scheme[:1].isalpha() and scheme.isascii() and not scheme.strip(_SCHEME_CHARACTERS):
        return f"{scheme}://{REDACTED}"
    return REDACTED


def redact_channel_url(url: str) -> str:
    """A notification (Apprise) URL with every part that may be a secret hidden.

    Apprise URLs carry tokens in the user and password, in path segments, in the query and even
    in the host position ('tgram://BOT_TOKEN/CHAT_ID', 'discord://WEBHOOK_ID/TOKEN'). Kept: the
    scheme, the host and port when they are a host name or an address (they say where messages
    go), and query keys. 'json://u:p@hooks.example.org:8080/a/b?token=x' ->
    'json://***@hooks.example.org:8080/***/***?token=***'. Never raises.
    """
    scheme, sep, rest = str(url).partition("://")
    if not sep or not scheme.isascii() or not scheme.replace("+", "").isalnum():
        return REDACTED
    rest = rest.partition("#")[0]
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    _, at, host_port = netloc.rpartition("@")
    out = f"{scheme}://{REDACTED + '@' if at else ''}{host_port if _is_host(host_port) else REDACTED}"
    segments = [segment for segment in path.split("/") if segment]
    if segments:
        out += "/" + "/".join(REDACTED for _ in segments)
    if query:
        keys = [key for key, _ in parse_qsl(query, keep_blank_values=True)]
        out += "?" + "&".join(f"{key}={REDACTED}" for key in keys) if keys else f"?{REDACTED}"
    return out


def scrub(text: str, url: str) -> str:
    """`text` (e.g. an error from a notification library) with the secret parts of `url` hidden."""
    visible = set(_pieces(redact_channel_url(url)))
    secrets = sorted({p for p in _pieces(str(url).partition("://")[2]) if len(p) >= 4 and p not in visible}, key=len)
    for secret in reversed(secrets):
        text = text.replace(secret, REDACTED)
    return text


def _pieces(text: str) -> list[str]:
    return [p for p in re.split(r"[:/@?&=#]+", text) if p]


_HOSTNAME = r"^(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]*$"


def _is_host(host_port: str) -> bool:
    """A host name with a dot, localhost, or an IP address, with an optional numeric port."""
    if host_port.startswith("["):
        address, _, port = host_port[1:].partition("]")
        port = port.removeprefix(":")
    else:
        address, _, port = host_port.partition(":")
    if port and not port.isdigit():
        return False
    if address == "localhost" or re.match(_HOSTNAME, address):
        return True
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


# A URL in text: a scheme (a letter, then letters, digits, + . -), '://', then anything up to
# whitespace or a quote or bracket that would end it in prose. The regex
# [A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+ says it, but tries it from every letter of a long run of
# scheme characters without '://', each try reading to the run's end: quadratic time (showing an
# 80,000-character keyword took 15 s). redact_text finds each '://' instead, then the scheme
# before it: each character is read a bounded number of times.
_SCHEME_CHARACTERS = string.ascii_letters + string.digits + "+.-"
_LETTER = r"[A-Za-z]"
_URL_REST = r"[^\s\"'<>]+"


def redact_text(text: str, *, every_query: bool = False) -> str:
    """Free text (a monitor's name, an incident's cause) with every URL in it redacted
    (redact_url), in time linear in its length."""
    out: list[str] = []
    copied = 0  # text[:copied] is in out
    start = 0  # no scheme starts before this: the end of the last URL, or past a '://' without one
    while (colon := text.find("://", start)) != -1:
        run = start + len(text[start:colon].rstrip(_SCHEME_CHARACTERS))  # scheme characters up to '://'
        letter = re.compile(_LETTER).search(text, run, colon)  # the scheme starts at the run's first letter
        # the rest is read only after a scheme: a rest read and dropped could be read again
        rest = None if letter is None else re.compile(_URL_REST).match(text, colon + 3)
        if letter is None or rest is None:
            start = colon + 1
            continue
        out += [text[copied : letter.start()], redact_url(text[letter.start() : rest.end()], every_query=every_query)]
        copied = start = rest.end()
    out.append(text[copied:])
    return "".join(out)


def header_lines(headers: str | None) -> list[tuple[str, str]]:
    """(name, value as written) of each line of a monitor's `headers` ('Name: value' a line)."""
    if not headers:
        return []
    return [(name.strip(), value.strip()) for name, _, value in (line.partition(":") for line in headers.split("\n"))]


# what may stand beside a value's references and still be shown: an auth scheme's word
_BESIDE_REFERENCES = r"\s*(?:(?i:bearer|basic|token|digest|apikey)\s*)?"


def redact_value(value: str) -> str:
    """A value that may be a secret, for output: as written when it is ${ENV_VAR} references
    (the secret itself is in the environment), with at most an auth scheme's word beside them
    (`Bearer ${TOKEN}`), else ***: a secret typed in beside a reference is hidden with it."""
    if re.search(ENV_REFERENCE, value) and re.fullmatch(_BESIDE_REFERENCES, re.sub(ENV_REFERENCE, "", value)):
        return value
    return REDACTED


# the settings that redact_settings changes for output
REDACTED_SETTINGS = ("url", "headers", "basic_auth", "body")


def redact_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """A monitor's settings (a row, or a Monitor's fields) for output: the URL redacted, header
    values and the basic-auth password through redact_value, the body hidden unless it holds
    references (names and the user kept).
    Every command that prints settings goes through this."""
    shown = dict(settings)
    if shown.get("url") is not None:
        shown["url"] = redact_url(shown["url"])
    if shown.get("headers") is not None:
        shown["headers"] = "\n".join(f"{name}: {redact_value(value)}" for name, value in header_lines(shown["headers"]))
    if shown.get("basic_auth") is not None:
        user, _, password = str(shown["basic_auth"]).partition(":")
        shown["basic_auth"] = f"{user}:{redact_value(password)}"
    if shown.get("body") is not None:
        # a body holding references ('{"token": "${TOKEN}"}') is shown: its JSON around them is
        # the request's shape, not a secret
        body = str(shown["body"])
        shown["body"] = body if re.search(ENV_REFERENCE, body) else REDACTED
    return shown
