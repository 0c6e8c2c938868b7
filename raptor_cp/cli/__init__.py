"""The ``raptor-cp`` command: one module per command, shared helpers in `raptor_cp.cli.common`.

Commands call the library (`raptor_cp.flows`, `raptor_cp.audit.verify`, ...) and
format its typed results; nothing below this package imports it.
"""

from __future__ import annotations

import click

from raptor_cp import __version__
from raptor_cp.cli.common import RaptorGroup
from raptor_cp.cli.compile import compile_command
from raptor_cp.cli.cycle_ratio import cycle_ratio_command
from raptor_cp.cli.exchange import exchange_command
from raptor_cp.cli.inspect import inspect_command
from raptor_cp.cli.pack import pack_command
from raptor_cp.cli.periodic import periodic_command
from raptor_cp.cli.report import report_command
from raptor_cp.cli.verify import verify_command


@click.group(cls=RaptorGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="raptor-cp")
@click.option(
    "--debug",
    is_flag=True,
    help="On an internal error, show Python's traceback instead of the one-line message.",
)
def main(debug: bool) -> None:
    """Schedule deep-learning compute graphs onto spatial accelerators.

    MODEL is an ONNX file, a PIMCOMP-NN node list (.json), a raptor task graph
    (.json) or a Standard Task Graph (.stg). See docs/cli.md for every option and
    output field.
    """


for _command in (
    compile_command,
    inspect_command,
    verify_command,
    cycle_ratio_command,
    periodic_command,
    exchange_command,
    report_command,
    pack_command,
):
    main.add_command(_command)
