"""A real OpenSSH server for the tests: Debian's sshd (openssh-server; the README's test command
installs it), in the foreground on a free port of 127.0.0.1, with a host key made here by
ssh-keygen in a temporary directory, stopped by its pid at the end. Nobody can log in to it:
every way of authenticating is off and no user is allowed. Without the binaries the fixture
fails, saying so."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
# sshd started as root checks that its privilege-separation directory exists (Debian's service
# creates it at boot; a machine that never ran the service has none)
PRIVSEP_DIR = "/run/sshd"
READY_TIMEOUT_S = 30
_LISTENING = "Server listening on 127.0.0.1 port"


@dataclass
class Sshd:
    port: int
    process: subprocess.Popen[str]
    log: list[str] = field(default_factory=list)
    _logged: threading.Condition = field(default_factory=threading.Condition)

    def logged(self, text: str, times: int = 1, timeout_s: float = 10) -> bool:
        """Whether sshd logged `times` lines (or more) holding `text`, waiting up to `timeout_s`."""
        with self._logged:
            return self._logged.wait_for(lambda: self.count(text) >= times, timeout_s)

    def count(self, text: str) -> int:
        """How many lines logged so far hold `text`."""
        return sum(text in line for line in list(self.log))


def _binaries() -> tuple[str, str]:
    keygen = shutil.which("ssh-keygen")
    if not os.access(SSHD, os.X_OK) or keygen is None:
        raise RuntimeError(
            "OpenSSH's server is not installed: the tests need Debian's openssh-server package "
            "(apt-get install openssh-server; the README's test command does it)"
        )
    return SSHD, keygen


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_sshd() -> Iterator[Sshd]:
    sshd, keygen = _binaries()
    with tempfile.TemporaryDirectory(prefix="monitor-tick-sshd-") as directory:
        key = Path(directory, "host_ed25519_key")
        subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=60)
        port = _free_port()
        config = Path(directory, "sshd_config")
        config.write_text(
            f"ListenAddress 127.0.0.1:{port}\n"
            f"HostKey {key}\n"
            f"PidFile {directory}/sshd.pid\n"
            "UsePAM no\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "PubkeyAuthentication no\n"
            "PermitRootLogin no\n"
            "AllowUsers nobody-may-log-in\n"
            "LogLevel DEBUG1\n"  # names each client's software version
        )
        if os.geteuid() == 0:
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        process = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        server = Sshd(port, process)
        ready = threading.Event()

        def read_log() -> None:  # sshd logs to stderr (-e): read it all, so that it never blocks
            assert process.stderr is not None
            for line in process.stderr:
                with server._logged:
                    server.log.append(line.rstrip("\n"))
                    server._logged.notify_all()
                if _LISTENING in line:
                    ready.set()
            ready.set()  # it ended

        reader = threading.Thread(target=read_log, name="sshd-log", daemon=True)
        reader.start()
        try:
            if not ready.wait(READY_TIMEOUT_S) or process.poll() is not None:
                raise RuntimeError(f"sshd did not start: {' | '.join(server.log[-5:])}")
            yield server
        finally:
            process.terminate()
            process.wait(timeout=30)
            reader.join(timeout=30)
            assert process.stderr is not None
            process.stderr.close()
