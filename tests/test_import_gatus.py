"""`monitor-tick import gatus`: Gatus configurations in its documented format
(tests/fixtures/gatus_config.yaml uses only syntax quoted from Gatus' README), imported through
the installed command into a real SQLite file; the condition rules table-driven."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.importers import gatus
from monitor_tick.importers.plan import Planned
from tests.commands import MONITOR_TICK, clock_at
from tests.conftest import monitor_rows, run_installed
from tests.servers import LocalServer


@pytest.fixture
def db_path(any_db: str) -> str:
    """The monitor-tick database imported into: a SQLite file, then a PostgreSQL database (one
    import is one transaction on each)."""
    return any_db


CONFIG = Path(__file__).parent / "fixtures" / "gatus_config.yaml"


run = run_installed
monitors = monitor_rows


def endpoint(conditions: list[str], url: str = "https://example.org/health", **more: object) -> Planned:
    plan = gatus.plan_of({"endpoints": [{"name": "e", "url": url, "conditions": conditions, **more}]})
    assert not plan.skipped, plan.skipped
    return plan.monitors[0]


def test_the_documented_example_imports_what_maps_and_lists_the_rest(db_path: str) -> None:
    done = run("import", "gatus", str(CONFIG), "--db", db_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = monitors(db_path)
    website = rows["website"]
    # 30s is under a minute: one minute, with a note
    # Gatus's group is the monitor's group (its status-page section), not an owner
    assert (website["url"], website["interval_sec"], website["group_name"], website["timeout_s"]) == (
        "https://example.org/health",
        60,
        "core",
        5.0,
    )
    assert all(row["owner"] is None for row in rows.values())
    assert (website["expect_status"], website["max_latency_ms"], website["expires_within_sec"]) == (
        "200",
        499,
        48 * 3600,
    )
    assert website["headers"] == "X-Api-Key: abc123"
    # the slack alert's default-alert says 3 failures, 2 successes
    assert (website["alert_after_checks"], website["resolve_after_checks"]) == (3, 2)
    api = rows["api-json"]
    assert (api["method"], api["body"], api["expect_status"], api["json_field"], api["interval_sec"]) == (
        "POST",
        '{"ping": true}',
        "200,201",
        "status=UP",
        300,
    )
    assert rows["keyword-page"]["keyword"] == "Welcome" and rows["keyword-page"]["expect_status"] == "100-299"
    assert (rows["redis"]["url"], rows["redis"]["group_name"]) == ("tcp://10.0.0.5:6379", "internal")
    assert rows["gateway-ping"]["url"] == "icmp://10.0.0.1"
    assert rows["dns-a-record"]["url"] == "dns://example.com?type=A&server=8.8.8.8&expect=93.184.215.14"
    assert (rows["ldaps"]["url"], rows["ldaps"]["expires_within_sec"]) == ("tls://ldap.example.org:636", 48 * 3600)
    starttls = rows["smtp-starttls"]
    assert (starttls["kind"], starttls["url"], starttls["expires_within_sec"], starttls["timeout_s"]) == (
        "smtp",
        "smtp://smtp.example.org:587?starttls=1",
        48 * 3600,
        5.0,
    )
    assert (rows["ssh-example"]["kind"], rows["ssh-example"]["url"]) == ("ssh", "ssh://example.com:22")
    assert (rows["example"]["kind"], rows["example"]["url"]) == ("ws", "wss://echo.websocket.org/")
    assert rows["disabled-one"]["enabled"] == 0
    assert set(rows) == {
        "website",
        "api-json",
        "keyword-page",
        "redis",
        "gateway-ping",
        "dns-a-record",
        "smtp-starttls",
        "ldaps",
        "ssh-example",
        "example",
        "disabled-one",
    }
    out = done.stdout
    for line in (
        "every 30s is under a minute: every 1m",
        "condition '[DOMAIN_EXPIRATION] > 720h' not carried over: monitor-tick does not look up domain registrations (RDAP/WHOIS)",
        "condition 'len([BODY].items) < 100' not carried over",
        "condition '[BODY].data[0].id == 1' not carried over: monitor-tick checks one JSON field per monitor",
        "condition '[BODY].version == pat(2.*)' not carried over",
        "condition '[RESPONSE_TIME] < 100' not carried over: only [RESPONSE_TIME] < N (--max-latency) on http, tcp, tls, starttls, ssh and ws",
        "messages not carried over: monitor-tick's ws check opens and closes, sending and reading none",
        "condition '[BODY] == pat(*served by*)' not carried over: a ws check reads no body",
        "skipped   syslog-udp: udp:// (UDP (no connection to check)) has no monitor-tick kind",
        "skipped   ssh-box: ssh:// with a login (a command run over SSH) has no monitor-tick kind",
        "skipped   grpc-svc: grpc:// (gRPC health checks) has no monitor-tick kind",
        "skipped   nightly-backup: an external endpoint is pushed to Gatus' own API",
        "11 added, 0 already there, 4 skipped, 2 channels",
    ):
        assert line in out, line
    for secret in ("XXXX", "ABC-DEF", "abc123", "hunter2"):
        assert secret not in out
    assert "[STATUS] == 0" not in out  # an ssh check without a login: Gatus' banner read, implied
    conn = store.open_db(db_path)
    try:
        channels = sorted(
            url for (url,) in conn.execute("SELECT url FROM channels WHERE monitor_id = ?", (website["id"],))
        )
    finally:
        conn.close()
    assert channels == ["slack://T000/B000/XXXX", "tgram://123456:ABC-DEF/-1001234567890"]
    again = run("import", "gatus", str(CONFIG), "--db", db_path)
    assert "0 added, 11 already there, 4 skipped, 0 channels" in again.stdout
    assert monitors(db_path) == rows


@pytest.mark.parametrize(
    ("conditions", "expect"),
    [
        (["[STATUS] == 200"], "200"),
        (["[STATUS] == any(200, 429)"], "200,429"),
        (["[STATUS] < 300"], "100-299"),
        (["[STATUS] >= 200", "[STATUS] <= 299"], "200-299"),
        (["[STATUS] < 400", "[STATUS] != 301"], "100-300,302-399"),
        (["[STATUS] > 199", "[STATUS] == any(204, 500)"], "204,500"),
        ([], "100-599"),  # Gatus checks no status unless told to
        (["[RESPONSE_TIME] < 500"], "100-599"),
    ],
)
def test_status_conditions_become_accepted_statuses(conditions: list[str], expect: str) -> None:
    assert endpoint(conditions).given["expect_status"] == expect


@pytest.mark.parametrize(
    ("condition", "option", "value"),
    [
        ("[RESPONSE_TIME] < 500", "max_latency_ms", 499),
        ("[RESPONSE_TIME] <= 500", "max_latency_ms", 500),
        ("[CERTIFICATE_EXPIRATION] > 48h", "expires_within_sec", 172_800),
        ("[CERTIFICATE_EXPIRATION] > 720h30m", "expires_within_sec", 2_593_800),
        ("[BODY] == pat(*Welcome*)", "keyword", "Welcome"),
        ("[BODY] != pat(*maintenance*)", "keyword_absent", "maintenance"),
        ("[BODY] == ok", "keyword", "ok"),
        ("[BODY].data[0].state == UP", "json_field", "data.0.state=UP"),
        ("[BODY].user.name == john", "json_field", "user.name=john"),
    ],
)
def test_conditions_that_map(condition: str, option: str, value: object) -> None:
    planned = endpoint([condition])
    assert planned.given[option] == value
    assert not any("not carried over" in note for note in planned.notes)


@pytest.mark.parametrize(
    ("condition", "reason"),
    [
        ("[DOMAIN_EXPIRATION] > 720h", "domain registrations"),
        ("[IP] == 127.0.0.1", "address a name resolves to"),
        ("has([BODY].errors) == false", "one JSON field"),
        ("[BODY].name == pat(john*)", "[BODY].path == VALUE"),
        ("[BODY].id == any(1, 2)", "[BODY].path == VALUE"),
        ("[BODY].age == [BODY].id", "[BODY].path == VALUE"),
        ("[STATUS] == pat(2*)", "a pattern of statuses"),
        ("[RESPONSE_TIME] > 10", "only [RESPONSE_TIME] < N"),
        ("[RESPONSE_TIME] < 20000", "shorter than the timeout"),
        ("[CONNECTED] == false", "only [CONNECTED] == true"),
        ("[STATUS]==200", "not a condition Gatus reads"),
    ],
)
def test_conditions_that_do_not_map_are_listed_with_their_reason(condition: str, reason: str) -> None:
    notes = endpoint([condition]).notes
    assert len(notes) == 1 and notes[0].startswith(f"condition {condition!r} not carried over: ") and reason in notes[0]


@pytest.mark.parametrize(
    ("url", "condition", "option", "value"),
    [
        ("ssh://example.org", "[RESPONSE_TIME] < 300", "max_latency_ms", 299),
        ("starttls://smtp.example.org:587", "[RESPONSE_TIME] <= 800", "max_latency_ms", 800),
        ("wss://chat.example.org/", "[RESPONSE_TIME] < 500", "max_latency_ms", 499),
        ("starttls://smtp.example.org:587", "[CERTIFICATE_EXPIRATION] > 48h", "expires_within_sec", 172_800),
        ("wss://chat.example.org/", "[CERTIFICATE_EXPIRATION] > 720h", "expires_within_sec", 2_592_000),
    ],
)
def test_conditions_on_smtp_ssh_and_ws_endpoints_that_map(url: str, condition: str, option: str, value: object) -> None:
    planned = endpoint([condition, "[CONNECTED] == true"], url=url)
    assert planned.given[option] == value
    assert not any("not carried over" in note and "condition" in note for note in planned.notes)


@pytest.mark.parametrize(
    ("url", "condition", "reason"),
    [
        (
            "ws://chat.example.org/",
            "[CERTIFICATE_EXPIRATION] > 48h",
            "only [CERTIFICATE_EXPIRATION] > D on https://, tls://, starttls:// and wss://",
        ),
        ("ssh://example.org", "[STATUS] == 1", "a ssh check has no status"),
        ("ssh://example.org", "[BODY] == ok", "a ssh check reads no body"),
        ("starttls://smtp.example.org:587", "[STATUS] == 250", "a smtp check has no status"),
    ],
)
def test_conditions_on_smtp_ssh_and_ws_endpoints_that_do_not_map(url: str, condition: str, reason: str) -> None:
    notes = [note for note in endpoint([condition], url=url).notes if note.startswith("condition ")]
    assert notes == [f"condition {condition!r} not carried over: {reason}"]


def test_an_ssh_endpoint_with_a_login_is_skipped_naming_the_kind() -> None:
    for login in ({"username": "monitor", "password": "secret"}, {"private-key": "KEY"}):
        plan = gatus.plan_of({"endpoints": [{"name": "box", "url": "ssh://example.org", "ssh": login}]})
        assert plan.monitors == [] and plan.skipped == [
            (
                "box",
                "ssh:// with a login (a command run over SSH) has no monitor-tick kind: "
                "an ssh:// monitor reads the server's identification, logging in to nothing",
            )
        ]


def test_intervals_under_a_minute_become_a_minute_and_go_durations_are_read() -> None:
    assert endpoint([], interval="10s").interval_sec == 60
    assert endpoint([], interval="10s").notes == ["every 10s is under a minute: every 1m"]
    assert endpoint([], interval="1h30m").interval_sec == 5400
    assert endpoint([], interval="90s").notes == ["every 1m30s is not whole minutes: every 2m"]
    assert endpoint([]).interval_sec == 60  # Gatus' default


def test_a_config_that_is_not_gatus_is_one_line(tmp_path: Path, db_path: str) -> None:
    for name, text, message in (
        ("list.yaml", "- a\n- b\n", "is not a Gatus configuration (no `endpoints` list)"),
        ("bad.yaml", "endpoints: [\n", "is not valid YAML (line 2)"),
    ):
        path = tmp_path / name
        path.write_text(text)
        done = run("import", "gatus", str(path), "--db", db_path)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"monitor-tick: {path} {message}\n")
    assert monitors(db_path) == {}


def test_without_pyyaml_the_error_names_the_extra(tmp_path: Path, db_path: str) -> None:
    # a fresh interpreter in which `import yaml` fails, as where the extra is not installed
    script = textwrap.dedent(
        """
        import sys
        sys.modules["yaml"] = None
        from monitor_tick.cli.entry import main
        sys.argv = ["monitor-tick", "import", "gatus", sys.argv[1], "--db", sys.argv[2]]
        main()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(CONFIG), db_path], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "monitor-tick: reading Gatus configuration needs PyYAML: pip install 'monitor-tick[gatus]'\n"


def test_duplicate_and_refused_names_are_renamed_the_same_way_every_time(tmp_path: Path, db_path: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        textwrap.dedent(
            """
            endpoints:
              - name: api
                url: https://a.example.org
                conditions: ["[STATUS] == 200"]
              - name: api
                group: eu
                url: https://b.example.org
                conditions: ["[STATUS] == 200"]
              - name: "2024"
                url: https://c.example.org
                conditions: ["[STATUS] == 200"]
              - name: "api (2)"
                url: https://d.example.org
                conditions: ["[STATUS] == 200"]
              - name: "caf\\u00e9"
                url: https://e.example.org
                conditions: ["[STATUS] == 200"]
              - name: "cafe\\u0301"
                url: https://f.example.org
                conditions: ["[STATUS] == 200"]
              - name: " spaced "
                url: https://g.example.org
                conditions: ["[STATUS] == 200"]
            """
        )
    )
    reports = []
    for _ in range(2):
        done = run("import", "gatus", str(path), "--db", db_path)
        assert done.returncode == 0, done.stderr
        reports.append(done.stdout)
    rows = monitors(db_path)
    assert {name: row["url"] for name, row in rows.items()} == {
        "api": "https://a.example.org",
        "api (3)": "https://b.example.org",  # 'api (2)' is another endpoint's own name
        "monitor 2024": "https://c.example.org",
        "api (2)": "https://d.example.org",
        "caf\u00e9": "https://e.example.org",
        "caf\u00e9 (2)": "https://f.example.org",  # the same name, as e and a combining accent
        "spaced": "https://g.example.org",
    }
    assert "            - renamed from ' spaced ': it had white space at either end\n" in reports[0]
    assert "0 added, 7 already there" in reports[1]


def test_to_file_keeps_harmless_headers_and_json_bodies_and_makes_placeholders_of_the_rest(tmp_path: Path) -> None:
    """Headers on the allow-list (any case), a GraphQL body monitor-tick wrapped itself and JSON
    with no secret-like key stay as written; any other header value or body, a secret-like key at
    any depth included, becomes a placeholder with a warning naming it."""
    config = tmp_path / "config.yaml"
    config.write_text(
        textwrap.dedent(
            """
            endpoints:
              - name: graphql
                url: https://example.org/graphql
                method: POST
                graphql: true
                body: "{ user(id: 1) { name } }"
                headers:
                  Accept: application/json
                  user-agent: gatus-check
                  CACHE-CONTROL: no-cache
                  X-Signature: sig-0123
              - name: login
                url: https://example.org/login
                method: POST
                body: '{"user": "ops", "data": [{"Session_ID": "sess-4567"}]}'
                headers:
                  Content-Type: application/json
                  Accept-Language: en
                  Accept-Encoding: gzip
              - name: form
                url: https://example.org/form
                method: POST
                body: "user=ops&pass=pw-89ab"
              - name: plain
                url: https://example.org/plain
                method: PUT
                body: '"just-a-string"'
            """
        )
    )
    out = tmp_path / "monitors.toml"
    done = run("import", "gatus", str(config), "--to-file", str(out), "--db", str(tmp_path / "none.db"))
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    graphql = json.dumps(json.dumps({"query": "{ user(id: 1) { name } }"}))
    assert (
        'headers = "Accept: application/json\\nuser-agent: gatus-check\\nCACHE-CONTROL: no-cache\\n'
        'X-Signature: ${MONITOR_GRAPHQL_HEADER_X_SIGNATURE}\\nContent-Type: application/json"\n'
        f"body = {graphql}\n"
    ) in text
    assert (
        'headers = "Content-Type: application/json\\nAccept-Language: en\\nAccept-Encoding: gzip"\n'
        'body = "${MONITOR_LOGIN_BODY}"\n'
    ) in text
    assert 'body = "${MONITOR_FORM_BODY}"\n' in text and 'body = "${MONITOR_PLAIN_BODY}"\n' in text
    assert [line.split(": written as ")[1].split(";")[0] for line in done.stderr.splitlines()] == [
        "${MONITOR_GRAPHQL_HEADER_X_SIGNATURE}",
        "${MONITOR_LOGIN_BODY}",
        "${MONITOR_FORM_BODY}",
        "${MONITOR_PLAIN_BODY}",
    ]
    for secret in ("sig-0123", "sess-4567", "pw-89ab", "just-a-string"):
        assert secret not in text + done.stdout + done.stderr


def test_environment_variables_gatus_expands_stay_references_that_each_tick_resolves(
    tmp_path: Path, local_server: LocalServer
) -> None:
    """$VAR and ${VAR} in a URL, a header and a body become monitor-tick's ${VAR}, resolved by a
    real tick against a local server; a condition or a channel cannot keep one and says so, and
    anywhere else one line says it was taken as written. No value from the environment is printed."""
    config = tmp_path / "config.yaml"
    config.write_text(
        textwrap.dedent(
            """
            alerting:
              slack:
                webhook-url: "${MT_TEST_SLACK}"
            endpoints:
              - name: api
                group: $MT_TEST_GROUP
                url: "http://${MT_TEST_HOST}/ok?key=$MT_TEST_KEY"
                method: POST
                headers:
                  Authorization: "Bearer $MT_TEST_TOKEN"
                  X-Price: "$$5"
                body: '{"token": "${MT_TEST_TOKEN}"}'
                conditions:
                  - "[STATUS] == 200"
                  - "[BODY] == ${MT_TEST_WORD}"
                alerts:
                  - type: slack
              - name: odd
                url: "http://127.0.0.1:9/$1"
            """
        )
    )
    db = str(tmp_path / "m.db")
    env = {
        **os.environ,
        **clock_at(),
        "MT_TEST_HOST": f"127.0.0.1:{local_server.port}",
        "MT_TEST_KEY": "key-0123",
        "MT_TEST_TOKEN": "tok-4567",
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MONITOR_TICK, *args, "--db", db], capture_output=True, text=True, timeout=60, env=env)

    done = cli("import", "gatus", str(config))
    assert done.returncode == 0, done.stderr
    rows = monitors(db)
    api = rows["api"]
    assert (api["url"], api["headers"], api["body"]) == (
        "http://${MT_TEST_HOST}/ok?key=${MT_TEST_KEY}",
        "Authorization: Bearer ${MT_TEST_TOKEN}\nX-Price: $5",
        '{"token": "${MT_TEST_TOKEN}"}',
    )
    assert (api["keyword"], api["group_name"]) == (None, "$MT_TEST_GROUP")
    assert set(rows) == {"api"}
    for line in (
        "  added     api (monitor 1): http://${MT_TEST_HOST}/ok?key=*** every 1m",
        "            - group: $MT_TEST_GROUP is not kept as a reference (monitor-tick resolves environment "
        "variables only in URLs, headers and bodies): taken as written",
        "            - condition '[BODY] == ${MT_TEST_WORD}' not carried over: ${MT_TEST_WORD} is an environment "
        "variable, which monitor-tick resolves only in URLs, headers and bodies",
        "            - alert slack not imported: slack: its settings hold ${MT_TEST_SLACK}, an environment variable "
        "monitor-tick cannot keep in a channel: add it with `notify add`",
        "  skipped   odd: url: $1 is not a reference monitor-tick can keep (${NAME}: letters, digits and _)",
    ):
        assert line in done.stdout.splitlines(), (line, done.stdout)
    ticked = cli("--json", "--retry-delay", "0")
    assert ticked.returncode == 0 and ticked.stderr == "", ticked.stderr
    assert [(r["status"], r["cause"]) for r in json.loads(ticked.stdout)["results"]] == [("up", None)]
    sent = local_server.requests[-1]
    assert (sent.method, sent.target, sent.headers["authorization"], sent.headers["x-price"], sent.body) == (
        "POST",
        "/ok?key=key-0123",
        "Bearer tok-4567",
        "$5",
        b'{"token": "tok-4567"}',
    )
    for text in (done.stdout, done.stderr, ticked.stdout, cli("list").stdout, cli("show", "api").stdout):
        assert "key-0123" not in text and "tok-4567" not in text
    # a monitors file keeps them too, as references (a header value typed in is a placeholder)
    out = tmp_path / "monitors.toml"
    written = cli("import", "gatus", str(config), "--to-file", str(out))
    assert written.returncode == 0
    assert [line.split(": written as ")[1].split(";")[0] for line in written.stderr.splitlines()] == [
        "${MONITOR_API_HEADER_X_PRICE}"
    ]
    assert (
        'url = "http://${MT_TEST_HOST}/ok?key=${MT_TEST_KEY}"\n'
        'interval_sec = 60\ngroup_name = "$MT_TEST_GROUP"\nmethod = "POST"\nexpect_status = "200"\n'
        'headers = "Authorization: Bearer ${MT_TEST_TOKEN}\\nX-Price: ${MONITOR_API_HEADER_X_PRICE}"\n'
        'body = "{\\"token\\": \\"${MT_TEST_TOKEN}\\"}"\n'
    ) in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("https://${HOST}/health", "https://${HOST}/health"),
        ("https://$HOST.example.org/x?k=$KEY_1&b=2", "https://${HOST}.example.org/x?k=${KEY_1}&b=2"),
        ("Bearer $TOKEN", "Bearer ${TOKEN}"),
        ("costs $$5, $$HOME", "costs $5, $HOME"),  # $$ is Gatus' literal $
        ("50$ / $", "50$ / $"),  # a $ before no name stays
        ("plain", "plain"),
    ],
)
def test_gatus_references_become_monitor_tick_references(text: str, kept: str) -> None:
    assert gatus.kept_references(text, "url") == kept


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("https://h/$1", "$1 is not a reference monitor-tick can keep"),
        ("https://h/${1}", "${1} is not a reference monitor-tick can keep"),
        ("https://h/${A-B}", "${A-B} is not a reference monitor-tick can keep"),
        ("https://h/${}", "${} is not a reference monitor-tick can keep"),
        ("https://h/${OPEN", "${ is not a reference monitor-tick can keep"),
        ("https://h/$*", "$* is not a reference monitor-tick can keep"),
        ("https://h/$${HOST}", "a literal ${...} ($${...}) would be read as a reference by monitor-tick"),
    ],
)
def test_references_monitor_tick_cannot_keep_are_refused_with_the_reason(text: str, why: str) -> None:
    with pytest.raises(gatus.channels.Unmapped, match=re.escape(f"url: {why}")):
        gatus.kept_references(text, "url")


def test_a_url_that_is_one_reference_and_a_dns_block_with_references() -> None:
    plan = gatus.plan_of(
        {
            "endpoints": [
                {"name": "whole", "url": "${HEALTH_URL}"},
                {"name": "dns", "url": "127.0.0.1:5353", "dns": {"query-name": "$ZONE", "query-type": "A"}},
            ]
        }
    )
    assert plan.skipped == [
        ("whole", "url: monitor-tick needs its scheme written out (https://${HOST}/...) to know the kind of check")
    ]
    assert plan.monitors[0].url == "dns://${ZONE}?type=A&server=127.0.0.1%3A5353"


def test_an_alert_whose_threshold_is_an_environment_variable_is_listed_not_a_crash(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        textwrap.dedent(
            """
            alerting:
              slack:
                webhook-url: "https://hooks.slack.com/services/T000/B000/XXXX"
            endpoints:
              - name: api
                url: https://example.org/health
                alerts:
                  - type: slack
                    failure-threshold: ${MT_TEST_FAILURES}
            """
        )
    )
    done = run("import", "gatus", str(config), "--dry-run", "--db", str(tmp_path / "none.db"))
    assert (done.returncode, done.stderr) == (0, "")
    assert (
        "            - alert slack not imported: failure-threshold ${MT_TEST_FAILURES} is not a whole number "
        "(monitor-tick resolves environment variables only in URLs, headers and bodies)"
    ) in done.stdout.splitlines()
    assert "1 to add, 0 already there, 0 skipped, 0 channels" in done.stdout


def test_what_nobody_types_is_skipped_in_one_line(tmp_path: Path, db_path: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            endpoints:
              - name: fits
                url: https://a.example.org
                conditions: ["[BODY] == {"k" * 4096}"]
              - name: long keyword
                url: https://b.example.org
                conditions: ["[BODY] == {"k" * 4097}"]
              - name: "{"n" * 201}"
                url: https://c.example.org
                conditions: ["[STATUS] == 200"]
            """
        )
    )
    done = run("import", "gatus", str(path), "--db", db_path)
    assert done.returncode == 0, done.stderr
    assert list(monitors(db_path)) == ["fits"]
    assert "  skipped   long keyword: cannot be added: --keyword is 4,097 bytes long; at most 4 KiB\n" in done.stdout
    assert f"  skipped   {'n' * 201}: cannot be added: name is 201 characters long; at most 200\n" in done.stdout


def test_a_tls_endpoint_that_only_checked_the_connection_says_its_certificate_is_now_judged(
    tmp_path: Path, db_path: str
) -> None:
    """tls:// and STARTTLS monitors judge the certificate's expiry (14 days unless given): Gatus
    showed such an endpoint up until the day it expired, so the report says what changed."""
    path = tmp_path / "config.yaml"
    path.write_text(
        textwrap.dedent(
            """
            endpoints:
              - name: ldaps
                url: tls://ldap.example.org:636
                conditions: ["[CONNECTED] == true"]
              - name: mail
                url: starttls://smtp.example.org:587
                conditions: ["[CONNECTED] == true"]
              - name: judged
                url: tls://other.example.org:636
                conditions: ["[CONNECTED] == true", "[CERTIFICATE_EXPIRATION] > 48h"]
              - name: plain
                url: tcp://db.example.org:5432
                conditions: ["[CONNECTED] == true"]
            """
        ),
        encoding="utf-8",
    )
    done = run("import", "gatus", str(path), "--db", db_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    note = "- certificate expiry: down when it expires within 14 days (Gatus only checked the connection)"
    assert done.stdout.count(note) == 2
    blocks = done.stdout.split("\n  added")
    assert [
        name
        for name in ("ldaps", "mail", "judged", "plain")
        for block in blocks
        if note in block and f" {name} " in block
    ] == ["ldaps", "mail"]
    assert {name: row["expires_within_sec"] for name, row in monitors(db_path).items()} == {
        "ldaps": 14 * 86_400,
        "mail": 14 * 86_400,
        "judged": 48 * 3600,
        "plain": None,
    }
