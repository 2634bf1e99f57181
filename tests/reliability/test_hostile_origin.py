"""HTTP checks against a hostile origin (tests/hostile_origin.py), through the tick on a real
SQLite file: framing, keywords and charsets, compression, TLS's end and redirects. Each test
holds what the check recorded against what the server sent and received.

Not here: a check's latency charged for setting up the engine. Telling a check's own time from
the engine's set-up needs a measured duration compared with another, and tests never time
anything; the tick has no hook that says when a request starts, which a structural test would
need."""

from __future__ import annotations

import socket

import pytest

from monitor_tick.core.model import CheckResult
from monitor_tick.probes.http import MAX_BODY_BYTES
from tests.hostile_origin import (
    TlsEnd,
    encoded,
    head,
    raw,
    scripted,
    tick_check,
)
from tests.servers import LocalServer, valid_cert

PAGE = b"<html>status ok</html>"  # 22 bytes; the checks look for "status ok"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


# --- framing --------------------------------------------------------------------------------

FRAMING = {
    # incomplete by its own framing, though what came holds the keyword: down, never up
    "a Content-Length not reached": (head(200, "Content-Length: 1000") + PAGE, None),
    "a chunked stream cut short": (head(200, "Transfer-Encoding: chunked") + chunk(PAGE) + b"40\r\n<p>more", None),
    # a body whose length cannot be known: a protocol error
    "differing Content-Lengths": (head(200, "Content-Length: 22", "Content-Length: 23") + PAGE, "protocol error"),
    "a Content-Length that is not a number": (head(200, "Content-Length: twenty-two") + PAGE, "protocol error"),
    "a bad chunk size": (
        head(200, "Transfer-Encoding: chunked") + b"zz\r\n" + PAGE + b"\r\n0\r\n\r\n",
        "protocol error",
    ),
}


@pytest.mark.parametrize("framing", FRAMING)
@pytest.mark.parametrize("keyword", [None, "status ok"])
def test_a_response_incomplete_or_unknown_by_its_framing_is_down(
    db_path: str, local_server: LocalServer, framing: str, keyword: str | None
) -> None:
    answer, cause = FRAMING[framing]
    local_server.route("/page", raw(answer))
    result = tick_check(db_path, local_server.url("/page"), keyword=keyword, timeout_s=5.0)
    assert result.status == "down", result
    assert result.cause == cause if cause is not None else result.cause is not None
    assert set(local_server.hits) == {"/page"} and local_server.requests[0].method == "GET"


@pytest.mark.parametrize("keyword", [None, "status ok"])
def test_a_body_delimited_by_the_close_is_up_when_complete(
    db_path: str, local_server: LocalServer, keyword: str | None
) -> None:
    local_server.route("/page", raw(head(200, "Content-Type: text/html") + PAGE))  # no length: to the close
    result = tick_check(db_path, local_server.url("/page"), keyword=keyword)
    assert (result.status, result.http_status, result.cause) == ("up", 200, None)
    assert set(local_server.hits) == {"/page"}


# --- keywords and charsets -------------------------------------------------------------------

CAFE = "<html><p>Le café est ouvert.</p></html>"


def page(text: str, charset: str | None, encoding: str | None = None) -> bytes:
    """A whole text/html answer of `text`, encoded in `encoding` (default: `charset`, else
    UTF-8), declaring `charset` (none when None)."""
    body = text.encode(encoding or charset or "utf-8")
    content_type = "text/html" + (f"; charset={charset}" if charset else "")
    return head(200, f"Content-Type: {content_type}", f"Content-Length: {len(body)}") + body


@pytest.mark.parametrize("charset", [None, "utf-8"], ids=["undeclared", "utf-8"])
@pytest.mark.parametrize(
    ("keyword", "absent", "outcome"),
    [
        ("café", None, ("up", None)),
        (None, "café", ("down", "keyword present")),
        ("fermé", None, ("down", "keyword missing")),
    ],
    ids=["keyword", "absent", "missing"],
)
def test_a_page_that_declares_no_charset_is_read_as_utf8(
    db_path: str,
    local_server: LocalServer,
    charset: str | None,
    keyword: str | None,
    absent: str | None,
    outcome: tuple[str, str | None],
) -> None:
    assert keywords_judged(db_path, local_server, CAFE, charset, keyword, absent) == outcome


def keywords_judged(
    db_path: str, server: LocalServer, text: str, charset: str | None, keyword: str | None, absent: str | None
) -> tuple[str, str | None]:
    """(status, cause) of a check for `keyword` or `absent` of a page of `text` in `charset`
    (declared; None: not declared, UTF-8), which `server` was asked for once."""
    server.route("/page", raw(page(text, charset)))
    result = tick_check(db_path, server.url("/page"), keyword=keyword, keyword_absent=absent)
    assert server.hits == {"/page": 1}
    return result.status, result.cause


@pytest.mark.parametrize(
    ("before", "outcome"),
    [(MAX_BODY_BYTES - 100, ("up", None)), (MAX_BODY_BYTES, ("down", "keyword missing"))],
    ids=["inside", "past"],
)
def test_a_keyword_is_looked_for_in_the_first_mebibyte_of_the_decoded_body(
    db_path: str, local_server: LocalServer, before: int, outcome: tuple[str, str | None]
) -> None:
    """gzip squeezes the filler to a few KiB: the bound holds on what it decodes to."""
    local_server.route("/page", encoded(b"a" * before + b"needle" + b"a" * 4096, "gzip"))
    result = tick_check(db_path, local_server.url("/page"), keyword="needle")
    assert (result.status, result.cause) == outcome
    assert set(local_server.hits) == {"/page"}


# --- compression ----------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
@pytest.mark.parametrize(("keyword", "outcome"), [("café", ("up", None)), ("fermé", ("down", "keyword missing"))])
def test_a_compressed_body_is_decoded_before_its_keyword_is_looked_for(
    db_path: str, local_server: LocalServer, encoding: str, keyword: str, outcome: tuple[str, str | None]
) -> None:
    local_server.route("/page", encoded(CAFE.encode(), encoding))
    result = tick_check(db_path, local_server.url("/page"), keyword=keyword)
    assert (result.status, result.http_status, result.cause) == (outcome[0], 200, outcome[1])
    assert set(local_server.hits) == {"/page"}


# --- TLS's end -------------------------------------------------------------------------------


def tls_end_check(db_path: str, *, close_notify: bool) -> tuple[CheckResult, list[bytes]]:
    """A check, looking for "status ok", of a TLS server whose answer is PAGE, delimited by the
    connection's end, with or without close_notify: the check, and the requests' heads."""
    pair = valid_cert()
    with TlsEnd(pair.server_context, head(200, "Content-Type: text/html") + PAGE, close_notify=close_notify) as server:
        result = tick_check(db_path, server.url("/page"), keyword="status ok", ca_file=pair.ca_pem, timeout_s=5.0)
    assert server.requests and all(r.startswith(b"GET /page HTTP/1.1\r\n") for r in server.requests)
    return result, server.requests


def test_a_body_delimited_by_the_close_over_tls_with_close_notify_is_up(db_path: str) -> None:
    result, _ = tls_end_check(db_path, close_notify=True)
    assert (result.status, result.http_status, result.cause) == ("up", 200, None)


# --- redirects -------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["ftp", "gopher", "file"])
def test_a_redirect_is_followed_only_to_http_and_https(db_path: str, local_server: LocalServer, scheme: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as elsewhere:
        port = elsewhere.getsockname()[1]
        target = "file:///etc/passwd" if scheme == "file" else f"{scheme}://127.0.0.1:{port}/x"
        scripted(local_server, "/moved", (302, {"Location": target}))
        result = tick_check(db_path, local_server.url("/moved"))
        elsewhere.setblocking(False)
        with pytest.raises(BlockingIOError):
            elsewhere.accept()  # nothing connected there
    assert (result.status, result.cause) == ("down", "unsupported protocol")
    assert set(local_server.hits) == {"/moved"}


# what each explicit method becomes across each redirect, and whether its body goes along: as
# today's checks send it: 301 makes a GET of a POST, 302 and 303 of all but HEAD (as browsers do)
METHOD_AFTER = {
    ("POST", 301): "GET",
    ("POST", 302): "GET",
    ("POST", 303): "GET",
    ("PUT", 301): "PUT",
    ("PUT", 302): "GET",
    ("PUT", 303): "GET",
    ("HEAD", 301): "HEAD",
    ("HEAD", 302): "HEAD",
    ("HEAD", 303): "HEAD",
}


@pytest.mark.parametrize(("method", "status"), METHOD_AFTER, ids=lambda v: str(v))
def test_an_explicit_method_across_a_redirect_is_sent_as_today(
    db_path: str, local_server: LocalServer, method: str, status: int
) -> None:
    scripted(local_server, "/form", (status, {"Location": "/ok"}))
    body = None if method == "HEAD" else "x=1"
    result = tick_check(db_path, local_server.url("/form"), method=method, body=body)
    assert (result.status, result.http_status) == ("up", 200)
    after = METHOD_AFTER[(method, status)]
    kept_body = b"x=1" if after in ("POST", "PUT") else b""
    assert {(r.path, r.method, r.body) for r in local_server.requests} == {
        ("/form", method, (body or "").encode()),
        ("/ok", after, kept_body),
    }
    assert local_server.hits["/ok"] == 1
