"""docs/cli.md stays in step with ``--help``: every command and every option is documented."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from raptor_cp.cli import main

DOC = (Path(__file__).parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")


def _section(command: str) -> str:
    """The text of docs/cli.md from the command's ``## `raptor-cp <command>``` heading on."""
    match = re.search(rf"^## `raptor-cp {re.escape(command)}`.*?(?=^## |\Z)", DOC, re.M | re.S)
    assert match, f"docs/cli.md has no section for raptor-cp {command}"
    return match.group(0)


def _options(command: click.Command) -> list[tuple[str, ...]]:
    """Every option of ``command`` as its long names (an on/off pair is one option)."""
    options = []
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            names = tuple(n for n in (*param.opts, *param.secondary_opts) if n.startswith("--"))
            if names and names != ("--help",):
                options.append(names)
    return options


def test_the_command_table_lists_every_command() -> None:
    table = DOC.split("## Models")[0]
    for name in main.commands:
        assert f"| `{name}` |" in table, name


def test_global_options_are_documented() -> None:
    head = DOC.split("## Models")[0]
    for names in _options(main):
        assert any(f"`{name}`" in head for name in names), names


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_option_of_a_command_is_in_its_section(name: str) -> None:
    section = _section(name)
    for names in _options(main.commands[name]):
        documented = any(f"`{option}" in section for option in names)
        assert documented, f"raptor-cp {name} {' / '.join(names)} is not in its docs section"
