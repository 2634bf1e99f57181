"""`monitor-tick notify ...` and the alert options of `add`, through the command line, against
real receivers on 127.0.0.1 and a real SQLite file."""

from __future__ import annotations

import json
import socket
import sqlite3

import pytest
from freezegun import freeze_time
from typer.testing import CliRunner

from monitor_tick import store
from monitor_tick.cli.app import app
from tests.conftest import add
from tests.receivers import JsonReceiver
from tests.servers import refused_port

runner = CliRunner()


def run(db_path: str, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, [*args, "--db", db_path])
    return result.exit_code, result.stdout, result.stderr


def test_channels_are_added_listed_with_secrets_hidden_and_removed(conn: sqlite3.Connection, db_path: str) -> None:
    add(conn, "http://api.test/", name="api")
    store.add_owner(conn, "alice", "default", None)
    assert run(db_path, "notify", "add", "json://user:pw@hooks.example.org/hook/s3cret") == (0, "1\n", "")
    assert run(db_path, "notify", "add", "tgram://123456:BOTTOKEN/777", "--monitor", "api") == (0, "2\n", "")
    assert run(db_path, "notify", "add", "ntfys://ntfy.sh/private-topic", "--owner", "alice") == (0, "3\n", "")
    code, out, err = run(db_path, "notify", "list")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "  ID  COVERS                   PENDING  SENT FAILED  URL",
        "   1  all                            0     0      0  json://***@hooks.example.org/***/***",
        "   2  monitor api                    0     0      0  tgram://***/***",
        "   3  owner alice                    0     0      0  ntfys://ntfy.sh/***",
    ]
    code, out, _ = run(db_path, "notify", "list", "--json")
    listed = json.loads(out)
    assert [c["url"] for c in listed["channels"]] == [
        "json://***@hooks.example.org/***/***",
        "tgram://***/***",
        "ntfys://ntfy.sh/***",
    ]
    assert "s3cret" not in out and "BOTTOKEN" not in out and "private-topic" not in out
    assert run(db_path, "notify", "remove", "2") == (0, "", "")
    assert [row["id"] for row in store.list_channels(conn)] == [1, 3]
    assert run(db_path, "notify", "remove", "2") == (1, "", "monitor-tick: no channel 2\n")


def test_a_url_apprise_cannot_use_is_refused_without_echoing_its_secrets(db_path: str) -> None:
    code, out, err = run(db_path, "notify", "add", "nosuchservice://token-abc123/x")
    assert (code, out) == (2, "")
    assert err == "monitor-tick: not an Apprise URL this installation can use: nosuchservice://***/***\n"
    assert run(db_path, "notify", "add", "json://h.example.org/", "--monitor", "nope") == (
        1,
        "",
        "monitor-tick: no monitor 'nope'\n",
    )


def test_notify_test_says_which_channels_received_the_message(db_path: str) -> None:
    with JsonReceiver() as good, JsonReceiver() as bad:
        bad.fail_next(1)
        assert run(db_path, "notify", "add", good.apprise_url("/ok/secret"))[0] == 0
        assert run(db_path, "notify", "add", bad.apprise_url("/bad/secret"))[0] == 0
        with freeze_time("2026-12-01T00:00:05Z"):
            code, out, err = run(db_path, "notify", "test")
        assert code == 1 and err == ""
        lines = out.splitlines()
        assert lines[0] == f"   1  json://127.0.0.1:{good.port}/***/***  delivered"
        assert lines[1].startswith(f"   2  json://127.0.0.1:{bad.port}/***/***  FAILED: ")
        assert "secret" not in out
        assert good.titles() == ["monitor-tick test"]
        assert good.messages[0]["message"].startswith("A test message from monitor-tick, sent 2026-12-01T00:00:05Z")
        code, out, _ = run(db_path, "notify", "test", "1")
        assert code == 0 and out.endswith("delivered\n") and len(good.messages) == 2


def test_alert_options_of_add_are_stored_and_checked(conn: sqlite3.Connection, db_path: str) -> None:
    code, out, _ = run(
        db_path, "add", "http://api.test/", "--alert-after", "3", "--resolve-after", "2", "--remind", "1h"
    )
    assert code == 0
    row = conn.execute(
        "SELECT alert_after_checks, resolve_after_checks, remind_every_sec FROM monitors WHERE id = ?", (int(out),)
    ).fetchone()
    assert row == (3, 2, 3600)
    assert run(db_path, "add", "http://b.test/")[0] == 0
    assert conn.execute(
        "SELECT alert_after_checks, resolve_after_checks, remind_every_sec FROM monitors WHERE id = 2"
    ).fetchone() == (
        2,
        1,
        None,
    )
    assert run(db_path, "add", "http://c.test/", "--alert-after", "0") == (
        2,
        "",
        "monitor-tick: alert after must be 1 to 10 checks (got 0)\n",
    )
    assert run(db_path, "add", "http://c.test/", "--remind", "30s")[0] == 2


def test_a_canary_is_set_shown_and_removed(db_path: str) -> None:
    assert run(db_path, "notify", "canary")[1].startswith("no canary: every failed check counts")
    assert run(db_path, "notify", "canary", "https://u:p@router.example.org/?k=v") == (0, "", "")
    assert run(db_path, "notify", "canary") == (0, "https://***@router.example.org/?k=***\n", "")
    assert run(db_path, "notify", "canary", "ftp://x") == (2, "", "monitor-tick: canary: unsupported scheme 'ftp'\n")
    assert run(db_path, "notify", "canary", "--off") == (0, "", "")
    assert run(db_path, "notify", "canary")[1].startswith("no canary")


def test_a_tick_that_lost_its_network_warns_once_on_stderr_and_still_exits_0(
    conn: sqlite3.Connection, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = socket.getaddrinfo

    def offline(host: object, *args: object, **kwargs: object) -> object:  # no name resolves
        name = host.decode("ascii") if isinstance(host, bytes) else host
        if isinstance(name, str) and name.endswith(".offline.test"):
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    for i in range(5):
        add(conn, f"http://site{i}.offline.test/", name=f"m{i}", retries=0)
    store.set_setting(conn, store.CANARY_SETTING, "http://router.offline.test/")
    with JsonReceiver() as rx:
        store.add_channel(conn, rx.apprise_url(), monitor_ref=None, owner_name=None, created_at_ms=0)
        with freeze_time("2026-12-01T00:00:05Z", real_asyncio=True):
            code, out, err = run(db_path, "--retry-delay", "0")
        assert rx.posts == 0
    assert (code, out) == (0, "")
    assert err == (
        "monitor-tick: network looks down from here: 5 of 5 checks failed to reach their host "
        "(dns, connect error); counted as unknown, no incidents opened for them, nobody notified\n"
    )


def test_a_tick_that_gives_up_a_delivery_warns_once(conn: sqlite3.Connection, db_path: str) -> None:
    monitor = add(conn, f"http://127.0.0.1:{refused_port()}/", name="gone", retries=0)
    with JsonReceiver() as rx:
        rx.fail_next(100)
        store.add_channel(conn, rx.apprise_url("/t0ken"), monitor_ref=None, owner_name=None, created_at_ms=0)
        errs = []
        for when in ("00:00:05", "00:01:05", "03:00:05", "07:02:05", "08:00:05"):
            with freeze_time(f"2026-12-01T{when}Z", real_asyncio=True):
                code, out, err = run(db_path, "--retry-delay", "0")
            assert (code, out) == (0, "")
            errs.append(err)
    assert errs[:3] == ["", "", ""] and errs[4] == ""
    assert errs[3].startswith(
        f"monitor-tick: gave up notifying json://127.0.0.1:{rx.port}/*** of 'DOWN: gone' after 3 attempts: "
    )
    assert "t0ken" not in errs[3]
    assert store.incidents_for(conn, monitor)[0][1] is None
