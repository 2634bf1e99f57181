"""docker:// monitors against a real engine (tests/docker_engine.py: Debian's dockerd,
started once for this module, its containers built FROM scratch with busybox and run with no
network), probed by the installed `monitor-tick` under a clock the test sets."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor_tick.core import clock
from monitor_tick.core.model import InvalidMonitor
from monitor_tick.probes import docker, new_monitor
from tests.commands import MONITOR_TICK, ORDINARY_MS, clock_at, ok_at, run_at
from tests.docker_engine import FAILING_CHECK_IMAGE, SECOND_NS, Engine, running_engine, tcp_relay
from tests.servers import LocalServer, refused_port

HOUR_MS = clock.minute_start_ms(29_934_720) + 5_000  # 2026-12-01T00:00:05Z: hourly lines are said
ENGINE_FORMS = "docker:// host must be unix:///path/docker.sock or tcp://host:port"
CHECKS_EVERY_SECOND = {"Test": ["CMD", "/bin/busybox", "true"], "Interval": SECOND_NS, "Retries": 1}


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with running_engine() as started:
        yield started


@pytest.fixture(scope="module")
def containers(engine: Engine) -> dict[str, str]:
    """One container in each state the tests probe (name -> id), the health checks settled."""
    ids = {
        "web": engine.run("web", "sleep", "3600"),
        "healthy": engine.run("healthy", "sleep", "3600", healthcheck=CHECKS_EVERY_SECOND),
        "sick": engine.run("sick", "sleep", "3600", image=FAILING_CHECK_IMAGE),
        "stopped": engine.run("stopped", "false"),
        "created": engine.create("created", "sleep", "3600"),
        "paused": engine.run("paused", "sleep", "3600"),
    }
    engine.api("POST", "/containers/paused/pause")
    engine.wait_for_exit("stopped")
    engine.wait_for_health("healthy", "healthy")
    engine.wait_for_health("sick", "unhealthy")
    return ids


def added(db: str, at_ms: int, *monitors: tuple[str, str], options: tuple[str, ...] = ()) -> None:
    for name, url in monitors:
        ok_at(db, at_ms, "add", url, "--name", name, "--every", "1m", *options)


def results(run: subprocess.CompletedProcess[str]) -> dict[str, tuple[str, str | None]]:
    assert run.returncode == 0, run.stderr
    return {r["name"]: (r["status"], r["cause"]) for r in json.loads(run.stdout)["results"]}


def tick(db: str, at_ms: int, *args: str) -> subprocess.CompletedProcess[str]:
    return run_at(db, at_ms, "--json", "--retry-delay", "0", *args)


def on(engine: Engine, name: str) -> str:
    return f"docker://{name}?host=unix://{engine.socket}"


def test_a_running_container_is_up_and_one_in_any_other_state_down_with_its_cause(
    engine: Engine, containers: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "m.db")
    names = ("web", "healthy", "sick", "stopped", "created", "paused", "gone")
    added(db, ORDINARY_MS, *((name, on(engine, name)) for name in names), ("by-id", on(engine, containers["web"][:12])))
    run = tick(db, ORDINARY_MS)
    assert run.stderr == ""
    assert results(run) == {
        "web": ("up", None),
        "by-id": ("up", None),
        "healthy": ("up", None),
        "sick": ("down", "docker: unhealthy"),
        "stopped": ("down", "docker: exited (code 1)"),
        "created": ("down", "docker: created, never started"),
        "paused": ("down", "docker: paused"),
        "gone": ("down", "docker: no such container"),
    }
    assert all(isinstance(r["latency_ms"], int) for r in json.loads(run.stdout)["results"])


def test_a_starting_health_check_is_up_only_within_its_start_period_and_retries(engine: Engine, tmp_path: Path) -> None:
    # the image's failing check, first run an hour after the start: `starting` for that hour,
    # and up for its start period plus its one retry's interval, 2h
    hour_ns = 3600 * SECOND_NS
    engine.run(
        "starting",
        "sleep",
        "3600",
        image=FAILING_CHECK_IMAGE,
        healthcheck={"Interval": hour_ns, "StartPeriod": hour_ns},
    )
    state = engine.inspect("starting")["State"]
    assert state["Health"]["Status"] == "starting"
    started_ms = clock.parse_iso_ms(state["StartedAt"])
    db = str(tmp_path / "m.db")
    added(db, started_ms, ("starting", on(engine, "starting")))
    assert results(tick(db, started_ms + 60_000)) == {"starting": ("up", None)}
    assert results(tick(db, started_ms + 119 * 60_000)) == {"starting": ("up", None)}
    assert results(tick(db, started_ms + 121 * 60_000)) == {
        "starting": ("down", "docker: health check starting for 2h1m (allowed 2h)")
    }


def test_a_missing_or_refusing_engine_is_down_not_running(engine: Engine, tmp_path: Path) -> None:
    closed = str(tmp_path / "closed.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(closed)  # the file stays; nobody listens on it any more
    db = str(tmp_path / "m.db")
    added(
        db,
        ORDINARY_MS,
        ("no-socket", f"docker://web?host=unix://{tmp_path}/missing.sock"),
        ("closed-socket", f"docker://web?host=unix://{closed}"),
        ("no-listener", f"docker://web?host=tcp://127.0.0.1:{refused_port()}"),
    )
    run = tick(db, ORDINARY_MS)
    assert run.stderr == ""
    assert results(run) == {
        "no-socket": ("down", "docker: engine not running"),
        "closed-socket": ("down", "docker: engine not running"),
        "no-listener": ("down", "docker: engine not running"),
    }


def test_an_engine_that_never_answers_is_down_at_the_timeout(tmp_path: Path) -> None:
    silent = str(tmp_path / "silent.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(silent)
        listener.listen()  # connections wait in the backlog, never answered
        db = str(tmp_path / "m.db")
        added(db, ORDINARY_MS, ("silent", f"docker://web?host=unix://{silent}"), options=("--timeout", "1s"))
        assert results(tick(db, ORDINARY_MS)) == {"silent": ("down", "docker: timeout")}


def shared_prefix(engine: Engine) -> str:
    """A first character of container ids that more than one container's id begins with
    (containers are created until two share one: of 17 ids, two always do)."""
    for extra in range(17):
        ids = [c["Id"] for c in engine.api("GET", "/containers/json", params={"all": "1"}).json()]
        firsts = [container[0] for container in ids]
        shared = sorted({first for first in firsts if firsts.count(first) > 1})
        if shared:
            return shared[0]
        engine.create(f"prefix-{extra}", "true")
    raise AssertionError("more than 16 container ids, each with its own first hex digit")


def test_an_id_prefix_that_names_more_than_one_container_is_down_saying_so(
    engine: Engine, containers: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "m.db")
    added(db, ORDINARY_MS, ("ambiguous", on(engine, shared_prefix(engine))), options=("--retries", "0"))
    assert results(tick(db, ORDINARY_MS)) == {
        "ambiguous": ("down", "docker: ambiguous id: more than one container matches")
    }


def test_an_engine_over_tcp_is_read_as_over_its_socket(
    engine: Engine, containers: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "m.db")
    with tcp_relay(engine.socket) as port:
        added(db, ORDINARY_MS, *((name, f"docker://{name}?host=tcp://127.0.0.1:{port}") for name in ("web", "sick")))
        run = tick(db, ORDINARY_MS)
    assert results(run) == {"web": ("up", None), "sick": ("down", "docker: unhealthy")}


def test_a_socket_this_user_may_not_open_is_a_configuration_error_said_hourly(
    engine: Engine, containers: dict[str, str], request: pytest.FixtureRequest
) -> None:
    """The tick runs as `nobody`, outside the engine socket's group (the socket is the engine's
    own, srw-rw---- for root and its group), keeping only CAP_DAC_READ_SEARCH -- read and search, never write,
    which a socket needs -- so that it can read the interpreter and the package wherever they
    are installed. The engine refuses it as it refuses any user it was not opened to (EACCES)."""
    mode = os.stat(engine.socket).st_mode & 0o777
    assert mode & 0o002 == 0, oct(mode)  # no one else may write to (connect to) it
    # nobody's own directory, under /tmp (which anyone may search, as its check of the
    # database's directory requires: access(2) leaves capabilities out)
    home = tempfile.mkdtemp(prefix="monitor-tick-nobody-")
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    os.chown(home, 65534, 65534)
    db = f"{home}/m.db"

    def as_nobody(at_ms: int, *args: str) -> subprocess.CompletedProcess[str]:
        privileges = ["--reuid=65534", "--regid=65534", "--clear-groups"]
        capability = ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
        command = ["setpriv", *privileges, *capability, "--", MONITOR_TICK, *args, "--db", db]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, env={**os.environ, **clock_at(at_ms)}
        )

    assert as_nobody(HOUR_MS, "add", on(engine, "web"), "--every", "1m").returncode == 0
    said = as_nobody(HOUR_MS, "--json")
    assert said.returncode == 0
    assert said.stderr == (
        f"monitor-tick: monitor 1 skipped: cannot be probed here: docker: permission denied on {engine.socket}: "
        "this user may not use the engine's socket\n"
    )
    report = json.loads(said.stdout)
    assert (report["results"], report["invalid"], report["down"], report["unknown"]) == ([], 1, 0, 0)
    quiet = as_nobody(HOUR_MS + 60_000)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    # as root, the same monitor is probed: it was the user, not the container
    # named by default without its engine's socket (the name is shown on the status page)
    assert results(tick(db, HOUR_MS + 120_000)) == {"docker://web?host=***": ("up", None)}


def test_block_private_refuses_the_socket_and_a_loopback_engine_hourly(
    engine: Engine, containers: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "m.db")
    with tcp_relay(engine.socket) as port:
        added(db, HOUR_MS, ("socket", on(engine, "web")), ("tcp", f"docker://web?host=tcp://127.0.0.1:{port}"))
        said = tick(db, HOUR_MS, "--block-private")
        quiet = tick(db, HOUR_MS + 60_000, "--block-private")
    assert said.returncode == 0 and json.loads(said.stdout)["results"] == []
    assert said.stderr == (
        "monitor-tick: monitor 1 skipped: refused by --block-private: docker: blocked: unix sockets\n"
        "monitor-tick: monitor 2 skipped: refused by --block-private: docker: blocked: 127.0.0.1 is not a public address\n"
    )
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("docker://../images", "docker:// needs a container's name or id"),
        ("docker://%2e%2e", "docker:// needs a container's name or id"),
        ("docker://_web", "docker:// needs a container's name or id"),
        ("docker://web/../../images/json", "docker:// takes a container's name and ?host= only"),
        ("docker://web?all=1", "docker:// takes only ?host="),
        ("docker://web?host=unix:///a.sock&host=unix:///b.sock", "docker:// takes only ?host="),
        ("docker://web?host=unix://relative.sock", ENGINE_FORMS),
        ("docker://web?host=http://engine:2375", ENGINE_FORMS),
        ("docker://web?host=tcp://engine:2375/v1.41", ENGINE_FORMS),
        ("docker://web?host=tcp://u:p@engine:2375", "docker:// host tcp://host:port takes a host and a port only"),
    ],
)
def test_only_a_container_name_or_id_reaches_the_engine(url: str, cause: str) -> None:
    with pytest.raises(InvalidMonitor, match="^" + re.escape(cause)):
        new_monitor(name="m", url=url, interval_sec=60, aligned=False, given={})


@pytest.mark.parametrize(
    ("state", "cause"),
    [
        ({"Status": "running"}, None),
        ({"Status": "running", "Health": {"Status": "healthy"}}, None),
        ({"Status": "running", "Health": {"Status": "unhealthy"}}, "docker: unhealthy"),
        ({"Status": "exited", "ExitCode": 137, "OOMKilled": True}, "docker: exited (code 137, out of memory)"),
        ({"Status": "restarting"}, "docker: restarting"),
        ({"Status": "removing"}, "docker: being removed"),
        ({"Status": "dead"}, "docker: dead"),
        ({"Status": "paused"}, "docker: paused"),
        ({"Status": "created"}, "docker: created, never started"),
    ],
)
def test_each_state_of_the_engine_has_its_cause(state: dict[str, object], cause: str | None) -> None:
    assert docker.state_cause({"State": state}, ORDINARY_MS) == cause


def test_a_check_without_timings_starts_for_the_engine_defaults_three_times_30_s() -> None:
    started = "2026-12-01T00:00:00Z"
    container = {"State": {"Status": "running", "StartedAt": started, "Health": {"Status": "starting"}}, "Config": {}}
    at = clock.parse_iso_ms(started)
    assert docker.state_cause(container, at + 90_000) is None
    # a moment over the allowance never reads as equal to it
    assert docker.state_cause(container, at + 90_001) == "docker: health check starting for 1m31s (allowed 1m30s)"
    assert docker.state_cause(container, at + 23 * 60_000) == "docker: health check starting for 23m (allowed 1m30s)"


def test_a_web_server_where_an_engine_should_be_is_not_read_as_a_missing_container(
    tmp_path: Path, local_server: LocalServer
) -> None:
    # only the Engine's own 404 (a JSON message) says the container is not there
    db = str(tmp_path / "m.db")
    added(
        db, ORDINARY_MS, ("web", f"docker://web?host=tcp://127.0.0.1:{local_server.port}"), options=("--retries", "0")
    )
    assert results(tick(db, ORDINARY_MS)) == {"web": ("down", "docker: not an Engine API answer")}
    assert [r.target for r in local_server.requests] == ["/containers/web/json"]
