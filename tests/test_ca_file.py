"""--ca-file for every kind that speaks TLS: a home lab's own certificate authority, trusted by
one monitor, through the installed command against real TLS servers on 127.0.0.1 (HTTPS, a bare
TLS port, WebSocket, SMTP STARTTLS, Redis and MariaDB), whose certificates come from CAs of the
tests' own that the tick's default trust does not know."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from monitor_tick.core import clock
from tests import mariadb, redis_server
from tests.commands import MONITOR_TICK
from tests.servers import LocalServer, make_ca, valid_cert
from tests.test_probe_smtp import smtp_server
from tests.test_probe_ws import ws_server

# the tick's default trust: certifi's bundle, which knows none of the tests' CAs
DEFAULT_TRUST = {key: value for key, value in os.environ.items() if key not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env=DEFAULT_TRUST
    )


def test_each_tls_kind_trusts_its_own_ca_file_and_only_its_monitor_does(
    tmp_path: Path, maria_server: mariadb.Server, redis: redis_server.Server
) -> None:
    db = str(tmp_path / "m.db")
    lab = valid_cert(make_ca())
    with (
        LocalServer(tls=lab.server_context) as https,
        LocalServer(tls=lab.server_context) as tls,
        ws_server(lab.server_context) as (wss_port, _),
        smtp_server(lab.server_context) as (smtp_port, _),
    ):
        urls = {
            "https": (https.url("/ok"), lab.ca_pem),
            "tls": (f"tls://127.0.0.1:{tls.port}", lab.ca_pem),
            "wss": (f"wss://127.0.0.1:{wss_port}/", lab.ca_pem),
            "smtp": (f"smtp://127.0.0.1:{smtp_port}?starttls=1", lab.ca_pem),
            "rediss": (f"rediss://:{redis_server.PASSWORD}@localhost:{redis.tls_port}", redis.cert.ca_pem),
            "mysql": (
                f"mysql://{mariadb.USER}:{mariadb.PASSWORD}@localhost:{maria_server.port}/{mariadb.DATABASE}?tls=1",
                maria_server.cert.ca_pem,
            ),
        }
        for name, (url, ca_pem) in urls.items():
            added = cli(
                db, "add", url, "--name", f"{name} own CA", "--every", "1m", "--retries", "0", "--ca-file", ca_pem
            )
            assert added.returncode == 0, added.stderr
            assert cli(db, "add", url, "--name", f"{name} default", "--every", "1m", "--retries", "0").returncode == 0
        conn = sqlite3.connect(db)
        conn.execute("UPDATE monitors SET created_at_ms = 0")
        conn.commit()
        conn.close()
        done = cli(db, "--minute", str(clock.minute_of_ms(clock.now_ms()) - 1), "--json")
    assert done.returncode == 0, done.stderr
    results = {r["name"]: (r["status"], r["cause"]) for r in json.loads(done.stdout)["results"]}
    untrusted = {
        "https": "tls: certificate not trusted",
        "tls": "tls: certificate not trusted",
        "wss": "tls: certificate not trusted",
        "smtp": "tls: certificate not trusted",
        "rediss": "redis: tls: self-signed certificate",  # its certificate is its own CA
        "mysql": "mysql: tls: certificate not trusted",
    }
    assert results == {
        **{f"{name} own CA": ("up", None) for name in urls},
        **{f"{name} default": ("down", cause) for name, cause in untrusted.items()},
    }
    shown = json.loads(cli(db, "show", "tls own CA", "--json").stdout)
    assert shown["monitor"]["ca_file"] == lab.ca_pem


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        ("ws://127.0.0.1:9/", "--ca-file needs a wss:// url"),
        ("redis://127.0.0.1:9", "--ca-file needs a rediss:// url"),
        ("smtp://127.0.0.1:25", "--ca-file needs ?starttls=1: smtp://host[:port]?starttls=1"),
        ("mysql://app@127.0.0.1/shop", "--ca-file needs tls=1 (mysql://...?tls=1)"),
        ("http://127.0.0.1:9/", "--ca-file needs an https:// url"),
        ("tcp://127.0.0.1:22", "--ca-file does not apply to tcp monitors"),
        (
            "postgresql://app@127.0.0.1/app",
            "--ca-file does not apply to postgresql monitors: use ?sslmode=verify-full&sslrootcert=/path/ca.pem",
        ),
    ],
)
def test_a_ca_file_is_refused_where_nothing_speaks_tls(tmp_path: Path, url: str, refusal: str) -> None:
    ca = tmp_path / "ca.pem"
    make_ca().cert_pem.write_to_path(str(ca))
    run = cli(str(tmp_path / "m.db"), "add", url, "--ca-file", str(ca))
    assert (run.returncode, run.stderr) == (2, f"monitor-tick: {refusal}\n")


def test_a_ca_file_that_goes_away_makes_a_tls_monitor_invalid_never_down(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ca = tmp_path / "ca.pem"
    make_ca().cert_pem.write_to_path(str(ca))
    assert cli(db, "add", "tls://127.0.0.1:9", "--name", "lab", "--every", "1m", "--ca-file", str(ca)).returncode == 0
    conn = sqlite3.connect(db)
    conn.execute("UPDATE monitors SET created_at_ms = 0")
    conn.commit()
    conn.close()
    ca.unlink()
    done = cli(db, "--minute", str(clock.minute_of_ms(clock.now_ms()) - 1), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["results"] == []
    assert (
        done.stderr == f"monitor-tick: monitor 1 skipped: invalid monitor: --ca-file {ca}: No such file or directory\n"
    )
