"""Monitors as a file: `apply FILE [--dry-run] [--prune]` and `export [--out FILE]`, through the
installed command against real servers on 127.0.0.1 and real SQLite files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.cli import configexport
from monitor_tick.core import clock
from monitor_tick.probes.heartbeat import new_token
from tests.commands import MONITOR_TICK, created_or_nothing
from tests.postgres import Server
from tests.receivers import JsonReceiver
from tests.servers import LocalServer, ca_pem_path

START = 29_934_720  # 2026-12-01T00:00Z


def cli(db: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )


def ok(db: str, *args: str, **env: str) -> str:
    run = cli(db, *args, **env)
    assert run.returncode == 0 and created_or_nothing(run.stderr, db), run.stderr
    return run.stdout


# the variables of test_request_options_round_trip_and_references_stay_references's references
REFERENCED = {"API_KEY": "key-1", "API_PASSWORD": "password-1", "PING_BODY": "1"}


def world(path: Path, server: LocalServer, token_sha256: str) -> str:
    """A file as a user writes it: every section, a heartbeat with its token's digest, a channel
    through ${HOOK_URL}, an owner whose plan expires, a one-off and a recurring maintenance
    window, a paused private monitor in a group."""
    path.write_text(
        f"""
[settings]
network_canary_url = "{server.url("/ok")}"

[plans.default]
min_interval_sec = 60

[plans.pro]
min_interval_sec = 60

[owners.alice]
plan = "pro"
plan_expires_at = "2099-06-01T00:00:00Z"

[monitors.api]
url = "{server.url("/keyword/hello")}"
interval_sec = 60
keyword = "hello"
owner = "alice"
alert_after_checks = 1

[monitors.backups]
url = "heartbeat"
interval_sec = 86400
grace_sec = 3600
token_sha256 = "{token_sha256}"

[monitors."old site"]
url = "{server.url("/ok")}"
interval_sec = 300
paused = true
private = true
group_name = "Internal"

[[maintenance]]
owner = "alice"
from = "2099-01-01T02:00:00Z"
until = "2099-01-01T03:00:00Z"

[[maintenance]]
monitor = "api"
weekly = "sat,sun@03:00"
for = "90m"

[[channels]]
url = "${{HOOK_URL}}"
monitor = "api"
""",
        encoding="utf-8",
    )
    return str(path)


def world_plan(server: LocalServer, channel: str) -> list[str]:
    """The plan of `world`'s file against an empty database, its channel shown as `channel`."""
    return [
        "+ plan pro (1m)",
        "+ owner alice (plan pro)",
        f"+ monitor api ({server.url('/keyword/hello')})",
        "+ monitor backups (heartbeat)",
        f"+ monitor old site ({server.url('/ok')})",
        "+ maintenance 2099-01-01T02:00:00Z to 2099-01-01T03:00:00Z (owner alice)",
        "+ maintenance weekly sat,sun@03:00 for 90m (monitor api)",
        f"+ channel {channel} (monitor api)",
        f"+ network canary {server.url('/ok')}",
    ]


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_export_then_apply_on_an_empty_database_then_export_gives_the_same_file(
    tmp_path: Path, local_server: LocalServer, engine: str, request: pytest.FixtureRequest
) -> None:
    token, digest = new_token()
    with JsonReceiver() as receiver:
        hook = receiver.apprise_url("/hook/s3cret")
        # the first database on either engine; the second, rebuilt from its export, a SQLite file
        first = str(tmp_path / "first.db")
        if engine == "postgresql":
            first = request.getfixturevalue("pg_server").empty_database()
        file = world(tmp_path / "monitors.toml", local_server, digest.hex())
        run = cli(first, "apply", file, HOOK_URL=hook)
        created = "" if engine == "postgresql" else f"monitor-tick: created database {first}\n"
        assert run.returncode == 0 and run.stderr == created, run.stderr
        assert run.stdout.splitlines() == [
            *world_plan(local_server, f"json://127.0.0.1:{receiver.port}/***/***"),
            "9 to add, 0 to change, 0 to remove",
        ]
        exported = ok(first, "export")
        assert "${HOOK_URL}" in exported and "s3cret" not in exported and token not in exported
        assert f'token_sha256 = "{digest.hex()}"' in exported
        out = tmp_path / "exported.toml"
        assert ok(first, "export", "--out", str(out)) == ""
        assert out.read_text(encoding="utf-8") == exported and out.stat().st_mode & 0o777 == 0o600

        second = str(tmp_path / "second.db")
        ok(second, "apply", str(out), HOOK_URL=hook)
        assert ok(second, "export") == exported
        # the rebuilt database accepts the same pings, and its channel reaches the same receiver
        conn = sqlite3.connect(second)
        assert store.heartbeat_by_token(conn, digest) == 2
        assert conn.execute("SELECT url FROM channels").fetchall() == [(hook,)]
        conn.close()
        assert ok(second, "notify", "test").strip().endswith("delivered")
        assert receiver.titles() == ["monitor-tick test"]
        listed = {m["name"]: m for m in json.loads(ok(second, "list", "--json"))}
        assert (listed["old site"]["state"], listed["api"]["owner"]) == ("paused", "alice")
        assert (listed["old site"]["private"], listed["old site"]["group_name"]) == (1, "Internal")
        assert 'private = true\ngroup_name = "Internal"\n' in exported


def test_a_dry_run_on_a_new_database_shows_the_plan_against_an_empty_one_and_creates_nothing(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "new.db")
    file = world(tmp_path / "monitors.toml", local_server, new_token()[1].hex())
    run = cli(db, "apply", file, "--dry-run", HOOK_URL="json://127.0.0.1:9/hook")
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.splitlines() == [
        *world_plan(local_server, "json://127.0.0.1:9/***"),
        "9 to add, 0 to change, 0 to remove (dry run: nothing applied)",
    ]
    assert not os.path.exists(db)
    bad = cli(db, "apply", file, "--dry-run")  # a file that cannot be applied: said, and still no file
    assert (bad.returncode, bad.stdout) == (2, "") and "${HOOK_URL} is not set" in bad.stderr
    assert not os.path.exists(db)


def test_a_second_apply_changes_nothing_and_an_edited_interval_keeps_the_history(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    file = world(tmp_path / "monitors.toml", local_server, new_token()[1].hex())
    ok(db, "apply", file, HOOK_URL="json://127.0.0.1:9/hook")
    assert ok(db, "apply", file, HOOK_URL="json://127.0.0.1:9/hook") == "no changes\n"
    raw = sqlite3.connect(db)
    raw.execute("UPDATE monitors SET created_at_ms = ?", (clock.minute_start_ms(START),))
    raw.commit()
    for minute in range(START, START + 3):
        ok(db, "--minute", str(minute))
    Path(file).write_text(Path(file).read_text().replace("interval_sec = 60\nkeyword", "interval_sec = 300\nkeyword"))
    dry = ok(db, "apply", file, "--dry-run", HOOK_URL="json://127.0.0.1:9/hook")
    assert dry.splitlines() == [
        "~ monitor api: interval_sec 1m -> 5m",
        "0 to add, 1 to change, 0 to remove (dry run: nothing applied)",
    ]
    assert json.loads(ok(db, "show", "api", "--json"))["monitor"]["interval_sec"] == 60
    assert ok(db, "apply", file, HOOK_URL="json://127.0.0.1:9/hook").splitlines()[0] == (
        "~ monitor api: interval_sec 1m -> 5m"
    )
    shown = json.loads(ok(db, "show", "api", "--json"))["monitor"]
    assert (shown["id"], shown["interval_sec"]) == (1, 300)
    assert raw.execute("SELECT sum(checks) FROM rollups WHERE monitor_id = 1").fetchone() == (3,)
    raw.close()


def test_prune_removes_what_the_file_no_longer_has_and_without_it_nothing_is_removed(
    tmp_path: Path, local_server: LocalServer
) -> None:
    db = str(tmp_path / "m.db")
    file = world(tmp_path / "monitors.toml", local_server, new_token()[1].hex())
    env = {"HOOK_URL": "json://127.0.0.1:9/hook"}
    ok(db, "apply", file, **env)
    ok(db, "add", local_server.url("/ok"), "--name", "by hand")
    text = Path(file).read_text()
    Path(file).write_text(text[: text.index('[monitors."old site"]')] + text[text.index("[[maintenance]]") :])
    kept = ok(db, "apply", file, **env)
    assert kept == "no changes\nnot in the file, kept (removed only with --prune): monitor old site, monitor by hand\n"
    pruned = ok(db, "apply", file, "--prune", **env)
    assert pruned.splitlines() == [
        "- monitor old site",
        "- monitor by hand",
        "0 to add, 0 to change, 2 to remove",
    ]
    assert [m["name"] for m in json.loads(ok(db, "list", "--json"))] == ["api", "backups"]
    assert ok(db, "add", local_server.url("/ok"), "--name", "new") == "5\n"  # ids 3 and 4 stay unused


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_prune_removes_a_monitor_with_its_own_windows_and_channels_as_its_dry_run_said(
    tmp_path: Path, local_server: LocalServer, engine: str, request: pytest.FixtureRequest
) -> None:
    db = str(tmp_path / "m.db") if engine == "sqlite" else request.getfixturevalue("pg_server").empty_database()
    file = world(tmp_path / "monitors.toml", local_server, new_token()[1].hex())
    env = {"HOOK_URL": "json://127.0.0.1:9/hook"}
    ok(db, "apply", file, **env)
    ok(db, "maintenance", "add", "--monitor", "api", "--from", "2099-02-01T00:00Z", "--until", "2099-02-01T01:00Z")
    text = Path(file).read_text()
    without_api = text[: text.index("[monitors.api]")] + text[text.index("[monitors.backups]") :]
    without_api = without_api[: without_api.index('[[maintenance]]\nmonitor = "api"')]
    Path(file).write_text(without_api, encoding="utf-8")
    dry = ok(db, "apply", file, "--prune", "--dry-run", **env).splitlines()
    applied = ok(db, "apply", file, "--prune", **env).splitlines()
    assert applied == [
        "- maintenance 3 2099-02-01T00:00:00Z to 2099-02-01T01:00:00Z (monitor api)",
        "- maintenance 2 weekly sat,sun@03:00 for 90m (monitor api)",
        "- channel 1 json://127.0.0.1:9/*** (monitor api)",
        "- monitor api",
        "0 to add, 0 to change, 4 to remove",
    ]
    assert dry == [*applied[:-1], applied[-1] + " (dry run: nothing applied)"]
    assert [m["name"] for m in json.loads(ok(db, "list", "--json"))] == ["backups", "old site"]
    windows = json.loads(ok(db, "maintenance", "list", "--json"))
    assert [(w["id"], w["owner"]) for w in windows] == [(1, "alice")]
    assert ok(db, "apply", file, "--prune", **env) == "no changes\n"


def test_a_heartbeat_created_without_a_digest_gets_a_new_token_printed_once(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    file = tmp_path / "m.toml"
    file.write_text('[monitors.backups]\nurl = "heartbeat"\ninterval_sec = 86400\n', encoding="utf-8")
    lines = ok(db, "apply", str(file)).splitlines()
    assert lines[:2] == ["+ monitor backups (heartbeat)", "1 to add, 0 to change, 0 to remove"]
    assert lines[2].startswith("heartbeat backups: token ") and len(lines) == 3
    token = lines[2].split()[3]
    conn = sqlite3.connect(db)
    assert store.heartbeat_by_token(conn, bytes.fromhex(_digest(token))) == 1
    conn.close()
    assert ok(db, "apply", str(file)) == "no changes\n"  # the file has no digest: the token stays


def _digest(token: str) -> str:
    from monitor_tick.probes.heartbeat import token_digest

    return token_digest(token).hex()


def test_secrets_typed_in_are_exported_as_placeholders_with_a_warning_naming_them(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ok(db, "add", "https://user:hunter2@127.0.0.1:9/health?key=abc", "--name", "api")
    ok(db, "add", "http://127.0.0.1:9/", "--name", "text", "--keyword-absent", "see https://u:pw2@x.test/")
    ok(db, "notify", "add", "json://127.0.0.1:9/hook/tok3n")
    run = cli(db, "export")
    assert run.returncode == 0
    assert 'url = "${MONITOR_API_URL}"' in run.stdout and 'url = "${CHANNEL_1_URL}"' in run.stdout
    assert run.stderr.splitlines() == [
        "monitor-tick: export: monitors.api.url holds a secret typed in: written as ${MONITOR_API_URL}; "
        "set MONITOR_API_URL before applying the file",
        "monitor-tick: export: monitors.text.keyword_absent holds a secret typed in: written as "
        "${MONITOR_TEXT_KEYWORD_ABSENT}; set MONITOR_TEXT_KEYWORD_ABSENT before applying the file",
        "monitor-tick: export: channel 1 url holds a secret typed in: written as ${CHANNEL_1_URL}; "
        "set CHANNEL_1_URL before applying the file",
    ]
    out = run.stdout + run.stderr
    assert "hunter2" not in out and "tok3n" not in out and "pw2" not in out


def test_a_bad_file_is_one_line_naming_its_line_and_nothing_is_applied(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    cases = {
        '[monitors.api]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\ntimeout_s = 99\n': (
            ":4: monitors.api.timeout_s: timeout must be more than 0s and at most 25s (got 99)"
        ),
        '[monitors.api]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\nretries = \n': (
            ": Invalid value (at line 4, column 11)"
        ),
        '[monitors.a]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\n\n[monitors.b]\nurl = "x"\ninterval_sec = 60\n': (
            ":6: monitors.b.url: url has no scheme (e.g. https://)"
        ),
        '[monitors.a]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\nowner = "zed"\n': (
            ":4: monitors.a.owner: no owner 'zed' in the file or the database"
        ),
        '[[channels]]\nurl = "${NOT_SET_ANYWHERE}"\n': (
            ":2: channels.0.url: ${NOT_SET_ANYWHERE} is not set in the environment"
        ),
        '[[maintenance]]\nowner = "x"\n': ":2: maintenance.0.owner: no owner 'x' in the file or the database",
        '[monitors.a]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\n\n[[maintenance]]\nmonitor = "a"\n'
        'daily = "25:00"\nfor = "1h"\n': ":7: maintenance.0.daily: not a time of day HH:MM (UTC): '25:00'",
        "[monitorz.a]\n": ": monitorz: unknown section [monitorz]",
        # what nobody types: refused, as `add` refuses it
        f'[monitors.api]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\nkeyword = "{"k" * 4097}"\n': (
            ":4: monitors.api.keyword: --keyword is 4,097 bytes long; at most 4 KiB"
        ),
        '[monitors.api]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\nkeyword = "k"\n'
        f'keyword_absent = "{"k" * 4097}"\n': (
            ":5: monitors.api.keyword_absent: --keyword-absent is 4,097 bytes long; at most 4 KiB"
        ),
        f"[plans.{'p' * 201}]\nmin_interval_sec = 60\n": (
            f":1: plans.{'p' * 201}: plan name is 201 characters long; at most 200"
        ),
        '[monitors."api "]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\n': (
            ":1: monitors.api : monitor name 'api ' starts or ends with white space"
        ),
        # one name in two Unicode forms (é, then e and a combining accent): they print the same
        '[monitors."caf\u00e9"]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\n\n'
        '[monitors."cafe\u0301"]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\n': (
            ":5: monitors.cafe\u0301: monitor name 'cafe\u0301' is in the file twice, in two Unicode forms"
        ),
    }
    file = tmp_path / "bad.toml"
    for text, error in cases.items():
        file.write_text(text, encoding="utf-8")
        run = cli(db, "apply", str(file))
        assert (run.returncode, run.stdout, run.stderr) == (2, "", f"monitor-tick: {file}{error}\n"), text
        assert not Path(db).exists()  # not even an empty database is left behind
    ok(db, "add", "http://127.0.0.1:9/", "--name", "kept")
    file.write_text('[monitors.new]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\n\n[monitors.x]\nurl = 1\n')
    before = ok(db, "export")
    assert cli(db, "apply", str(file)).returncode == 2
    assert ok(db, "export") == before


def test_a_weekly_range_in_a_file_is_every_day_in_it_and_an_unknown_day_is_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    file = tmp_path / "m.toml"
    monitor = '[monitors.api]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\n'
    window = '\n[[maintenance]]\nmonitor = "api"\nweekly = "{}"\nfor = "1h"\n'
    file.write_text(monitor + window.format("tue-thu@05:00") + window.format("sat-mon@23:30"), encoding="utf-8")
    assert ok(db, "apply", str(file)).splitlines() == [
        "+ monitor api (http://127.0.0.1:9/)",
        "+ maintenance weekly tue,wed,thu@05:00 for 60m (monitor api)",
        "+ maintenance weekly mon,sat,sun@23:30 for 60m (monitor api)",
        "3 to add, 0 to change, 0 to remove",
    ]
    assert ok(db, "apply", str(file)) == "no changes\n"
    exported = ok(db, "export")
    assert 'weekly = "tue,wed,thu@05:00"' in exported and 'weekly = "mon,sat,sun@23:30"' in exported
    file.write_text(monitor + window.format("wed-xyz@05:00"), encoding="utf-8")
    fresh = str(tmp_path / "fresh.db")
    for target in (db, fresh):
        run = cli(target, "apply", str(file))
        error = "not a day: 'xyz' (mon, tue, wed, thu, fri, sat, sun, or a range such as tue-thu)"
        assert (run.returncode, run.stdout, run.stderr) == (
            2,
            "",
            f"monitor-tick: {file}:7: maintenance.0.weekly: {error}\n",
        )
    assert ok(db, "export") == exported and not Path(fresh).exists()


def test_a_value_of_the_wrong_type_says_what_its_key_needs_on_the_keys_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    monitor = '# monitors\n\n[monitors.api]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\n'
    cases = {
        "expect_status = 200\n": ':6: monitors.api.expect_status: expected status must be text, e.g. "200" or "200-299,418" (got 200)',
        'expect_status = "2xx"\n': ":6: monitors.api.expect_status: expected status is not a code or range: '2xx'",
        'private = "no"\n': ":6: monitors.api.private: private must be true or false (got 'no')",
        "aligned = 2\n": ":6: monitors.api.aligned: aligned must be true or false (got 2)",
        'insecure = "false"\n': ":6: monitors.api.insecure: insecure must be true or false (got 'false')",
    }
    file = tmp_path / "bad.toml"
    for text, error in cases.items():
        file.write_text(monitor + text, encoding="utf-8")
        run = cli(db, "apply", str(file))
        assert (run.returncode, run.stdout, run.stderr) == (2, "", f"monitor-tick: {file}{error}\n"), text
    # as export writes them
    file.write_text(monitor + 'expect_status = "200"\nprivate = true\naligned = false\n', encoding="utf-8")
    ok(db, "apply", str(file))
    assert ok(db, "export").endswith(
        '\n[monitors.api]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\nprivate = true\nexpect_status = "200"\n'
    )


def test_names_in_the_file_are_taken_in_nfc_as_the_commands_take_them(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    nfc, nfd = "caf\u00e9", "cafe\u0301"  # é as one code point; e and a combining accent
    ok(db, "owner", "add", nfc)
    file = tmp_path / "m.toml"
    file.write_text(
        f'[owners."{nfd}"]\nplan = "default"\n\n'
        f'[monitors."{nfd}"]\nurl = "http://127.0.0.1:9/"\ninterval_sec = 60\nowner = "{nfd}"\n'
        f'group_name = "{nfd}"\n\n'
        f'[[maintenance]]\nmonitor = "{nfd}"\ndaily = "02:00"\nfor = "30m"\n',
        encoding="utf-8",
    )
    assert ok(db, "apply", str(file)).splitlines()[-1] == "2 to add, 0 to change, 0 to remove"
    assert ok(db, "apply", str(file)) == "no changes\n"
    listed = json.loads(ok(db, "list", "--json"))
    assert [(m["name"], m["owner"], m["group_name"]) for m in listed] == [(nfc, nfc, nfc)]
    assert f'[monitors."{nfc}"]' in ok(db, "export")


def test_request_options_round_trip_and_references_stay_references(tmp_path: Path) -> None:
    first = str(tmp_path / "first.db")
    ok(
        first,
        "add",
        "http://127.0.0.1:9/health",
        "--name",
        "api",
        "--header",
        "X-Api-Key: ${API_KEY}",
        "--json-field",
        "status=UP",
        "--max-latency",
        "500ms",
        "--method",
        "POST",
        "--basic-auth",
        "ops:${API_PASSWORD}",
        "--body",
        '{"ping": ${PING_BODY}}',
        **REFERENCED,
    )
    ok(first, "add", "https://127.0.0.1:9/", "--name", "lab", "--ca-file", ca_pem_path())
    ok(first, "add", "https://127.0.0.1:9/", "--name", "lab2", "--insecure")
    ok(first, "add", "dns://example.org?type=A&server=127.0.0.1:9&expect=192.0.2.1", "--name", "dns")
    run = cli(first, "export")
    assert run.returncode == 0 and run.stderr == ""
    exported = run.stdout
    assert (
        '[monitors.api]\nurl = "http://127.0.0.1:9/health"\ninterval_sec = 300\nmethod = "POST"\n' in exported
        and 'max_latency_ms = 500\njson_field = "status=UP"\nheaders = "X-Api-Key: ${API_KEY}"\n' in exported
        and 'basic_auth = "ops:${API_PASSWORD}"\nbody = "{\\"ping\\": ${PING_BODY}}"\n' in exported
    )
    assert f'ca_file = "{ca_pem_path()}"\n' in exported
    assert "insecure = true\n" in exported
    assert '[monitors.dns]\nurl = "dns://example.org?type=A&server=127.0.0.1:9&expect=192.0.2.1"\n' in exported
    file = tmp_path / "monitors.toml"
    file.write_text(exported, encoding="utf-8")
    second = str(tmp_path / "second.db")
    # none of them in this environment: applied all the same (the tick resolves them, not apply),
    # with a warning each
    applied = cli(second, "apply", str(file))
    assert applied.returncode == 0 and applied.stderr.splitlines() == [
        f"monitor-tick: created database {second}",
        *(
            f"monitor-tick: monitor api: ${{{name}}} is not set here; the tick reads it from its own environment "
            "(set it there, e.g. in the crontab), or it cannot probe this monitor"
            for name in REFERENCED
        ),
    ]
    assert ok(second, "export") == exported
    assert ok(second, "apply", str(file), **REFERENCED) == "no changes\n"
    conn = sqlite3.connect(second)
    stored = conn.execute("SELECT headers, basic_auth, max_latency_ms, json_field FROM monitors WHERE name = 'api'")
    assert stored.fetchone() == ("X-Api-Key: ${API_KEY}", "ops:${API_PASSWORD}", 500, "status=UP")
    conn.close()


def test_a_typed_in_password_or_header_value_is_exported_as_a_placeholder_never_the_secret(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ok(
        db,
        "add",
        "http://127.0.0.1:9/",
        "--name",
        "api",
        "--header",
        "X-Api-Key: abc123",
        "--header",
        "X-Tenant: ${TENANT}",
        "--basic-auth",
        "ops:hunter2",
        TENANT="tenant-1",
    )
    run = cli(db, "export")
    assert run.returncode == 0
    assert 'headers = "X-Api-Key: ${MONITOR_API_HEADER_X_API_KEY}\\nX-Tenant: ${TENANT}"\n' in run.stdout
    assert 'basic_auth = "ops:${MONITOR_API_PASSWORD}"\n' in run.stdout
    assert run.stderr.splitlines() == [
        "monitor-tick: export: monitors.api.headers holds a secret typed in: written as "
        "${MONITOR_API_HEADER_X_API_KEY}; set MONITOR_API_HEADER_X_API_KEY in the tick's environment (cron's) "
        "before applying the file",
        "monitor-tick: export: monitors.api.basic_auth holds a secret typed in: written as ${MONITOR_API_PASSWORD}; "
        "set MONITOR_API_PASSWORD in the tick's environment (cron's) before applying the file",
    ]
    assert "abc123" not in run.stdout + run.stderr and "hunter2" not in run.stdout + run.stderr


@pytest.mark.parametrize(
    ("body", "plain"),
    [
        ('{"query": "{ user(id: 1) { name } }"}', True),
        ('[{"ping": 1}, {"data": {"items": [1, 2]}}]', True),
        ('{"apiKey": "x"}', False),
        ('{"data": {"Authorization": "x"}}', False),
        ('{"items": [{"refresh_TOKEN": "x"}]}', False),
        ('{"passwd": "x"}', False),
        ('{"monkey": 1}', False),  # a substring match: a harmless key may be taken for a secret, never the reverse
        ('"s3cret"', False),  # a bare string or number may be the secret itself
        ("12345", False),
        ("user=ops&pass=x", False),
    ],
)
def test_a_body_is_exported_as_written_only_when_it_is_json_with_no_key_named_like_a_secret(
    body: str, plain: bool
) -> None:
    assert configexport._plain_json(body) is plain


def test_a_url_holding_references_is_stored_with_them_for_each_tick_to_resolve(tmp_path: Path) -> None:
    """As `add` stores it: a password in a file never reaches the database (or the hosts of a
    fleet) as its value; a URL that is one whole reference still needs its value at apply (its
    scheme picks the kind)."""
    db = str(tmp_path / "m.db")
    file = tmp_path / "m.toml"
    url = "postgresql://app:${MT_TEST_DB_PW}@db.example.test/app"
    file.write_text(
        f'[monitors.db]\nurl = "{url}"\ninterval_sec = 60\n\n'
        '[monitors.api]\nurl = "${MT_TEST_API_URL}"\ninterval_sec = 60\n',
        encoding="utf-8",
    )
    env = {"MT_TEST_DB_PW": "s3cret-db", "MT_TEST_API_URL": "https://api.example.test/health"}
    ok(db, "apply", str(file), **env)
    stored = dict(sqlite3.connect(db).execute("SELECT name, url FROM monitors").fetchall())
    assert stored == {"db": url, "api": "https://api.example.test/health"}
    assert ok(db, "apply", str(file), **env) == "no changes\n"
    exported = ok(db, "export", **env)
    assert f'url = "{url}"' in exported and 'url = "${MT_TEST_API_URL}"' in exported
    # without the password here: applied all the same, with the warning add gives
    unset = cli(db, "apply", str(file), MT_TEST_API_URL=env["MT_TEST_API_URL"])
    assert (unset.returncode, unset.stdout) == (0, "no changes\n")
    assert unset.stderr == (
        "monitor-tick: monitor db: ${MT_TEST_DB_PW} is not set here; the tick reads it from its own environment "
        "(set it there, e.g. in the crontab), or it cannot probe this monitor\n"
    )


def test_locations_and_a_quorum_round_trip_through_export_and_apply(pg_server: Server, tmp_path: Path) -> None:
    first = pg_server.fresh_database()
    added = cli(first, "add", "http://127.0.0.1:9/api", "--name", "api", "--locations", "us,eu,home", "--quorum", "3")
    assert added.returncode == 0
    # a location no host has used yet is accepted, with a warning
    assert added.stderr == "".join(
        f"monitor-tick: warning: no host has ticked from location {name!r} yet\n" for name in ("eu", "home", "us")
    )
    ok(first, "add", "http://127.0.0.1:9/all", "--name", "everywhere", "--locations", "all", "--notify-partial")
    exported = ok(first, "export")
    assert (
        '[monitors.api]\nurl = "http://127.0.0.1:9/api"\ninterval_sec = 300\nlocations = "eu,home,us"\nquorum = 3\n'
        in (exported)
    )
    assert 'locations = "all"\nnotify_partial = true\n' in exported
    file = tmp_path / "monitors.toml"
    file.write_text(exported, encoding="utf-8")
    second = pg_server.fresh_database()
    assert cli(second, "apply", str(file)).returncode == 0
    assert ok(second, "export") == exported
    listed = {m["name"]: m for m in json.loads(ok(second, "list", "--json"))}
    assert (listed["api"]["locations"], listed["api"]["quorum"]) == ("eu,home,us", 3)
    # several locations cannot go into a SQLite file, whose one host is one location
    one = str(tmp_path / "one.db")
    refused = cli(one, "apply", str(file))
    assert refused.returncode != 0 and "a SQLite database has one host, so one location" in refused.stderr
    file.write_text(exported.replace("quorum = 3", "quorum = 4"), encoding="utf-8")
    done = cli(second, "apply", str(file))
    assert done.returncode != 0 and "quorum 4 is more than the 3 locations named" in done.stderr


def test_a_monitors_file_with_notify_partial_and_no_locations_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "monitors.toml"
    file.write_text(
        '[monitors.api]\nurl = "http://127.0.0.1:9/api"\ninterval_sec = 300\nnotify_partial = true\n', encoding="utf-8"
    )
    db = str(tmp_path / "m.db")
    done = cli(db, "apply", str(file))
    assert done.returncode == 2 and "--notify-partial needs --locations" in done.stderr, done.stderr
    assert "notify_partial" in done.stderr and not Path(db).exists()
