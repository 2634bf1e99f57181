"""Servers the tests start as processes of their own (tests/mariadb.py, tests/redis_server.py):
a binary from a Debian package, or a clear failure naming the package; a certificate for
`localhost` only; readiness polled until a deadline; a stop that never leaves a process behind."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import trustme

START_TIMEOUT_S = 30.0
CERT_DAYS = 10  # how long the servers' certificates are valid from their start


@dataclass(frozen=True)
class Certificate:
    """A server's certificate (for `localhost` only, from a CA made for it) and its key, in one
    PEM file, and what a client trusts to verify it."""

    server_pem: str
    ca_pem: str
    not_after: dt.datetime


def localhost_certificate(directory: str) -> Certificate:
    """Written into `directory`; it expires in CERT_DAYS days."""
    ca = trustme.CA()
    not_after = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(days=CERT_DAYS)
    leaf = ca.issue_cert("localhost", not_after=not_after)
    leaf.private_key_and_cert_chain_pem.write_to_path(f"{directory}/server.pem")
    ca.cert_pem.write_to_path(f"{directory}/ca.pem")
    return Certificate(f"{directory}/server.pem", f"{directory}/ca.pem", not_after)


def binary(name: str, package: str, path: str | None = None) -> str:
    """The path of `name`; RuntimeError naming the Debian package when it is missing."""
    found = shutil.which(name, path=path)
    if found is None:
        raise RuntimeError(
            f"{name} is not installed: the tests need Debian's {package} package "
            f"(apt-get install {package}; the README's test command does it)"
        )
    return found


def wait_until_ready(
    process: subprocess.Popen[bytes], ready: Callable[[], None], not_yet: type[Exception], log: str
) -> None:
    """Call `ready` until it stops raising `not_yet` (the server is still starting: polled, not
    waited for blindly), or the process exits (the end of `log` is the failure's message)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            with open(log, encoding="utf-8", errors="replace") as said:
                raise RuntimeError(f"{process.args[0]} exited ({process.returncode}): {said.read()[-2000:]}")
        try:
            ready()
            return
        except not_yet:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


@contextmanager
def stopped_at_the_end(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """`process`, stopped with SIGTERM at the end of the block (killed if it does not stop)."""
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
