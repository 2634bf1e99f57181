"""How `add`, `edit` and `apply` check a monitor's URL, through the installed command: what a
URL can only fail with at the tick is refused up front, in one line that says what is wrong and
where, and quotes no part of the URL's user info, query or path (a password typed in without
percent-encoding ends up where the parser looks for a host and a port)."""

from __future__ import annotations

import ipaddress
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
import trustme

from monitor_tick.core import clock, urls
from monitor_tick.core.model import InvalidMonitor
from monitor_tick.probes import new_monitor
from monitor_tick.probes.postgresql import USAGE as PG_USAGE
from tests.commands import MONITOR_TICK, created_or_nothing
from tests.servers import refused_port

SECRET = "TopSecretX"

# URLs whose user info holds an unencoded '@', ':' or '/', of every kind with an address, and
# other malformed ones; each carries SECRET somewhere a parser may mistake for a host or port
MALFORMED = [
    f"postgresql://app:Ab@cd:{SECRET}/y@127.0.0.1:57432/appdb",
    f"redis://:Ab@cd:{SECRET}/y@127.0.0.1:6379/0",
    f"mysql://app:Ab@cd:{SECRET}/y@127.0.0.1/shop",
    f"mariadb://app:{SECRET}:x@127.0.0.1:3306:1/shop",
    f"http://u:Ab@cd:{SECRET}/y@127.0.0.1/",
    f"https://u:Ab@[{SECRET}]@example.test/",
    f"https://u:Ab@cd:{SECRET}]@example.test/",
    f"https://example.test:{SECRET}/",
    f"rediss://u:Ab@cd:{SECRET}/@127.0.0.1:6380",
    f"ws://u:Ab@cd:{SECRET}/x@127.0.0.1/",
    f"wss://u@{SECRET}:99999/",
    f"tls://u:Ab@cd:{SECRET}@127.0.0.1:443",
    f"tcp://u:Ab@cd:{SECRET}@127.0.0.1:22",
    f"smtp://u:Ab@cd:{SECRET}@127.0.0.1:25",
    f"ssh://u:Ab@cd:{SECRET}@127.0.0.1:22",
    f"dns://u:Ab@cd:{SECRET}@example.test",
    f"icmp://u:Ab@cd:{SECRET}@127.0.0.1",
    f"docker://web?host=tcp://u:Ab@cd:{SECRET}@127.0.0.1:2375",
    f"docker://web?host=tcp://[{SECRET}]:2375",
    f"https://{SECRET}\u2100.example/",  # U+2100 is 'a/c' under NFKC
    f"postgresql://app@db.example.test/app?sslmode={SECRET}",
    f"postgresql://app@db.example.test/app?sslrootcert={SECRET}.pem",
    f"postgresql://app@db.example.test/app?host={SECRET}",
    f"postgresql://app@db.example.test/app?{SECRET}",
    f"redis://db.example.test/{SECRET}",
    f"mysql://app@db.example.test/shop?tls={SECRET}",
    f"dns://example.test?type={SECRET}",
    f"dns://example.test?server=127.0.0.1:{SECRET}",
    f"dns://example.test?{SECRET}=1",
]


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env=os.environ)


def test_the_reported_connection_string_says_the_port_is_not_a_number_without_its_password(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    for url in (
        f"postgresql://app:Ab@cd:{SECRET}/y@127.0.0.1:57432/appdb",
        f"redis://:Ab@cd:{SECRET}/y@127.0.0.1:6379/0",
    ):
        run = cli(db, "add", url)
        assert (run.returncode, run.stdout) == (2, "")
        assert run.stderr == (
            "monitor-tick: url is not valid: its port is not a number (a user or password with @ : / ? or # "
            "in it must be percent-encoded: %40 %3A %2F %3F %23)\n"
        )


@pytest.mark.parametrize("url", MALFORMED)
def test_a_refused_url_is_one_line_that_quotes_no_part_of_it(tmp_path: Path, url: str) -> None:
    db = str(tmp_path / "m.db")
    added = cli(db, "add", url)
    assert (added.returncode, added.stdout) == (2, ""), added.stdout
    assert added.stderr.startswith("monitor-tick: ") and added.stderr.count("\n") == 1
    assert SECRET not in added.stderr and SECRET.lower() not in added.stderr.lower()
    assert cli(db, "add", "http://127.0.0.1:9/", "--name", "kept").returncode == 0
    edited = cli(db, "edit", "kept", "--url", url)
    assert (edited.returncode, edited.stdout) == (2, "")
    assert edited.stderr.count("\n") == 1 and SECRET.lower() not in edited.stderr.lower()
    file = tmp_path / "monitors.toml"
    file.write_text(f'[monitors.api]\nurl = "{url}"\ninterval_sec = 60\n', encoding="utf-8")
    applied = cli(db, "apply", str(file))
    assert (applied.returncode, applied.stdout) == (2, "")
    assert applied.stderr.count("\n") == 1 and SECRET.lower() not in applied.stderr.lower()


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("http://example.test:99999/", "url is not valid: its port is out of range (1 to 65535)"),
        ("http://example.test:8O8O/", "url is not valid: its port is not a number"),
        ("https://[::1/", "url is not valid: its host in [ ] is not an IPv6 address"),
        ("https://[db.example]/", "url is not valid: its host in [ ] is not an IPv6 address"),
        ("http://01.2.3.4/", "url is not valid: its host looks like an IPv4 address but is not one"),
        ("http://a..b.example/", None),  # ASCII: sent as written, as before
        ("https://\u2603.example/", "url is not valid: its host is not a name IDNA can encode"),
        ("http://127.0.0.1:9/" + "b" * 65_536, "url is longer than 65,536 characters"),
        ("redis://h1,h2", "url is not valid: its host is a list (a comma in it): a monitor checks one host"),
        (
            "postgresql://app@h1:5432,h2:5432/app",
            "url is not valid: its host is a list (a comma in it): a monitor checks one host",
        ),
        ("https://bücher.example/", None),
        ("https://straße.de/", None),
        ("https://例え.テスト/", None),
    ],
)
def test_http_urls_are_refused_as_an_http_client_would_refuse_them(url: str, cause: str | None) -> None:
    if cause is None:
        assert new_monitor(url=url, given={}, name=None, interval_sec=60, aligned=False).url == url
        return
    with pytest.raises(InvalidMonitor) as refused:
        new_monitor(url=url, given={}, name=None, interval_sec=60, aligned=False)
    assert str(refused.value) == cause


# octets around every edge of the address rule: leading zeros, 255 and 256, four digits
_OCTETS = ["0", "00", "01", "007", "9", "10", "09", "99", "100", "199", "200", "249", "250", "255", "256", "260", "300"]
_OCTETS += ["999", "0255", "1000"]


@pytest.mark.parametrize("first", _OCTETS)
def test_a_host_that_looks_like_an_ipv4_address_is_one_exactly_when_ipaddress_reads_one(first: str) -> None:
    for rest in _OCTETS:
        for host in (f"{first}.{rest}.1.2", f"1.{first}.2.{rest}", f"{rest}.3.{first}.4", f"5.6.{rest}.{first}"):
            try:
                ipaddress.IPv4Address(host)
            except ValueError:
                with pytest.raises(InvalidMonitor, match="^url is not valid: its host looks like an IPv4 address"):
                    urls.http_host(urls.split(f"http://{host}/"))
            else:
                assert urls.http_host(urls.split(f"http://{host}:81/")) == host


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        ("postgresql://app@127.0.0.1:5432", "postgresql:// needs a database name: " + PG_USAGE),
        ("postgresql://app@127.0.0.1:5432/", "postgresql:// needs a database name: " + PG_USAGE),
        ("redis://127.0.0.1/2147483647", "redis:// database number must be 0 to 2147483646"),
        ("redis://h1,h2", "url is not valid: its host is a list (a comma in it): a monitor checks one host"),
        (
            "rediss://h1:6380,h2:6380/0",
            "url is not valid: its host is a list (a comma in it): a monitor checks one host",
        ),
        (
            "postgresql://app@127.0.0.1/app?sslmode=verify-full&sslrootcert=/nonexistent.pem",
            "sslrootcert: No such file or directory",
        ),
        ("postgresql://app@127.0.0.1/app?sslrootcert=/", "sslrootcert: Is a directory"),
        ("mariadb://:pw@127.0.0.1/db", "mysql:// needs a user: mysql://user[:password]@host[:port][/dbname]"),
        ("postgresql://:pw@127.0.0.1/db", "postgresql:// needs a user: " + PG_USAGE),
    ],
)
def test_add_refuses_a_url_that_could_only_fail_at_the_tick(tmp_path: Path, url: str, refusal: str) -> None:
    run = cli(str(tmp_path / "m.db"), "add", url)
    assert (run.returncode, run.stdout, run.stderr) == (2, "", f"monitor-tick: {refusal}\n")


def test_a_ca_file_of_sslrootcert_that_goes_away_makes_the_monitor_invalid_never_down(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ca = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(ca))
    url = f"postgresql://app@127.0.0.1:{refused_port()}/app?sslmode=verify-full&sslrootcert={ca}"
    assert cli(db, "add", url, "--name", "pg", "--every", "1m", "--retries", "0").returncode == 0
    minute = clock.minute_of_ms(clock.now_ms())
    conn = sqlite3.connect(db)
    conn.execute("UPDATE monitors SET created_at_ms = 0")
    conn.commit()
    conn.close()
    first = cli(db, "--minute", str(minute - 2), "--json")
    assert [(r["name"], r["status"]) for r in json.loads(first.stdout)["results"]] == [("pg", "down")]
    ca.unlink()
    later = cli(db, "--minute", str(minute - 1), "--json")
    assert later.returncode == 0 and json.loads(later.stdout)["results"] == []
    assert later.stderr == "monitor-tick: monitor 1 skipped: invalid monitor: sslrootcert: No such file or directory\n"
    listed = json.loads(cli(db, "list", "--json").stdout)
    assert [(row["name"], row["state"]) for row in listed] == [("pg", "invalid")]


def test_a_default_name_shows_no_docker_engine_nor_any_query_value_on_the_status_page(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    added = {
        "docker://web?host=unix:///run/user/1000/docker.sock": "docker://web?host=***",
        "docker://db?host=tcp://engine.lan:2375": "docker://db?host=***",
        "dns://example.org?type=TXT&server=192.0.2.53&expect=v%3Dspf1": "dns://example.org?type=***&server=***&expect=***",
        "smtp://mail.example.org:587?starttls=1": "smtp://mail.example.org:587?starttls=***",
        "https://u:pw-s3cret@example.org/health?token=tok-s3cret": "https://***@example.org/health?token=***",
    }
    for url in added:
        assert cli(db, "add", url).returncode == 0
    names = [row["name"] for row in json.loads(cli(db, "list", "--json").stdout)]
    assert sorted(names) == sorted(added.values())
    page = tmp_path / "status"
    assert cli(db, "status-page", "--out", str(page)).returncode == 0
    html = (page / "index.html").read_text(encoding="utf-8")
    for hidden in ("docker.sock", "/run/user", "engine.lan", "2375", "192.0.2.53", "spf1", "=TXT", "s3cret"):
        assert hidden not in html, hidden
    helped = subprocess.run([MONITOR_TICK, "add", "--help"], capture_output=True, text=True, env=os.environ).stdout
    assert "its credentials and every query value hidden (a Docker engine's too)" in " ".join(helped.split())


def test_a_malformed_database_url_in_db_is_one_line_that_quotes_no_part_of_it(tmp_path: Path) -> None:
    for url, why in (
        (f"postgresql://app:Ab@[{SECRET}@127.0.0.1:5/appdb", "its host in [ ] is not an IPv6 address"),
        (f"postgresql://app:Ab@cd:{SECRET}/y@127.0.0.1:5/appdb", "its port is not a number"),
    ):
        run = subprocess.run(
            [MONITOR_TICK, "list", "--db", url], capture_output=True, text=True, timeout=60, env=os.environ
        )
        assert (run.returncode, run.stdout) == (1, "")
        assert run.stderr.startswith(
            f"monitor-tick: cannot connect to database postgresql://***: --db is not valid: {why}"
        )
        assert run.stderr.count("\n") == 1 and SECRET not in run.stderr and "cd" not in run.stderr


def test_a_gatus_endpoint_with_a_malformed_url_is_skipped_saying_why_without_quoting_it(tmp_path: Path) -> None:
    config = tmp_path / "gatus.yaml"
    config.write_text(
        "endpoints:\n"
        f'  - {{name: a, url: "mongodb://u:{SECRET}1@db.lan/x", conditions: ["[CONNECTED] == true"]}}\n'
        f'  - {{name: b, url: "https://u:Ab@[{SECRET}2/x", conditions: ["[STATUS] == 200"]}}\n'
        f'  - {{name: c, url: "redis://:Ab@cd:{SECRET}3/y@cache.lan:6379", conditions: ["[CONNECTED] == true"]}}\n',
        encoding="utf-8",
    )
    run = cli(str(tmp_path / "m.db"), "import", "gatus", str(config))
    assert run.returncode == 0 and created_or_nothing(run.stderr, str(tmp_path / "m.db")), run.stderr
    assert "skipped   a: url: mongodb:// is not an endpoint type monitor-tick knows" in run.stdout
    assert "skipped   b: url is not valid: its host in [ ] is not an IPv6 address" in run.stdout
    assert "skipped   c: url is not valid: its port is not a number" in run.stdout
    assert SECRET not in run.stdout


def test_a_malformed_ping_url_is_refused_in_our_words_before_the_tick(tmp_path: Path) -> None:
    run = cli(str(tmp_path / "m.db"), "--ping-url", f"https://u:Ab@cd:{SECRET}/y@hc.example/")
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == (
        "monitor-tick: --ping-url: url is not valid: its port is not a number (a user or password with @ : / ? or # "
        "in it must be percent-encoded: %40 %3A %2F %3F %23)\n"
    )
