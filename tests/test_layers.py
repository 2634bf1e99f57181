"""The import contracts in pyproject.toml ([tool.importlinter]): arrows point down only, and no
package holds an import circle. A lazy import counts as an import; no contract ignores one."""

from __future__ import annotations

from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


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
