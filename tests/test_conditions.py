"""--max-latency and --json-field: the conditions Uptime Kuma and Gatus users rely on.
Table-driven rules for the pure parts, then real ticks through the installed `monitor-tick`
against a real server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from monitor_tick.core.model import InvalidMonitor, Monitor, ProbeResult
from monitor_tick.probes import jsonfield, latency, new_monitor
from monitor_tick.probes.base import failed_conditions
from tests.servers import LocalServer, send_response

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60)


def tick(db: str, *args: str) -> dict[str, dict[str, object]]:
    """One live tick; each check's result by monitor name. Its monitors must each have a
    --timeout under the 6s budget: in an hour's first minute, the tick says on stderr of every
    one that does not (the default 10s) that it cannot fit."""
    run = subprocess.run(
        [MONITOR_TICK, "--db", db, "--json", "--budget", "6s", "--retry-delay", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and run.stderr == "", run.stderr
    return {r["name"]: r for r in json.loads(run.stdout)["results"]}


@pytest.mark.parametrize(
    ("field", "value", "equal"),
    [
        ("UP", "UP", True),
        ("UP", "up", False),
        ("42", "42", True),  # a string field matches its text
        (42, "42", True),
        (42, "42.0", True),  # a number matches by value
        (42.0, "42", True),
        (0.5, "0.50", True),
        (42, "forty-two", False),
        (2**60 + 1, str(2**60 + 1), True),  # integers exactly, past a float's precision
        (2**60 + 1, str(2**60), False),
        (True, "true", True),
        (True, "True", False),
        (False, "false", True),
        (None, "null", True),
        (None, "", False),
        ("", "", True),
        ({"a": 1}, '{"a": 1}', False),  # objects and arrays never equal
        ([1], "[1]", False),
    ],
)
def test_a_value_is_compared_by_the_fields_json_type(field: object, value: str, equal: bool) -> None:
    assert jsonfield.matches(field, value) is equal


def monitor(**settings: object) -> Monitor:
    return Monitor(0, "api", "http", "http://site.test/", 60, 60, **settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "body", "cause"),
    [
        ("status=UP", b'{"status": "UP"}', None),
        ("status=UP", b'{"status": "DOWN"}', 'json: status is "DOWN", not UP'),
        ("data.db.ok=true", b'{"data": {"db": {"ok": true}}}', None),
        ("data.db.ok=true", b'{"data": {"db": {"ok": false}}}', "json: data.db.ok is false, not true"),
        ("data.db.ok=true", b'{"data": {"db": {}}}', "json: no field data.db.ok"),
        ("data.db.ok=true", b'{"data": {"db": "ok"}}', "json: no field data.db.ok"),
        ("checks.1.name=disk", b'{"checks": [{"name": "db"}, {"name": "disk"}]}', None),
        ("checks.2.name=disk", b'{"checks": [{"name": "db"}, {"name": "disk"}]}', "json: no field checks.2.name"),
        ("data=x", b'{"data": {"db": 1}}', "json: data is an object, not x"),
        ("url=a=b", b'{"url": "a=b"}', None),  # VALUE is everything after the first '='
        ("status=UP", b"<html>ok</html>", "json: body is not JSON"),
        ("status=UP", b"", "json: body is not JSON"),
        ("status=UP", b"\xff\xfe\x00garbage", "json: body is not JSON"),
        (
            "msg=x",
            b'{"msg": "line\\nbreak\\u001b[31m and much more text than forty characters"}',
            'json: msg is "line\\nbreak\\u001b[31m and much more ..., not x',
        ),
    ],
)
def test_the_cause_names_the_field_and_what_it_held(spec: str, body: bytes, cause: str | None) -> None:
    assert jsonfield.cause(monitor(json_field=spec), body, whole=True) == cause


def test_a_body_longer_than_what_is_kept_is_not_judged_as_json() -> None:
    assert jsonfield.cause(monitor(json_field="a=1"), b'{"a": 1', whole=False) == "json: body larger than 1 MiB"


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        ({"json_field": "status"}, "--json-field must be PATH=VALUE with a dotted PATH, e.g. status=UP (got 'status')"),
        ({"json_field": "=UP"}, "--json-field must be PATH=VALUE with a dotted PATH, e.g. status=UP (got '=UP')"),
        ({"json_field": "a..b=1"}, "--json-field must be PATH=VALUE with a dotted PATH, e.g. status=UP (got 'a..b=1')"),
        ({"json_field": "a=1", "method": "HEAD"}, "--json-field needs the body: use --method GET"),
        ({"max_latency_ms": 0}, "--max-latency must be whole milliseconds, more than 0 (got 0)"),
        ({"max_latency_ms": 10_000}, "--max-latency (10000 ms) must be shorter than --timeout (10s)"),
        ({"max_latency_ms": 3000, "timeout_s": 2.0}, "--max-latency (3000 ms) must be shorter than --timeout (2s)"),
    ],
)
def test_conditions_that_cannot_be_used_are_refused(given: dict[str, object], refusal: str) -> None:
    with pytest.raises(InvalidMonitor) as refused:
        new_monitor(name=None, url="http://site.test/", interval_sec=60, aligned=False, given=given)
    assert str(refused.value) == refusal


@pytest.mark.parametrize(
    ("latency_ms", "cause"), [(None, None), (499, None), (500, None), (812, "slow: 812 ms > 500 ms")]
)
def test_only_a_latency_above_the_limit_is_slow(latency_ms: int | None, cause: str | None) -> None:
    assert latency.slow_cause(monitor(max_latency_ms=500), latency_ms) == cause


@pytest.mark.parametrize(
    ("causes", "cause"),
    [
        ((None, None), None),
        (("status 503",), "status 503"),
        (("slow: 412 ms > 150 ms", None, "json: body is not JSON"), "slow: 412 ms > 150 ms; json: body is not JSON"),
        ((None, "keyword missing", "keyword present"), "keyword missing; keyword present"),
        # each condition is cut, so that the cause stays short however many fail
        (("json: no field " + "a." * 100 + "b", "status 500"), "json: no field " + "a." * 51 + "...; status 500"),
        # and on one line, whatever a user's setting holds
        (("json: no field a\nb\u2028c\x1b[31m",), "json: no field a\\u000ab\\u2028c\\u001b[31m"),
    ],
)
def test_every_failed_condition_is_named_in_one_short_line(causes: tuple[str | None, ...], cause: str | None) -> None:
    assert failed_conditions(*causes) == cause


@pytest.mark.parametrize(
    ("result", "judged"),
    [
        (ProbeResult("up", 812), ProbeResult("down", 812, None, "slow: 812 ms > 500 ms")),
        (ProbeResult("up", 500, 200), ProbeResult("up", 500, 200)),
        # a condition that failed already keeps its cause, after the latency's
        (
            ProbeResult("down", 812, 503, "status 503"),
            ProbeResult("down", 812, 503, "slow: 812 ms > 500 ms; status 503"),
        ),
        (ProbeResult("down", 20, 503, "status 503"), ProbeResult("down", 20, 503, "status 503")),
        (
            ProbeResult("down", 900, None, "tls: expires in 3 days", 10),
            ProbeResult("down", 900, None, "slow: 900 ms > 500 ms; tls: expires in 3 days", 10),
        ),
        # no answer, nothing measured; and an unknown result is not judged
        (ProbeResult("down", None, None, "timeout"), ProbeResult("down", None, None, "timeout")),
        (ProbeResult("unknown", 900, None, "tls: no cert"), ProbeResult("unknown", 900, None, "tls: no cert")),
    ],
)
def test_a_slow_check_names_the_latency_beside_its_other_failures(result: ProbeResult, judged: ProbeResult) -> None:
    assert latency.judge(monitor(max_latency_ms=500), result) == judged


def test_add_refuses_a_bad_condition_in_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    refused = cli(db, "add", "http://127.0.0.1:9/", "--json-field", "status")
    assert refused.returncode == 2
    assert (
        refused.stderr.startswith("monitor-tick: --json-field must be PATH=VALUE") and refused.stderr.count("\n") == 1
    )
    refused = cli(db, "add", "tcp://127.0.0.1:9", "--json-field", "status=UP")
    assert (refused.returncode, refused.stderr) == (2, "monitor-tick: --json-field does not apply to tcp monitors\n")
    refused = cli(db, "add", "http://127.0.0.1:9/", "--max-latency", "soon")
    assert refused.returncode == 2 and refused.stderr.startswith("monitor-tick: --max-latency: not a duration")


class JsonBody:
    """A route that answers with the JSON (or other) body the test sets."""

    def __init__(self, server: LocalServer, path: str, body: bytes) -> None:
        self.body = body
        server.route(path, self.handle)

    async def handle(self, reader: object, writer: object, path: str, method: str) -> None:
        await send_response(writer, 200, self.body, method=method, content_type="application/json")  # type: ignore[arg-type]


def test_json_fields_are_judged_on_real_responses(tmp_path: Path, local_server: LocalServer) -> None:
    db = str(tmp_path / "m.db")
    JsonBody(local_server, "/health", b'{"status": "UP", "data": {"db": {"ok": true, "latency": 3}}}')
    JsonBody(local_server, "/down", b'{"status": "DOWN"}')
    checks = {
        "up": ("/health", "status=UP"),
        "nested": ("/health", "data.db.ok=true"),
        "number": ("/health", "data.db.latency=3.0"),
        "wrong": ("/down", "status=UP"),
        "missing": ("/health", "data.cache.ok=true"),
        "html": ("/keyword/hello", "status=UP"),
    }
    for name, (path, spec) in checks.items():
        added = cli(
            db, "add", local_server.url(path), "--name", name, "--every", "1m", "--json-field", spec, "--timeout", "3s"
        )
        assert added.returncode == 0, added.stderr
    results = tick(db)
    assert {name: (r["status"], r["cause"]) for name, r in results.items()} == {
        "up": ("up", None),
        "nested": ("up", None),
        "number": ("up", None),
        "wrong": ("down", 'json: status is "DOWN", not UP'),
        "missing": ("down", "json: no field data.cache.ok"),
        "html": ("down", "json: body is not JSON"),
    }
    listed = {row["name"]: row for row in json.loads(cli(db, "list", "--json").stdout)}
    assert listed["wrong"]["cause"] == 'json: status is "DOWN", not UP'
    assert listed["nested"]["json_field"] == "data.db.ok=true"


def test_a_slow_response_is_down_with_its_latency_and_the_limit(tmp_path: Path, local_server: LocalServer) -> None:
    db = str(tmp_path / "m.db")
    for args in (
        ("/slow/400", "--name", "slow", "--max-latency", "150ms"),
        ("/ok", "--name", "fast", "--max-latency", "2s"),
    ):
        added = cli(
            db, "add", local_server.url(args[0]), *args[1:], "--every", "1m", "--timeout", "3s", "--retries", "0"
        )
        assert added.returncode == 0, added.stderr
    port_check = cli(
        db,
        "add",
        f"tcp://127.0.0.1:{local_server.port}",
        *("--name", "port", "--every", "1m", "--max-latency", "2s", "--timeout", "3s"),
    )
    assert port_check.returncode == 0, port_check.stderr
    results = tick(db)
    match = re.fullmatch(r"slow: (\d+) ms > 150 ms", str(results["slow"]["cause"]))
    assert results["slow"]["status"] == "down" and match, results["slow"]
    assert int(match.group(1)) >= 400 and results["slow"]["latency_ms"] == int(match.group(1))
    assert (results["fast"]["status"], results["port"]["status"]) == ("up", "up")


def test_a_check_that_fails_several_conditions_names_each(tmp_path: Path, local_server: LocalServer) -> None:
    """As Gatus lists every failed condition: a 400 ms answer that is not JSON is both slow and
    not JSON; a status that is not expected with a slow answer is both."""
    db = str(tmp_path / "m.db")
    for path, name, *conditions in (
        ("/slow/400", "slow-html", "--max-latency", "150ms", "--json-field", "status=UP"),
        ("/slow/400", "slow-status", "--max-latency", "150ms", "--expect", "201"),
        ("/keyword/hello", "body", "--keyword", "bye", "--keyword-absent", "hello", "--json-field", "a=1"),
        ("/slow/400", "fast-enough", "--max-latency", "2s", "--json-field", "status=UP"),
    ):
        added = cli(
            db,
            "add",
            local_server.url(path),
            "--name",
            name,
            *conditions,
            *("--every", "1m", "--timeout", "3s", "--retries", "0"),
        )
        assert added.returncode == 0, added.stderr
    results = tick(db)
    assert {name: r["status"] for name, r in results.items()} == dict.fromkeys(results, "down")
    slow_html = re.fullmatch(r"slow: (\d+) ms > 150 ms; json: body is not JSON", str(results["slow-html"]["cause"]))
    assert slow_html and int(slow_html.group(1)) == results["slow-html"]["latency_ms"] >= 400, results["slow-html"]
    assert re.fullmatch(r"slow: \d+ ms > 150 ms; status 200", str(results["slow-status"]["cause"])), results
    assert results["body"]["cause"] == "keyword missing; keyword present; json: body is not JSON"
    assert results["fast-enough"]["cause"] == "json: body is not JSON"
    listed = {row["name"]: row for row in json.loads(cli(db, "list", "--json").stdout)}
    assert listed["slow-html"]["cause"] == results["slow-html"]["cause"]


def test_latency_is_the_requests_own_time_not_the_wait_for_a_probe_slot(
    tmp_path: Path, local_server: LocalServer
) -> None:
    """One probe slot: the first monitor holds it for the slot hold (6s budget / 15 = 400 ms)
    before the second may start; the second answers at once and stays under its 300 ms limit."""
    db = str(tmp_path / "m.db")
    added = cli(db, "add", local_server.url("/slow/1500"), "--name", "holder", "--every", "1m", "--timeout", "3s")
    assert added.returncode == 0, added.stderr
    added = cli(
        db,
        "add",
        local_server.url("/ok"),
        "--name",
        "quick",
        "--every",
        "1m",
        "--max-latency",
        "300ms",
        "--timeout",
        "3s",
    )
    assert added.returncode == 0, added.stderr
    results = tick(db, "--concurrency", "1")
    assert results["holder"]["status"] == "up" and results["holder"]["latency_ms"] >= 1500  # it did hold the slot
    assert (results["quick"]["status"], results["quick"]["cause"]) == ("up", None)
