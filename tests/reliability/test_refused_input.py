"""Input that should be refused: names that break output or shadow ids, intervals the schedule
cannot honour, and database paths that are not files. One line, exit 2, nothing written."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from monitor_tick.cli.app import app
from monitor_tick.core import clock
from monitor_tick.publish import statuspage
from tests.conftest import add, rollup
from tests.servers import LocalServer

MONITOR_TICK = str(Path(sys.executable).parent / "monitor-tick")
MINUTE = 29_934_720  # 2026-12-01T00:00Z


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def run(*args: str) -> Outcome:
    """The Typer app in this process (the refusals under test are all the app's own)."""
    result = CliRunner().invoke(app, list(args))
    return Outcome(result.exit_code, result.stdout, result.stderr)


def run_command(*args: str, cwd: Path) -> Outcome:
    """The installed command: a plain tick runs on cli/entry.py's fast path, without Typer."""
    done = subprocess.run([MONITOR_TICK, *args], capture_output=True, text=True, timeout=60, cwd=cwd)
    return Outcome(done.returncode, done.stdout, done.stderr)


def assert_refused(result: Outcome, fragment: str) -> None:
    assert (result.returncode, result.stdout) == (2, ""), result
    assert result.stderr.startswith("monitor-tick: ") and result.stderr.count("\n") == 1, result.stderr
    assert fragment in result.stderr


def monitor_names(db_path: str) -> list[str]:
    raw = sqlite3.connect(db_path)
    try:
        return [row[0] for row in raw.execute("SELECT name FROM monitors ORDER BY id")]
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("\x1b[31mred", "control character (U+001B)"),
        ("tab\there", "control character (U+0009)"),
        ("two\nlines", "control character (U+000A)"),
        ("del\x7f", "control character (U+007F)"),
        ("c1\x85", "control character (U+0085)"),
        ("para\u2029graph", "line or paragraph separator (U+2029)"),
        # invisible: two names that differ only by one look the same everywhere they are shown
        ("a\u200bb", "an invisible format character (U+200B)"),
        ("a\u202eb", "an invisible format character (U+202E)"),  # right-to-left override
        ("a\u200db", "an invisible format character (U+200D)"),  # a joiner, outside an emoji
        ("soft\u00adhyphen", "an invisible format character (U+00AD)"),
        ("private\ue000use", "a private-use or unassigned character (U+E000)"),
        ("unassigned\u0378", "a private-use or unassigned character (U+0378)"),
        ("   ", "name is empty or only whitespace"),
        ("", "name is empty or only whitespace"),
        ("42", "all digits"),
        ("\u0664\u0662", "all digits"),  # Arabic-Indic digits: `pause` reads them as id 42 too
    ],
)
def test_add_refuses_names_that_break_output_or_shadow_ids(db_path: str, name: str, fragment: str) -> None:
    assert_refused(run("add", "http://127.0.0.1:9/", "--name", name, "--db", db_path), fragment)
    assert monitor_names(db_path) == []


def test_a_control_character_in_the_url_is_refused_before_it_becomes_the_default_name(db_path: str) -> None:
    assert_refused(run("add", "http://127.0.0.1:9/\x1b[2J", "--db", db_path), "control character (U+001B)")
    assert monitor_names(db_path) == []


@pytest.mark.parametrize("command", [["plan", "add", "{}", "--min-interval", "5m"], ["owner", "add", "{}"]])
def test_plan_and_owner_names_are_refused_alike(db_path: str, command: list[str]) -> None:
    for name, fragment in (("bad\x1bname", "control character"), (" ", "only whitespace")):
        args = [part.format(name) for part in command]
        assert_refused(run(*args, "--db", db_path), fragment)


def test_good_names_are_kept_as_given_and_shown_as_given(db_path: str) -> None:
    names = ["api", "Café ☕ status", "build 42", "42b", "👩‍💻 team", "👨‍❤️‍👨", "x²"]
    for name in names:
        result = run("add", "http://127.0.0.1:9/", "--name", name, "--db", db_path)
        assert result.returncode == 0, result.stderr
    assert monitor_names(db_path) == names
    for command in ("list", "report"):
        out = run(command, "--db", db_path).stdout
        assert [name for name in names if name not in out] == [], out  # the emojis' joiners too
        assert "\\u200d" not in out


def test_a_superscript_digit_is_a_name_not_an_id(db_path: str) -> None:
    # "²" is a digit to str.isdigit, but no number: it names a monitor, never an internal error
    assert run("pause", "²", "--db", db_path) == Outcome(1, "", "monitor-tick: no monitor '²'\n")
    assert run("add", "http://127.0.0.1:9/", "--name", "²", "--db", db_path).returncode == 0
    assert run("pause", "²", "--db", db_path).returncode == 0


def test_names_stored_before_the_rules_are_shown_distinctly(conn: sqlite3.Connection, db_path: str) -> None:
    stored = ["a\u200bb", "a\u202eb", "a?b", "a\\u200bb", "a\x1bb", "a\u200db"]
    for name in stored:
        monitor = add(conn, "http://127.0.0.1:9/", name="placeholder")
        conn.execute("UPDATE monitors SET name = ? WHERE id = ?", (name, monitor))  # as an older version let it
    out = run("list", "--db", db_path).stdout
    shown = [line.split()[1] for line in out.splitlines() if line.split()[0].isdigit()]
    assert shown == ["a\\u200bb", "a\\u202eb", "a?b", "a\\\\u200bb", "a\\x1bb", "a\\u200db"]


def test_list_and_report_show_long_names_whole(db_path: str) -> None:
    names = [f"customer-portal-production-eu-west-{n}" for n in (1, 2)]
    for name in names:
        assert run("add", "http://127.0.0.1:9/", "--name", name, "--db", db_path).returncode == 0
    for command in ("list", "report"):
        out = run(command, "--db", db_path).stdout
        assert [line.split()[1] for line in out.splitlines() if line.split()[0].isdigit()] == names, out


CAFE_NFC = "caf\u00e9"  # é as one code point
CAFE_NFD = "cafe\u0301"  # e, then a combining acute accent: printed the same


def test_names_are_stored_in_nfc_and_compared_so(db_path: str) -> None:
    assert run("add", "http://127.0.0.1:9/", "--name", CAFE_NFD, "--db", db_path).returncode == 0
    assert monitor_names(db_path) == [CAFE_NFC]
    assert run("add", "http://127.0.0.1:9/b", "--name", CAFE_NFC, "--db", db_path) == Outcome(
        1, "", f"monitor-tick: a monitor named {CAFE_NFC!r} exists; choose another with --name\n"
    )
    for ref in (CAFE_NFC, CAFE_NFD):
        assert run("pause", ref, "--db", db_path).returncode == 0, ref
    assert run("add", "http://127.0.0.1:9/b", "--name", "other", "--db", db_path).returncode == 0
    assert run("edit", "other", "--name", CAFE_NFD, "--db", db_path).returncode == 1  # taken, in either form
    assert run("edit", "other", "--group", f"{CAFE_NFD} group", "--db", db_path).returncode == 0
    assert run("plan", "add", CAFE_NFD, "--min-interval", "5m", "--db", db_path).returncode == 0
    assert run("plan", "add", CAFE_NFC, "--min-interval", "5m", "--db", db_path).returncode == 1
    assert run("owner", "add", CAFE_NFD, "--plan", CAFE_NFC, "--db", db_path).returncode == 0
    assert run("edit", "other", "--owner", CAFE_NFC, "--db", db_path).returncode == 0
    raw = sqlite3.connect(db_path)
    try:
        stored = raw.execute(
            "SELECT m.group_name, o.name, p.name FROM monitors m JOIN owners o ON o.id = m.owner_id"
            " JOIN plans p ON p.id = o.plan_id"
        ).fetchall()
    finally:
        raw.close()
    assert stored == [(f"{CAFE_NFC} group", CAFE_NFC, CAFE_NFC)]


@pytest.mark.parametrize("name", [" api", "api ", "\u00a0api", "api\u3000"])
def test_names_with_white_space_at_either_end_are_refused(db_path: str, name: str) -> None:
    fragment = f"{name!r} starts or ends with white space"
    assert_refused(run("add", "http://127.0.0.1:9/", "--name", name, "--db", db_path), f"name {fragment}")
    assert_refused(run("add", "http://127.0.0.1:9/", "--group", name, "--db", db_path), f"group {fragment}")
    assert run("add", "http://127.0.0.1:9/", "--name", "api-1", "--db", db_path).returncode == 0
    assert_refused(run("edit", "api-1", "--name", name, "--db", db_path), f"name {fragment}")
    assert_refused(run("plan", "add", name, "--min-interval", "5m", "--db", db_path), f"plan name {fragment}")
    assert_refused(run("owner", "add", name, "--db", db_path), f"owner name {fragment}")
    assert monitor_names(db_path) == ["api-1"]


KIB = 1024


@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        (["--name", "n" * 201], "name is 201 characters long; at most 200"),
        (["--group", "g" * 201], "group is 201 characters long; at most 200"),
        (["--keyword", "k" * (4 * KIB + 1)], "--keyword is 4,097 bytes long; at most 4 KiB"),
        (["--keyword", "é" * (2 * KIB + 1)], "--keyword is 4,098 bytes long; at most 4 KiB"),  # UTF-8 bytes
        (["--keyword-absent", "k" * (4 * KIB + 1)], "--keyword-absent is 4,097 bytes long; at most 4 KiB"),
        (["--json-field", "a=" + "v" * (4 * KIB)], "--json-field is 4,098 bytes long; at most 4 KiB"),
        (["--header", "X-A: " + "v" * (4 * KIB + 1)], "--header X-A: its value is 4,097 bytes long; at most 4 KiB"),
        (["--basic-auth", "u:" + "p" * (4 * KIB)], "--basic-auth is 4,098 bytes long; at most 4 KiB"),
        (["--method", "POST", "--body", "b" * (64 * KIB + 1)], "--body is 65,537 bytes long; at most 64 KiB"),
    ],
    ids=["name", "group", "keyword", "keyword-utf-8", "keyword-absent", "json-field", "header", "basic-auth", "body"],
)
def test_add_and_edit_refuse_what_no_one_types_in_one_line(db_path: str, option: list[str], fragment: str) -> None:
    assert_refused(run("add", "http://127.0.0.1:9/", *option, "--db", db_path), fragment)
    assert monitor_names(db_path) == []
    assert run("add", "http://127.0.0.1:9/", "--name", "api", "--db", db_path).returncode == 0
    assert_refused(run("edit", "api", *option, "--db", db_path), fragment)


def test_what_fits_the_bounds_is_accepted(db_path: str) -> None:
    fits = [
        "--name", "n" * 200, "--group", "g" * 200, "--keyword", "é" * (2 * KIB), "--json-field", "a=" + "v" * 4094,
        "--header", "X-A: " + "v" * (4 * KIB), "--method", "POST", "--body", "b" * (64 * KIB),
    ]  # fmt: skip
    assert run("add", "http://127.0.0.1:9/", *fits, "--db", db_path).returncode == 0
    # a long URL is no typed name: the default name, the URL, is cut to a name's length
    long_url = "http://127.0.0.1:9/" + "p" * 300
    assert run("add", long_url, "--db", db_path).returncode == 0
    assert monitor_names(db_path) == ["n" * 200, long_url[:199] + "…"]


def test_rows_stored_over_the_bounds_still_run_and_list_and_report_cut_their_names(
    conn: sqlite3.Connection, db_path: str, tmp_path: Path, local_server: LocalServer
) -> None:
    """An older version took names, keywords and bodies of any length: such a row keeps being
    probed, and every command that shows it ends (redacting them once took quadratic time)."""
    name, keyword = "n" * 100_000, "k" * (1024 * KIB)
    monitor = add(conn, local_server.url("/ok"), name="placeholder", keyword="ok")
    conn.execute("UPDATE monitors SET name = ?, keyword = ? WHERE id = ?", (name, keyword, monitor))
    ticked = run_command("--minute", str(MINUTE), "--db", db_path, cwd=tmp_path)
    assert ticked == Outcome(0, "", "")
    assert rollup(conn, monitor) == (1, 1)  # probed: the page has no such keyword
    listed = run_command("list", "--db", db_path, cwd=tmp_path)
    assert listed.returncode == 0 and f" {'n' * 200}… " in listed.stdout and "n" * 201 not in listed.stdout
    reported = run_command("report", "--db", db_path, cwd=tmp_path)
    assert reported.returncode == 0 and f" {'n' * 200}… " in reported.stdout
    assert json.loads(run_command("list", "--json", "--db", db_path, cwd=tmp_path).stdout)[0]["name"] == name
    shown = run_command("show", str(monitor), "--db", db_path, cwd=tmp_path)
    assert shown.returncode == 0 and f"--keyword {keyword}" in shown.stdout
    exported = run_command("export", "--db", db_path, cwd=tmp_path)
    assert exported.returncode == 0 and f'keyword = "{keyword}"' in exported.stdout
    assert run_command("status-page", "--out", "site", "--db", db_path, cwd=tmp_path).returncode == 0


def test_a_stored_control_character_still_gives_a_well_formed_badge(
    conn: sqlite3.Connection, db_path: str, tmp_path: Path
) -> None:
    """A name stored before names were checked (or edited by hand) must not break the SVG."""
    monitor = add(conn, "http://127.0.0.1:9/", name="ok")
    conn.execute("UPDATE monitors SET name = ? WHERE id = ?", ("esc\x1b[0m\x00name", monitor))
    statuspage.publish(db_path, str(tmp_path / "site"), clock.now_ms(), "Status")
    for badge in sorted((tmp_path / "site" / "badges").glob("*.svg")):
        ElementTree.fromstring(badge.read_text(encoding="utf-8"))  # raises on a character XML forbids


# ---------------------------------------------------------------------------------------------
# Values


@pytest.mark.parametrize("every", ["1000000d", "366d", "527041m"])
def test_add_refuses_an_interval_longer_than_the_schedule_honours(db_path: str, every: str) -> None:
    assert_refused(run("add", "http://127.0.0.1:9/", "--every", every, "--db", db_path), "at most 365d")
    assert monitor_names(db_path) == []


def test_the_longest_interval_is_accepted_and_scheduled(db_path: str) -> None:
    assert run("add", "http://127.0.0.1:9/", "--every", "365d", "--aligned", "--db", db_path).returncode == 0
    # the first aligned minute after it was added (a replay leaves out monitors not yet added,
    # and only --dry-run may look ahead): minute % n == 0
    n = 365 * clock.MINUTES_PER_DAY
    minute = -(-clock.minute_of_ms(clock.now_ms()) // n) * n
    due = run("--dry-run", "--minute", str(minute), "--db", db_path)
    assert (due.returncode, due.stdout.splitlines()[0]) == (
        0,
        f"minute {minute} ({clock.iso_from_ms(clock.minute_start_ms(minute))}): 1 due",
    )


def test_a_plan_floor_longer_than_the_schedule_honours_is_refused(db_path: str) -> None:
    assert_refused(run("plan", "add", "slow", "--min-interval", "400d", "--db", db_path), "at most 365d")


DB_COMMANDS = [
    [],  # the tick
    ["--status-page", "site"],
    ["--dry-run"],
    ["add", "http://127.0.0.1:9/"],
    ["list"],
    ["report"],
    ["status-page", "--out", "site"],
    ["notify", "list"],
    ["ping", "backups"],
    ["pause", "1"],
    ["check"],
    ["backup", "--out", "copy.db"],
]


@pytest.mark.parametrize("command", DB_COMMANDS, ids=lambda c: " ".join(c) or "tick")
def test_a_database_path_that_is_not_a_file_is_refused_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # the command's own --db and the root's (`monitor-tick --db PATH COMMAND`)
    assert_refused(run(*command, "--db", ""), "--db: '' is not a database file")
    assert_refused(run("--db", ":memory:", *command), "--db: :memory: is not a database file")
    assert list(tmp_path.iterdir()) == []  # no ./monitor-tick.db, no ':memory:' file


@pytest.mark.parametrize("path", ["", ":memory:"])
def test_the_ticks_fast_path_refuses_them_too(tmp_path: Path, path: str) -> None:
    for args in (["--db", path], [f"--db={path}", "--dry-run"]):
        assert_refused(run_command(*args, cwd=tmp_path), "is not a database file")
    assert list(tmp_path.iterdir()) == []
