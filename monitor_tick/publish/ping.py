"""`--ping-url`: tell an outside watcher (healthchecks.io and the like) after every tick that it
ran, or that it failed (`URL/fail`), so that cron stopping, or every tick failing, is noticed
where no mail server is set up.

Standard library only (the idle tick imports neither pycurl nor asyncio), and one hard deadline:
the request runs in a daemon thread that is abandoned when the deadline passes, so a watcher
that never answers costs the tick PING_TIMEOUT_S at most, never its exit code.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit, urlunsplit

PING_TIMEOUT_S = 3.0
USER_AGENT = "monitor-tick (ping)"


def check_ping_url(url: str) -> None:
    """Raises ValueError when `url` cannot be pinged: an http(s) URL with a host, whose port
    reads (a password typed in unencoded would be shown as its host: `where`)."""
    from monitor_tick.core import urls  # only with --ping-url: the idle tick does without it

    parts = urls.split(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")


def fail_url(url: str) -> str:
    """`url` with /fail appended to its path (a query string stays at the end)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/fail"))


def where(url: str) -> str:
    """host[:port] of `url`: what a message may show (the path is the watcher's secret)."""
    return urlsplit(url).netloc.rpartition("@")[2]


def ping(url: str, *, failed: bool, timeout_s: float = PING_TIMEOUT_S) -> str | None:
    """GET `url` (`url`/fail when `failed`). Returns None when it answered 2xx, else why not in a
    few words. Returns within about `timeout_s`."""
    import urllib.request  # only when pinging: it costs an idle tick about 20 ms

    target = fail_url(url) if failed else url
    outcome: list[str | None] = []

    def send() -> None:
        request = urllib.request.Request(target, headers={"User-Agent": USER_AGENT})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 -- checked: http(s)
                response.read(1024)
            outcome.append(None)
        except Exception as exc:  # noqa: BLE001 -- any failure is one line, never the tick's
            outcome.append(_reason(exc))

    thread = threading.Thread(target=send, name="monitor-tick-ping", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return outcome[0] if outcome else f"no answer within {timeout_s:g}s"


def _reason(exc: Exception) -> str:
    import urllib.error

    if isinstance(exc, urllib.error.HTTPError):
        return f"status {exc.code}"
    inner = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(inner, ConnectionRefusedError):
        return "connect refused"
    if isinstance(inner, TimeoutError):
        return f"no answer within {PING_TIMEOUT_S:g}s"
    if isinstance(inner, OSError) and inner.strerror:
        return inner.strerror.lower()
    return type(inner).__name__
