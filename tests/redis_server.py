"""A real Redis server for the tests: Debian's redis-server with a configuration written to a
temporary directory, on a free port of 127.0.0.1 and a TLS port beside it (a certificate for
`localhost` only, tests/daemons.py), stopped at the end. The
default user needs PASSWORD (requirepass), and an ACL user USER has USER_PASSWORD, so that a
wrong password is refused as it would be in production. Without the binary the fixture fails,
saying so (the README's test command installs it)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from tests import daemons
from tests.postgres import _free_port

PASSWORD = "s3cret-redis"
USER = "watcher"
USER_PASSWORD = "watcher-pw"


@dataclass
class Server:
    directory: str
    port: int
    tls_port: int
    cert: daemons.Certificate  # the TLS port's
    process: subprocess.Popen[bytes]
    own: int = 0  # connections made by admin(): not counted by connections_received

    def url(self, password: str | None = PASSWORD, *, user: str = "", db: int | None = None) -> str:
        credentials = f"{user}:{password}@" if password is not None else ""
        return f"redis://{credentials}127.0.0.1:{self.port}" + ("" if db is None else f"/{db}")

    def admin(self) -> redis.Redis:
        """The default user over plain TCP (redis-py's blocking client, one connection)."""
        self.own += 1
        return _client(self.port)

    def connections_received(self) -> int:
        """How many connections others have made so far (INFO's total_connections_received, less ours)."""
        with self.admin() as admin:
            return int(admin.info("stats")["total_connections_received"]) - self.own


def _client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, password=PASSWORD, socket_timeout=5, single_connection_client=True)


def _ping(port: int) -> None:
    with _client(port) as client:
        client.ping()


@contextmanager
def running_server() -> Iterator[Server]:
    binary = daemons.binary("redis-server", "redis-server")
    directory = tempfile.mkdtemp(prefix="monitor-tick-redis-")
    try:
        cert = daemons.localhost_certificate(directory)
        port, tls_port = _free_port(), _free_port()
        with open(f"{directory}/redis.conf", "w", encoding="utf-8") as conf:
            conf.write(
                f"bind 127.0.0.1\nport {port}\ntls-port {tls_port}\n"
                f"tls-cert-file {cert.server_pem}\ntls-key-file {cert.server_pem}\n"
                f"tls-ca-cert-file {cert.ca_pem}\ntls-auth-clients no\n"
                f"dir {directory}\nlogfile {directory}/redis.log\n"
                'save ""\nappendonly no\ndaemonize no\n'
                f"requirepass {PASSWORD}\nuser {USER} on >{USER_PASSWORD} ~* &* +@all\n"
            )
        started = subprocess.Popen(
            [binary, f"{directory}/redis.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        with daemons.stopped_at_the_end(started) as process:
            daemons.wait_until_ready(process, lambda: _ping(port), redis.ConnectionError, f"{directory}/redis.log")
            yield Server(directory, port, tls_port, cert, process)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
