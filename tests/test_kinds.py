"""The kinds table: every kind is one entry in probes.KINDS, and everything else is shared."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.core.model import OPTION_FLAGS, OPTIONS, InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import (
    KIND_OF_SCHEME,
    KINDS,
    PROBES,
    Kind,
    ProbeContext,
    check_monitor,
    host_local,
    monitor_from_row,
    new_monitor,
)
from tests.servers import ca_pem_path

# the manual's page with the kinds table
KINDS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "monitors.md"
runner = CliRunner()

# One URL per kind, for the table-driven tests below (a new kind adds its own).
SAMPLE_URLS = {
    "http": "https://example.test/health",
    "tls": "tls://example.test",
    "tcp": "tcp://example.test:5432",
    "heartbeat": "heartbeat",
    "dns": "dns://example.test?type=A&server=192.0.2.53",
    "icmp": "icmp://example.test",
    "smtp": "smtp://mail.example.test:587?starttls=1",
    "ssh": "ssh://example.test",
    "ws": "wss://example.test/socket",
    "postgresql": "postgresql://app:${PG_PASSWORD}@db.example.test/app",
    "mysql": "mysql://app:pw@db.example.test:3307/shop?tls=1",
    "redis": "rediss://:pw@cache.example.test/2",
    "docker": "docker://web?host=unix:///run/docker.sock",
}
# A value other than every kind's default, per option.
OTHER_VALUES = {
    "method": "HEAD",
    "expect_status": "200",
    "keyword": "ok",
    "timeout_s": 3.0,
    "retries": 2,
    "keyword_absent": "maintenance",
    "expires_within_sec": 86_400,
    "grace_sec": 600,
    "max_latency_ms": 500,
    "json_field": "status=UP",
    "headers": "X-Test: 1",
    "basic_auth": "user:${PASSWORD}",
    "body": '{"ping": 1}',
    "ca_file": ca_pem_path(),
    "insecure": True,
}
# What an option needs beside it to be usable (given after it, so a refusal names the option)
COMPANIONS = {"body": {"method": "POST"}}


def test_every_kind_has_a_sample_and_every_option_a_flag_and_a_value() -> None:
    assert set(SAMPLE_URLS) == set(PROBES) == {kind.name for kind in KINDS}
    assert set(OTHER_VALUES) == set(OPTION_FLAGS) == set(OPTIONS)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_each_kind_is_selected_by_its_schemes_and_documented_in_help_and_the_manual(kind: Kind) -> None:
    assert all(KIND_OF_SCHEME[scheme] == kind.name for scheme in kind.schemes)
    assert set(kind.options) <= set(OPTIONS) and set(kind.defaults) <= set(OPTIONS)
    help_text = " ".join(runner.invoke(app, ["add", "--help"]).stdout.split())
    assert kind.usage in help_text
    assert f"`{kind.usage}`" in KINDS_PAGE.read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_each_kind_accepts_its_own_options_and_refuses_the_others_by_flag(kind: Kind) -> None:
    url = SAMPLE_URLS[kind.name]
    plain = new_monitor(name=None, url=url, interval_sec=300, aligned=False, given={})
    assert check_monitor(plain) is kind
    for option in OPTIONS:
        given = {option: OTHER_VALUES[option], **COMPANIONS.get(option, {})}
        if option == "expires_within_sec" and kind.name == "http":
            url = "https://example.test/"
        if option in kind.options:
            monitor = new_monitor(name=None, url=url, interval_sec=300, aligned=False, given=given)
            assert getattr(monitor, option) == OTHER_VALUES[option]
        else:
            instead = f": {kind.instead[option]}" if option in kind.instead else ""
            refusal = f"^{re.escape(f'{OPTION_FLAGS[option]} does not apply to {kind.name} monitors{instead}')}$"
            with pytest.raises(InvalidMonitor, match=refusal):
                new_monitor(name=None, url=url, interval_sec=300, aligned=False, given=given)


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("ftp://example.test/", "unsupported scheme 'ftp'"),
        ("example.test", "url has no scheme (e.g. https://)"),
        ("tcp://example.test", "tcp:// needs a port: tcp://host:port"),
        ("tcp://example.test:0", "port 0 cannot be connected to"),
        ("tls://example.test/path", "tls:// takes only a host and a port"),
        ("tls://user@example.test", "tls:// takes only a host and a port"),
        ("tls://:443", "url has no host"),
        ("heartbeat:", "a heartbeat's url is the word 'heartbeat'"),
        ("http://example.test:99999/", "url is not valid: its port is out of range (1 to 65535)"),
        (
            "postgresql://db.example.test/app",
            "postgresql:// needs a user: postgresql://user[:password]@host[:port]/dbname",
        ),
        ("postgres://app@db.example.test/a/b", "postgresql:// takes one database name after the host"),
        (
            "postgresql://app@db.example.test/app?sslmode=strict",
            "sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full",
        ),
        (
            "postgresql://app@db.example.test/app?sslmode=verify-full",
            "sslmode=verify-full needs sslrootcert=PATH (a CA file) or sslrootcert=system",
        ),
        (
            "postgresql://app@db.example.test/app?sslmode=verify-ca&sslrootcert=ca.pem",
            "sslrootcert must be an absolute path or system",
        ),
        (
            "postgresql://app@db.example.test/app?options=-c%20x",
            "postgresql:// takes only sslmode, sslrootcert, host in its query",
        ),
        ("postgresql://app@db.example.test/app?host=run/pg", "host must be an absolute path"),
        ("postgresql://app@db.example.test/app?host=/run/pg", "postgresql:// with host= takes no host but localhost"),
        ("postgresql://app@/app", "url has no host"),
        ("mysql://db.example.test/shop", "mysql:// needs a user: mysql://user[:password]@host[:port][/dbname]"),
        ("mariadb://app@db.example.test:0/shop", "port 0 cannot be connected to"),
        ("mysql://app@db.example.test/shop?ssl=1", "mysql:// takes only unix_socket, tls in its query"),
        ("mysql://app@db.example.test/shop?tls=true", "mysql:// tls takes only 1: tls=1 requires TLS"),
        ("mysql://app@db.example.test/shop#x", "mysql:// takes no #fragment"),
        ("redis://cache.example.test/db1", "redis:// takes a database number after the host: redis://host/0"),
        ("redis://cache.example.test?db=1", "redis:// takes no parameters in its query"),
        ("redis://ops@cache.example.test", "redis:// with a user needs its password: redis://user:password@host"),
    ],
)
def test_urls_a_kind_cannot_use_are_refused_with_a_cause(url: str, cause: str) -> None:
    with pytest.raises(InvalidMonitor) as refused:
        new_monitor(name=None, url=url, interval_sec=300, aligned=False, given={})
    assert str(refused.value) == cause


@pytest.mark.parametrize(
    ("tls", "plain", "refusal"),
    [
        ("rediss://cache.example.test", "redis://cache.example.test", "--expires-within needs a rediss:// url"),
        (
            "mysql://app@db.example.test?tls=1",
            "mysql://app@db.example.test",
            r"--expires-within needs tls=1 \(mysql://...\?tls=1\)",
        ),
    ],
)
def test_a_database_certificate_expiry_is_judged_only_over_tls(tls: str, plain: str, refusal: str) -> None:
    given = {"expires_within_sec": 86_400}
    assert new_monitor(name=None, url=tls, interval_sec=300, aligned=False, given=given).expires_within_sec == 86_400
    with pytest.raises(InvalidMonitor, match=f"^{refusal}$"):
        new_monitor(name=None, url=plain, interval_sec=300, aligned=False, given=given)


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8080/health", "a loopback address"),
        ("https://LOCALHOST/", "a loopback address"),
        ("http://app.localhost/", "a loopback address"),
        ("tcp://[::1]:5432", "a loopback address"),
        ("tcp://[::ffff:127.0.0.2]:5432", "a loopback address"),
        ("tls://0.0.0.0", "a loopback address"),
        ("icmp://127.8.9.10", "a loopback address"),
        ("dns://example.org?server=127.0.0.53", "a loopback address"),  # the server, not the name
        ("dns://localhost?server=192.0.2.53", None),
        ("https://example.org/", None),
        ("http://10.0.0.5/", None),  # private, but another machine
        ("tcp://localhost.example.org:22", None),
        ("heartbeat", None),
        ("docker://web", "a unix socket"),
        ("docker://web?host=unix:///run/user/1000/docker.sock", "a unix socket"),
        ("docker://web?host=tcp://127.0.0.1:2375", "a loopback address"),
        ("docker://web?host=tcp://engine.lan:2375", None),
    ],
)
def test_a_monitor_of_this_machine_itself_is_host_local(url: str, local: str | None) -> None:
    monitor = new_monitor(name=None, url=url, interval_sec=60, aligned=False, given={})
    assert host_local(monitor) == local


def test_a_row_whose_option_does_not_fit_its_kind_is_an_invalid_monitor() -> None:
    row = {
        "id": 7,
        "name": "db",
        "kind": "tcp",
        "url": "tcp://example.test:5432",
        "interval_sec": 60,
        "effective_interval_sec": 60,
        "aligned": 0,
        "private": 0,
        "group_name": None,
        **{f: getattr(Monitor(0, "", "", "", 60, 60), f) for f in OPTIONS},
    }
    assert monitor_from_row(row).kind == "tcp"
    with pytest.raises(InvalidMonitor, match="^--keyword does not apply to tcp monitors$"):
        monitor_from_row({**row, "keyword": "hello"})


def test_a_new_kind_needs_only_its_entry_in_the_table(
    monkeypatch: pytest.MonkeyPatch, db_path: str, conn: sqlite3.Connection
) -> None:
    """A kind defined here, outside the package, joins the table the way a line in KINDS does;
    add, validation, the tick, rollups, incidents, list and --json then work for it unchanged."""

    async def probe_echo(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
        # (a retry gets what is left of the same deadline, so round it to the setting)
        return ProbeResult("down", None, None, f"echo: {monitor.url} after {round(monitor.timeout_s)}s")

    echo = Kind(name="echo", schemes=("echo",), usage="echo://host", probe=probe_echo, check=lambda m: None)
    monkeypatch.setitem(PROBES, echo.name, echo)
    monkeypatch.setitem(KIND_OF_SCHEME, "echo", echo.name)

    refused = runner.invoke(app, ["add", "echo://there", "--keyword", "x", "--db", db_path])
    assert refused.exit_code == 2 and "--keyword does not apply to echo monitors" in refused.stderr
    added = runner.invoke(app, ["add", "echo://there", "--every", "1m", "--timeout", "3s", "--db", db_path])
    assert added.exit_code == 0, added.output
    monitor = int(added.stdout)

    ticked = runner.invoke(app, ["--db", db_path, "--json", "--retry-delay", "0"])
    assert ticked.exit_code == 0, ticked.output
    result = json.loads(ticked.stdout)["results"]
    assert result == [
        {
            "id": monitor,
            "name": "echo://there",
            "kind": "echo",
            "status": "down",
            "cause": "echo: echo://there after 3s",
            "latency_ms": None,
            "http_status": None,
            "cert_expires_at": None,
            "cert_days_left": None,
            "phases": None,
        }
    ]
    assert store.incidents_for(conn, monitor)[0][2] == "echo: echo://there after 3s"
    listed = json.loads(runner.invoke(app, ["list", "--json", "--db", db_path]).stdout)
    assert (listed[0]["kind"], listed[0]["state"], listed[0]["note"]) == ("echo", "down", "echo: echo://there after 3s")
