"""Opening the database, claiming minutes, writing results."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.model import CheckResult, Phases
from tests.conftest import CONSTRAINT_ERRORS, add, rollup

MINUTE = 29_934_720
T0_MS = clock.minute_start_ms(MINUTE)


@pytest.fixture
def db_path(any_db: str) -> str:
    """Every test here that takes `db_path` or `conn` runs on SQLite and on PostgreSQL; the
    tests of the file itself take their own path."""
    return any_db


def test_a_new_database_gets_the_schema_and_is_private_to_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    conn = store.open_db(str(path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT name, min_interval_sec FROM plans").fetchall() == [("default", 60)]
    conn.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.parametrize("name", ["50%?#1.db", "caf\u00e9 \u65e5\u672c.db", "a+b=c;d@e,f!g$h&i'j(k)l*m~_.-.db"])
def test_a_file_name_with_uri_syntax_or_beyond_ascii_opens_that_file(tmp_path: Path, name: str) -> None:
    """The file is opened by URI (store/sqlite.py, _uri_path): its name is escaped as
    urllib.parse.quote escapes it, and the database is the file of that name, no other."""
    from urllib.parse import quote

    from monitor_tick.store.sqlite import _uri_path

    path = tmp_path / name
    assert _uri_path(str(path)) == quote(str(path))
    store.open_db(str(path)).close()
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".db"] == [name]
    conn = store.open_db(str(path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    conn.close()


def test_the_packaged_schema_is_the_top_level_schema() -> None:
    top = Path(__file__).resolve().parent.parent / "schema.sql"
    assert store.schema_sql() == top.read_text(encoding="utf-8")


def test_a_missing_directory_is_a_clear_error_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(store.StoreError, match="directory does not exist"):
        store.open_db(str(tmp_path / "nope" / "x.db"))
    assert not (tmp_path / "nope").exists()


def test_a_file_that_is_not_sqlite_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 10)
    before = path.read_bytes()
    with pytest.raises(store.StoreError, match="not a SQLite database"):
        store.open_db(str(path))
    assert path.read_bytes() == before


def test_a_foreign_sqlite_database_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE recipes (name TEXT)")
    other.commit()
    other.close()
    with pytest.raises(store.StoreError, match="not a monitor-tick one"):
        store.open_db(str(path))
    check = sqlite3.connect(path)
    assert check.execute("SELECT name FROM sqlite_schema").fetchall() == [("recipes",)]
    check.close()


def test_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    db_path = str(tmp_path / "monitor-tick.db")
    store.open_db(db_path).close()
    raw = sqlite3.connect(db_path)
    raw.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(store.StoreError, match="newer than this monitor-tick"):
        store.open_db(db_path)


def test_the_schema_refuses_intervals_that_are_not_whole_minutes(conn: sqlite3.Connection) -> None:
    for bad in (0, 30, 90, -60):
        with pytest.raises(CONSTRAINT_ERRORS):
            add(conn, "http://127.0.0.1/x", every_s=bad, name=f"bad{bad}")


def test_the_schema_refuses_text_where_a_number_belongs(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    with pytest.raises((sqlite3.IntegrityError, store.EngineError)):
        conn.execute("UPDATE monitors SET interval_sec = 'often' WHERE id = ?", (monitor,))


def test_a_minute_is_claimed_once(conn: sqlite3.Connection) -> None:
    assert store.claim_minute(conn, MINUTE, T0_MS, force=False) is True
    second = store.claim_minutes(conn, MINUTE, T0_MS + 5, force=False, catch_up_minutes=0)
    if conn.engine == "sqlite":
        assert second is None  # one host runs the minute whole
    else:
        assert second is not None and second.joined  # it shares the minute's buckets (see below)
    assert store.claim_minute(conn, MINUTE + 1, T0_MS + 60_000, force=False) is True
    assert store.claim_minute(conn, MINUTE, T0_MS + 9, force=True) is True
    assert conn.execute("SELECT count(*) FROM ticks").fetchone()[0] == 2


def _write(conn: sqlite3.Connection, minute: int, results: list[CheckResult]) -> store.WriteSummary:
    store.claim_minute(conn, minute, clock.minute_start_ms(minute), force=True)
    at_ms = clock.minute_start_ms(minute)
    return store.write_results(conn, [minute], at_ms, results, finished_at_ms=at_ms + 100)


def test_healthy_checks_write_one_rollup_row_per_hour_and_no_incident(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    for offset, latency in enumerate([30, 10, 20]):
        _write(conn, MINUTE + offset, [CheckResult(monitor, "up", latency, 200)])
    rows = conn.execute(
        "SELECT hour_start_ms, checks, failures, latency_ms_sum, latency_ms_min, latency_ms_max FROM rollups"
    ).fetchall()
    assert rows == [(clock.hour_start_ms(T0_MS), 3, 0, 60, 10, 30)]
    assert conn.execute("SELECT count(*) FROM incidents").fetchone()[0] == 0


def test_incidents_open_on_the_first_down_and_resolve_on_the_next_up(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    states = ["up", "down", "down", "down", "up", "up", "down", "up"]
    for offset, status in enumerate(states):
        _write(conn, MINUTE + offset, [CheckResult(monitor, status, 5 if status == "up" else None, None, "timeout")])  # type: ignore[arg-type]
    minute_ms = clock.MS_PER_MINUTE
    assert store.incidents_for(conn, monitor) == [
        (T0_MS + 1 * minute_ms, T0_MS + 4 * minute_ms, "timeout"),
        (T0_MS + 6 * minute_ms, T0_MS + 7 * minute_ms, "timeout"),
    ]
    assert rollup(conn, monitor) == (8, 4)


def test_the_schema_allows_one_open_incident_per_monitor(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    conn.execute("INSERT INTO incidents (monitor_id, started_at_ms, cause) VALUES (?, 1, 'x')", (monitor,))
    with pytest.raises(CONSTRAINT_ERRORS):
        conn.execute("INSERT INTO incidents (monitor_id, started_at_ms, cause) VALUES (?, 2, 'y')", (monitor,))


def test_an_older_tick_committing_late_counts_its_check_but_never_flips_state_back(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    # Tick M+1 (up) commits first; tick M (down) was slower and commits after it.
    _write(conn, MINUTE + 1, [CheckResult(monitor, "up", 5, 200)])
    late = _write(conn, MINUTE, [CheckResult(monitor, "down", None, None, "timeout")])
    assert late.stale == 1 and late.opened == []
    assert store.incidents_for(conn, monitor) == []
    assert rollup(conn, monitor) == (2, 1)


def test_an_older_tick_committing_late_across_an_hour_boundary_never_flips_state_back(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    last_of_hour = MINUTE + 59
    _write(conn, last_of_hour + 1, [CheckResult(monitor, "down", None, None, "timeout")])  # 01:00, first
    late = _write(conn, last_of_hour, [CheckResult(monitor, "up", 5, 200)])  # 00:59, commits last
    assert late.stale == 1 and late.resolved == []
    assert [(s, r) for s, r, _ in store.incidents_for(conn, monitor)] == [(T0_MS + 60 * 60_000, None)]
    assert rollup(conn, monitor) == (2, 1)


def test_an_older_down_tick_committing_late_does_not_reopen_a_resolved_outage(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    _write(conn, MINUTE, [CheckResult(monitor, "down", None, None, "timeout")])
    _write(conn, MINUTE + 2, [CheckResult(monitor, "up", 5, 200)])
    _write(conn, MINUTE + 1, [CheckResult(monitor, "down", None, None, "timeout")])
    assert [(s, r) for s, r, _ in store.incidents_for(conn, monitor)] == [(T0_MS, T0_MS + 2 * 60_000)]


def test_unknown_results_count_neither_as_checks_nor_as_failures(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    summary = _write(conn, MINUTE, [CheckResult(monitor, "unknown", None, None, "connection pool exhausted")])
    assert summary.unknown == 1
    assert rollup(conn, monitor) == (0, 0)
    assert store.incidents_for(conn, monitor) == []


def test_housekeeping_auto_pauses_long_outages_and_drops_old_rollups(conn: sqlite3.Connection) -> None:
    long_down = add(conn, "http://127.0.0.1/a")
    short_down = add(conn, "http://127.0.0.1/b")
    day_ms = clock.MS_PER_DAY
    for minute in (MINUTE, MINUTE + 1):  # confirmed: a suspected incident never auto-pauses
        _write(conn, minute, [CheckResult(long_down, "down", None, None, "timeout")])
    now_ms = T0_MS + 8 * day_ms
    _write(conn, clock.minute_of_ms(now_ms - day_ms), [CheckResult(short_down, "down", None, None, "timeout")])
    paused, deleted = store.housekeep(conn, now_ms, auto_pause_after_ms=7 * day_ms, retention_ms=2 * day_ms)
    assert [p.monitor_id for p in paused] == [long_down] and deleted == 1
    assert conn.execute("SELECT id FROM monitors WHERE auto_paused = 1").fetchall() == [(long_down,)]
    assert rollup(conn, short_down) == (1, 1)
    store.set_paused(conn, str(long_down), False, now_ms)
    assert conn.execute("SELECT count(*) FROM monitors WHERE auto_paused = 1").fetchone()[0] == 0


def test_the_newest_checks_phases_are_kept_and_older_hours_give_theirs_up(conn: sqlite3.Connection) -> None:
    hourly = add(conn, "http://127.0.0.1/a")
    other = add(conn, "http://127.0.0.1/b")
    hour = 60
    for n, minute in enumerate((MINUTE, MINUTE + hour, MINUTE + 2 * hour)):
        _write(conn, minute, [CheckResult(hourly, "up", 10 + n, 200, phases=Phases(0, 1, 2, 3 + n, 10 + n))])
    _write(conn, MINUTE, [CheckResult(other, "up", 20, 200, phases=Phases(0, 1, None, 19, 20))])
    store.housekeep(conn, clock.minute_start_ms(MINUTE + 3 * hour), auto_pause_after_ms=10**12, retention_ms=10**12)
    kept = conn.execute(
        "SELECT monitor_id, phases FROM rollups WHERE phases IS NOT NULL ORDER BY monitor_id"
    ).fetchall()
    assert [tuple(row) for row in kept] == [(hourly, "0 1 2 5 12"), (other, "0 1 - 19 20")]
    assert conn.execute("SELECT count(*) FROM rollups WHERE monitor_id = ?", (hourly,)).fetchone()[0] == 3


def _fail_inserts_into_incidents(conn: store.Connection, message: str) -> None:
    """A trigger that makes every INSERT into incidents fail with `message`, on either engine."""
    if conn.engine == "sqlite":
        conn.execute(f"CREATE TRIGGER boom BEFORE INSERT ON incidents BEGIN SELECT RAISE(ABORT, '{message}'); END")
        return
    conn.execute(
        f"CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION '{message}'; END $$ LANGUAGE plpgsql"
    )
    conn.execute("CREATE TRIGGER boom BEFORE INSERT ON incidents FOR EACH ROW EXECUTE FUNCTION boom()")


def test_a_failed_write_leaves_nothing_half_written(conn: sqlite3.Connection) -> None:
    healthy = add(conn, "http://127.0.0.1/ok")
    failing = add(conn, "http://127.0.0.1/down")
    _fail_inserts_into_incidents(conn, "disk gone")
    store.claim_minute(conn, MINUTE, T0_MS, force=False)
    results = [CheckResult(healthy, "up", 5, 200), CheckResult(failing, "down", None, None, "timeout")]
    with pytest.raises((sqlite3.IntegrityError, store.EngineError), match="disk gone"):
        store.write_results(conn, [MINUTE], T0_MS, results, finished_at_ms=T0_MS)
    assert rollup(conn, healthy) == (0, 0)
    assert rollup(conn, failing) == (0, 0)
    assert conn.execute("SELECT finished_at_ms FROM ticks").fetchone() == (None,)


def test_a_monitor_removed_during_the_tick_does_not_sink_the_other_results(conn: sqlite3.Connection) -> None:
    kept = add(conn, "http://127.0.0.1/kept")
    removed = add(conn, "http://127.0.0.1/removed")
    store.remove_monitor(conn, str(removed))
    summary = _write(
        conn, MINUTE, [CheckResult(removed, "down", None, None, "timeout"), CheckResult(kept, "up", 5, 200)]
    )
    assert summary.up == 1 and summary.down == 0
    assert rollup(conn, kept) == (1, 0)


def _claim(conn: store.Connection, token: str, *, lease_ms: int = 60_000, share: int = 1) -> store.Buckets:
    return store.claim_buckets(
        conn, MINUTE, host=token, token=token, now_ms=T0_MS, lease_ms=lease_ms, share=share, offset=0
    )


def test_each_bucket_is_claimed_by_one_run_until_its_lease_expires(conn: store.Connection) -> None:
    store.claim_minute(conn, MINUTE, T0_MS, force=False)
    first = _claim(conn, "a", share=4)
    second = _claim(conn, "b", share=4)
    rest = _claim(conn, "c")
    assert [len(first.buckets), len(second.buckets), len(rest.buckets)] == [16, 12, 36]  # a quarter of what is free
    assert not first.buckets & second.buckets and not (first.buckets | second.buckets) & rest.buckets
    assert not _claim(conn, "d").buckets  # nothing left


def test_a_run_whose_lease_expired_writes_nothing_for_buckets_taken_over(conn: store.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1/x")
    store.claim_minute(conn, MINUTE, T0_MS, force=False)
    stale = _claim(conn, "stale", lease_ms=-1)  # a lease already over: as a run stopped past it
    assert monitor % store.BUCKETS in stale.buckets
    fresh = _claim(conn, "fresh")
    assert fresh.buckets == stale.buckets  # taken over, every one
    late = store.write_results(
        conn, [MINUTE], T0_MS, [CheckResult(monitor, "down", None, None, "timeout")], T0_MS + 9, buckets=stale
    )
    assert (late.up, late.down) == (0, 0) and rollup(conn, monitor) == (0, 0)
    assert conn.execute("SELECT finished_at_ms FROM ticks").fetchone() == (None,)
    store.write_results(conn, [MINUTE], T0_MS, [CheckResult(monitor, "up", 5, 200)], T0_MS + 9, buckets=fresh)
    assert rollup(conn, monitor) == (1, 0)
    assert conn.execute("SELECT finished_at_ms, due, up FROM ticks").fetchone() == (T0_MS + 9, 1, 1)
    hosts = conn.execute("SELECT host, count(*), sum(checks) FROM claims GROUP BY host").fetchall()
    assert hosts == [("fresh", store.BUCKETS, 1)]


# --- the store on both engines ------------------------------------------------------------------


def test_ids_are_never_given_twice_on_either_engine(conn: sqlite3.Connection) -> None:
    first = add(conn, "http://127.0.0.1:9/a")
    second = add(conn, "http://127.0.0.1:9/b")
    store.remove_monitor(conn, str(second))
    assert add(conn, "http://127.0.0.1:9/c") == second + 1 == first + 2
    window = store.add_maintenance(conn, monitor_ref=str(first), owner_name=None, starts_at_ms=0, ends_at_ms=60_000)
    schedule = store.add_maintenance_schedule(
        conn, monitor_ref=str(first), owner_name=None, start_minute=0, duration_min=10, days_mask=127
    )
    assert schedule == window + 1  # one series for both kinds of window


def test_a_recurring_window_holds_its_monitor_in_its_minutes_on_its_days_only(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1:9/a", created_at_ms=0)
    day = MINUTE // clock.MINUTES_PER_DAY  # 2026-12-01, a Tuesday (weekday 1)
    assert (day + 3) % 7 == 1
    store.add_maintenance_schedule(
        conn, monitor_ref=str(monitor), owner_name=None, start_minute=23 * 60 + 30, duration_min=60, days_mask=1 << 1
    )

    def due_at(minute: int) -> bool:
        return monitor in [row["id"] for row in store.select_due(conn, minute, clock.minute_start_ms(minute))]

    tuesday = day * clock.MINUTES_PER_DAY
    assert due_at(tuesday + 23 * 60 + 29) and not due_at(tuesday + 23 * 60 + 30)
    assert not due_at(tuesday + 24 * 60 + 29)  # past midnight, into Wednesday
    assert due_at(tuesday + 24 * 60 + 30)
    assert due_at(tuesday + 24 * 60 + 23 * 60 + 40)  # Wednesday 23:40: not one of its days


def test_write_tx_joins_an_open_one_and_an_error_undoes_all_of_it(conn: sqlite3.Connection) -> None:
    with pytest.raises(store.StoreError), store.write_tx(conn):
        store.add_plan(conn, "pro", 300)
        store.add_plan(conn, "pro", 300)  # exists: the whole transaction goes
    assert [row["name"] for row in store.list_plans(conn)] == ["default"]


def test_the_configuration_and_its_references_read_the_same_on_either_engine(conn: sqlite3.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1:9/a", name="a")
    store.update_monitor(conn, str(monitor), {"private": True, "group_name": "Internal"}, T0_MS)
    store.set_env_ref(conn, "settings:network_canary_url", "${CANARY}", "http://127.0.0.1:9/canary")
    assert store.env_ref(conn, "settings:network_canary_url", "http://127.0.0.1:9/canary") == "${CANARY}"
    assert store.env_ref(conn, "settings:network_canary_url", "http://elsewhere/") is None
    (row,) = store.configuration(conn, T0_MS)["monitors"]
    assert (row["name"], row["private"], row["group_name"]) == ("a", 1, "Internal")
    assert row["first_check_minute"] is not None
    (listed,) = store.list_monitors(conn, T0_MS, monitor)
    assert listed["id"] == monitor and store.has_monitors(conn)


# --- what the ticks found of monitors they could not probe ------------------------------------------


def _invalid_rows(conn: store.Connection) -> list[tuple[object, ...]]:
    return [tuple(row) for row in conn.execute("SELECT monitor_id, cause, host, since_ms FROM invalid_monitors")]


def _said_rows(conn: store.Connection) -> list[tuple[object, ...]]:
    rows = conn.execute("SELECT host, monitor_id, said_at_ms FROM invalid_reports ORDER BY host, monitor_id")
    return [tuple(row) for row in rows]


def test_an_invalid_state_is_written_when_it_changes_and_said_once_an_hour_per_host(conn: store.Connection) -> None:
    monitor = add(conn, "http://127.0.0.1:9/a")
    later = T0_MS + 60_000
    assert store.record_invalid(conn, {monitor: "cause x"}, at_ms=T0_MS, host="a", say=True) == [monitor]
    assert _invalid_rows(conn) == [(monitor, "cause x", "a", T0_MS)]
    # the same finding, by this host or another: nothing written, and said by each host once an hour
    assert store.record_invalid(conn, {monitor: "cause x"}, at_ms=later, host="a", say=True) == []
    assert store.record_invalid(conn, {monitor: "cause x"}, at_ms=later, host="b", say=True) == [monitor]
    assert store.record_invalid(conn, {monitor: "cause x"}, at_ms=later + 1, host="b", say=True) == []
    assert _invalid_rows(conn) == [(monitor, "cause x", "a", T0_MS)]
    assert _said_rows(conn) == [("a", monitor, T0_MS), ("b", monitor, later)]
    # a run that does not say (--force, --minute) leaves the hour's report to the live ticks
    next_hour = T0_MS + clock.MS_PER_HOUR
    assert store.record_invalid(conn, {monitor: "cause x"}, at_ms=next_hour, host="a", say=False) == []
    assert store.record_invalid(conn, {monitor: "cause x"}, at_ms=next_hour + 1, host="a", say=True) == [monitor]
    # a replay of a minute before the finding changes nothing; a newer finding replaces it
    assert store.record_invalid(conn, {monitor: None}, at_ms=T0_MS - 60_000, host="b", say=False) == []
    assert _invalid_rows(conn) == [(monitor, "cause x", "a", T0_MS)]
    assert store.record_invalid(conn, {monitor: "cause y"}, at_ms=next_hour + 2, host="b", say=False) == []
    assert _invalid_rows(conn) == [(monitor, "cause y", "b", next_hour + 2)]
    assert store.record_invalid(conn, {monitor: None}, at_ms=next_hour + 3, host="a", say=True) == []
    assert _invalid_rows(conn) == []


def test_a_monitor_removed_while_the_tick_ran_gets_no_invalid_state(conn: store.Connection) -> None:
    kept = add(conn, "http://127.0.0.1:9/kept")
    removed = add(conn, "http://127.0.0.1:9/removed")
    store.remove_monitor(conn, str(removed))
    found = {removed: "cause", kept: "cause"}
    assert store.record_invalid(conn, found, at_ms=T0_MS, host="a", say=True) == [kept]
    assert _invalid_rows(conn) == [(kept, "cause", "a", T0_MS)] and _said_rows(conn) == [("a", kept, T0_MS)]
    store.remove_monitor(conn, str(kept))
    assert _invalid_rows(conn) == [] and _said_rows(conn) == []
