"""The systemd units beside crontab.example: `systemd-analyze verify` accepts them (with the
install path replaced by this checkout's command, which verify requires to exist), and they run
what the cron line runs. Not skipped without systemd-analyze: it fails and says how to install it
(the README's test command does)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.commands import MONITOR_TICK

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = "/opt/monitor-tick/.venv/bin/monitor-tick"


@pytest.fixture(scope="module")
def analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.fail(
            "systemd-analyze is missing: `apt-get update && apt-get install -y systemd` (the README's test command does)"
        )
    return found


def verify(analyze: str, directory: Path, timer: str) -> subprocess.CompletedProcess[str]:
    service = (ROOT / "monitor-tick.service").read_text(encoding="utf-8").replace(INSTALLED, MONITOR_TICK)
    (directory / "monitor-tick.service").write_text(service, encoding="utf-8")
    (directory / "monitor-tick.timer").write_text(timer, encoding="utf-8")
    return subprocess.run(
        [analyze, "verify", str(directory / "monitor-tick.service"), str(directory / "monitor-tick.timer")],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_systemd_analyze_verifies_the_service_and_the_timer(analyze: str, tmp_path: Path) -> None:
    timer = (ROOT / "monitor-tick.timer").read_text(encoding="utf-8")
    checked = verify(analyze, tmp_path, timer)
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")
    # and verify does catch a broken unit
    broken = verify(analyze, tmp_path, timer.replace("OnCalendar=", "OnCalender="))
    assert broken.returncode != 0 and "OnCalender" in broken.stderr


def test_the_units_run_what_the_cron_line_runs() -> None:
    cron = (ROOT / "crontab.example").read_text(encoding="utf-8")
    service = (ROOT / "monitor-tick.service").read_text(encoding="utf-8")
    timer = (ROOT / "monitor-tick.timer").read_text(encoding="utf-8")
    db = re.search(r"^MONITOR_TICK_DB=(\S+)$", cron, re.M)
    assert db is not None and f"Environment=MONITOR_TICK_DB={db.group(1)}\n" in service
    assert INSTALLED in cron and f"ExecStart={INSTALLED}\n" in service
    assert "OnCalendar=*-*-* *:*:00\n" in timer and "Type=oneshot\n" in service
