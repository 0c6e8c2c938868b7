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


def _options(command: click.Command) -> list[str]:
    """Every long option of ``command`` (``--help`` and hidden ones aside)."""
    names = []
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            names += [n for n in (*param.opts, *param.secondary_opts) if n.startswith("--")]
    return [n for n in names if n != "--help"]


def test_the_command_table_lists_every_command() -> None:
    table = DOC.split("## Models")[0]
    for name in main.commands:
        assert f"| `{name}` |" in table, name


def test_global_options_are_documented() -> None:
    for option in _options(main):
        assert f"`{option}`" in DOC.split("## Models")[0], option


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_option_of_a_command_is_in_its_section(name: str) -> None:
    section = _section(name)
    for option in _options(main.commands[name]):
        assert f"`{option}" in section, f"raptor-cp {name} {option} is not in its docs section"
