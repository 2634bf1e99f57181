"""The import contracts in pyproject.toml ([tool.importlinter]): arrows point down only, and no
package holds an import circle. A lazy import counts as an import; no contract ignores one. The
scripts of bench/, which import-linter does not see, hold no circle either; and no module is
over 500 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent
# the manual's page that holds "Where things are"
DEVELOPMENT = ROOT / "docs" / "development.md"


def test_the_import_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out
    assert "ignore_imports" not in (ROOT / "pyproject.toml").read_text()


def test_a_broken_contract_fails(tmp_path: Path) -> None:
    """The check above can fail: the command line imports the clock, so the clock above it breaks."""
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "monitor_tick"\n\n'
        '[[tool.importlinter.contracts]]\nname = "upside down"\ntype = "layers"\n'
        'layers = ["monitor_tick.core.clock", "monitor_tick.cli"]\n'
    )
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 1


# Folders whose every module stays under the limit (tests are not counted).
SHORT_FOLDERS = ("bench", "monitor_tick")
MAX_LINES = 500


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for folder in SHORT_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}"


# bench/ is a folder of scripts, not a package: each runs with bench/ first on sys.path and
# imports its siblings by their bare names (`import common`), which import-linter, walking a
# package's dotted names, does not see. So its import graph is read here from the source.
def sibling_imports(folder: Path) -> dict[str, set[str]]:
    """Each module of `folder` (no subfolders) -> the modules beside it that it imports, lazy
    imports included (`import x`, `from x import y`, and `bench.x` spelled in full)."""
    names = {path.stem for path in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module)
                if node.module == folder.name:
                    imported.update(alias.name for alias in node.names)
        graph[path.stem] = {
            first for name in imported if (first := name.removeprefix(f"{folder.name}.").split(".")[0]) in names
        }
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`, each as the path that closes it (a -> b -> a)."""
    found: list[list[str]] = []
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        for imported in sorted(graph[module]):
            if imported in path:
                found.append([*path[path.index(imported) :], imported])
            elif imported not in done:
                walk(imported, [*path, imported])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            walk(module, [module])
    return found


def test_bench_has_no_import_circle() -> None:
    graph = sibling_imports(ROOT / "bench")
    assert graph["run"], "the walk sees run.py's imports of its siblings"
    assert not circles(graph), circles(graph)


def test_an_import_circle_is_found(tmp_path: Path) -> None:
    """The check above can fail: a lazy import back from a sibling closes a circle."""
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "a.py").write_text("import b\nimport os\n")
    (folder / "b.py").write_text("from c import x\n")
    (folder / "c.py").write_text("def f():\n    from bench import a\n")
    (folder / "d.py").write_text("import bench.c\n")
    assert sibling_imports(folder) == {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"c"}}
    assert circles(sibling_imports(folder)) == [["a", "b", "c", "a"]]


def _paragraphs(page: str) -> dict[str, str]:
    """The entries of the "Where things are" tree (docs/development.md): name (`cli/`, `receiver.py`) -> text."""
    section = page.split("\n## Where things are\n", 1)[1].split("\n## ", 1)[0]
    tree = section.split("    monitor_tick/\n", 1)[1].split("\n\n", 1)[0]
    entries: dict[str, str] = {}
    name = ""
    for line in tree.splitlines():
        if line.startswith("      ") and not line.startswith("       "):
            name = line.split()[0]
        if name:
            entries[name] = entries.get(name, "") + " " + " ".join(line.split())
    return entries


def _unnamed(page: str) -> list[str]:
    """The modules and packages of monitor_tick/ that the tree does not name where they are: a
    module as `name.py` in its package's entry, a package inside one as `name/`."""
    entries = {name: set(re.findall(r"[A-Za-z0-9_]+(?:\.py|/)", text)) for name, text in _paragraphs(page).items()}
    package = ROOT / "monitor_tick"
    missing = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        if parts == ("__init__.py",):
            continue
        if len(parts) == 1:
            named, where = path.name, {path.name} & entries.keys()
        elif parts[1:] == ("__init__.py",):
            named, where = parts[0] + "/", {parts[0] + "/"} & entries.keys()
        else:
            named = path.name if len(parts) == 2 else parts[1] + "/"
            where = entries.get(parts[0] + "/", set())
        if named not in where:
            missing.append("/".join(parts))
    return missing


def test_where_things_are_names_every_module() -> None:
    assert _unnamed(DEVELOPMENT.read_text()) == []


def test_where_things_are_fails_on_a_module_it_does_not_name() -> None:
    page = DEVELOPMENT.read_text()
    assert _unnamed(page.replace("fanout.py (probes in flight)", "(probes in flight)")) == ["run/fanout.py"]
    assert "receiver.py" in _unnamed(page.replace("      receiver.py   ", "      (gone)        "))
