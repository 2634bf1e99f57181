"""A real MariaDB server for the tests: mariadb-install-db and mariadbd (Debian's mariadb-server)
in a temporary directory, as the `mysql` user when the tests run as root (mariadbd refuses to
run as root), listening on a free port of 127.0.0.1 and on a unix socket, with TLS (a
certificate for `localhost` only, tests/daemons.py), stopped at the end.
It holds a user with a password (USER, PASSWORD), so that a wrong password is refused as it
would be in production (no --skip-grant-tables). Without the binaries the fixture fails,
saying so (the README's test command installs them)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pymysql

from tests import daemons
from tests.postgres import _free_port

USER = "monitor"
PASSWORD = "s3cret-maria"
DATABASE = "shop"


@dataclass
class Server:
    directory: str
    port: int
    process: subprocess.Popen[bytes]
    cert: daemons.Certificate
    own: int = 0  # connections made by admin(): not counted by connections_received

    @property
    def socket(self) -> str:
        return f"{self.directory}/mysqld.sock"

    def url(self, password: str | None = PASSWORD, user: str = USER, database: str = DATABASE) -> str:
        secret = "" if password is None else f":{password}"
        return f"mysql://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def admin(self) -> pymysql.connections.Connection:
        """root over the unix socket (mariadb-install-db's passwordless root)."""
        connection = pymysql.connect(unix_socket=self.socket, user="root", autocommit=True)
        self.own += 1
        return connection

    def connections_received(self) -> int:
        """How many connections others have made so far (the server's Connections, less ours)."""
        with self.admin() as admin, admin.cursor() as cursor:
            cursor.execute("SHOW GLOBAL STATUS LIKE 'Connections'")
            row = cursor.fetchone()
        assert row is not None
        return int(row[1]) - self.own


@contextmanager
def running_server() -> Iterator[Server]:
    """A started server with USER (PASSWORD, from anywhere) and an empty DATABASE."""
    install = daemons.binary("mariadb-install-db", "mariadb-server")
    mariadbd = daemons.binary("mariadbd", "mariadb-server", path="/usr/sbin:/usr/bin")
    directory = tempfile.mkdtemp(prefix="monitor-tick-maria-")
    as_user = ["--user=mysql"] if os.geteuid() == 0 else []
    if os.geteuid() == 0:
        os.chown(directory, pwd.getpwnam("mysql").pw_uid, -1)
    try:
        subprocess.run(
            [
                install,
                "--no-defaults",
                f"--datadir={directory}/data",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
                *as_user,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port = _free_port()
        cert = daemons.localhost_certificate(directory)
        started = subprocess.Popen(
            [
                mariadbd,
                "--no-defaults",
                f"--datadir={directory}/data",
                f"--socket={directory}/mysqld.sock",
                f"--port={port}",
                "--bind-address=127.0.0.1",
                f"--pid-file={directory}/mariadbd.pid",
                f"--log-error={directory}/error.log",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=16M",
                f"--ssl-cert={cert.server_pem}",
                f"--ssl-key={cert.server_pem}",
                *as_user,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with daemons.stopped_at_the_end(started) as process:
            server = Server(directory, port, process, cert)
            # over TCP, not the unix socket: PyMySQL leaks the socket of a failed connect there
            daemons.wait_until_ready(
                process,
                lambda: pymysql.connect(host="127.0.0.1", port=port, user="root").close(),
                pymysql.err.OperationalError,
                f"{directory}/error.log",
            )
            with server.admin() as admin, admin.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE {DATABASE}")
                cursor.execute(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'")
                cursor.execute(f"GRANT ALL ON {DATABASE}.* TO '{USER}'@'%'")
            yield server
    finally:
        shutil.rmtree(directory, ignore_errors=True)
