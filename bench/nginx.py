"""nginx on 127.0.0.1 for the bench: the server the Kuma comparison's figures are measured against.

    with nginx_server() as server:      # None when nginx is not installed (server.reason says why)
        url = f"http://127.0.0.1:{server.port}/"
        tls_url = f"https://localhost:{server.tls_port}/"   # a trustme CA; server.ca_file trusts it

Every response is `200 ok`; `keepalive_timeout 0` closes each connection after its response, so
every check opens a fresh connection, as checks of distinct hosts do. Two workers (one per core
of the shared machine). Its config, logs and certificate live in a temporary directory that is
removed on exit.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_CONFIG = """
worker_processes 2;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    keepalive_timeout 0;
    server {{
        listen 127.0.0.1:{port};
        listen 127.0.0.1:{tls_port} ssl;
        server_name localhost;
        ssl_certificate {dir}/cert.pem;
        ssl_certificate_key {dir}/key.pem;
        location / {{ default_type text/plain; return 200 "ok"; }}
    }}
}}
"""


@dataclass(frozen=True)
class Nginx:
    port: int
    tls_port: int
    ca_file: str  # PEM of the CA that signed the TLS port's certificate (for localhost)


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nginx exited {process.returncode}: {log.read_text()[-400:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)  # a bench waiting for a server it started, not a test
    raise RuntimeError("nginx did not listen within 10 s")


@contextmanager
def nginx_server() -> Iterator[Nginx]:
    """nginx on two free loopback ports (HTTP and HTTPS); raises RuntimeError saying why it
    cannot start (not installed, failed)."""
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed (apt-get install nginx)")
    import trustme  # a test dependency: a CA and a localhost certificate, made in memory

    with tempfile.TemporaryDirectory(prefix="monitor-tick-nginx-") as tmp:
        directory = Path(tmp)
        ca = trustme.CA()
        cert = ca.issue_cert("localhost", "127.0.0.1")
        cert.private_key_pem.write_to_path(str(directory / "key.pem"))
        cert.cert_chain_pems[0].write_to_path(str(directory / "cert.pem"))
        ca.cert_pem.write_to_path(str(directory / "ca.pem"))
        port, tls_port = _free_port(), _free_port()
        config = directory / "nginx.conf"
        config.write_text(_CONFIG.format(dir=directory, port=port, tls_port=tls_port))
        log = directory / "error.log"
        process = subprocess.Popen(
            [binary, "-c", str(config), "-p", str(directory), "-e", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for(port, process, log)
            _wait_for(tls_port, process, log)
            yield Nginx(port, tls_port, str(directory / "ca.pem"))
        finally:
            process.terminate()
            process.wait(timeout=10)
