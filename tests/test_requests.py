"""Requests as real setups need them: headers, basic auth, methods with a body, a home
lab's own CA and --insecure, carried by every path a request takes (httpx's own transport in a
small tick, straight on the wire in a large one, the guarded transport under --block-private);
${ENV_VAR} references resolved by the tick and never printed."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from freezegun import freeze_time

from monitor_tick.core import clock
from monitor_tick.core.redact import redact_settings
from monitor_tick.probes.guard import AddressGuard
from monitor_tick.run.tick import TickOptions, run_tick
from tests.commands import ORDINARY_MS, clock_at, created_or_nothing
from tests.conftest import add, traced_writes
from tests.servers import LocalServer, make_ca, self_signed_cert, valid_cert

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
SECRET = "s3cret-Pa55"
TOKEN = "tok-0123456789abcdef"

# the tick as it runs, and under a guard that blocks only a documentation network (127.0.0.1
# allowed), whose lookups are checked before curl is handed the addresses
GUARDS = {"unguarded": None, "guarded": AddressGuard(blocked=["192.0.2.0/24"])}


@pytest.fixture(params=GUARDS.values(), ids=GUARDS.keys())
def guard(request: pytest.FixtureRequest) -> AddressGuard | None:
    return request.param  # type: ignore[no-any-return]


def cli(db: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}
    )


def tick(db_path: str, guard: AddressGuard | None) -> dict[int, tuple[str, str | None]]:
    report = run_tick(TickOptions(db_path, retry_delay_s=0, budget_s=6, guard=guard))
    assert report.invalid == [] and report.refused == [], (report.invalid, report.refused)
    return {r.monitor_id: (r.status, r.cause) for r in report.results}


def test_headers_basic_auth_method_and_body_reach_the_server(
    guard: AddressGuard | None,
    local_server: LocalServer,
    conn: sqlite3.Connection,
    db_path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MT_TEST_TOKEN", TOKEN)
    monkeypatch.setenv("MT_TEST_PASSWORD", SECRET)
    add(
        conn,
        local_server.url("/ok"),
        method="POST",
        headers="X-Api-Key: ${MT_TEST_TOKEN}\nAccept: application/json",
        basic_auth="ops:${MT_TEST_PASSWORD}",
        body='{"probe": "${MT_TEST_TOKEN}"}',
    )
    add(conn, local_server.url("/status/204"), method="DELETE", basic_auth="ops:literal-pass")
    assert tick(db_path, guard) == {1: ("up", None), 2: ("up", None)}
    by_path = {r.path: r for r in local_server.requests}
    post, delete = by_path["/ok"], by_path["/status/204"]
    assert (post.method, post.path) == ("POST", "/ok")
    assert post.headers["x-api-key"] == TOKEN and post.headers["accept"] == "application/json"
    assert post.headers["authorization"] == "Basic " + base64.b64encode(f"ops:{SECRET}".encode()).decode()
    assert post.body == json.dumps({"probe": TOKEN}).encode()
    assert (delete.method, delete.headers["authorization"], delete.body) == (
        "DELETE",
        "Basic " + base64.b64encode(b"ops:literal-pass").decode(),
        b"",
    )


def test_a_home_labs_own_ca_and_insecure_verify_per_monitor(
    guard: AddressGuard | None, conn: sqlite3.Connection, db_path: str
) -> None:
    """Three HTTPS servers: one with a certificate from a CA of the lab's own, one self-signed.
    The tick's default trust (the system's CAs) knows neither; --ca-file and --insecure change
    only their own monitor, and the default-trust monitor of the same lab stays refused."""
    lab_ca = make_ca()
    lab = valid_cert(lab_ca)
    own = self_signed_cert()
    with LocalServer(tls=lab.server_context) as lab_server, LocalServer(tls=own.server_context) as own_server:
        add(conn, lab_server.url("/ok"), name="lab-ca", ca_file=lab.ca_pem, expires_within_sec=86_400)
        add(conn, own_server.url("/ok"), name="insecure", insecure=True)
        add(conn, lab_server.url("/ok"), name="default-trust")
        add(conn, own_server.url("/ok"), name="lab-ca-for-another", ca_file=lab.ca_pem)
        assert tick(db_path, guard) == {
            1: ("up", None),
            2: ("up", None),
            3: ("down", "tls: certificate not trusted"),
            4: ("down", "tls: self-signed certificate"),
        }


def test_secrets_are_never_printed_and_a_missing_variable_is_a_configuration_error(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    minute = clock.minute_of_ms(clock.now_ms())
    # the minute configuration errors are said in, of the hour before this one: the minute after
    # it must be past too (in this hour's first minute, this hour's second is still to come)
    hour_start = minute - minute % 60 - 60
    added = cli(
        db,
        "add",
        local_server.url("/ok"),
        "--name",
        "api",
        "--every",
        "1m",
        "--method",
        "post",
        "--header",
        "X-Api-Key: ${MT_TEST_TOKEN}",
        "--header",
        f"X-Literal: {TOKEN}",
        "--basic-auth",
        f"ops:{SECRET}",
        "--body",
        f"password={SECRET}",
        env={"MT_TEST_TOKEN": TOKEN},  # else `add` warns that it is not set (as the next test shows)
    )
    assert added.returncode == 0 and created_or_nothing(added.stderr, db)
    raw = sqlite3.connect(db)
    raw.execute("UPDATE monitors SET created_at_ms = 0")
    raw.commit()
    raw.close()
    # the tick's environment holds the variable: the check is up and nothing is printed
    done = cli(db, "--minute", str(hour_start - 60), "--json", "--retry-delay", "0", env={"MT_TEST_TOKEN": TOKEN})
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads(done.stdout)["results"][0]["status"] == "up"
    assert local_server.requests[-1].headers["x-api-key"] == TOKEN
    printed = [done.stdout]
    # without it: not down, not recorded, said on stderr (hourly), and counted as invalid
    missing = cli(db, "--minute", str(hour_start), "--json", "--retry-delay", "0")
    assert missing.returncode == 0
    assert (
        missing.stderr
        == "monitor-tick: monitor 1 skipped: cannot be probed here: environment variable MT_TEST_TOKEN is not set\n"
    )
    assert json.loads(missing.stdout)["results"] == [] and json.loads(missing.stdout)["invalid"] == 1
    quiet = cli(db, "--minute", str(hour_start + 1), "--retry-delay", "0")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    listed = cli(db, "list", "--json", env={"MT_TEST_TOKEN": TOKEN})
    row = json.loads(listed.stdout)[0]
    assert row["method"] == "POST"
    assert row["headers"] == "X-Api-Key: ${MT_TEST_TOKEN}\nX-Literal: ***"
    assert (row["basic_auth"], row["body"]) == ("ops:***", "***")
    for command in (["list"], ["report"], ["report", "--json"], ["--dry-run", "--json"]):
        printed.append(cli(db, *command, env={"MT_TEST_TOKEN": TOKEN}).stdout)
    printed += [listed.stdout, missing.stdout, missing.stderr]
    for text in printed:
        assert SECRET not in text and TOKEN not in text


def test_url_references_are_resolved_by_each_tick_and_an_unset_one_makes_the_monitor_unprobeable(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    minute = clock.minute_of_ms(clock.now_ms())
    hour_start = minute - minute % 60 - 60  # as in the test above
    env = {"MT_TEST_HOST": f"127.0.0.1:{local_server.port}", "MT_TEST_KEY": SECRET}
    added = cli(db, "add", "http://${MT_TEST_HOST}/ok?key=${MT_TEST_KEY}", "--name", "api", "--every", "1m", env=env)
    assert added.returncode == 0 and created_or_nothing(added.stderr, db), added.stderr
    raw = sqlite3.connect(db)
    raw.execute("UPDATE monitors SET created_at_ms = 0")
    raw.commit()
    assert raw.execute("SELECT url FROM monitors").fetchall() == [("http://${MT_TEST_HOST}/ok?key=${MT_TEST_KEY}",)]
    raw.close()
    done = cli(db, "--minute", str(hour_start - 60), "--json", "--retry-delay", "0", env=env)
    assert done.returncode == 0 and done.stderr == ""
    assert [(r["status"], r["cause"]) for r in json.loads(done.stdout)["results"]] == [("up", None)]
    assert local_server.requests[-1].target == f"/ok?key={SECRET}"
    missing = cli(db, "--minute", str(hour_start), "--retry-delay", "0", env={"MT_TEST_KEY": SECRET})
    assert (missing.returncode, missing.stdout) == (0, "")
    assert (
        missing.stderr
        == "monitor-tick: monitor 1 skipped: cannot be probed here: environment variable MT_TEST_HOST is not set\n"
    )
    # set, but to a value that makes no usable URL: the same, without quoting it
    bad = {"MT_TEST_HOST": "127.0.0.1:99999", "MT_TEST_KEY": SECRET}
    unusable = cli(db, "--minute", str(hour_start - 60 * 60), "--retry-delay", "0", env=bad)
    assert unusable.stderr == (
        "monitor-tick: monitor 1 skipped: cannot be probed here: "
        "the url is not usable with MT_TEST_HOST, MT_TEST_KEY resolved (check their values)\n"
    )
    assert len(local_server.requests) == 1
    printed = [done.stdout, missing.stderr]
    for command in (["list"], ["list", "--json"], ["show", "api"], ["report", "--json"], ["--dry-run", "--json"]):
        run = cli(db, *command, env=env)
        assert run.returncode == 0, (command, run.stderr)
        printed += [run.stdout, run.stderr]
    # export writes the references as stored: apply resolves a file's URL from its own environment
    exported = cli(db, "export", env=env)
    assert (exported.returncode, exported.stderr) == (0, "")
    assert 'url = "http://${MT_TEST_HOST}/ok?key=${MT_TEST_KEY}"\n' in exported.stdout
    for text in printed:
        assert SECRET not in text


def test_list_says_plainly_when_a_monitor_does_not_verify_tls(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert cli(db, "add", "https://nas.lan:8443/", "--name", "nas", "--insecure").returncode == 0
    assert cli(db, "add", "https://example.org/", "--name", "site").returncode == 0
    lines = cli(db, "list").stdout.splitlines()
    assert lines[1].endswith("INSECURE: TLS not verified") and "nas" in lines[1]
    assert "INSECURE" not in lines[2]


@pytest.mark.parametrize(
    ("args", "refusal"),
    [
        (["--method", "BREW"], "method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS (got 'BREW')"),
        (["--body", "x"], "--body needs a method that sends one, e.g. --method POST (not GET)"),
        (["--header", "no colon"], "--header must be 'Name: value' with a name of letters, digits and -"),
        (["--header", "Host: other"], "--header Host is set by monitor-tick itself"),
        (["--basic-auth", "nopassword"], "--basic-auth must be USER:PASSWORD"),
        (["--ca-file", "/nonexistent/ca.pem"], "--ca-file /nonexistent/ca.pem: No such file or directory"),
        (["--insecure", "--ca-file", "X"], "--ca-file and --insecure contradict each other: give one"),
        (
            ["--insecure", "--expires-within", "7d"],
            "--expires-within needs a verified certificate: drop --insecure (or use --ca-file)",
        ),
    ],
)
def test_add_refuses_requests_it_cannot_send(tmp_path: Path, args: list[str], refusal: str) -> None:
    refused = cli(str(tmp_path / "m.db"), "add", "https://example.org/", *args)
    assert (refused.returncode, refused.stderr) == (2, f"monitor-tick: {refusal}\n")


def test_a_ca_file_that_is_not_pem_is_refused_without_quoting_it(tmp_path: Path) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text(f"not a certificate {SECRET}\n")
    refused = cli(str(tmp_path / "m.db"), "add", "https://example.org/", "--ca-file", str(bogus))
    assert (refused.returncode, refused.stderr) == (
        2,
        f"monitor-tick: --ca-file {bogus}: not a PEM file of certificates\n",
    )


def test_redacted_settings_keep_names_users_and_references() -> None:
    shown = redact_settings(
        {
            "url": "https://u:p@h/x?token=abc",
            "headers": "Authorization: Bearer ${API_TOKEN}\nX-Key: abc\nX-Api-Key: sk_live_typed${SUFFIX}\nX-Token: ${A}${B}",
            "basic_auth": "ops:${PASS}",
            "body": None,
            "keyword": "ok",
        }
    )
    assert shown == {
        "url": "https://***@h/x?token=***",
        # a value shown is references and at most an auth scheme's word: a secret typed in beside
        # a reference is hidden with it
        "headers": "Authorization: Bearer ${API_TOKEN}\nX-Key: ***\nX-Api-Key: ***\nX-Token: ${A}${B}",
        "basic_auth": "ops:${PASS}",
        "body": None,
        "keyword": "ok",
    }
    body = '{"token": "${TOKEN}", "ping": ${N}}'
    assert (redact_settings({"body": body})["body"], redact_settings({"body": '{"a": 1}'})["body"]) == (body, "***")


# --- a monitor the tick cannot probe -----------------------------------------------------------

UNSET = "MT_TEST_NEVER_IN_CRON"
CANNOT = f"cannot be probed here: environment variable {UNSET} is not set"
SAID = f"monitor-tick: monitor 1 skipped: {CANNOT}\n"
WARNED = (
    f"monitor-tick: monitor api: ${{{UNSET}}} is not set here; the tick reads it from its own environment "
    "(set it there, e.g. in the crontab), or it cannot probe this monitor\n"
)


def at(minute_of_hour: int, hour: int = 0) -> int:
    """5 s into a minute of 2026-12-01 (UTC), `hour` hours after midnight."""
    return clock.hour_start_ms(ORDINARY_MS) + hour * clock.MS_PER_HOUR + minute_of_hour * clock.MS_PER_MINUTE + 5_000


def as_cron(db: str, at_ms: int, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command under a clock at `at_ms`, its environment holding UNSET only when a
    `token` is given."""
    env = {name: value for name, value in os.environ.items() if name != UNSET}
    env.update(clock_at(at_ms), **({UNSET: token} if token is not None else {}))
    return subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env=env)


def added_api(db: str, local_server: LocalServer) -> None:
    added = as_cron(
        db, at(30), "add", local_server.url("/ok"), "--name", "api", "--every", "1m", "--header", f"X-Key: ${{{UNSET}}}"
    )
    # added all the same (cron's environment may hold it), with a warning
    assert (added.returncode, added.stdout, added.stderr) == (0, "1\n", WARNED)


def listed_row(db: str, at_ms: int, token: str | None = None) -> dict[str, object]:
    (row,) = json.loads(as_cron(db, at_ms, "list", "--json", token=token).stdout)
    return row  # type: ignore[no-any-return]


def test_a_monitor_the_tick_cannot_probe_is_shown_invalid_everywhere_and_said_each_hour(
    any_db: str, local_server: LocalServer, tmp_path: Path
) -> None:
    db = any_db  # a SQLite file, then a PostgreSQL database
    added_api(db, local_server)
    page, metrics_file = tmp_path / "page", tmp_path / "metrics.prom"
    outputs = ["--status-page", str(page), "--metrics-file", str(metrics_file)]
    first = as_cron(db, at(31), "--host-name", "cron-a", *outputs)  # a live tick, not in the hour's first minutes
    assert (first.returncode, first.stdout, first.stderr) == (0, "", SAID)

    # what that tick found is shown, however the reader's environment differs from the tick's
    for token in (None, TOKEN):
        row = listed_row(db, at(31) + 30_000, token)
        assert (row["state"], row["invalid_cause"], row["invalid_host"], row["next_check_ms"]) == (
            "invalid",
            CANNOT,
            "cron-a",
            None,
        )
        assert at(31) <= row["invalid_since_ms"] < at(32)  # type: ignore[operator]
    (line,) = as_cron(db, at(31) + 30_000, "list", token=TOKEN).stdout.splitlines()[1:]
    assert " invalid " in line and line.endswith(f"{CANNOT} (found by cron-a at 2026-12-01 00:31 UTC)")
    shown = as_cron(db, at(31) + 30_000, "show", "api", token=TOKEN).stdout.splitlines()
    assert f"  state      invalid: {CANNOT} (found by cron-a at 2026-12-01 00:31 UTC); last check -" in shown
    monitor = json.loads(as_cron(db, at(31) + 30_000, "show", "api", "--json").stdout)["monitor"]
    assert (monitor["state"], monitor["invalid_cause"], monitor["invalid_host"]) == ("invalid", CANNOT, "cron-a")
    # the public page says it is not checked, never why
    html = (page / "index.html").read_text()
    assert 'data-state="invalid"' in html and ">Not checked<" in html
    assert UNSET not in html and "cannot be probed" not in html and "cron-a" not in html
    assert ">not checked<" in (page / "badges" / "1-status.svg").read_text()
    metrics = (metrics_file).read_text()
    assert 'monitor_tick_invalid{id="1",monitor="api"} 1\n' in metrics
    assert 'monitor_tick_monitors{state="invalid"} 1\n' in metrics

    # said once an hour by each host: not again this hour; a --force or --minute run never uses
    # up the next hour's report
    assert as_cron(db, at(32), "--host-name", "cron-a").stderr == ""
    forced = as_cron(db, at(0, hour=1), "--force", "--host-name", "cron-a")
    replayed = as_cron(db, at(2, hour=1), "--minute", str(clock.minute_of_ms(at(1, hour=1))), "--host-name", "cron-a")
    assert (forced.returncode, replayed.returncode) == (0, 0) and {forced.stderr, replayed.stderr} <= {"", SAID}
    assert as_cron(db, at(2, hour=1), "--host-name", "cron-a").stderr == SAID
    assert as_cron(db, at(3, hour=1), "--host-name", "cron-a").stderr == ""
    assert listed_row(db, at(3, hour=1) + 30_000)["invalid_since_ms"] == row["invalid_since_ms"]  # not rewritten

    # the environment fixed: the next tick probes it, and the stored state is cleared
    fixed = as_cron(db, at(4, hour=1), "--host-name", "cron-a", token=TOKEN)
    assert (fixed.returncode, fixed.stdout, fixed.stderr) == (0, "", "")
    assert local_server.requests[-1].headers["x-key"] == TOKEN
    row = listed_row(db, at(4, hour=1) + 30_000)
    assert (row["state"], row["invalid_cause"], row["invalid_host"], row["invalid_since_ms"]) == ("up",) + (None,) * 3


def test_each_host_of_a_fleet_says_what_it_cannot_probe_and_the_newest_tick_decides_the_state(
    any_db: str, local_server: LocalServer
) -> None:
    db = any_db  # on PostgreSQL, the hosts of a fleet; on SQLite, runs under two --host-name
    added_api(db, local_server)
    said = [as_cron(db, at(31 + n), "--host-name", host).stderr for n, host in enumerate("abab")]
    assert said == [SAID, SAID, "", ""]
    assert listed_row(db, at(35))["invalid_host"] == "a"  # the same finding by b: nothing written
    assert [as_cron(db, at(1 + n, hour=1), "--host-name", host).stderr for n, host in enumerate("ab")] == [SAID, SAID]
    # b's environment holds it: its tick probes the monitor, and that newest finding is shown
    assert as_cron(db, at(3, hour=1), "--host-name", "b", token=TOKEN).stderr == ""
    assert listed_row(db, at(3, hour=1) + 30_000)["state"] == "up"
    # then a's tick cannot: shown invalid again, said by a already this hour
    assert as_cron(db, at(4, hour=1), "--host-name", "a").stderr == ""
    row = listed_row(db, at(4, hour=1) + 30_000)
    assert (row["state"], row["invalid_host"]) == ("invalid", "a") and row["invalid_since_ms"] >= at(4, hour=1)  # type: ignore[operator]


def test_add_edit_and_apply_warn_of_references_unset_where_they_run(tmp_path: Path, local_server: LocalServer) -> None:
    db = str(tmp_path / "m.db")
    added = as_cron(db, at(30), "add", local_server.url("/ok"), "--name", "plain")
    assert (added.returncode, added.stderr) == (0, f"monitor-tick: created database {db}\n")
    edited = as_cron(
        db, at(30), "edit", "plain", "--basic-auth", f"ops:${{{UNSET}}}", "--header", "X-Other: ${MT_TEST_ALSO_UNSET}"
    )
    assert edited.returncode == 0 and edited.stderr == (
        WARNED.replace("monitor api", "monitor plain").replace(f"${{{UNSET}}}", "${MT_TEST_ALSO_UNSET}")
        + WARNED.replace("monitor api", "monitor plain")
    )
    assert as_cron(db, at(30), "edit", "plain", "--name", "quiet", token=TOKEN).stderr == WARNED.replace(
        "monitor api", "monitor quiet"
    ).replace(f"${{{UNSET}}}", "${MT_TEST_ALSO_UNSET}")
    monitors = tmp_path / "monitors.toml"
    monitors.write_text(
        "[monitors.api]\n"
        f'url = "{local_server.url("/ok")}"\n'
        "interval_sec = 60\n"
        'method = "POST"\n'
        f'headers = "X-Key: ${{{UNSET}}}"\n'
        f'body = "token=${{{UNSET}}}"\n'
    )
    for args in (["--dry-run"], []):
        applied = as_cron(db, at(30), "apply", str(monitors), *args)
        assert (applied.returncode, applied.stderr) == (0, WARNED), args
    assert as_cron(db, at(30), "apply", str(monitors), token=TOKEN).stderr == ""
    # a reference in the URL, which each tick resolves too
    referenced = local_server.url("/ok").replace("/ok", f"/${{{UNSET}}}")
    added = as_cron(db, at(30), "add", referenced, "--name", "by-url")
    assert (added.returncode, added.stderr) == (0, WARNED.replace("monitor api", "monitor by-url"))
    edited = as_cron(db, at(30), "edit", "by-url", "--url", referenced.replace(UNSET, "MT_TEST_ALSO_UNSET"))
    assert (edited.returncode, edited.stderr) == (
        0,
        WARNED.replace("monitor api", "monitor by-url").replace(f"${{{UNSET}}}", "${MT_TEST_ALSO_UNSET}"),
    )


def test_a_monitor_that_cannot_be_probed_costs_a_write_when_that_changes_and_one_an_hour(
    db_path: str, conn: sqlite3.Connection, local_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's trace callback counts the tick's writes to the invalid_* tables (the store's code
    is the same text on PostgreSQL)."""
    monkeypatch.delenv(UNSET, raising=False)
    add(conn, local_server.url("/ok"), headers=f"X-Key: ${{{UNSET}}}")
    writes = traced_writes(monkeypatch)

    def tick(at_ms: int) -> tuple[list[tuple[str, str]], list[int]]:
        """(the tick's writes to the invalid_* tables, the monitors it said it cannot probe)"""
        writes.clear()
        with freeze_time(clock.iso_from_ms(at_ms), real_asyncio=True):
            report = run_tick(TickOptions(db_path, retry_delay_s=0, host_name="cron-a"))
        said = [monitor for monitor, _ in report.skipped_to_say()]
        return [write for write in writes if write[1].startswith("invalid_")], said

    found, said = ("INSERT INTO", "invalid_monitors"), ("INSERT INTO", "invalid_reports")
    assert tick(at(31)) == ([found, said], [1])
    assert tick(at(32)) == tick(at(59)) == ([], [])  # the same finding, said already this hour
    assert tick(at(0, hour=1)) == ([said], [1])
    monkeypatch.setenv(UNSET, TOKEN)
    assert tick(at(1, hour=1)) == ([("DELETE FROM", "invalid_monitors")], [])
    assert tick(at(2, hour=1)) == ([], [])


@pytest.mark.parametrize(
    ("url", "env", "cause", "said"),
    [
        # a host is no secret: the kind's own words stay whole, so the canary can read them
        ("redis://${REDIS_HOST}:6379", {"REDIS_HOST": "redis"}, "redis: dns", "redis: dns"),
        (
            "postgresql://app:${PW}@db.example.test/x",
            {"PW": "s"},
            "postgresql: connect error",
            "postgresql: connect error",
        ),
        ("tcp://${H}:22", {"H": "connect"}, "tcp: connect error", "tcp: connect error"),
        # a value in the query, the user info or the path is hidden where it stands whole
        (
            "dns://example.org?server=192.0.2.53&expect=${IP}",
            {"IP": "192.0.2.1"},
            "dns: expected 192.0.2.1, got 192.0.2.7",
            "dns: expected ${IP}, got 192.0.2.7",
        ),
        (
            "https://ops:${PW}@example.test/",
            {"PW": "hunter2"},
            "probe failed: https://ops:hunter2@example.test/",
            "probe failed: https://ops:${PW}@example.test/",
        ),
        (
            "https://hc.example.test/ping/${UUID}",
            {"UUID": "0f3a-77"},
            "status 404 at /ping/0f3a-77",
            "status 404 at /ping/${UUID}",
        ),
    ],
)
def test_a_cause_hides_the_secrets_it_quotes_and_never_the_kinds_own_words(
    url: str, env: dict[str, str], cause: str, said: str
) -> None:
    from monitor_tick.alerts import policy
    from monitor_tick.core.model import CheckResult
    from monitor_tick.probes import new_monitor
    from monitor_tick.probes.request import hide_values

    monitor = new_monitor(name="m", url=url, interval_sec=60, aligned=False, given={})
    hidden = hide_values(cause, monitor, env)
    assert hidden == said
    network = CheckResult(1, "down", None, None, hidden)
    assert policy.is_network_failure(network) == cause.endswith((": dns", ": connect error"))
