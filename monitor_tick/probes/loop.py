"""The bare loop: callbacks on one thread, on a socket's readiness (selectors), at a time, or from
another thread -- what bare.BareCall and run/bare.py need of an event loop, without asyncio."""

from __future__ import annotations

import collections
import heapq
import selectors
import socket
import time
from collections.abc import Callable

READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


class Timer:
    """A callback at a time of Loop.time(), unless cancelled first."""

    __slots__ = ("when", "callback", "cancelled")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def __lt__(self, other: Timer) -> bool:
        return self.when < other.when

    def cancel(self) -> None:
        """It will not run; what it refers to is let go now, not when its time comes (as
        asyncio's handles do): a tick of thousands of checks holds no ended check in its timers."""
        self.cancelled = True
        self.callback = _nothing


def _nothing() -> None:
    pass


class Loop:
    """Callbacks on one thread: a socket's readiness (selectors), timers, calls from other
    threads (call_soon_threadsafe: a lookup's answer), and calls made soon (call_soon), each
    from the loop itself, never from inside another callback: a run of checks that end at once
    never nests. run_once runs what is ready; close it when done."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._timers: list[Timer] = []
        self._soon: collections.deque[Callable[[], None]] = collections.deque()
        self._from_threads: collections.deque[Callable[[], None]] = collections.deque()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, READ, self._woken)

    @staticmethod
    def time() -> float:
        """CLOCK_MONOTONIC, which time.monotonic reads on Linux, read directly: a test that
        freezes the clock (freezegun) never stops the loop's timers, as asyncio's loop sees real
        time under freezegun's real_asyncio."""
        return time.clock_gettime(time.CLOCK_MONOTONIC)

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(when, callback)
        heapq.heappush(self._timers, timer)
        return timer

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Run `callback` on this loop, after the callback running now."""
        self._soon.append(callback)

    def call_soon_threadsafe(self, callback: Callable[[], None]) -> None:
        """From any thread: run `callback` on the loop's."""
        self._from_threads.append(callback)
        try:
            self._wake_w.send(b"\0")
        except OSError:  # full (a wake-up is pending anyway) or closed (the loop has ended)
            pass

    def watch(self, sock: socket.socket, events: int, callback: Callable[[int], None]) -> None:
        """Call `callback(events ready)` when `sock` is ready for `events` (replacing any earlier watch)."""
        try:
            self._selector.modify(sock, events, callback)
        except KeyError:
            self._selector.register(sock, events, callback)

    def unwatch(self, sock: socket.socket) -> None:
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):  # not watched, or already closed
            pass

    def run_once(self, until: float) -> None:
        """Wait for a socket, a timer or a thread, at most until `until` (Loop.time()), and run
        what is ready."""
        timers = self._timers
        while timers and timers[0].cancelled:
            heapq.heappop(timers)
        wake = min(timers[0].when, until) if timers else until
        timeout = 0.0 if self._soon else max(0.0, wake - self.time())
        for key, events in self._selector.select(timeout):
            key.data(events)
        now = self.time()
        while timers and timers[0].when <= now:
            timer = heapq.heappop(timers)
            if not timer.cancelled:
                timer.callback()
        soon = self._soon
        while soon:
            soon.popleft()()

    def _woken(self, _: int) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:  # drained (BlockingIOError)
            pass
        while self._from_threads:
            self._from_threads.popleft()()

    def close(self) -> None:
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
