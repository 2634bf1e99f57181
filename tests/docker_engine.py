"""A real Docker engine for the tests: Debian's docker.io dockerd in a temporary directory of its
own (data root, exec root, socket and pidfile), without iptables, a bridge or an overlay
filesystem, stopped by its pid at the end. No registry is reachable, so its images are built
FROM scratch with Debian's static busybox, and containers run with no network at all (the
default bridge hands out private addresses, which no test may use). The engine is driven
through its own API on the socket with the standard library's http.client. Without dockerd or a static
/bin/busybox (Debian's busybox-static) the fixture fails, saying so."""

from __future__ import annotations

import http.client
import io
import json
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import urlencode

BUSYBOX = "/bin/busybox"
IMAGE = "monitor-tick-test/busybox"
# the same, with a health check that always fails (most images bring theirs in the Dockerfile)
FAILING_CHECK_IMAGE = "monitor-tick-test/failing-check"
START_TIMEOUT_S = 60.0
SECOND_NS = 10**9


class Answer(NamedTuple):
    """An Engine API response: its status and body."""

    status: int
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 on a unix socket (the engine's)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("docker", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


@dataclass
class Engine:
    directory: str
    process: subprocess.Popen[bytes]

    @property
    def socket(self) -> str:
        return f"{self.directory}/docker.sock"

    def api(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        """One Engine API request on the socket (`json_body`: a body sent as JSON); raises on an
        error status."""
        headers = dict(headers or {})
        if json_body is not None:
            content = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        connection = _UnixConnection(self.socket, timeout=60)
        try:
            connection.request(method, path + (f"?{urlencode(params)}" if params else ""), content, headers)
            response = connection.getresponse()
            answer = Answer(response.status, response.read())
        finally:
            connection.close()
        if answer.status >= 400:
            raise RuntimeError(f"docker {method} {path}: {answer.status} {answer.text.strip()}")
        return answer

    def create(self, name: str, *command: str, image: str = IMAGE, healthcheck: dict[str, Any] | None = None) -> str:
        """A container with no network, created but not started: its id. `command` is a busybox
        applet and its arguments (the images' entry point is busybox)."""
        config: dict[str, Any] = {"Image": image, "Cmd": list(command), "HostConfig": {"NetworkMode": "none"}}
        if healthcheck is not None:
            config["Healthcheck"] = healthcheck
        return str(self.api("POST", "/containers/create", params={"name": name}, json_body=config).json()["Id"])

    def run(self, name: str, *command: str, image: str = IMAGE, healthcheck: dict[str, Any] | None = None) -> str:
        """A started container with no network: its id."""
        container = self.create(name, *command, image=image, healthcheck=healthcheck)
        self.api("POST", f"/containers/{container}/start")
        return container

    def inspect(self, name: str) -> dict[str, Any]:
        return dict(self.api("GET", f"/containers/{name}/json").json())

    def wait_for_exit(self, name: str) -> None:
        self.api("POST", f"/containers/{name}/wait")  # answers once the container has stopped

    def wait_for_health(self, name: str, status: str) -> None:
        """Until the container's health check reaches `status` (its checks run every second)."""
        deadline = time.monotonic() + 30
        while self.inspect(name)["State"]["Health"]["Status"] != status:
            assert time.monotonic() < deadline, f"container {name} never became {status}"
            time.sleep(0.1)


def _build(engine: Engine, tag: str, dockerfile: str, files: dict[str, str]) -> None:
    """Build an image from a Dockerfile and files (name in the context -> path) over the API."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        text = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
        for name, path in files.items():
            tar.add(path, arcname=name)
    answer = engine.api(
        "POST",
        "/build",
        params={"t": tag, "rm": "1"},
        content=context.getvalue(),
        headers={"Content-Type": "application/x-tar"},
    )
    for line in answer.text.splitlines():  # a failed build still answers 200, its error in the stream
        if line.strip() and "error" in json.loads(line):
            raise RuntimeError(f"building {tag}: {json.loads(line)['error']}")


def _check_installed() -> str:
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise RuntimeError(
            "dockerd is not installed: the tests need Debian's docker.io package "
            "(apt-get install docker.io; the README's test command does it)"
        )
    try:
        with open(BUSYBOX, "rb") as binary:
            head = binary.read(4096)
    except OSError:
        head = b""
    if not head.startswith(b"\x7fELF") or b"ld-linux" in head:  # a dynamic one needs a libc in the image
        raise RuntimeError(
            f"{BUSYBOX} is missing or not static: the tests need Debian's busybox-static package "
            "(apt-get install busybox-static; the README's test command does it)"
        )
    return dockerd


@contextmanager
def running_engine() -> Iterator[Engine]:
    """A started engine with IMAGE and FAILING_CHECK_IMAGE built; stopped, its containers with
    it, and removed at the end."""
    dockerd = _check_installed()
    directory = tempfile.mkdtemp(prefix="monitor-tick-docker-")
    log = open(f"{directory}/log", "wb")  # noqa: SIM115 -- the engine writes it until it stops
    command = [
        dockerd,
        *("--data-root", f"{directory}/root", "--exec-root", f"{directory}/exec"),
        *("-H", f"unix://{directory}/docker.sock", "--pidfile", f"{directory}/pid"),
        *("--iptables=false", "--ip6tables=false", "--bridge=none", "--storage-driver=vfs"),
    ]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    engine = Engine(directory, process)
    try:
        _wait_until_serving(engine)
        _build(engine, IMAGE, f'FROM scratch\nCOPY busybox {BUSYBOX}\nENTRYPOINT ["{BUSYBOX}"]\n', {"busybox": BUSYBOX})
        _build(
            engine,
            FAILING_CHECK_IMAGE,
            f'FROM {IMAGE}\nHEALTHCHECK --interval=1s --retries=1 CMD ["{BUSYBOX}", "false"]\n',
            {},
        )
        yield engine
    finally:
        try:
            _stop(engine)
        finally:
            log.close()
            shutil.rmtree(directory, ignore_errors=True)


def _wait_until_serving(engine: Engine) -> None:
    """Until the engine's socket accepts a connection, then until it answers /_ping."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if engine.process.poll() is not None:
            raise RuntimeError(f"dockerd exited at start:\n{_log_tail(engine)}")
        try:
            engine.api("GET", "/_ping")
            return
        except (OSError, http.client.HTTPException, RuntimeError):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"dockerd did not answer within {START_TIMEOUT_S:g}s:\n{_log_tail(engine)}"
                ) from None
            time.sleep(0.1)


def _stop(engine: Engine) -> None:
    """Remove every container (killed: their commands ignore SIGTERM as pid 1, which would hold
    the engine's shutdown for 10 s each), then stop the engine by its pid."""
    if engine.process.poll() is None:
        try:
            for container in engine.api("GET", "/containers/json", params={"all": "1"}).json():
                engine.api("DELETE", f"/containers/{container['Id']}", params={"force": "1"})
        finally:
            with open(f"{engine.directory}/pid") as pidfile:
                os.kill(int(pidfile.read()), signal.SIGTERM)
            engine.process.wait(timeout=60)


def _log_tail(engine: Engine) -> str:
    with open(f"{engine.directory}/log", errors="replace") as log:
        return "".join(log.readlines()[-15:])


@contextmanager
def tcp_relay(socket_path: str) -> Iterator[int]:
    """A port of 127.0.0.1 relayed to the engine's socket, byte for byte: the engine as a
    tcp:// host (`dockerd -H tcp://...`) serves it. Yields the port."""

    class Relay(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with socket.socket(socket.AF_UNIX) as engine:
                engine.connect(socket_path)
                back = threading.Thread(target=_pump, args=(engine, self.request), daemon=True)
                back.start()
                _pump(self.request, engine)
                back.join(timeout=30)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Relay)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass
