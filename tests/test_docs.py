"""The manual (docs/, mkdocs.yml) and the README that leads into it: the manual builds with
`mkdocs build --strict`, so a broken link or anchor fails (validation warns, --strict fails on a
warning); every link from the README into docs/ names a page and an anchor that exist; the
command reference is what docs/gen_reference.py makes from the app now; and the README stays
short, with the two commands at its top. MkDocs comes with the `test` extra, so these never skip."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer

from monitor_tick import store
from monitor_tick.cli.app import app
from monitor_tick.publish import metrics
from monitor_tick.store.sqlite import check_version
from tests.commands import ORDINARY_MS, ok_at

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of `config` into `site` (the banner about MkDocs 2 kept out)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=config.parent)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = tmp_path_factory.mktemp("manual") / "site"
    result = build(ROOT / "mkdocs.yml", built)
    assert result.returncode == 0, result.stderr
    return built


def test_the_manual_builds_strict_with_every_page_in_its_nav(site: Path) -> None:
    pages = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
    assert "reference" in pages and "performance" in pages
    for page in pages:
        assert (site / ("" if page == "index" else page) / "index.html").is_file(), page


def test_a_broken_anchor_in_the_manual_fails_its_build(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    alerts = copy / "docs" / "alerts.md"
    alerts.write_text(alerts.read_text() + "\nSee [no such part](status-page.md#no-such-part).\n")
    result = build(copy / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 1
    assert "no-such-part" in result.stderr


def readme_links_into_docs(readme: str) -> list[str]:
    """The targets of the README's links and images that point into docs/."""
    return re.findall(r"\]\((docs/[^)\s]*)\)", readme)


def unresolved(readme: str, site: Path) -> list[str]:
    """The README's links into docs/ whose file, or whose anchor in the built page, is missing."""
    missing = []
    for link in readme_links_into_docs(readme):
        path, _, anchor = link.partition("#")
        if not (ROOT / path).is_file():
            missing.append(link)
            continue
        if anchor:
            page = Path(path).relative_to("docs")
            html = site / ("" if page.stem == "index" else page.stem) / "index.html"
            if page.suffix != ".md" or f'id="{anchor}"' not in html.read_text(encoding="utf-8"):
                missing.append(link)
    return missing


def test_every_readme_link_into_the_manual_resolves(site: Path) -> None:
    readme = README.read_text(encoding="utf-8")
    assert len(readme_links_into_docs(readme)) >= 10
    assert unresolved(readme, site) == []


def test_a_readme_link_to_a_missing_page_or_anchor_is_found(site: Path) -> None:
    readme = (
        "[a](docs/alerts.md#confirmation) [b](docs/alerts.md#no-such-part) [c](docs/gone.md) [d](docs/img/gone.svg)"
    )
    assert unresolved(readme, site) == ["docs/alerts.md#no-such-part", "docs/gone.md", "docs/img/gone.svg"]


def test_the_readme_is_short_with_the_two_commands_at_its_top() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    # .ci/run runs the README's first line that ends in pytest
    commands = [line for line in lines[:8] if line.startswith("    ")]
    assert len(commands) == 2 and commands[0].strip().endswith("monitor-tick -v")
    assert re.fullmatch(r"    .*pytest", commands[1])
    assert next(line for line in lines if re.fullmatch(r"    .*pytest", line)) == commands[1]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_command_reference_is_what_the_app_says_now() -> None:
    gen = generator()
    committed = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    assert gen.render() == committed, f"docs/reference.md is out of date: regenerate it with `{gen.REGENERATE}`"


def test_the_reference_names_every_command_option_and_environment_variable() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"(?ms)^## (monitor-tick[^\n]*)\n(.*?)(?=^## |\Z)", reference))

    def walk(command: Any, path: str) -> int:
        section = sections[path]
        for param in command.params:
            if param.param_type_name == "option":
                assert all(f"`{flag}`" in section for flag in param.opts + param.secondary_opts), (path, param.name)
            else:
                assert f"`{param.name.upper()}`" in section, (path, param.name)
            if param.envvar:
                assert f"`{param.envvar}`" in section, (path, param.name)
            if param.default not in (None, False, ()):
                assert f"`{param.default}`" in section, (path, param.name)
        return 1 + sum(walk(sub, f"{path} {name}") for name, sub in getattr(command, "commands", {}).items())

    assert walk(typer.main.get_command(app), "monitor-tick") == len(sections) > 30


def test_the_reference_changes_when_an_option_help_changes() -> None:
    gen = generator()
    command = typer.main.get_command(app)
    add = command.commands["add"]
    keyword = next(param for param in add.params if param.name == "keyword")
    keyword.help = "http: text the body must hold, said differently."
    changed = gen.render(command)
    assert changed != (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    assert "| `--keyword` `KEYWORD` |  |  | http: text the body must hold, said differently. |" in changed


def manual_text(page: str) -> str:
    """A page of the manual with its line breaks and indents as single spaces."""
    return " ".join((ROOT / "docs" / page).read_text(encoding="utf-8").split())


def test_the_manual_quotes_the_schema_message_the_program_gives() -> None:
    with pytest.raises(store.StoreError) as raised:
        check_version(1, "DB", migrate=False, read_only=True)
    said = str(raised.value).removeprefix("database DB")
    assert f"(`...{said}`)" in manual_text("troubleshooting.md")


def test_the_metrics_table_names_every_metric_and_state_the_program_writes() -> None:
    written = re.findall(r"^# TYPE (\S+) gauge$", metrics.render([], metrics.TickFacts(0, 0, 0, 0, 0, 0), 0), re.M)
    table = (ROOT / "docs" / "status-page.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| `(monitor_tick_\w+)", table, re.M)
    assert documented == written
    states = re.search(r"^\| `monitor_tick_monitors\{state\}` \| monitors per state \(([^)]*)\)", table, re.M)
    assert states is not None and states[1].split(", ") == list(metrics.STATES)


def test_the_monitors_file_example_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """monitors-file.md's example, as a reader copies it, with the variables it names set."""
    page = (ROOT / "docs" / "monitors-file.md").read_text(encoding="utf-8")
    example = re.search(r"\n\n((?:    .*\n|\n)+)", page)
    assert example is not None and "[monitors.api]" in example[1]
    path = tmp_path / "monitors.toml"
    path.write_text("".join(line.removeprefix("    ") + "\n" for line in example[1].splitlines()))
    monkeypatch.setenv("API_KEY", "k")
    monkeypatch.setenv("SLACK_URL", "json://127.0.0.1:9/")
    db = str(tmp_path / "m.db")
    assert "+ monitor api" in ok_at(db, ORDINARY_MS, "apply", str(path))
    assert ok_at(db, ORDINARY_MS, "apply", str(path)) == "no changes\n"
