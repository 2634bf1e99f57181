"""A real PostgreSQL server for the tests: initdb and pg_ctl in a temporary directory (through
runuser as the `postgres` user when the tests run as root: initdb refuses root), on a free
port of 127.0.0.1, stopped at the end. Each test gets a fresh database, copied from a template
that already holds the schema (CREATE DATABASE ... TEMPLATE: milliseconds, where creating the
schema again would take longer). Debian's postgresql package provides the binaries (the
README's test command installs it); without them the fixture fails, saying so."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg

from monitor_tick import store

TEMPLATE = "monitor_tick_template"


def _bin_dir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError(
            "PostgreSQL is not installed: the tests need Debian's postgresql package "
            "(apt-get install postgresql; the README's test command does it)"
        )
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    directory: str
    port: int
    bin_dir: str
    # False: the tests' settings, which trade durability for speed (no fsync, no full pages, no
    # waiting for commits); True: PostgreSQL's own (Debian's), as users run it (bench/pg_store.py)
    durable: bool = False
    _names = itertools.count(1)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def admin(self) -> psycopg.Connection:
        return psycopg.connect(self.url(), autocommit=True)

    def fresh_database(self) -> str:
        """A new, empty database with the schema (from the template): its URL."""
        name = f"t{os.getpid()}_{next(self._names)}"
        with self.admin() as admin:
            admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
        return self.url(name)

    def empty_database(self) -> str:
        """A new database without the schema: its URL."""
        name = f"e{os.getpid()}_{next(self._names)}"
        with self.admin() as admin:
            admin.execute(f"CREATE DATABASE {name} STRATEGY FILE_COPY")
        return self.url(name)

    def pg_ctl(self, *args: str) -> None:
        _as_postgres([f"{self.bin_dir}/pg_ctl", "-D", f"{self.directory}/data", *args])

    def start(self) -> None:
        options = f"-k {self.directory} -p {self.port} -h 127.0.0.1 -c max_connections=200"
        if not self.durable:
            options += " -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
        self.pg_ctl("-o", options, "-l", f"{self.directory}/log", "-w", "start")

    def stop(self) -> None:
        self.pg_ctl("-m", "fast", "-w", "stop")

    def restart(self) -> None:
        """pg_ctl restart: every open connection is dropped; it returns once the server accepts
        connections again."""
        self.pg_ctl("-m", "fast", "-w", "restart")

    def is_running(self) -> bool:
        return os.path.exists(f"{self.directory}/data/postmaster.pid")

    @contextmanager
    def outage(self) -> Iterator[None]:
        """The server stopped for the block, which may start it again; it is started at the end
        if it was not (the test process's other tests share it), also when the block fails."""
        self.stop()
        try:
            yield
        finally:
            if not self.is_running():
                self.start()


def _as_postgres(command: list[str]) -> None:
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@contextmanager
def running_server(*, durable: bool = False) -> Iterator[Server]:
    """A started server with the template database; stopped and removed at the end. `durable`:
    with PostgreSQL's own durability settings rather than the tests' (see Server.durable)."""
    bin_dir = _bin_dir()
    directory = tempfile.mkdtemp(prefix="monitor-tick-pg-")
    if os.geteuid() == 0:
        os.chown(directory, pwd.getpwnam("postgres").pw_uid, -1)
    server = Server(directory, _free_port(), bin_dir, durable)
    try:
        _as_postgres(
            [f"{bin_dir}/initdb", "-D", f"{directory}/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]
        )
        server.start()
        try:
            with server.admin() as admin:
                admin.execute(f"CREATE DATABASE {TEMPLATE}")
            store.open_db(server.url(TEMPLATE)).close()
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
