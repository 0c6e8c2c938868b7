"""``raptor-cp inspect``: describe a lowered model without scheduling it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from raptor_cp.cli.common import (
    Reporter,
    bits_option,
    cores_option,
    json_option,
    lanes_option,
    model_argument,
    model_path,
    target_option,
)


@click.command("inspect", short_help="Print a lowered model's size, weight slots, bounds.")
@model_argument
@target_option
@cores_option
@lanes_option
@bits_option
@json_option
def inspect_command(
    model: Path | None,
    target: str,
    cores: int | None,
    lanes: int | None,
    bits: int | None,
    as_json: bool,
) -> None:
    """Describe MODEL lowered for a target: sizes, weight slots and lower bounds."""
    from raptor_cp.bounds import lower_bounds
    from raptor_cp.flows import prepare
    from raptor_cp.reports.inspection import inspection, inspection_lines

    with model_path(model, example=False) as path:
        prepared = prepare(path, target, lanes=lanes, bits=bits, cores=cores)
    if not as_json:
        for warning in prepared.warnings:
            Reporter(quiet=False)("warning", warning)
    report = inspection(prepared, lower_bounds(prepared.graph, prepared.target))
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    for line in inspection_lines(report):
        click.echo(line)
