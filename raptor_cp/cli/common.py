"""What every ``raptor-cp`` command shares: errors, options, progress and the model argument.

Every user mistake surfaces as a `RaptorError`; `RaptorGroup` prints it as one
``error: ...`` line on stderr and exits with status 2 (click's usage errors exit
2 as well). Commands import heavy modules (onnx, ortools, matplotlib) inside
their functions so that ``raptor-cp --help`` stays fast; this module imports
only click, the errors and the target registry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from raptor_cp.errors import InvalidInputError, RaptorError
from raptor_cp.targets.registry import DEFAULT_TARGET, target_help

EXAMPLE_MODEL = "resnet18.onnx"
"""The model ``compile --example`` schedules, bundled in ``raptor_cp/data``."""


class UserError(click.ClickException):
    """A mistake the user can fix: printed as one ``error:`` line, exit status 2."""

    exit_code = 2

    def show(self, file: object = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def one_line(message: str) -> str:
    """``message`` with every run of whitespace (newlines included) collapsed to one space."""
    return " ".join(message.split())


class RaptorGroup(click.Group):
    """A command group that turns `RaptorError` and `OSError` into `UserError`."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except RaptorError as error:
            raise UserError(one_line(str(error))) from None
        except OSError as error:
            where = f"{error.filename}: " if error.filename else ""
            raise UserError(one_line(where + (error.strerror or str(error)))) from None


class Reporter:
    """Prints a flow's progress on stderr (silent with ``quiet``, as under ``--json``).

    Used as the ``progress(phase, detail)`` callback of `raptor_cp.flows` and
    `raptor_cp.audit.verify`: a finished phase prints ``phase  seconds  detail``
    with the time since the previous event; ``warning`` prints a warning line;
    ``audit-start`` opens a per-instance line that ``audit`` completes.
    """

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.last = time.perf_counter()

    def __call__(self, phase: str, detail: str) -> None:
        now = time.perf_counter()
        elapsed, self.last = now - self.last, now
        if self.quiet:
            return
        if phase == "warning":
            click.echo(f"warning: {detail}", err=True)
        elif phase == "audit-start":
            click.echo(f"{detail} ... ", err=True, nl=False)
        elif phase == "audit":
            click.echo(f"{detail}, {elapsed:.2f} s", err=True)
        else:
            click.echo(f"{phase:<9}{elapsed:7.2f} s  {detail}", err=True)


model_argument = click.argument("model", required=False, type=click.Path(path_type=Path))
target_option = click.option(
    "--target",
    "-t",
    default=DEFAULT_TARGET,
    show_default=True,
    help=target_help(),
)
lanes_option = click.option(
    "--lanes",
    type=click.IntRange(min=1),
    help="Lanes (output-row chunks) per operation; default: chosen per model and target.",
)
bits_option = click.option(
    "--bits", type=click.IntRange(min=1), help="Activation/weight precision (default: the model's)."
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout and nothing else."
)


@contextmanager
def model_path(model: Path | None, example: bool) -> Iterator[Path]:
    """The model file to read: MODEL, or the bundled example with ``--example``."""
    if example and model is not None:
        raise UserError("give either MODEL or --example, not both")
    if example:
        from importlib.resources import as_file, files

        with as_file(files("raptor_cp") / "data" / EXAMPLE_MODEL) as path:
            yield path
        return
    if model is None:
        raise UserError("missing MODEL (a model file; or use --example)")
    if not model.exists():
        raise InvalidInputError(f"{model}: no such file")
    if not model.is_file():
        raise InvalidInputError(f"{model}: not a file")
    yield model
