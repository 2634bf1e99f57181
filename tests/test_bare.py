"""The bare loop (probes/bare.py, run/bare.py): a tick of plain HTTP checks probed without asyncio,
with fanout.probe_all's fan-out, against real servers on 127.0.0.1. (That each check's outcome
and cause are the fast path's on asyncio's loop is tests/test_transport.py's probe_both.)"""

from __future__ import annotations

import asyncio
import errno
import gc
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Iterator

import pytest

from monitor_tick.core.model import Monitor, ProbeResult
from monitor_tick.probes import ProbeContext, http, request, wire
from monitor_tick.probes import bare as bare_probes
from monitor_tick.run import bare, probing
from monitor_tick.run.tick import TickOptions, _probe
from tests.servers import LocalServer, send_response, valid_cert

SHORT_S = 0.5
MINUTE = 29_934_721


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as srv:
        yield srv


def monitor(monitor_id: int, url: str, **settings: object) -> Monitor:
    values: dict[str, object] = {"timeout_s": 5.0, "retries": 0, **settings}
    return Monitor(
        id=monitor_id, name=f"m{monitor_id}", kind="http", url=url, interval_sec=60, effective_interval_sec=60, **values
    )  # type: ignore[arg-type]


def context(now_ms: int = 0, handed: dict[int, int] | None = None) -> ProbeContext:
    return ProbeContext(None, now_ms, None, clients=request.Contexts(True), fast=True, handed=handed or {})


ELSEWHERE = ProbeResult("up", 1, 299, "probed elsewhere")


def fan_out(monitors: list[Monitor], **settings: object) -> tuple[list[ProbeResult], list[tuple[Monitor, bool]]]:
    """(the results, what went elsewhere: each (monitor, handed over), answered ELSEWHERE)."""
    ctx = context()
    sent = bare.requests(monitors, ctx)
    assert sent is not None
    elsewhere: list[tuple[Monitor, bool]] = []

    def probe_elsewhere(m: Monitor, handed: bool, budget_s: float) -> ProbeResult:
        elsewhere.append((m, handed))
        return ELSEWHERE

    values: dict[str, object] = {"concurrency": 10, "retry_delay_s": 0.0, "budget_s": 10.0, **settings}
    return bare.probe_all(monitors, sent, ctx, elsewhere=probe_elsewhere, **values), elsewhere  # type: ignore[arg-type]


def test_the_bare_loop_takes_a_tick_only_when_every_check_is_a_plain_get_not_handed_over(server: LocalServer) -> None:
    plain = monitor(1, server.url("/ok"))
    assert bare.requests([plain], context()) is not None
    for other in (
        plain._replace(method="POST", body="x"),
        plain._replace(method="HEAD"),
        plain._replace(kind="tcp", url=f"tcp://127.0.0.1:{server.port}"),
        plain._replace(url=server.url("/ok").replace("http://", "http://user:pw@")),
    ):
        assert bare.requests([plain, other], context()) is None, other
    # a hand-over remembered (a redirect, a minute ago): httpx at once, on asyncio's loop
    assert bare.requests([plain], context(now_ms=60_000, handed={1: 0})) is None
    assert bare.requests([plain], context()._replace(fast=False)) is None


def test_a_hanging_host_gives_its_worker_away_and_the_others_are_checked(server: LocalServer) -> None:
    """One worker: the hanging probe holds it slot_hold_s, then the others run while it waits
    for its own deadline."""
    monitors = [monitor(1, server.url("/hang"), timeout_s=2 * SHORT_S)]
    monitors += [monitor(i, server.url(f"/ok?m={i}")) for i in range(2, 6)]
    start = time.monotonic()
    results, elsewhere = fan_out(monitors, concurrency=1, slot_hold_s=0.1, max_in_flight=4)
    assert elsewhere == []
    assert [(r.status, r.cause) for r in results] == [("down", "timeout")] + [("up", None)] * 4
    assert time.monotonic() - start < 4 * SHORT_S  # the ok checks did not wait for the hang, one by one


def test_at_most_max_in_flight_run_at_once(server: LocalServer) -> None:
    """One in flight: the second probe starts only when the hanging one reaches its deadline."""
    monitors = [monitor(1, server.url("/hang"), timeout_s=SHORT_S), monitor(2, server.url("/ok?m=after"))]
    before = len(server.requests)
    results, _ = fan_out(monitors, concurrency=1, slot_hold_s=0.01, max_in_flight=1)
    assert [r.status for r in results] == ["down", "up"]
    assert [r.target for r in server.requests[before:]] == ["/hang", "/ok?m=after"]


def test_probes_start_in_the_order_given(server: LocalServer) -> None:
    monitors = [monitor(i, server.url(f"/ok?m={i}")) for i in range(1, 6)]
    before = len(server.requests)
    results, _ = fan_out(monitors, concurrency=1, order=[4, 2, 0, 1, 3])
    assert [r.status for r in results] == ["up"] * 5
    assert [r.target for r in server.requests[before:]] == [f"/ok?m={i}" for i in (5, 3, 1, 2, 4)]


def test_the_budget_cuts_off_what_still_runs_and_what_never_started(server: LocalServer) -> None:
    monitors = [monitor(1, server.url("/hang"), timeout_s=20), monitor(2, server.url("/hang"), timeout_s=20)]
    monitors.append(monitor(3, server.url("/ok")))
    results, _ = fan_out(monitors, concurrency=1, budget_s=SHORT_S, max_in_flight=1, order=[0, 1, 2])
    assert results == [probing.CUT_OFF] * 3
    before = len(server.requests)
    results, _ = fan_out([monitor(1, server.url("/ok?never"))], budget_s=0.0)
    assert results == [probing.CUT_OFF] and len(server.requests) == before  # no budget: nothing sent


def test_a_down_check_is_tried_again_within_its_deadline(server: LocalServer) -> None:
    asked = 0

    async def fails_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, method: str) -> None:
        nonlocal asked
        asked += 1
        await send_response(writer, 503 if asked == 1 else 200, "x")

    server.route("/fails-once", fails_once)
    [result], _ = fan_out([monitor(1, server.url("/fails-once"), retries=2)], retry_delay_s=0.05)
    assert (result.status, asked) == ("up", 2)
    # no time left for a retry after the delay: the first answer stands
    asked = 0
    [result], _ = fan_out([monitor(1, server.url("/fails-once"), retries=2, timeout_s=0.3)], retry_delay_s=1.0)
    assert (result.status, result.cause, asked) == ("down", "status 503", 1)


def test_a_timeout_while_reading_the_body_says_so(server: LocalServer) -> None:
    [result], _ = fan_out([monitor(1, server.url("/drip"), timeout_s=SHORT_S, keyword="b")])
    assert (result.status, result.http_status, result.cause) == ("down", 200, "timeout reading body")


def test_a_redirect_is_handed_to_httpx_on_asyncios_loop_and_remembered(server: LocalServer) -> None:
    """The first check of a monitor that redirects: the bare loop's GET is answered by a
    redirect, httpx follows it (on asyncio's loop, in a thread), and the result says so; the
    next tick sends it to httpx at once."""
    monitors = [monitor(1, server.url("/ok?m=plain")), monitor(2, server.url("/redirect/1"))]
    results, elsewhere = fan_out(monitors)
    assert results == [results[0], ELSEWHERE] and results[0].status == "up"
    [(sent, handed)] = elsewhere
    assert handed and sent.id == 2 and 0 < sent.timeout_s <= 5
    before = len(server.requests)
    options = TickOptions("unused.db", retry_delay_s=0, budget_s=10)
    results = _probe(monitors, options, 60_000, {})
    assert [(r.status, r.handed_at_ms) for r in results] == [("up", None), ("up", 60_000)]
    assert sorted(r.target for r in server.requests[before:]) == ["/ok", "/ok?m=plain", "/redirect/1", "/redirect/1"]
    # next minute: remembered, so the whole tick runs on asyncio's loop and no GET goes twice
    recent = {2: (0, 5, 60_000, 60_000)}
    assert bare.requests(monitors, context(now_ms=120_000, handed=probing.handed_over(recent))) is None
    before = len(server.requests)
    results = _probe(monitors, options, 120_000, {}, recent)
    assert [r.status for r in results] == ["up", "up"]
    assert sorted(r.target for r in server.requests[before:]) == ["/ok", "/ok?m=plain", "/redirect/1"]


def test_a_bug_in_a_probe_is_that_monitors_failed_check(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(self: bare_probes.BareCall, data: bytes) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(bare_probes.BareCall, "_send", broken)
    results, _ = fan_out([monitor(1, server.url("/ok")), monitor(2, server.url("/ok?again"))])
    assert [(r.status, r.cause) for r in results] == [("down", "probe error: RuntimeError")] * 2
    assert "probe of monitor 1 failed inside monitor-tick: RuntimeError: boom" in capsys.readouterr().err


def test_a_name_is_looked_up_and_its_addresses_tried_in_turn(server: LocalServer) -> None:
    """localhost: its addresses (::1 and 127.0.0.1 where both exist) tried by happy eyeballs; the
    server listens on 127.0.0.1 only, so one of them may be refused on the way."""
    [result], _ = fan_out([monitor(1, f"http://localhost:{server.port}/ok")])
    assert (result.status, result.http_status) == ("up", 200)


def test_every_address_refused_is_connect_refused_as_on_asyncios_loop() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: refused
        [literal], _ = fan_out([monitor(1, f"http://127.0.0.1:{port}/")])
        [name], _ = fan_out([monitor(1, f"http://localhost:{port}/")])
    assert (literal.status, literal.cause) == ("down", "connect refused")
    assert (name.status, name.cause) == ("down", "connect refused")


def test_a_name_that_does_not_resolve_is_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_such_name(*args: object, **kwargs: object) -> list[object]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)
    [result], _ = fan_out([monitor(1, "http://nowhere.invalid/")])
    assert (result.status, result.cause) == ("down", "dns")


def test_a_hand_over_goes_on_at_once_while_a_hanging_host_holds_the_bare_loop(server: LocalServer) -> None:
    """The redirect is followed on asyncio's loop while the hanging check still waits for its
    deadline: when the budget ends, it has its answer (not CUT_OFF, our limit)."""
    monitors = [monitor(1, server.url("/hang"), timeout_s=5), monitor(2, server.url("/redirect/1"))]
    options = TickOptions("unused.db", retry_delay_s=0, budget_s=1.5)
    results = _probe(monitors, options, 60_000, {})
    assert results[0] == probing.CUT_OFF
    assert (results[1].status, results[1].http_status, results[1].handed_at_ms) == ("up", 200, 60_000)


def test_hundreds_of_checks_that_fail_at_once_end_one_by_one_never_nested(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each check ends from the loop, not inside the check before it: a network that refuses
    every connection at once (here connect itself fails) is hundreds of down checks, never a
    RecursionError."""

    def unreachable(self: socket.socket, address: object) -> None:
        raise OSError(errno.ENETUNREACH, "Network is unreachable")

    monkeypatch.setattr(socket.socket, "connect", unreachable)
    monitors = [monitor(i, f"http://127.0.0.1:9/?m={i}") for i in range(1, 401)]
    results, _ = fan_out(monitors, concurrency=2)
    assert {(r.status, r.cause) for r in results} == {("down", "connect error")}


def test_a_losing_attempt_already_selected_when_another_won_is_ignored() -> None:
    """Two addresses of a name ready in the same select: the first wins and closes the other;
    the other's readiness, already in hand, must not end the check."""
    loop = bare_probes.Loop()
    ended: list[object] = []
    call = bare_probes.BareCall(
        loop,
        wire.Request(b"GET / HTTP/1.1\r\n\r\n", "127.0.0.1", 9, False),
        ssl.create_default_context,
        ended.append,
        keep=False,
        limit=0,
        read_body=lambda status: False,
    )
    loser = bare_probes._Attempt(("127.0.0.2", 9))  # its socket closed by the winner
    call._guarded(call._connect_ready, loser)
    loop.run_once(loop.time())
    loop.close()
    assert ended == []


def test_a_bug_while_judging_an_answer_is_a_probe_error_at_once(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not swallowed by the parser's callback it would run in, and never a timeout."""

    def broken(*args: object) -> ProbeResult:
        raise RuntimeError("judged badly")

    monkeypatch.setattr(http, "answer_result", broken)
    [result], _ = fan_out([monitor(1, server.url("/ok"), timeout_s=20)], budget_s=20)
    assert (result.status, result.cause) == ("down", "probe error: RuntimeError")
    assert "RuntimeError: judged badly" in capsys.readouterr().err


def _answer_with_the_handshake(listener: socket.socket, context: ssl.SSLContext, stop: threading.Event) -> None:
    """A TLS 1.2 server that sends its response in the same write as its handshake's last
    flight, before reading any request, and then waits."""
    conn, _ = listener.accept()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_side=True)
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            conn.sendall(outgoing.read())
            incoming.write(conn.recv(65536))
    tls.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    conn.sendall(outgoing.read())
    stop.wait(10)
    conn.close()


def test_a_response_that_came_with_the_handshake_is_read(tmp_path: object) -> None:
    """As asyncio's SSL protocol reads what is already in after its handshake."""
    pair = valid_cert()
    context = pair.server_context
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    stop = threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        thread = threading.Thread(target=_answer_with_the_handshake, args=(listener, context, stop), daemon=True)
        thread.start()
        m = monitor(1, f"https://127.0.0.1:{listener.getsockname()[1]}/", timeout_s=3)
        options = TickOptions("unused.db", verify=pair.client_context(), retry_delay_s=0, budget_s=5)
        [result] = _probe([m], options, 0, {})
        stop.set()
        thread.join(5)
    assert (result.status, result.http_status) == ("up", 200)


def test_a_cancelled_timer_lets_go_of_what_it_would_have_called() -> None:
    """An ended check's deadline stays in the loop's heap until its time: it must not hold the
    check (a tick of 10,000 checks held them all, about 20 MB)."""

    class Held:
        pass

    held = Held()
    gone = weakref.ref(held)
    loop = bare_probes.Loop()
    timer = loop.call_at(loop.time() + 3600, lambda held=held: None)
    del held
    timer.cancel()
    gc.collect()
    assert gone() is None
    loop.close()
