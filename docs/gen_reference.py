"""Write the command reference (docs/reference.md) from the app itself: every command, argument and
option, with its default and environment variable, read from click's command tree of the Typer
app (typer.main.get_command), not from Typer's `utils docs`, whose output changes between Typer
releases. tests/test_docs.py fails when the committed file differs from what this prints.

    .venv/bin/python docs/gen_reference.py > docs/reference.md
"""

from __future__ import annotations

import re
import sys
from typing import Any

REGENERATE = ".venv/bin/python docs/gen_reference.py > docs/reference.md"

HEADER = f"""\
# Command reference

Every command, argument and option of `monitor-tick`, with its default and the environment
variable it reads, as `monitor-tick COMMAND --help` gives them. This page is generated from the
app (`{REGENERATE}`); a test fails when it is out of date. What the commands are for is in
[Commands](commands.md).
"""


def _inline(text: str) -> str:
    """`text` as Markdown inline text that shows as written: code spans kept, elsewhere the
    characters Markdown would read as markup escaped. One line."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part)
            continue
        part = part.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        out.append(re.sub(r"([*_\[\]|#])", r"\\\1", part))
    return "".join(out)


def _paragraphs(text: str) -> str:
    """A command's help (its docstring) as Markdown paragraphs."""
    blocks = re.split(r"\n\s*\n", text.replace("\b", "").strip())
    return "\n\n".join(_inline(block) for block in blocks if block.strip())


def _default(param: Any) -> str:
    default = param.default
    if default is None or (param.multiple and not default):
        return ""
    if getattr(param, "is_flag", False) and default is False:
        return "off"
    if default is True:
        return "on"
    return f"`{default}`"


def _envvar(param: Any) -> str:
    envvar = param.envvar
    if not envvar:
        return ""
    names = [envvar] if isinstance(envvar, str) else list(envvar)
    return ", ".join(f"`{name}`" for name in names)


def _flags(param: Any) -> str:
    flags = " / ".join(", ".join(f"`{opt}`" for opt in opts) for opts in (param.opts, param.secondary_opts) if opts)
    if not getattr(param, "is_flag", False):
        metavar = param.metavar or param.name.upper()
        flags += f" `{metavar}`"
    if param.multiple:
        flags += " (repeatable)"
    return flags


def _command(command: Any, path: list[str]) -> list[str]:
    """The section of one command, then those of its subcommands, in --help's order."""
    arguments = [p for p in command.params if p.param_type_name == "argument" and not p.hidden]
    options = [p for p in command.params if p.param_type_name == "option" and not p.hidden]
    subcommands = getattr(command, "commands", {})
    usage = " ".join(path + [a.name.upper() for a in arguments] + (["[OPTIONS]"] if options else []))
    if subcommands and len(path) > 1:
        usage += " COMMAND"
    lines = [f"## {' '.join(path)}", "", f"    {usage}", ""]
    if command.help:
        lines += [_paragraphs(command.help), ""]
    if arguments:
        lines += ["| argument | required | what it is |", "|---|---|---|"]
        lines += [
            f"| `{a.name.upper()}` | {'yes' if a.required else 'no'} | {_inline(a.help or '')} |" for a in arguments
        ]
        lines.append("")
    if options:
        lines += ["| option | default | environment | what it does |", "|---|---|---|---|"]
        lines += [f"| {_flags(o)} | {_default(o)} | {_envvar(o)} | {_inline(o.help or '')} |" for o in options]
        lines.append("")
    for name, sub in subcommands.items():
        if not sub.hidden:
            lines += _command(sub, path + [name])
    return lines


def render(command: Any = None) -> str:
    """The reference page of `command` (by default the app's own tree), as Markdown."""
    if command is None:
        import typer

        from monitor_tick.cli.app import app

        command = typer.main.get_command(app)
    return "\n".join([HEADER, *_command(command, ["monitor-tick"])]).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
