"""What a fleet with locations tells its people, through the installed `monitor-tick` command on
a real PostgreSQL: the alert's HTTP status, a decided alert sent in its own minute whoever holds
the channel, `show`'s partial deliveries, `hosts` counting the locations' shares, `locations`'
canary column, and the place settings refused or warned about. Each host is a `monitor-tick`
process whose clock is moved with the clock module's test offset (tests/reliability/test_fleet.py)."""

from __future__ import annotations

import json
import signal
import subprocess

from monitor_tick import store
from monitor_tick.core import clock
from tests.commands import run_at
from tests.postgres import Server
from tests.receivers import JsonReceiver
from tests.reliability.test_fleet import finish, host, wait_for_leases_to_expire
from tests.servers import LocalServer, current_request, send_response

MINUTE = 29_934_720  # 2026-12-01T00:00Z
FAST = ["--budget", "3s", "--lease", "5s", "--retry-delay", "0"]


def tick(url: str, name: str, minute: int, *, skew_s: float = 0) -> subprocess.Popen[str]:
    """Host `name` ('eu-1': of location eu) starts its tick of `minute`."""
    return host(url, name, minute, skew_s=skew_s, settings=[*FAST, "--location", name.split("-")[0]])


def ticked(url: str, name: str, minute: int, *, skew_s: float = 0) -> None:
    code, out, err = finish(tick(url, name, minute, skew_s=skew_s))
    assert code == 0 and out == "" and err == "", (name, minute, err)


def cli(url: str, minute: int, *args: str) -> subprocess.CompletedProcess[str]:
    """A command run with the clock 5 s into `minute`."""
    return run_at(url, clock.minute_start_ms(minute) + 5_000, *args)


def ok(url: str, minute: int, *args: str) -> str:
    done = cli(url, minute, *args)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def add(url: str, target: str, name: str, *options: str) -> None:
    """`add` a monitor checked every minute, within the hosts' --budget."""
    ok(url, MINUTE - 1, "add", target, "--name", name, "--every", "1m", "--timeout", "2s", *options)


def fleet(pg_server: Server, names: tuple[str, ...]) -> str:
    """A new database that the hosts `names` have each ticked once (the minute before MINUTE)."""
    url = pg_server.fresh_database()
    for name in names:
        ticked(url, name, MINUTE - 1)
    return url


def by_location(server: LocalServer) -> None:
    """/place/LOC=NNN: status NNN for requests from location LOC (its User-Agent names it), else 200."""

    async def handler(reader: object, writer: object, path: str, method: str) -> None:
        where, status = path.removeprefix("/place/").split("=")
        agent = current_request.get().headers.get("user-agent", "")
        await send_response(writer, int(status) if agent.endswith(f"(location {where})") else 200)  # type: ignore[arg-type]

    server.route("/place/", handler)


def switchable(server: LocalServer) -> dict[str, int]:
    """/flaky answers with the status the returned dict holds (503 until a test changes it)."""
    answer = {"status": 503}

    async def handler(reader: object, writer: object, path: str, method: str) -> None:
        await send_response(writer, answer["status"])  # type: ignore[arg-type]

    server.route("/flaky", handler)
    return answer


def test_an_alert_of_a_monitor_with_locations_gives_the_status_its_places_got(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("a-1", "b-1", "c-1"))
    site = local_server.url("/status/503")
    add(url, site, "site", "--locations", "a,b,c", "--alert-after", "1")
    with JsonReceiver() as receiver:
        ok(url, MINUTE - 1, "notify", "add", receiver.apprise_url())
        for name in ("a-1", "b-1", "c-1"):
            ticked(url, name, MINUTE)
        assert receiver.titles() == ["DOWN: site"]
        assert "\nHTTP status: 503\n" in receiver.messages[0]["message"], receiver.messages[0]["message"]


def test_places_that_got_different_statuses_give_the_one_most_of_them_got(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("a-1", "b-1", "c-1"))

    async def handler(reader: object, writer: object, path: str, method: str) -> None:
        agent = current_request.get().headers.get("user-agent", "")
        await send_response(writer, 502 if agent.endswith("(location c)") else 503)  # type: ignore[arg-type]

    local_server.route("/mixed", handler)
    add(url, local_server.url("/mixed"), "site", "--locations", "all")
    for minute in (MINUTE, MINUTE + 1):
        for name in ("c-1", "a-1", "b-1"):  # c, whose 502 is alone, first
            ticked(url, name, minute)
    shown = json.loads(ok(url, MINUTE + 2, "show", "site", "--json"))
    assert [(i["kind"], i["http_status"]) for i in shown["incidents"]] == [("down", 503)]


def test_a_partial_decided_while_another_host_sends_to_its_channel_goes_out_in_its_minute(
    pg_server: Server, local_server: LocalServer
) -> None:
    by_location(local_server)
    url = fleet(pg_server, ("a-1", "c-1"))
    # another monitor's DOWN, sent by a-1 to a slow channel; meanwhile c-1 decides the PARTIAL
    add(url, local_server.url("/status/500"), "other", "--alert-after", "1")
    add(url, local_server.url("/place/c=503"), "slow", "--locations", "a,c", "--notify-partial", "--alert-after", "1")
    with JsonReceiver() as receiver:
        ok(url, MINUTE - 1, "notify", "add", receiver.apprise_url())
        receiver.hold()
        sending = tick(url, "a-1", MINUTE)  # the fleet's share (other) and a's (slow: up from a)
        try:
            assert receiver.wait_for_posts(1)  # a-1 is sending other's DOWN
            # c-1's clock reads the minute 10 s later than a-1's: it decides slow's PARTIAL
            ticked(url, "c-1", MINUTE, skew_s=10)
        finally:
            receiver.release()
        code, _, err = finish(sending)
        assert code == 0 and err == "", err
        assert receiver.titles() == ["DOWN: other", "PARTIAL: slow"]
    shown = ok(url, MINUTE + 1, "show", "slow")
    assert " partial  channel 1 " in shown and " down     channel 1 " not in shown, shown
    deliveries = json.loads(ok(url, MINUTE + 1, "show", "slow", "--json"))["deliveries"]
    assert [(d["kind"], d["state"]) for d in deliveries] == [("partial", "sent")]


def test_hosts_counts_the_shares_of_locations_and_a_killed_host_s_takeover(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("eu-1", "eu-2", "us-1"))
    add(url, local_server.url("/ok/free"), "free")
    for n in range(16):  # one monitor in each of a location's 16 buckets
        add(url, local_server.url(f"/slow/400?m={n}"), f"m{n}", "--locations", "eu,us")
    ticked(url, "us-1", MINUTE)  # the fleet's share and us's
    doomed = tick(url, "eu-1", MINUTE)
    assert local_server.hits.wait_for("/slow/400", count=18, timeout=30)  # eu-1 is probing eu's share
    doomed.send_signal(signal.SIGKILL)
    assert finish(doomed)[0] == -signal.SIGKILL
    held = held_unfinished(url, "eu-1")
    assert held  # eu-1 died holding eu's buckets
    wait_for_leases_to_expire(url, "location_claims")
    ticked(url, "eu-2", MINUTE, skew_s=3)  # takes them over
    rows = json.loads(ok(url, MINUTE + 5, "hosts", "--json"))
    shares = {(r["host"], r["location"]): r for r in rows if r["minute"] == MINUTE}
    assert set(shares) == {("us-1", None), ("us-1", "us"), ("eu-1", "eu"), ("eu-2", "eu")}
    assert shares[("us-1", None)]["buckets"] == store.BUCKETS  # the fleet's 64 buckets: us-1 ran them
    assert shares[("us-1", "us")]["buckets"] == 16 and shares[("us-1", "us")]["checks"] == 16
    eu_1, eu_2 = shares[("eu-1", "eu")], shares[("eu-2", "eu")]
    assert eu_1["unfinished"] == held and eu_2["unfinished"] == 0
    assert eu_2["took_over"] == held and eu_1["took_over"] == 0
    assert eu_1["buckets"] + eu_2["buckets"] == 16 + held  # the buckets taken over were claimed twice
    assert eu_1["checks"] + eu_2["checks"] == 16  # and each of eu's checks recorded once
    table = ok(url, MINUTE + 5, "hosts").splitlines()
    heading = ["MINUTE", "(UTC)", "HOST", "SHARE", "BUCKETS", "UNFINISHED", "TOOK", "OVER", "CHECKS", "SECONDS"]
    assert table[0].split() == heading
    listed = [line.split()[3:8] for line in table[1:]]
    assert ["eu-1", "location", "eu", str(eu_1["buckets"]), str(held)] in listed, table
    assert ["us-1", "fleet", "64", "0", "0"] in listed, table


def held_unfinished(url: str, name: str) -> int:
    """How many location buckets host `name` holds unfinished."""
    conn = store.open_db(url)
    try:
        found = conn.execute(
            "SELECT count(*) FROM location_claims WHERE host = ? AND finished_at_ms IS NULL", (name,)
        ).fetchone()[0]
    finally:
        conn.close()
    return int(found)


def test_locations_says_which_hosts_have_no_canary_and_when_each_canary_answered(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("eu-1", "us-1"))
    add(url, local_server.url("/ok/site"), "site", "--locations", "all")
    ok(url, MINUTE - 1, "notify", "canary", local_server.url("/ok/canary"), "--host", "eu-1")
    ticked(url, "eu-1", MINUTE)
    ticked(url, "us-1", MINUTE)
    ticked(url, "us-1", MINUTE + 1)  # eu-1's ticks fail from here on: its canary's last word is old
    rows = json.loads(ok(url, MINUTE + 3, "locations", "--json"))
    canaries = {h["host"]: (h["canary"], h["canary_minute"]) for r in rows for h in r["hosts"]}
    assert canaries == {"eu-1": ("ok", MINUTE), "us-1": ("none", None)}
    table = ok(url, MINUTE + 3, "locations").splitlines()
    assert table[1].split()[-5:] == ["ok", "at", "2026-12-01", "00:00", "UTC"], table
    assert table[2].split()[-1] == "none", table


def test_place_settings_that_cannot_be_used_are_refused_or_warned_about(pg_server: Server) -> None:
    url = pg_server.fresh_database()
    site = "http://127.0.0.1:9/"
    # no host has ticked: 'all' names no location yet, so a quorum of 5 may never be reachable
    added = cli(url, MINUTE, "add", site, "--name", "a5", "--locations", "all", "--quorum", "5")
    assert added.returncode == 0
    assert added.stderr == (
        "monitor-tick: warning: --quorum 5 is more than the 0 locations hosts ticked from in the last 7 days; "
        "until 5 do, a minute is down only when all of them see it down\n"
    )
    refused = cli(url, MINUTE, "add", site, "--name", "np", "--notify-partial")
    assert refused.returncode == 2 and refused.stderr == "monitor-tick: --notify-partial needs --locations\n"
    assert "np" not in ok(url, MINUTE, "list")
    edited = cli(url, MINUTE, "edit", "a5", "--notify-partial")
    assert edited.returncode == 0
    cleared = cli(url, MINUTE, "edit", "a5", "--locations", "")
    assert cleared.returncode == 0, cleared.stderr  # clearing the locations clears what goes with them
    refused = cli(url, MINUTE, "edit", "a5", "--notify-partial")
    assert refused.returncode == 2 and refused.stderr == "monitor-tick: --notify-partial needs --locations\n"
    ok(url, MINUTE, "edit", "a5", "--locations", "eu,us")
    edited = cli(url, MINUTE, "edit", "a5", "--quorum", "1")
    assert edited.returncode == 0
    assert edited.stdout == "monitor 1 (a5): --quorum a majority (2 of 2) -> 1\n", edited.stdout


def test_an_outage_decided_by_a_host_whose_clock_lags_is_stamped_with_its_minute(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("a-1", "b-1"))
    add(url, local_server.url("/status/503"), "site", "--locations", "a,b", "--alert-after", "1")
    ticked(url, "b-1", MINUTE, skew_s=20)  # its clock reads 00:00:45
    ticked(url, "a-1", MINUTE, skew_s=-20)  # 40 s behind b-1's: it writes the deciding check
    ticked(url, "b-1", MINUTE + 1, skew_s=20)
    ticked(url, "a-1", MINUTE + 1, skew_s=-20)
    local_server.route("/status/503", lambda reader, writer, path, method: send_response(writer, 200))
    ticked(url, "a-1", MINUTE + 2, skew_s=-20)
    ticked(url, "b-1", MINUTE + 2, skew_s=20)  # decides the minute: up again
    (incident,) = json.loads(ok(url, MINUTE + 3, "show", "site", "--json"))["incidents"]
    # whichever host decides, its clock's reading is not the outage's time: its minute is
    stamps = (incident["started_at_ms"], incident["confirmed_at_ms"], incident["resolved_at_ms"])
    assert stamps == (clock.minute_start_ms(MINUTE), clock.minute_start_ms(MINUTE), clock.minute_start_ms(MINUTE + 2))


def test_an_edit_that_removes_the_locations_ends_their_partial_episode_and_the_outage_is_recorded(
    pg_server: Server, local_server: LocalServer
) -> None:
    failing = {"everyone": False}

    async def handler(reader: object, writer: object, path: str, method: str) -> None:
        agent = current_request.get().headers.get("user-agent", "")
        down = failing["everyone"] or agent.endswith("(location c)")
        await send_response(writer, 503 if down else 200)  # type: ignore[arg-type]

    local_server.route("/switch", handler)
    url = fleet(pg_server, ("a-1", "c-1"))
    add(url, local_server.url("/switch"), "slow", "--locations", "a,c", "--notify-partial", "--alert-after", "1")
    for name in ("a-1", "c-1"):
        ticked(url, name, MINUTE)
    assert json.loads(ok(url, MINUTE, "show", "slow", "--json"))["monitor"]["state"] == "partial"
    ok(url, MINUTE, "edit", "slow", "--locations", "")
    failing["everyone"] = True
    for minute in range(MINUTE + 1, MINUTE + 4):
        for name in ("a-1", "c-1"):
            ticked(url, name, minute)  # no tick dies on the episode the old setting opened
    shown = json.loads(ok(url, MINUTE + 4, "show", "slow", "--json"))
    assert shown["monitor"]["state"] == "down", shown["monitor"]
    assert shown["monitor"]["notify_partial"] == 0
    assert sorted((i["kind"], i["resolved_at_ms"] is None) for i in shown["incidents"]) == [
        ("down", True),
        ("partial", False),
    ]


def test_a_minute_that_closes_after_a_newer_one_was_decided_changes_no_state_and_sends_nothing(
    pg_server: Server, local_server: LocalServer
) -> None:
    failing = {"now": False}

    async def handler(reader: object, writer: object, path: str, method: str) -> None:
        await send_response(writer, 503 if failing["now"] else 200)  # type: ignore[arg-type]

    local_server.route("/turns", handler)
    url = fleet(pg_server, ("a-1", "b-1", "c-1"))
    add(url, local_server.url("/turns"), "site", "--locations", "a,b,c", "--alert-after", "1")
    with JsonReceiver() as receiver:
        ok(url, MINUTE - 1, "notify", "add", receiver.apprise_url())
        for name in ("b-1", "c-1"):  # a-1 is gone: MINUTE waits for it, still up from b and c
            ticked(url, name, MINUTE)
        failing["now"] = True
        for minute in (MINUTE + 1, MINUTE + 2, MINUTE + 3, MINUTE + 4):  # down from b and c: DOWN early
            for name in ("b-1", "c-1"):
                ticked(url, name, minute)
        assert receiver.titles() == ["DOWN: site"]
    shown = json.loads(ok(url, MINUTE + 5, "show", "site", "--json"))
    assert [(i["kind"], i["resolved_at_ms"]) for i in shown["incidents"]] == [("down", None)]
    assert shown["monitor"]["state"] == "down"


def test_the_default_quorum_is_a_majority_of_the_places_that_checked_the_minute(
    pg_server: Server, local_server: LocalServer
) -> None:
    async def handler(reader: object, writer: object, path: str, method: str) -> None:
        agent = current_request.get().headers.get("user-agent", "")
        await send_response(writer, 200 if agent.endswith("(location c)") else 503)  # type: ignore[arg-type]

    local_server.route("/from-a-and-b", handler)
    url = fleet(pg_server, ("a-1", "b-1", "c-1", "d-1"))  # d ticked once, with a stray --location d
    add(url, local_server.url("/from-a-and-b"), "site", "--locations", "all", "--alert-after", "1")
    for minute in (MINUTE, MINUTE + 1):
        for name in ("a-1", "b-1", "c-1"):
            ticked(url, name, minute)
    shown = json.loads(ok(url, MINUTE + 2, "show", "site", "--json"))
    assert shown["monitor"]["state"] == "down", shown["monitor"]  # 2 down of the 3 that checked
    assert [i["kind"] for i in shown["incidents"]] == ["down"]
    assert shown["monitor"]["quorum_shown"] == "3 of 4"  # before a minute closes, the majority of all 4
    assert " from all, quorum 3 of 4 " in ok(url, MINUTE + 2, "list").splitlines()[1]


def test_locations_forget_removes_a_gone_location_from_all_and_refuses_one_in_use(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("a-1", "b-1", "c-1", "d-1"))
    add(url, local_server.url("/ok"), "everywhere", "--locations", "all")
    add(url, local_server.url("/ok"), "named", "--locations", "a,c")
    later = MINUTE + 30
    refused = [
        cli(url, minute, "locations", "forget", name) for minute, name in ((MINUTE, "d"), (later, "c"), (later, "x"))
    ]
    assert [(r.returncode, r.stdout, r.stderr) for r in refused] == [
        (1, "", "monitor-tick: a host of location 'd' ticked 1 minute(s) ago; stop its cron line first\n"),
        (1, "", "monitor-tick: location 'c' is named by named: edit their --locations first\n"),
        (1, "", "monitor-tick: no host has ticked from location 'x'\n"),
    ]
    assert ok(url, later, "list").splitlines()[1].endswith(" from all, quorum 3 of 4")
    assert ok(url, later, "locations", "forget", "d") == "forgot location d (1 host)\n"
    assert ok(url, later, "list").splitlines()[1].endswith(" from all, quorum 2 of 3")
    assert [row["location"] for row in json.loads(ok(url, later, "locations", "--json"))] == ["a", "b", "c"]


def test_an_outage_names_the_places_of_its_minute_as_it_closed(pg_server: Server, local_server: LocalServer) -> None:
    url = fleet(pg_server, ("a-1", "b-1", "c-1"))
    add(url, local_server.url("/status/503"), "site", "--locations", "a,b,c", "--alert-after", "1")
    for name in ("a-1", "b-1", "c-1"):  # a and b reach the quorum; c writes its 503 after them
        ticked(url, name, MINUTE)
    shown = json.loads(ok(url, MINUTE + 1, "show", "site", "--json"))
    everyone = "down from a (status 503), b (status 503), c (status 503)"
    assert [i["cause"] for i in shown["incidents"]] == [everyone]
    assert everyone in ok(url, MINUTE + 1, "list").splitlines()[1]


def test_a_down_alert_names_the_places_of_its_minute_as_it_closed(pg_server: Server, local_server: LocalServer) -> None:
    url = fleet(pg_server, ("a-1", "b-1", "c-1"))
    add(url, local_server.url("/status/503"), "site", "--locations", "a,b,c", "--alert-after", "1")
    with JsonReceiver() as receiver:
        ok(url, MINUTE - 1, "notify", "add", receiver.apprise_url())
        ticked(url, "a-1", MINUTE)
        ticked(url, "b-1", MINUTE)  # the quorum is reached: the DOWN waits for c, a live place
        assert receiver.titles() == []
        ticked(url, "c-1", MINUTE)  # the minute closes with c's 503, and its alert goes out
        assert receiver.titles() == ["DOWN: site"]
        message = receiver.messages[0]["message"]
        assert "down from a (status 503), b (status 503), c (status 503)" in message, message
        assert "did not check it" not in message, message


def test_a_down_held_for_a_place_whose_hosts_died_goes_out_with_the_next_minute_that_closes(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("a-1", "b-1", "c-1"))
    add(url, local_server.url("/status/503"), "site", "--locations", "a,b,c", "--alert-after", "1")
    with JsonReceiver() as receiver:
        ok(url, MINUTE - 1, "notify", "add", receiver.apprise_url())
        for name in ("a-1", "b-1"):  # c's only host ticked the minute before, then died
            ticked(url, name, MINUTE)
        assert receiver.titles() == []  # c is still expected: its minute is open
        for name in ("a-1", "b-1"):  # the next minute expects no c, and closes down
            ticked(url, name, MINUTE + 1)
        assert receiver.titles() == ["DOWN: site"]
        message = receiver.messages[0]["message"]
        assert "down from a (status 503), b (status 503); seen from 2 of 3 locations; c did not check it" in message


def test_an_outage_that_ends_before_its_first_minute_closes_sends_its_down_then_its_up(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("a-1", "b-1", "c-1"))
    answer = switchable(local_server)
    add(url, local_server.url("/flaky"), "site", "--locations", "a,b,c", "--alert-after", "1")
    with JsonReceiver() as receiver:
        ok(url, MINUTE - 1, "notify", "add", receiver.apprise_url())
        for name in ("a-1", "b-1"):  # down; c still expected, its minute open
            ticked(url, name, MINUTE)
        assert receiver.titles() == []
        answer["status"] = 200
        for name in ("a-1", "b-1", "c-1"):  # up from everyone: the outage ends
            ticked(url, name, MINUTE + 1)
        assert receiver.titles() == ["DOWN: site", "UP: site"]


def test_a_held_down_goes_out_when_its_minute_would_close_though_no_tick_closes_it(
    pg_server: Server, local_server: LocalServer
) -> None:
    """The hold runs out 2 minutes after the minute's first write, by the sending host's clock
    (these hosts' clocks stand days behind the server's): any host's tick then sends it."""
    url = fleet(pg_server, ("a-1", "b-1", "c-1", "d-1"))
    add(url, local_server.url("/status/503"), "site", "--locations", "a,b,c", "--alert-after", "1")
    with JsonReceiver() as receiver:
        ok(url, MINUTE - 1, "notify", "add", receiver.apprise_url())
        for name in ("a-1", "b-1"):  # c's host never writes this minute
            ticked(url, name, MINUTE)
        ticked(url, "d-1", MINUTE + 1)  # d checks none of it; the hold has not run out
        assert receiver.titles() == []
        ticked(url, "d-1", MINUTE + 2, skew_s=30)
        assert receiver.titles() == ["DOWN: site"]
        assert "c did not check it" in receiver.messages[0]["message"]


def test_an_old_minute_that_closes_late_leaves_a_newer_outages_down_held(
    pg_server: Server, local_server: LocalServer
) -> None:
    url = fleet(pg_server, ("a-1", "b-1", "c-1", "d-1"))
    answer = switchable(local_server)
    add(url, local_server.url("/flaky"), "site", "--locations", "a,b,c", "--alert-after", "1")
    with JsonReceiver() as receiver:
        ok(url, MINUTE - 1, "notify", "add", receiver.apprise_url())
        for name in ("a-1", "b-1"):  # c never writes this minute: it stays open
            ticked(url, name, MINUTE)
        answer["status"] = 200
        for name in ("a-1", "b-1", "c-1"):
            ticked(url, name, MINUTE + 1)
        assert receiver.titles() == ["DOWN: site", "UP: site"]
        answer["status"] = 503
        for name in ("a-1", "b-1"):  # a second outage; c writes its minute later
            ticked(url, name, MINUTE + 2)
        ticked(url, "d-1", MINUTE + 3)  # closes the first outage's minute, 3 minutes on
        assert receiver.titles() == ["DOWN: site", "UP: site"]
        ticked(url, "c-1", MINUTE + 2)
        assert receiver.titles() == ["DOWN: site", "UP: site", "DOWN: site"]
        message = receiver.messages[2]["message"]
        assert "down from a (status 503), b (status 503), c (status 503)" in message, message
