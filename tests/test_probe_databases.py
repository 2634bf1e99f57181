"""postgresql://, mysql:// and redis:// monitors against real servers on 127.0.0.1, through the
tick: PostgreSQL (tests/postgres.py), MariaDB (tests/mariadb.py) and Redis (tests/redis_server.py),
each started once per test process. A wrong password is refused by the real server."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import expiry_text
from monitor_tick.probes import new_monitor
from monitor_tick.probes.guard import AddressGuard
from monitor_tick.run.tick import TickOptions, TickReport, run_tick
from tests import daemons, mariadb, redis_server
from tests.commands import created_or_nothing
from tests.conftest import add, rollup
from tests.postgres import Server as PgServer
from tests.servers import refused_port
from tests.test_probe_tcp import listening_port

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
PG_USER, PG_PASSWORD = "watcher", "s3cret-pg"
# blocks only an address no test uses: 127.0.0.1 is allowed, and every connection goes through
# the guard's own lookup first
GUARD_ELSEWHERE = AddressGuard(blocked=["127.0.0.2/32"])


def tick(db_path: str, **options: object) -> TickReport:
    report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0, **options))  # type: ignore[arg-type]
    assert report.invalid == [], report.invalid
    return report


def outcomes(report: TickReport) -> dict[str, tuple[str, str | None]]:
    return {r["name"]: (r["status"], r["cause"]) for r in report.results_json()}


@pytest.fixture
def pg(pg_server: PgServer) -> Iterator[PgServer]:
    """The process's PostgreSQL server with a role that logs in over TCP with a password
    (scram-sha-256; everyone else is trusted, as tests/postgres.py sets it up)."""
    with pg_server.admin() as admin:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (PG_USER,)).fetchone() is None:
            admin.execute(f"CREATE ROLE {PG_USER} LOGIN PASSWORD '{PG_PASSWORD}'")
            hba = Path(pg_server.directory) / "data" / "pg_hba.conf"
            hba.write_text(f"host all {PG_USER} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
            admin.execute("SELECT pg_reload_conf()")
    yield pg_server


def test_postgresql_is_up_when_it_lets_the_user_in_and_down_with_the_cause_when_it_does_not(
    conn: sqlite3.Connection, db_path: str, pg: PgServer
) -> None:
    at = f"127.0.0.1:{pg.port}"
    up = add(conn, f"postgresql://{PG_USER}:{PG_PASSWORD}@{at}/postgres", name="up")
    add(conn, f"postgres://{PG_USER}:{PG_PASSWORD}@{at}/postgres", name="postgres scheme")
    wrong = add(conn, f"postgresql://{PG_USER}:wrong@{at}/postgres", name="wrong password", retries=0)
    add(conn, f"postgresql://{PG_USER}@{at}/postgres", name="no password", retries=0)
    add(conn, f"postgresql://nobody:x@{at}/postgres", name="no such role", retries=0)
    add(conn, f"postgresql://postgres@{at}/missing", name="no such database", retries=0)
    add(conn, f"postgresql://postgres@127.0.0.1:{refused_port()}/postgres", name="closed", retries=0)
    add(conn, f"postgresql://postgres@:{pg.port}/postgres?host={pg.directory}", name="unix socket")
    report = tick(db_path)
    assert outcomes(report) == {
        "up": ("up", None),
        "postgres scheme": ("up", None),
        "wrong password": ("down", "postgresql: authentication failed"),
        "no password": ("down", "postgresql: authentication failed"),
        "no such role": ("down", "postgresql: authentication failed"),
        "no such database": ("down", "postgresql: database does not exist"),
        "closed": ("down", "postgresql: connect refused"),
        "unix socket": ("up", None),
    }
    assert {r["kind"] for r in report.results_json()} == {"postgresql"}
    assert isinstance(report.results_json()[0]["latency_ms"], int)
    assert rollup(conn, up) == (1, 0) and rollup(conn, wrong) == (1, 1)
    assert store.incidents_for(conn, wrong)[0][2] == "postgresql: authentication failed"


def test_postgresql_reads_nothing_from_libpqs_environment(
    conn: sqlite3.Connection, db_path: str, pg: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the URL says everything: a password meant for one server is never offered to another,
    # and every host of a fleet probes alike
    with pg.admin() as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_USER,)).fetchone() is None:
            admin.execute(f"CREATE DATABASE {PG_USER}")
    add(conn, f"postgresql://{PG_USER}@127.0.0.1:{pg.port}/postgres", name="no password", retries=0)
    add(conn, f"postgresql://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{pg.port}/{PG_USER}", name="its own database")
    for name, value in {"PGPASSWORD": PG_PASSWORD, "PGSSLMODE": "require", "PGDATABASE": "missing"}.items():
        monkeypatch.setenv(name, value)
    assert outcomes(tick(db_path)) == {
        "no password": ("down", "postgresql: authentication failed"),
        "its own database": ("up", None),
    }


def test_mysql_and_mariadb_are_up_when_the_server_answers_a_ping_and_down_with_the_cause_when_not(
    conn: sqlite3.Connection, db_path: str, maria_server: mariadb.Server
) -> None:
    at = f"127.0.0.1:{maria_server.port}"
    up = add(conn, maria_server.url(), name="up")
    add(conn, maria_server.url().replace("mysql://", "mariadb://"), name="mariadb scheme")
    add(conn, f"mysql://{mariadb.USER}:{mariadb.PASSWORD}@{at}", name="no database")
    wrong = add(conn, maria_server.url(password="wrong"), name="wrong password", retries=0)
    add(conn, maria_server.url(password=None), name="no password", retries=0)
    add(conn, f"mysql://root@{at}/missing", name="no such database", retries=0)
    add(conn, maria_server.url(database="mysql"), name="another's database", retries=0)
    add(conn, f"mysql://root@127.0.0.1:{refused_port()}", name="closed", retries=0)
    add(
        conn,
        f"mysql://{mariadb.USER}:{mariadb.PASSWORD}@localhost/{mariadb.DATABASE}?unix_socket={maria_server.socket}",
        name="unix socket",
    )
    report = tick(db_path)
    assert outcomes(report) == {
        "up": ("up", None),
        "mariadb scheme": ("up", None),
        "no database": ("up", None),
        "wrong password": ("down", "mysql: authentication failed"),
        "no password": ("down", "mysql: authentication failed"),
        "no such database": ("down", "mysql: database does not exist"),
        # MariaDB says so for a database that does not exist too, unless the user may see them all
        "another's database": ("down", "mysql: access to the database denied"),
        "closed": ("down", "mysql: connect refused"),
        "unix socket": ("up", None),
    }
    assert {r["kind"] for r in report.results_json()} == {"mysql"}
    assert rollup(conn, up) == (1, 0) and rollup(conn, wrong) == (1, 1)


def test_redis_is_up_when_it_answers_ping_and_down_with_the_cause_when_not(
    conn: sqlite3.Connection, db_path: str, redis: redis_server.Server
) -> None:
    up = add(conn, redis.url(), name="up")
    add(conn, redis.url(redis_server.USER_PASSWORD, user=redis_server.USER, db=3), name="acl user")
    wrong = add(conn, redis.url("wrong"), name="wrong password", retries=0)
    add(conn, redis.url(None), name="no password", retries=0)
    add(conn, redis.url(user=redis_server.USER), name="another user's password", retries=0)
    add(conn, redis.url(db=99), name="no such database", retries=0)
    add(conn, f"redis://127.0.0.1:{refused_port()}", name="closed", retries=0)
    report = tick(db_path)
    assert outcomes(report) == {
        "up": ("up", None),
        "acl user": ("up", None),
        "wrong password": ("down", "redis: authentication failed"),
        "no password": ("down", "redis: authentication failed"),
        "another user's password": ("down", "redis: authentication failed"),
        "no such database": ("down", "redis: database does not exist"),
        "closed": ("down", "redis: connect refused"),
    }
    assert {r["kind"] for r in report.results_json()} == {"redis"}
    assert rollup(conn, up) == (1, 0) and rollup(conn, wrong) == (1, 1)


def tls_url(request: pytest.FixtureRequest, kind: str, host: str) -> tuple[str, daemons.Certificate]:
    """A URL of `kind` that logs in over TLS to the process's server at `host`, and the
    certificate that server sends (for localhost only)."""
    if kind == "redis":
        server: redis_server.Server = request.getfixturevalue("redis")
        return f"rediss://:{redis_server.PASSWORD}@{host}:{server.tls_port}", server.cert
    maria: mariadb.Server = request.getfixturevalue("maria_server")
    return f"mysql://{mariadb.USER}:{mariadb.PASSWORD}@{host}:{maria.port}/{mariadb.DATABASE}?tls=1", maria.cert


@pytest.mark.parametrize("kind", ["redis", "mysql"])
def test_tls_verifies_the_certificate_for_the_urls_name_and_judges_its_expiry(
    conn: sqlite3.Connection, db_path: str, request: pytest.FixtureRequest, kind: str
) -> None:
    url, cert = tls_url(request, kind, "localhost")
    add(conn, url, name="tls")
    add(conn, url, name="expiring", expires_within_sec=30 * 86_400)
    add(conn, url, name="not yet", expires_within_sec=86_400)
    add(conn, tls_url(request, kind, "127.0.0.1")[0], name="by address", retries=0)
    report = tick(db_path, verify=ssl.create_default_context(cafile=cert.ca_pem))
    expires_at_ms = clock.s_to_ms(cert.not_after.timestamp())
    assert outcomes(report) == {
        "tls": ("up", None),
        "expiring": ("down", f"tls: {expiry_text(expires_at_ms, report.now_ms)}"),
        "not yet": ("up", None),
        # the certificate is for localhost only
        "by address": ("down", f"{kind}: tls: certificate is for another host"),
    }
    seen = {r["name"]: r["cert_days_left"] for r in report.results_json()}
    assert seen["tls"] == seen["expiring"] == clock.days_left(expires_at_ms, report.now_ms)
    assert seen["by address"] is None
    # the tick's own trust (the system's) does not know the test's CA; Redis sends the CA's
    # certificate along (OpenSSL: "self-signed certificate in certificate chain"), MariaDB only
    # its own ("unable to get local issuer certificate")
    report = tick(db_path, minute=clock.minute_of_ms(report.now_ms) - 1)
    untrusted = {"redis": "self-signed certificate", "mysql": "certificate not trusted"}[kind]
    assert outcomes(report)["tls"] == ("down", f"{kind}: tls: {untrusted}")


def test_a_unix_socket_that_is_not_there_is_down_and_never_a_network_failure(
    conn: sqlite3.Connection, db_path: str, tmp_path: Path
) -> None:
    # the server is not running here: nothing on the way failed, so a failed canary never sets
    # it aside as this host's lost network (connect error would)
    add(conn, f"postgresql://app@/app?host={tmp_path}", name="postgresql", retries=0)
    add(conn, f"mysql://app@localhost?unix_socket={tmp_path}/mysqld.sock", name="mysql", retries=0)
    assert outcomes(tick(db_path)) == {
        "postgresql": ("down", "postgresql: socket not found"),
        "mysql": ("down", "mysql: socket not found"),
    }


@pytest.mark.parametrize("kind", ["postgresql", "mysql", "redis"])
def test_a_server_that_never_answers_is_down_with_a_timeout_within_the_monitors_timeout(
    conn: sqlite3.Connection, db_path: str, kind: str
) -> None:
    with listening_port() as port:  # the kernel completes the connection; nothing ever answers
        path = "0" if kind == "redis" else "db"
        add(conn, f"{kind}://someone:pw@127.0.0.1:{port}/{path}", timeout_s=1.0, retries=0)
        report = tick(db_path)
    assert [(r.status, r.cause) for r in report.results] == [("down", f"{kind}: timeout")]
    assert report.duration_ms < 5_000


def test_a_mysql_server_that_never_answers_is_a_timeout_whichever_of_its_two_timeouts_ends_the_wait() -> None:
    """The probe's deadline, and PyMySQL's own socket timeouts on its thread (the deadline left):
    when PyMySQL's ends the wait first, the cause is the same timeout, never `connection lost`."""
    from monitor_tick.probes import mysql

    pymysql = mysql._pymysql()
    monitor = new_monitor(name="m", url="mysql://someone:pw@127.0.0.1/db", interval_sec=60, aligned=False, given={})
    with listening_port() as port:  # the kernel completes the connection; nothing ever answers
        login = mysql._login(pymysql, mysql._target(monitor)._replace(port=port), None, 0.2)
        with socket.create_connection(("127.0.0.1", port)) as sock, pytest.raises(pymysql.err.Error) as raised:
            mysql._ping(login, sock)  # on this thread, as the probe's worker thread runs it
    assert mysql.cause_of_error(pymysql, raised.value) == "timeout"


@contextmanager
def another_service() -> Iterator[int]:
    """A 127.0.0.1 port where another service answers (an SSH server's banner, to anything)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)

        def serve() -> None:
            while True:
                try:
                    client, _ = listener.accept()
                except OSError:  # the listener closed: the test is over
                    return
                with client:
                    client.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
                    client.settimeout(2)
                    with suppress(OSError):
                        client.recv(1024)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield listener.getsockname()[1]
        finally:
            with suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes accept() in the thread, which ends
            thread.join(timeout=5)


def test_a_port_where_another_service_answers_is_down_with_a_protocol_error(
    conn: sqlite3.Connection, db_path: str
) -> None:
    with another_service() as port:
        for kind in ("postgresql", "mysql", "redis"):
            add(conn, f"{kind}://someone:pw@127.0.0.1:{port}/{'0' if kind == 'redis' else 'db'}", name=kind, retries=0)
        report = tick(db_path)
    assert outcomes(report) == {kind: ("down", f"{kind}: protocol error") for kind in ("postgresql", "mysql", "redis")}


def test_a_slow_answer_is_down_under_max_latency(
    conn: sqlite3.Connection, db_path: str, redis: redis_server.Server
) -> None:
    add(conn, redis.url(), name="slow", max_latency_ms=200, retries=0)
    with redis.admin() as admin:
        admin.execute_command("CLIENT", "PAUSE", "600", "ALL")  # the server holds every command 0.6 s
    (result,) = tick(db_path).results_json()
    assert result["status"] == "down"
    assert result["cause"].startswith("slow: ") and result["cause"].endswith(" ms > 200 ms")
    assert result["latency_ms"] >= 200


def test_block_private_refuses_a_loopback_database_before_any_connection(
    conn: sqlite3.Connection, db_path: str, maria_server: mariadb.Server, redis: redis_server.Server, pg: PgServer
) -> None:
    add(conn, maria_server.url(), name="mysql")
    add(conn, f"redis://:{redis_server.PASSWORD}@localhost:{redis.port}", name="redis")
    add(conn, f"postgresql://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{pg.port}/postgres", name="postgresql")
    add(conn, f"postgresql://postgres@:{pg.port}/postgres?host={pg.directory}", name="pg socket")
    add(conn, f"mysql://root@localhost?unix_socket={maria_server.socket}", name="mysql socket")
    before = (maria_server.connections_received(), redis.connections_received())
    report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0, guard=AddressGuard()))
    assert report.results == []
    assert dict(report.refused) == {
        1: "refused by --block-private: mysql: blocked: 127.0.0.1 is not a public address",
        2: "refused by --block-private: redis: blocked: 127.0.0.1 is not a public address",
        3: "refused by --block-private: postgresql: blocked: 127.0.0.1 is not a public address",
        4: "refused by --block-private: postgresql: blocked: unix sockets",
        5: "refused by --block-private: mysql: blocked: unix sockets",
    }
    assert (maria_server.connections_received(), redis.connections_received()) == before


def test_block_private_connects_the_driver_to_the_address_it_checked_keeping_the_name_for_tls(
    conn: sqlite3.Connection, db_path: str, maria_server: mariadb.Server, redis: redis_server.Server, pg: PgServer
) -> None:
    # `localhost` is looked up by the guard (127.0.0.1: allowed here), and the driver connects to
    # that address: TLS still verifies the name, since the certificates are for localhost only
    add(conn, f"rediss://:{redis_server.PASSWORD}@localhost:{redis.tls_port}", name="rediss")
    add(conn, f"mysql://{mariadb.USER}:{mariadb.PASSWORD}@localhost:{maria_server.port}?tls=1", name="mysql")
    add(conn, f"postgresql://{PG_USER}:{PG_PASSWORD}@localhost:{pg.port}/postgres", name="postgresql")
    trust = ssl.create_default_context(cafile=redis.cert.ca_pem)
    trust.load_verify_locations(cafile=maria_server.cert.ca_pem)
    report = tick(db_path, guard=GUARD_ELSEWHERE, verify=trust)
    assert report.refused == []
    assert outcomes(report) == {"rediss": ("up", None), "mysql": ("up", None), "postgresql": ("up", None)}


def cli(db: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}
    )


def test_passwords_may_be_references_and_are_never_printed(
    tmp_path: Path, maria_server: mariadb.Server, redis: redis_server.Server
) -> None:
    db = str(tmp_path / "m.db")
    minute = clock.minute_of_ms(clock.now_ms())
    hour_start = minute - minute % 60 - 60  # an hour's first minute, in the past (configuration errors are said then)
    literal = cli(db, "add", maria_server.url(), "--name", "literal", "--every", "1m")
    assert literal.returncode == 0 and created_or_nothing(literal.stderr, db)
    reference = f"redis://:${{MT_REDIS_PASSWORD}}@127.0.0.1:{redis.port}"
    env = {"MT_REDIS_PASSWORD": redis_server.PASSWORD}
    referenced = cli(db, "add", reference, "--name", "referenced", "--every", "1m", env=env)
    assert referenced.returncode == 0 and referenced.stderr == ""
    raw = sqlite3.connect(db)
    raw.execute("UPDATE monitors SET created_at_ms = 0")
    raw.commit()
    raw.close()
    done = cli(db, "--minute", str(hour_start - 60), "--json", "--retry-delay", "0", env=env)
    assert done.returncode == 0 and done.stderr == ""
    assert {r["name"]: r["status"] for r in json.loads(done.stdout)["results"]} == {"literal": "up", "referenced": "up"}
    # without the variable: a configuration error, said once an hour, never down
    missing = cli(db, "--minute", str(hour_start), "--json", "--retry-delay", "0")
    assert missing.returncode == 0
    assert missing.stderr == (
        "monitor-tick: monitor 2 skipped: cannot be probed here: environment variable MT_REDIS_PASSWORD is not set\n"
    )
    assert [r["name"] for r in json.loads(missing.stdout)["results"]] == ["literal"]
    wrong = cli(db, "--minute", str(hour_start + 1), "--json", "--retry-delay", "0", env={"MT_REDIS_PASSWORD": "x"})
    assert {r["name"]: r["cause"] for r in json.loads(wrong.stdout)["results"]}["referenced"] == (
        "redis: authentication failed"
    )
    listed = json.loads(cli(db, "list", "--json").stdout)
    assert [row["url"] for row in listed] == [
        f"mysql://***@127.0.0.1:{maria_server.port}/{mariadb.DATABASE}",
        f"redis://***@127.0.0.1:{redis.port}",
    ]
    printed = [done.stdout, missing.stdout, wrong.stdout, wrong.stderr]
    for command in (["list"], ["list", "--json"], ["report"], ["report", "--json"], ["export"]):
        printed.append(cli(db, *command, env=env).stdout)
    for text in printed:
        assert mariadb.PASSWORD not in text and redis_server.PASSWORD not in text


def test_a_password_from_the_environment_is_sent_as_it_is_whatever_characters_it_holds(
    conn: sqlite3.Connection, db_path: str, pg: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each tick resolves the URL's references; a value in the user info (a password with '@',
    ':', '/' or '%') is that value, never read as the URL's own punctuation."""
    hard = "p@ss:w/rd%41?#"
    with pg.admin() as admin:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'watcher2'").fetchone() is None:
            admin.execute("CREATE ROLE watcher2 LOGIN PASSWORD 'p@ss:w/rd%41?#'")
            hba = Path(pg.directory) / "data" / "pg_hba.conf"
            hba.write_text("host all watcher2 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
            admin.execute("SELECT pg_reload_conf()")
    add(conn, f"postgresql://watcher2:${{MT_TEST_PG_PW}}@127.0.0.1:{pg.port}/postgres", name="from env", retries=0)
    monkeypatch.setenv("MT_TEST_PG_PW", hard)
    assert outcomes(tick(db_path)) == {"from env": ("up", None)}
    monkeypatch.setenv("MT_TEST_PG_PW", "wrong")
    report = run_tick(TickOptions(db_path=db_path, retry_delay_s=0, force=True))
    assert outcomes(report) == {"from env": ("down", "postgresql: authentication failed")}
