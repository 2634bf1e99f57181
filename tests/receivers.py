"""A notification receiver on 127.0.0.1 for alert tests: Apprise's `json://` target posts
`{"title", "message", "type", ...}` to it, and it keeps what arrived.

    with JsonReceiver() as rx:
        url = rx.apprise_url("/hook")      # json://127.0.0.1:PORT/hook
        ...
        assert [m["title"] for m in rx.messages] == ["DOWN: api"]

`fail_next(n)` answers the next n posts with 500 (and does not keep them); `hold()` makes
posts wait until `release()` and then accepts them (a channel slow enough to overlap another
run); `hang()` makes posts wait until `release()` and then drops them unanswered.

GET requests (a healthchecks.io-style ping, `--ping-url`) are answered 200 and their paths kept
in `gets`; under `hang()` they too wait until `release()` and are dropped unanswered.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonReceiver:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []  # accepted posts' JSON bodies, in arrival order
        self.paths: list[str] = []
        self.gets: list[str] = []  # paths of GET requests, in arrival order
        self.posts = 0  # every post, accepted or failed
        self._failures_left = 0
        self._held = threading.Event()
        self._hanging = False
        self._released = threading.Event()
        self._arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 -- the http.server API
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver._arrived:
                    receiver.posts += 1
                    receiver._arrived.notify_all()
                if receiver._held.is_set():
                    hanging = receiver._hanging
                    receiver._released.wait(30)
                    if hanging:
                        self.close_connection = True
                        return
                with receiver._arrived:
                    failing = receiver._failures_left > 0
                    if failing:
                        receiver._failures_left -= 1
                    else:
                        receiver.messages.append(json.loads(body))
                        receiver.paths.append(self.path)
                    receiver._arrived.notify_all()
                self.send_response(500 if failing else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802 -- the http.server API
                with receiver._arrived:
                    receiver.gets.append(self.path)
                    receiver._arrived.notify_all()
                if receiver._held.is_set() and receiver._hanging:
                    receiver._released.wait(30)
                    self.close_connection = True
                    return
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"OK")

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def apprise_url(self, path: str = "/hook") -> str:
        return f"json://127.0.0.1:{self.port}{path}"

    def fail_next(self, count: int) -> None:
        with self._arrived:
            self._failures_left = count

    def hold(self) -> None:
        self._hanging = False
        self._released.clear()
        self._held.set()

    def hang(self) -> None:
        self.hold()
        self._hanging = True

    def release(self) -> None:
        self._held.clear()
        self._released.set()

    def wait_for_posts(self, count: int, timeout_s: float = 10.0) -> bool:
        """Block until at least `count` posts have arrived (accepted or not)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: self.posts >= count, timeout_s)

    def titles(self) -> list[str]:
        return [m["title"] for m in self.messages]

    def __enter__(self) -> JsonReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
