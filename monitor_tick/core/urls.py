"""A monitor's URL, split and checked: the standard library's parser and rules of our own.

Every refusal says what is wrong and in which part ("its port is not a number"), and never
quotes any part of the URL. A URL that does not parse is often a connection string with a
password that holds an unencoded '@', ':' or '/', whose pieces then stand where the host and
port should be: the parser's own messages quote them ("Port could not be cast to integer value
as 'TopSecret'"), so none of its texts is passed on.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

from monitor_tick.core.model import InvalidMonitor

MAX_URL_CHARS = 65_536  # as HTTP clients limit a URL (httpx refused longer ones)
_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")  # what no HTTP request line may carry
_IPV4_STYLE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")  # a host read as an address, never a name
# an IPv4 address as ipaddress.IPv4Address reads one: four decimal octets up to 255, none with a
# leading zero (tests/test_url_checks.py holds the two to each other); a check costs a tenth of
# parsing it, and every due HTTP row's host is checked
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}")
_ENCODE_HINT = " (a user or password with @ : / ? or # in it must be percent-encoded: %40 %3A %2F %3F %23)"


def split(url: str, what: str = "url", *, host_list: bool = False) -> SplitResult:
    """urlsplit(url) with its port read. Raises InvalidMonitor('url is not valid: ...'), `what`
    naming the URL ('docker:// host' for one inside another's query). `host_list`: a list of
    hosts (libpq's 'h1:5432,h2:5432') is left to the caller, its ports unread."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise InvalidMonitor(f"{what} is not valid: {_unsplittable(url)}") from None
    host_and_port = parts.netloc.rpartition("@")[2]
    if "," in host_and_port:  # libpq's and Redis clusters' host lists: a monitor probes one host
        if host_list:
            return parts
        raise InvalidMonitor(f"{what} is not valid: its host is a list (a comma in it): a monitor checks one host")
    try:
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError:
        port = host_and_port.rpartition("]")[2].partition(":")[2]
        number = port.isdigit() and port.isascii()
        wrong = "its port is out of range (1 to 65535)" if number else "its port is not a number"
        raise InvalidMonitor(f"{what} is not valid: {wrong}{_ENCODE_HINT if '@' in url else ''}") from None
    return parts


def _unsplittable(url: str) -> str:
    """What urlsplit refused in `url`, in our words: brackets that hold no IPv6 address, or a
    character that Unicode's NFKC normalization turns into URL punctuation."""
    netloc = url.partition("//")[2]
    netloc = netloc[: min((i for i in map(netloc.find, "/?#") if i >= 0), default=len(netloc))]
    if "[" in netloc or "]" in netloc:
        return "its host in [ ] is not an IPv6 address" + (_ENCODE_HINT if "@" in url else "")
    return "its host, user or password holds a character that Unicode normalization turns into / ? # @ or :"


def http_host(parts: SplitResult) -> str:
    """The host of an http(s):// URL in ASCII, as an HTTP client sends it: a name that is not
    ASCII in IDNA (the `idna` package's IDNA 2008, as httpx encoded it; Python's own codec is
    IDNA 2003, which reads 'straße' as 'strasse'). Raises InvalidMonitor for a host that looks
    like an IPv4 address and is not one, and for a name IDNA cannot encode."""
    host = parts.hostname
    if not host:
        raise InvalidMonitor("url has no host")
    if _IPV4_STYLE.fullmatch(host):
        if not _IPV4.fullmatch(host):
            raise InvalidMonitor("url is not valid: its host looks like an IPv4 address but is not one")
        return host
    if host.isascii():
        return host
    import idna  # only for a name that is not ASCII

    try:
        return idna.encode(host).decode("ascii")
    except idna.IDNAError:
        raise InvalidMonitor("url is not valid: its host is not a name IDNA can encode") from None


def check_http(url: str) -> SplitResult:
    """An http(s):// URL as an HTTP request can carry it (split, then http_host). Raises
    InvalidMonitor."""
    if len(url) > MAX_URL_CHARS:
        raise InvalidMonitor(f"url is longer than {MAX_URL_CHARS:,} characters")
    if _ASCII_CONTROL.search(url):
        raise InvalidMonitor("url contains a control character")
    parts = split(url)
    http_host(parts)
    return parts
