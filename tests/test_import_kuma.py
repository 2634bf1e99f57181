"""`monitor-tick import uptime-kuma`: Kuma databases built with Kuma's own schema (1.23.17 and
2.0.2, tests/kuma_schema.py), imported through the installed command into a real SQLite file."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core import clock, schedule
from monitor_tick.importers import kuma
from monitor_tick.probes.heartbeat import token_digest
from tests.conftest import monitor_rows, run_installed
from tests.kuma_schema import KUMA_1_23, KUMA_2_0, KUMA_2_1


@pytest.fixture
def db_path(any_db: str) -> str:
    """The monitor-tick database imported into: a SQLite file, then a PostgreSQL database (one
    import is one transaction on each)."""
    return any_db


PUSH_TOKEN = "uK7x2Qm9Lp"

NOTIFICATIONS = [
    (
        1,
        "My Telegram",
        1,
        1,
        0,
        '{"name":"My Telegram","type":"telegram","isDefault":false,"telegramBotToken":"123456:ABC-DEF","telegramChatID":"-1001234567890","telegramSendSilently":false,"telegramProtectContent":false,"applyExisting":false}',
    ),
    (
        2,
        "ntfy",
        1,
        1,
        0,
        '{"name":"ntfy","type":"ntfy","isDefault":false,"ntfyserverurl":"https://ntfy.sh","ntfytopic":"alerts","ntfyPriority":5,"ntfyAuthenticationMethod":"none"}',
    ),
    (
        3,
        "hook",
        1,
        1,
        1,
        '{"name":"hook","type":"webhook","isDefault":true,"webhookURL":"https://example.org/hook","webhookContentType":"json","webhookAdditionalHeaders":"{\\"X-Token\\":\\"s3cret\\"}"}',
    ),
    (
        4,
        "Pushover",
        1,
        1,
        0,
        '{"name":"Pushover","type":"pushover","pushoveruserkey":"u123","pushoverapptoken":"a456"}',
    ),
    (
        5,
        "mail",
        1,
        1,
        0,
        '{"name":"mail","type":"smtp","smtpHost":"smtp.example.org","smtpPort":587,"smtpSecure":false,"smtpUsername":"kuma","smtpPassword":"pw","smtpFrom":"kuma@example.org","smtpTo":"ops@example.org"}',
    ),
    (
        6,
        "custom hook",
        1,
        1,
        0,
        '{"name":"custom hook","type":"webhook","webhookURL":"https://example.org/c","webhookContentType":"custom","webhookCustomBody":"{{msg}}"}',
    ),
]

# (column: value) per monitor, as Kuma's UI stores them; every column exists in both schemas
# fmt: off
MONITORS = [
    dict(id=1, name='site', type='http', url='https://example.org', interval=60, retry_interval=60, maxretries=2, timeout=48, accepted_statuscodes_json='["200-299","301"]', method='GET', headers='{"X-Test":"1"}', active=1, resend_interval=3, expiry_notification=1),
    dict(id=2, name='api', type='json-query', url='https://api.example.org/health', interval=300, maxretries=0, timeout=10, json_path='$.data.items[0].state', expected_value='ok', method='POST', body='{"ping": 1}', auth_method='basic', basic_auth_user='ops', basic_auth_pass='hunter2', active=1),
    dict(id=3, name='maintenance banner', type='keyword', url='http://shop.lan/', interval=20, keyword='maintenance', invert_keyword=1, timeout=16, active=0, maxredirects=0),
    dict(id=4, name='db', type='port', hostname='10.0.0.5', port=5432, interval=60, timeout=48, active=1),
    dict(id=5, name='router', type='ping', hostname='192.168.1.1', interval=90, timeout=10, active=1),
    dict(id=6, name='dns', type='dns', hostname='example.org', dns_resolve_type='AAAA', dns_resolve_server='1.1.1.1', port=53, interval=600, timeout=5, active=1),
    dict(id=7, name='backups', type='push', push_token=PUSH_TOKEN, interval=86400, maxretries=1, active=1),
    dict(id=8, name='container', type='docker', docker_container='web', docker_host=1, interval=60, active=1),
    dict(id=9, name='Home', type='group', interval=60, active=1),
    dict(id=10, name='nas', type='http', url='https://nas.lan', interval=60, timeout=8, parent=9, ignore_tls=1, active=1),
    dict(id=11, name='flipped', type='http', url='https://example.org/down', interval=60, upside_down=1, active=1),
    dict(id=12, name='site', type='http', url='https://www.example.org', interval=60, timeout=5, active=1),
    dict(id=13, name='42', type='port', hostname='db2.lan', port=3306, interval=60, timeout=5, active=1),
    dict(id=14, name='count', type='json-query', url='https://api.example.org/list', interval=60, timeout=5, json_path='$count(items)', expected_value='3', active=1),
    dict(id=15, name='compose db', type='docker', docker_container='app_db_1', docker_host=2, interval=60, timeout=10, active=1),
    dict(id=16, name='tls engine', type='docker', docker_container='web', docker_host=3, interval=60, active=1),
]
# (id, name, docker_type, docker_daemon), as Kuma's Docker host dialog stores them
DOCKER_HOSTS = [
    (1, 'local', 'socket', '/var/run/docker.sock'),
    (2, 'nas', 'tcp', 'tcp://10.0.0.7:2375'),
    (3, 'secure', 'tcp', 'https://docker.lan:2376'),
]
# fmt: on

LINKS = [(1, 1, 1), (2, 1, 3), (3, 2, 2), (4, 4, 4), (5, 10, 5), (6, 10, 6)]


def make_kuma_db(path: Path, schema: str, monitors: list[dict[str, object]] = MONITORS) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(schema)
    conn.execute("INSERT INTO user (id, username, password) VALUES (1, 'admin', 'x')")
    conn.executemany(
        "INSERT INTO docker_host (id, user_id, name, docker_type, docker_daemon) VALUES (?, 1, ?, ?, ?)", DOCKER_HOSTS
    )
    conn.executemany(
        "INSERT INTO notification (id,name,active,user_id,is_default,config) VALUES (?,?,?,?,?,?)", NOTIFICATIONS
    )
    for row in monitors:
        conn.execute(
            f"INSERT INTO monitor ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})", list(row.values())
        )
    conn.executemany("INSERT INTO monitor_notification (id, monitor_id, notification_id) VALUES (?,?,?)", LINKS)
    conn.execute("INSERT INTO tag (id, name, color) VALUES (1, 'prod', '#f00')")
    conn.execute("INSERT INTO monitor_tag (monitor_id, tag_id, value) VALUES (1, 1, 'eu')")
    conn.commit()
    conn.close()
    return path


run = run_installed
monitors = monitor_rows


@pytest.fixture(params=["1.23", "2.0"])
def kuma_db(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return make_kuma_db(tmp_path / "kuma.db", KUMA_1_23 if request.param == "1.23" else KUMA_2_0)


def test_kuma_monitors_become_monitors_as_add_makes_them(kuma_db: Path, db_path: str) -> None:
    done = run("import", "uptime-kuma", str(kuma_db), "--db", db_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    rows = monitors(db_path)
    site = rows["site"]
    assert (site["kind"], site["url"], site["interval_sec"], site["expect_status"]) == (
        "http",
        "https://example.org",
        60,
        "200-299,301",
    )
    # Kuma's retries count failures before it alerts: --alert-after, not the in-tick --retries
    assert (site["alert_after_checks"], site["retries"], site["remind_every_sec"]) == (3, 1, 180)
    assert (site["timeout_s"], site["headers"], site["expires_within_sec"]) == (25.0, "X-Test: 1", 14 * 86400)
    api = rows["api"]
    assert (api["method"], api["json_field"], api["basic_auth"], api["body"]) == (
        "POST",
        "data.items.0.state=ok",
        "ops:hunter2",
        '{"ping": 1}',
    )
    assert api["headers"] == "Content-Type: application/json"  # Kuma sent a JSON body as JSON
    assert api["alert_after_checks"] == 1
    banner = rows["maintenance banner"]
    assert (banner["keyword_absent"], banner["keyword"], banner["enabled"], banner["interval_sec"]) == (
        "maintenance",
        None,
        0,
        60,
    )
    assert (rows["db"]["url"], rows["router"]["url"], rows["router"]["interval_sec"]) == (
        "tcp://10.0.0.5:5432",
        "icmp://192.168.1.1",
        120,
    )
    assert rows["dns"]["url"] == "dns://example.org?type=AAAA&server=1.1.1.1"
    nas = rows["nas"]
    # Kuma's group monitor is not a check: its monitors get its name as their group, no owner
    assert (nas["insecure"], nas["group_name"], nas["owner"], nas["expires_within_sec"]) == (1, "Home", None, None)
    # duplicate and refused names: renamed, the same way every time
    assert rows["site (2)"]["url"] == "https://www.example.org"
    assert rows["monitor 42"]["url"] == "tcp://db2.lan:3306"
    # a container on the local socket (Kuma's default) and one on an engine over TCP
    assert (rows["container"]["kind"], rows["container"]["url"]) == ("docker", "docker://web")
    assert rows["compose db"]["url"] == "docker://app_db_1?host=tcp://10.0.0.7:2375"
    assert "tls engine" not in rows and "flipped" not in rows and "Home" not in rows
    assert rows["count"]["json_field"] is None


@pytest.mark.parametrize(
    ("docker_type", "daemon", "url"),
    [
        ("socket", "/var/run/docker.sock", "docker://web"),
        ("socket", "/run/user/1000/docker.sock", "docker://web?host=unix:///run/user/1000/docker.sock"),
        ("tcp", "tcp://10.0.0.7:2375", "docker://web?host=tcp://10.0.0.7:2375"),
        ("tcp", "http://10.0.0.7:2375/", "docker://web?host=tcp://10.0.0.7:2375"),  # Kuma reads tcp:// as this
    ],
)
def test_a_docker_monitor_asks_the_engine_of_its_docker_host(docker_type: str, daemon: str, url: str) -> None:
    row = dict(
        id=1, name="c", type="docker", docker_container="web", docker_host=7, interval=60, active=1, maxretries=0
    )
    host = {"id": 7, "name": "engine", "docker_type": docker_type, "docker_daemon": daemon}
    plan = kuma.plan_of([row], [], [], [], {7: host})
    assert [m.url for m in plan.monitors] == [url]


def test_a_push_monitor_becomes_a_heartbeat_that_keeps_its_kuma_token(kuma_db: Path, db_path: str) -> None:
    assert run("import", "uptime-kuma", str(kuma_db), "--db", db_path).returncode == 0
    backups = monitors(db_path)["backups"]
    assert (backups["kind"], backups["url"], backups["interval_sec"], backups["grace_sec"]) == (
        "heartbeat",
        "heartbeat",
        86400,
        86400,
    )
    assert backups["token_sha256"] == token_digest(PUSH_TOKEN) == hashlib.sha256(PUSH_TOKEN.encode()).digest()
    assert backups["alert_after_checks"] == 2
    conn = store.open_db(db_path)
    try:  # what `serve` looks a ping up by, /api/push/TOKEN included
        assert store.heartbeat_by_token(conn, token_digest(PUSH_TOKEN)) == backups["id"]
    finally:
        conn.close()


def test_the_report_lists_every_monitor_and_notification_not_carried_over_with_its_reason(
    kuma_db: Path, db_path: str
) -> None:
    out = run("import", "uptime-kuma", str(kuma_db), "--db", db_path).stdout
    assert (
        "skipped   tls engine: Docker host 'secure' is reached over https with client certificates: "
        "docker:// takes a unix socket or plain tcp://" in out
    )
    assert "skipped   flipped: upside-down mode (up when the check fails) has no monitor-tick equivalent" in out
    assert "- renamed from 'site': an earlier monitor has its name" in out
    assert "- renamed from '42': an all-digit name reads as a monitor id" in out
    assert (
        "json query not carried over: only a plain path compared with == maps to --json-field (got '$count(items)' ==)"
        in out
    )
    assert "timeout 48s is above monitor-tick's 25s: 25s" in out
    assert "every 20s is under a minute: every 1m" in out
    assert "every 1m30s is not whole minutes: every 2m" in out
    assert "max redirects 0 not carried over: monitor-tick follows up to 5" in out
    assert "tags not carried over: prod:eu" in out
    assert "notification 'Pushover' not imported: Kuma notification type 'pushover' has no Apprise mapping" in out
    assert "notification 'custom hook' not imported: webhook with a custom body (a Liquid template)" in out
    assert "13 added, 0 already there, 2 skipped, 4 channels" in out
    # secrets never shown: tokens, passwords, header values
    for secret in ("ABC-DEF", "hunter2", "s3cret", PUSH_TOKEN, "pw@"):
        assert secret not in out


def test_notifications_become_channels_attached_as_kuma_attached_them(kuma_db: Path, db_path: str) -> None:
    assert run("import", "uptime-kuma", str(kuma_db), "--db", db_path).returncode == 0
    conn = store.open_db(db_path)
    try:
        channels = {
            (name, url)
            for name, url in conn.execute("SELECT m.name, c.url FROM channels c JOIN monitors m ON m.id = c.monitor_id")
        }
    finally:
        conn.close()
    assert channels == {
        ("site", "tgram://123456:ABC-DEF/-1001234567890"),
        ("site", "jsons://example.org/hook?%2BX-Token=s3cret"),
        ("api", "ntfys://ntfy.sh/alerts?priority=max"),
        (
            "nas",
            "mailtos://kuma:pw@smtp.example.org:587?smtp=smtp.example.org&from=kuma%40example.org&to=ops%40example.org&mode=starttls",
        ),
    }


def test_a_second_import_adds_nothing_twice(kuma_db: Path, db_path: str) -> None:
    assert run("import", "uptime-kuma", str(kuma_db), "--db", db_path).returncode == 0
    first = monitors(db_path)
    again = run("import", "uptime-kuma", str(kuma_db), "--db", db_path)
    assert again.returncode == 0
    assert monitors(db_path) == first
    assert "0 added, 13 already there" in again.stdout
    assert "exists    site (2): a monitor of that name is already there; left as is" in again.stdout


def test_dry_run_writes_nothing_and_says_what_would_happen(kuma_db: Path, tmp_path: Path) -> None:
    db_path = str(tmp_path / "new.db")
    done = run("import", "uptime-kuma", str(kuma_db), "--dry-run", "--db", db_path)
    assert done.returncode == 0, done.stderr
    assert "would add site: https://example.org every 1m" in done.stdout
    assert "13 to add, 0 already there, 2 skipped, 4 channels (dry run: nothing written)" in done.stdout
    assert not os.path.exists(db_path)


def test_an_import_into_a_database_that_does_not_exist_yet_creates_it_and_says_so(
    kuma_db: Path, tmp_path: Path
) -> None:
    db = str(tmp_path / "new.db")
    done = run("import", "uptime-kuma", str(kuma_db), "--db", db)
    assert (done.returncode, done.stderr) == (0, f"monitor-tick: created database {db}\n")
    assert "13 added, 0 already there, 2 skipped, 4 channels" in done.stdout
    assert len(monitors(db)) == 13
    again = run("import", "uptime-kuma", str(kuma_db), "--db", db)
    assert (again.returncode, again.stderr) == (0, "")  # said once: the database is there now


def test_the_kuma_database_is_opened_read_only_and_left_as_it_was(kuma_db: Path, db_path: str) -> None:
    # Kuma runs in WAL mode: leave its newest monitor in the -wal file, as a running (or killed)
    # Kuma does. A read-write connection closing last would checkpoint it into the main file and
    # delete the -wal; a read-only one cannot.
    script = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "c.execute(\"INSERT INTO monitor (id, name, type, url, interval) VALUES (99, 'late', 'http', 'https://late.example.org', 60)\")\n"
        "c.commit(); os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(kuma_db)], check=True, timeout=30)
    wal = Path(f"{kuma_db}-wal")
    before = (kuma_db.read_bytes(), wal.read_bytes())
    done = run("import", "uptime-kuma", str(kuma_db), "--db", db_path)
    assert done.returncode == 0, done.stderr
    assert "late" in monitors(db_path)  # the -wal was read
    assert (kuma_db.read_bytes(), wal.read_bytes()) == before


def test_kuma_2_conditions_and_operators(tmp_path: Path, db_path: str) -> None:
    kuma_db = make_kuma_db(
        tmp_path / "kuma.db",
        KUMA_2_0,
        [
            dict(
                id=1,
                name="a-record",
                type="dns",
                hostname="example.org",
                dns_resolve_type="A",
                dns_resolve_server="9.9.9.9",
                port=5353,
                interval=60,
                active=1,
                conditions='[{"type":"expression","variable":"record","operator":"equals","value":"192.0.2.1","andOr":"and"}]',
            ),
            *(
                dict(
                    id=n,
                    name=name,
                    type="json-query",
                    url=f"https://example.org/{n}",
                    interval=60,
                    json_path="status",
                    json_path_operator=operator,
                    expected_value=value,
                    active=1,
                )
                for n, name, operator, value in ((2, "not-equal", "!=", "DOWN"), (3, "equal", "==", "UP"))
            ),  # fmt: skip
        ],
    )
    done = run("import", "uptime-kuma", str(kuma_db), "--db", db_path)
    assert done.returncode == 0, done.stderr
    rows = monitors(db_path)
    assert rows["a-record"]["url"] == "dns://example.org?type=A&server=9.9.9.9%3A5353&expect=192.0.2.1"
    assert rows["not-equal"]["json_field"] is None and "(got 'status' !=)" in done.stdout
    assert rows["equal"]["json_field"] == "status=UP"


def test_kuma_smtp_and_2_1_websocket_monitors_become_smtp_and_ws_monitors(tmp_path: Path, db_path: str) -> None:
    # fmt: off
    kuma_db = make_kuma_db(tmp_path / "kuma.db", KUMA_2_1, [
        dict(id=1, name="mail", type="smtp", hostname="mail.example.org", port=587, smtp_security="starttls", interval=300, active=1),
        dict(id=2, name="relay", type="smtp", hostname="relay.lan", port=None, smtp_security="nostarttls", interval=60, active=1),
        dict(id=3, name="opportunistic", type="smtp", hostname="2001:db8::25", port=25, interval=60, active=1),
        dict(id=4, name="smtps", type="smtp", hostname="mail.example.org", port=465, smtp_security="secure", interval=60, active=1),
        dict(id=5, name="socket", type="websocket-upgrade", url="wss://chat.example.org/socket", accepted_statuscodes_json='["1000"]', timeout=10, interval=60, active=1),
        dict(id=6, name="picky", type="websocket-upgrade", url="ws://10.0.0.7:8080/ws", accepted_statuscodes_json='["1000","1001"]', ws_subprotocol="mqtt", ws_ignore_sec_websocket_accept_header=1, interval=60, active=1),
    ])
    # fmt: on
    done = run("import", "uptime-kuma", str(kuma_db), "--db", db_path)
    assert done.returncode == 0, done.stderr
    rows = monitors(db_path)
    assert {name: (row["kind"], row["url"]) for name, row in rows.items()} == {
        "mail": ("smtp", "smtp://mail.example.org:587?starttls=1"),
        "relay": ("smtp", "smtp://relay.lan:25"),
        "opportunistic": ("smtp", "smtp://[2001:db8::25]:25"),
        "socket": ("ws", "wss://chat.example.org/socket"),
        "picky": ("ws", "ws://10.0.0.7:8080/ws"),
    }
    assert (rows["mail"]["expires_within_sec"], rows["socket"]["timeout_s"]) == (14 * 86400, 10.0)
    out = done.stdout
    assert "certificate expiry: down when it expires within 14 days (Kuma only verified it)" in out
    assert "STARTTLS when offered not carried over: the greeting is checked; ?starttls=1 requires it" in out
    assert "skipped   smtps: Kuma type smtp over SMTPS (TLS from the first byte) has no monitor-tick kind" in out
    assert "accepted close codes 1000, 1001 not carried over: up only when it closes with 1000" in out
    assert "subprotocol mqtt not carried over: monitor-tick asks for none" in out
    assert "ignore Sec-WebSocket-Accept not carried over: monitor-tick checks the header" in out
    assert "5 added, 0 already there, 1 skipped" in out


# fmt: off
DATABASE_MONITORS = [
    dict(id=1, name='pg', type='postgres', database_connection_string='postgres://app:pg%40pw@db.lan:5433/app?sslmode=require', database_query='SELECT 1', interval=60, timeout=10, active=1),
    # Kuma sends radius_password, when set, as a MySQL monitor's password instead of the string's own
    dict(id=2, name='shop db', type='mysql', database_connection_string='mysql://shop:old-pw@db.lan/shop', radius_password='n3w:p@ss', database_query='SELECT count(*) FROM orders', interval=120, timeout=5, active=1),
    dict(id=3, name='cache', type='redis', database_connection_string='rediss://:r3d1s@cache.lan:6380/1', ignore_tls=1, interval=60, timeout=5, active=1),
    dict(id=4, name='sessions', type='redis', database_connection_string='redis://cache.lan', interval=60, timeout=5, active=0),
    dict(id=5, name='template', type='postgres', database_connection_string='postgres://username:password@host:port/database', interval=60, active=1),
    dict(id=6, name='mongo', type='mongodb', database_connection_string='mongodb://mongo.lan/app', interval=60, active=1),
    # passwords typed in without percent-encoding: their pieces stand where the port would be
    dict(id=7, name='pg typed', type='postgres', database_connection_string='postgres://app:Ab@cd:Kum4PgSecret/y@db.lan:5432/app', interval=60, active=1),
    dict(id=8, name='redis typed', type='redis', database_connection_string='redis://:Ab@cd:Kum4RedisSecret/y@cache.lan:6379', interval=60, active=1),
]
# fmt: on


@pytest.mark.parametrize("schema", [KUMA_1_23, KUMA_2_0], ids=["1.23", "2.0"])
def test_postgres_mysql_and_redis_monitors_become_database_monitors(tmp_path: Path, db_path: str, schema: str) -> None:
    kuma_db = make_kuma_db(tmp_path / "kuma.db", schema, DATABASE_MONITORS)
    done = run("import", "uptime-kuma", str(kuma_db), "--db", db_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = monitors(db_path)
    assert {name: (row["kind"], row["url"], row["enabled"]) for name, row in rows.items()} == {
        "pg": ("postgresql", "postgres://app:pg%40pw@db.lan:5433/app?sslmode=require", 1),
        "shop db": ("mysql", "mysql://shop:n3w%3Ap%40ss@db.lan/shop", 1),
        "cache": ("redis", "rediss://:r3d1s@cache.lan:6380/1", 1),
        "sessions": ("redis", "redis://cache.lan", 0),
    }
    assert (rows["pg"]["timeout_s"], rows["shop db"]["interval_sec"]) == (10.0, 120)
    out = done.stdout
    assert "- custom query not carried over: monitor-tick logs in and makes its own round trip" in out
    assert out.count("custom query not carried over") == 1  # Kuma's default SELECT 1 is what monitor-tick runs
    assert "- ignore TLS errors not carried over: rediss:// verifies the certificate" in out
    assert "skipped   template: cannot be added: url is not valid: " in out
    assert "skipped   mongo: Kuma type mongodb (a MongoDB query) has no monitor-tick kind" in out
    for name in ("pg typed", "redis typed"):
        assert f"skipped   {name}: cannot be added: url is not valid: its port is not a number (a user" in out
    assert "4 added, 0 already there, 4 skipped" in out
    for secret in ("pg%40pw", "pg@pw", "old-pw", "n3w", "r3d1s", "Kum4PgSecret", "Kum4RedisSecret"):
        assert secret not in out


@pytest.mark.parametrize("content", [b"", b"not a database at all\n" * 100, "monitor-tick"])
def test_a_file_that_is_not_a_kuma_database_is_one_line(tmp_path: Path, db_path: str, content: bytes | str) -> None:
    path = tmp_path / "other.db"
    if content == "monitor-tick":
        store.open_db(str(path)).close()  # a real SQLite file, but ours
    else:
        path.write_bytes(content)  # type: ignore[arg-type]
    done = run("import", "uptime-kuma", str(path), "--db", db_path)
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr.startswith(f"monitor-tick: {path} is not an Uptime Kuma database") and done.stderr.count("\n") == 1
    )
    missing = run("import", "uptime-kuma", str(tmp_path / "missing.db"), "--db", db_path)
    assert (missing.returncode, missing.stderr) == (
        1,
        f"monitor-tick: no Uptime Kuma database at {tmp_path / 'missing.db'}\n",
    )


def test_imported_monitors_get_their_first_check_within_minutes_like_added_ones(kuma_db: Path, db_path: str) -> None:
    before_minute = clock.minute_of_ms(clock.now_ms())
    assert run("import", "uptime-kuma", str(kuma_db), "--db", db_path).returncode == 0
    after_minute = clock.minute_of_ms(clock.now_ms())
    rows = monitors(db_path).values()
    for row in rows:
        if row["enabled"]:
            assert isinstance(row["first_check_minute"], int)
            assert before_minute < row["first_check_minute"] <= after_minute + schedule.FIRST_CHECK_SPREAD_MIN
        else:  # a paused one gets it when resumed
            assert row["first_check_minute"] is None
    # spread by id over the next few minutes, not all in one
    assert len({row["first_check_minute"] for row in rows if row["enabled"]}) > 1


def test_to_file_writes_the_monitors_file_instead_of_the_database_and_apply_makes_the_same_monitors(
    kuma_db: Path, db_path: str, tmp_path: Path
) -> None:
    out = tmp_path / "monitors.toml"
    untouched = str(tmp_path / "none.db")
    done = run("import", "uptime-kuma", str(kuma_db), "--to-file", str(out), "--db", untouched)
    assert done.returncode == 0, done.stderr
    assert not os.path.exists(untouched)  # the file instead of the database
    assert "written   site: https://example.org every 1m" in done.stdout and "(monitor " not in done.stdout
    assert done.stdout.splitlines()[-1] == f"wrote {out}; make a database match it with: monitor-tick apply {out}"
    text = out.read_text(encoding="utf-8")
    assert out.stat().st_mode & 0o777 == 0o600
    assert "[monitors.nas]\n" in text and 'group_name = "Home"\n' in text
    assert f'token_sha256 = "{token_digest(PUSH_TOKEN).hex()}"' in text
    assert 'basic_auth = "ops:${MONITOR_API_PASSWORD}"' in text
    # the JSON body and the Content-Type Kuma sent with it stay as they are; a header of its own does not
    assert 'headers = "Content-Type: application/json"\nbasic_auth' in text and 'body = "{\\"ping\\": 1}"\n' in text
    assert 'headers = "X-Test: ${MONITOR_SITE_HEADER_X_TEST}"\n' in text
    for secret in ("ABC-DEF", "hunter2", "s3cret", PUSH_TOKEN, "pw@"):
        assert secret not in text + done.stdout + done.stderr
    # the placeholders the warnings name, set as a user would; then the file makes the same monitors
    placeholders = re.findall(r"set ([A-Z0-9_]+) ", done.stderr)
    assert "MONITOR_API_PASSWORD" in placeholders and "CHANNEL_1_URL" in placeholders
    env = {name: "json://127.0.0.1:9/hook" for name in placeholders if name.startswith("CHANNEL_")}
    applied = str(tmp_path / "applied.db")
    assert (
        subprocess.run(
            [str(Path(sys.executable).parent / "monitor-tick"), "apply", str(out), "--db", applied],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        ).returncode
        == 0
    )
    imported = db_path
    assert run("import", "uptime-kuma", str(kuma_db), "--db", imported).returncode == 0
    ignored = {"id", "created_at_ms", "first_check_minute", "headers", "basic_auth"}

    def settings(path: str) -> dict[str, dict[str, object]]:
        return {n: {k: v for k, v in r.items() if k not in ignored} for n, r in monitors(path).items()}

    assert settings(applied) == settings(imported)
    assert monitors(applied)["api"]["basic_auth"] == "ops:${MONITOR_API_PASSWORD}"  # resolved by the tick
    refused = run("import", "uptime-kuma", str(kuma_db), "--to-file", str(out), "--dry-run")
    assert (refused.returncode, refused.stderr) == (
        2,
        "monitor-tick: --dry-run and --to-file contradict each other: give one\n",
    )


# fmt: off
MALFORMED_URLS = [
    dict(id=1, name='site', type='http', url='https://u:Ab@[Kum4HttpSecret/x', interval=60, active=1, expiry_notification=1),
    dict(id=2, name='ws', type='websocket-upgrade', url='wss://u:Ab@cd:Kum4WsSecret/y@chat.lan/', interval=60, active=1),
]
# fmt: on


def test_a_malformed_url_is_skipped_saying_why_without_quoting_it(tmp_path: Path, db_path: str) -> None:
    kuma_db = make_kuma_db(tmp_path / "kuma.db", KUMA_2_0, MALFORMED_URLS)
    done = run("import", "uptime-kuma", str(kuma_db), "--db", db_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "skipped   site: cannot be added: url is not valid: its host in [ ] is not an IPv6 address" in done.stdout
    assert "skipped   ws: cannot be added: url is not valid: its port is not a number" in done.stdout
    assert "Kum4" not in done.stdout


def test_a_notification_with_a_malformed_server_url_is_skipped_saying_why(tmp_path: Path, db_path: str) -> None:
    kuma_db = make_kuma_db(tmp_path / "kuma.db", KUMA_2_0)
    conn = sqlite3.connect(kuma_db)
    conn.executemany(
        "INSERT INTO notification (id, name, active, user_id, is_default, config) VALUES (?, ?, 1, 1, 0, ?)",
        [
            (
                7,
                "own bot",
                '{"type":"telegram","telegramBotToken":"1:Tok3n","telegramChatID":"2",'
                '"telegramServerUrl":"https://[tg.lan:Pa55/"}',
            ),
            (8, "own ntfy", '{"type":"ntfy","ntfyserverurl":"https://[ntfy.lan:Pa55/","ntfytopic":"t"}'),
            (9, "own hook", '{"type":"webhook","webhookURL":"https://[hook.lan:Pa55/","webhookContentType":"json"}'),
            (
                10,
                "own mail",
                '{"type":"smtp","smtpHost":"m.lan","smtpPort":"Pa55","smtpFrom":"a@lan","smtpTo":"b@lan"}',
            ),
        ],
    )
    conn.commit()
    conn.close()
    done = run("import", "uptime-kuma", str(kuma_db), "--db", db_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "notification 'own bot' not imported: telegram: its server is not a URL" in done.stdout
    assert "notification 'own ntfy' not imported: ntfy: the server is not an http(s) URL" in done.stdout
    assert "notification 'own hook' not imported: webhook: not an http(s) URL" in done.stdout
    assert "notification 'own mail' not imported: email: the SMTP port is not a number" in done.stdout
    assert "Pa55" not in done.stdout and "Tok3n" not in done.stdout
