"""Secrets stay out of output, the database is private, SQL is parameterised, and the opt-in
guard refuses private addresses on the address actually connected to, redirects included."""

from __future__ import annotations

import ipaddress
import json
import os
import random
import re
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.redact import redact_text, redact_url
from monitor_tick.probes.guard import AddressGuard
from monitor_tick.run.tick import TickOptions, run_tick
from tests.conftest import add
from tests.servers import LocalServer, refused_port, send_response

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
MINUTE = 29_934_720


def added_before_minute() -> dict[str, str]:
    """The environment for `add` run as if a minute before MINUTE (clock.py's test offset):
    replays record nothing for monitors added after their minute."""
    offset_ms = clock.minute_start_ms(MINUTE - 1) - clock.now_ms()
    return {**os.environ, "MONITOR_TICK_TEST_CLOCK_OFFSET_MS": str(offset_ms)}


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:hunter2@example.org/x?token=abc&page=2", "https://***@example.org/x?token=***&page=***"),
        ("https://example.org/health", "https://example.org/health"),
        ("http://:pw@example.org:8080/?key=", "http://***@example.org:8080/?key=***"),
        ("https://example.org/#frag-secret", "https://example.org/"),
        ("https://example.org/p?s3cr3ttoken", "https://example.org/p?***"),
        ("https://example.org/p?a=1&bare", "https://example.org/p?a=***&***"),
        # a password with '@', ':' and '/' typed in unencoded: its pieces would show as host and path
        ("postgresql://app:Ab@cd:TopSecretX/y@127.0.0.1:5432/appdb", "postgresql://***"),
        ("redis://:Ab@cd:TopSecretX@127.0.0.1:6379:1", "redis://***"),
        ("https://[::1/x", "https://***"),
        ("tcp://host:port", "tcp://host:port"),  # a usage example in a cause: no user info, nothing hidden
    ],
)
def test_urls_are_redacted_for_display(url: str, shown: str) -> None:
    assert redact_url(url) == shown


MIB = 1024 * 1024
# the pattern redact_text used before it was made linear: the reference its results are held to
OLD_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


def old_redact_text(text: str) -> str:
    return OLD_URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)


class Hung(Exception):
    pass


def _hung(signum: int, frame: object) -> None:
    raise Hung


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("a" * MIB, "a" * MIB),  # a scheme's characters without '://': the old pattern's worst case
        ("a1+.-" * (MIB // 5), "a1+.-" * (MIB // 5)),
        ("a:/" * (MIB // 3), "a:/" * (MIB // 3)),
        ("x" * MIB + "://h/?token=s3cr3t", "x" * MIB + "://h/?token=***"),
        ("see https://h/?k=v " * (MIB // 20), "see https://h/?k=*** " * (MIB // 20)),
        ("1://" * (MIB // 4), "1://" * (MIB // 4)),  # no scheme, but every '://' is followed by a URL's rest
    ],
    ids=["letters", "scheme-characters", "almost-a-scheme", "long-scheme", "many-urls", "no-scheme"],
)
def test_redacting_a_mebibyte_of_text_ends_under_an_alarm(text: str, redacted: str) -> None:
    """A guard against hanging (a keyword or name of any length reaches redact_text through
    show, export, report and the status page), not a measure of time: bench/redact.py times it."""
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(10)
    try:
        shown = redact_text(text)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert shown == redacted


def test_redacted_text_is_what_the_old_pattern_gave_on_a_corpus() -> None:
    corpus = [
        "",
        "plain words",
        "down: https://u:p@h/x?token=abc, then http://h2/?a=1",
        "1http://h/?t=x",  # a URL right after a digit: the scheme starts at the first letter
        "9+.-a://h?x=1",
        "123://h?x=1",  # no letter before '://': no URL
        "ab:://h",
        "a://",
        "a:// h",
        'x="https://h/?k=v"<b>',
        "ftp://h/a?b=c\u00a0next https://h/?d=e",
        "a://b://c?d=e",
        "é://h?x=1 and éa://h?y=2",
        "://h?x=1",
    ]
    pieces = ["http", "a", "Z", "1", "+", ".", "-", "://", ":", "/", " ", "?", "k=v", "&", "@", "#", '"', "'"]
    pieces += ["<", ">", "\t", "\u00a0", "é", "u:p@"]
    shapes = random.Random(21)
    weights = [4 if piece in ("://", "http", "k=v", "?") else 1 for piece in pieces]
    corpus += ["".join(shapes.choices(pieces, weights, k=shapes.randrange(30))) for _ in range(20_000)]
    assert sum(old_redact_text(text) != text for text in corpus) > 2_000  # the corpus holds URLs
    for text in corpus:
        assert redact_text(text) == old_redact_text(text), text


def test_credentials_and_tokens_never_reach_output_or_stored_causes(tmp_path: Path, local_server: LocalServer) -> None:
    db = str(tmp_path / "m.db")
    secret_urls = [
        f"http://admin:hunter2@127.0.0.1:{local_server.port}/status/503?token=s3cr3t",
        f"http://admin:hunter2@127.0.0.1:{refused_port()}/?token=s3cr3t",
        f"http://admin:hunter2@127.0.0.1:{local_server.port}/hang?token=s3cr3t",
    ]
    outputs = []
    for n, url in enumerate(secret_urls):
        args = ["add", url, "--name", f"m{n}", "--every", "1m", "--retries", "0", "--timeout", "1s", "--db", db]
        outputs.append(
            subprocess.run([MONITOR_TICK, *args], capture_output=True, text=True, timeout=60, env=added_before_minute())
        )
    for args in (
        ["--minute", str(MINUTE), "--json", "-v"],
        ["--minute", str(MINUTE + 1), "-v"],
        ["list"],
        ["list", "--json"],
        ["report", "--json"],
        ["--dry-run", "--json", "--minute", str(MINUTE)],
    ):
        outputs.append(subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60))
    text = "".join(run.stdout + run.stderr for run in outputs)
    assert "hunter2" not in text and "s3cr3t" not in text
    assert "***@127.0.0.1" in text  # the URLs are shown, redacted
    conn = sqlite3.connect(db)
    causes = [row[0] for row in conn.execute("SELECT cause FROM incidents")]
    assert sorted(causes) == ["connect refused", "status 503", "timeout"]


def test_the_database_file_is_readable_only_by_its_owner(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    subprocess.run([MONITOR_TICK, "--db", str(db), "--minute", str(MINUTE)], check=True, timeout=60)
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600


def test_hostile_names_and_urls_are_data_not_sql(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    name = "x'); DROP TABLE monitors; --"
    monitor = add(conn, local_server.url("/ok?q='OR'1'='1';--"), name=name)
    assert store.monitor_id(conn, name) == monitor
    run_tick(TickOptions(db_path=db_path, minute=MINUTE))
    assert conn.execute("SELECT name FROM monitors").fetchall() == [(name,)]
    assert (
        json.loads(
            subprocess.run(
                [MONITOR_TICK, "list", "--json", "--db", db_path], capture_output=True, text=True, timeout=60
            ).stdout
        )[0]["name"]
        == name
    )


@pytest.mark.parametrize(
    ("address", "blocked"),
    [
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("172.16.0.1", True),
        ("192.168.1.1", True),
        ("169.254.169.254", True),  # cloud metadata
        ("100.64.0.1", True),
        ("0.0.0.0", True),
        ("224.0.0.1", True),
        ("::1", True),
        ("fe80::1", True),
        ("fd00:ec2::254", True),  # AWS metadata over IPv6
        ("::ffff:127.0.0.1", True),
        ("2002:7f00:1::1", True),  # 6to4 wrapping 127.0.0.1
        ("2002:a9fe:a9fe::1", True),  # 6to4 wrapping 169.254.169.254
        ("fec0::1", True),  # IPv6 site-local
        ("::ffff:10.0.0.1", True),
        ("93.184.215.14", False),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", False),
        ("1.1.1.1", False),
    ],
)
def test_the_guard_blocks_every_non_public_address(address: str, blocked: bool) -> None:
    assert AddressGuard().is_blocked(ipaddress.ip_address(address)) is blocked


def test_with_the_guard_a_name_that_resolves_to_loopback_is_refused(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    monitor = add(conn, f"http://localhost:{local_server.port}/ok", retries=0)
    report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, guard=AddressGuard()))
    # a refusal is a configuration error, not a check (tests/reliability/test_block_private.py)
    assert report.results == []
    ((refused, cause),) = report.refused
    assert refused == monitor
    assert cause.startswith("refused by --block-private: blocked: ") and cause.endswith("is not a public address")
    assert local_server.hits.total == 0


def test_with_the_guard_a_redirect_to_a_blocked_address_is_refused(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer
) -> None:
    # The guard here blocks only 127.0.0.2 so that the first hop (127.0.0.1) is allowed: the
    # redirect's target is checked again, at connect time.
    with LocalServer(host="127.0.0.2") as inner:

        async def to_inner(reader: object, writer: object, path: str, method: str) -> None:
            await send_response(writer, 302, b"", method=method, headers={"Location": inner.url("/ok")})  # type: ignore[arg-type]

        local_server.route("/to-inner", to_inner)
        add(conn, local_server.url("/to-inner"), retries=0)
        report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, guard=AddressGuard(blocked=["127.0.0.2/32"])))
        assert report.refused[0][1] == "refused by --block-private: blocked: 127.0.0.2 is not a public address"
        assert local_server.hits["/to-inner"] == 1 and inner.hits.total == 0
        # without the guard the same monitor is up: the refusal was the guard's
        report = run_tick(TickOptions(db_path=db_path, minute=MINUTE + 1))
        assert report.results[0].status == "up" and inner.hits["/ok"] == 1


def test_the_guard_is_opt_in_from_the_command_line(tmp_path: Path, local_server: LocalServer) -> None:
    db = str(tmp_path / "m.db")
    subprocess.run(
        [MONITOR_TICK, "add", local_server.url("/ok"), "--every", "1m", "--db", db],
        check=True,
        capture_output=True,
        timeout=60,
        env=added_before_minute(),
    )
    plain = subprocess.run(
        [MONITOR_TICK, "--db", db, "--minute", str(MINUTE), "--json"], capture_output=True, text=True, timeout=60
    )
    guarded = subprocess.run(
        [MONITOR_TICK, "--db", db, "--minute", str(MINUTE + 1), "--json", "--retry-delay", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MONITOR_TICK_BLOCK_PRIVATE": "1"},
    )
    assert json.loads(plain.stdout)["up"] == 1
    assert (json.loads(guarded.stdout)["down"], json.loads(guarded.stdout)["invalid"]) == (0, 1)


@pytest.mark.parametrize("scheme", ["tcp", "tls"])
def test_with_the_guard_tcp_and_tls_monitors_are_refused_too(
    conn: sqlite3.Connection, db_path: str, local_server: LocalServer, scheme: str
) -> None:
    add(conn, f"{scheme}://localhost:{local_server.port}", retries=0)
    report = run_tick(TickOptions(db_path=db_path, minute=MINUTE, guard=AddressGuard()))
    assert report.results == []
    ((_, cause),) = report.refused
    assert cause.startswith(f"refused by --block-private: {scheme}: blocked: ")
    assert cause.endswith("is not a public address")
