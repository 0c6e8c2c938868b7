"""What every ``raptor-cp`` command shares: errors, options, progress and the model argument.

Every user mistake surfaces as a `RaptorError`; `RaptorGroup` prints it as one
``error: ...`` line on stderr and exits with status 2 (click's usage errors exit
2 as well). Anything else is a bug in raptor-cp: it becomes one ``error:
internal error: ...`` line with a request to report it and exit status 3
(``raptor-cp --debug`` shows the traceback instead). SIGTERM, what ``timeout``
and CI runners send, unwinds like Ctrl-C, so staged output is cleaned up;
the command then exits with 143 (128 + SIGTERM), or 130 after Ctrl-C.

Commands import heavy modules (onnx, ortools, matplotlib) inside their
functions so that ``raptor-cp --help`` stays fast; this module imports only
click, the errors and the target registry.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import click

from raptor_cp.errors import InvalidInputError, RaptorError
from raptor_cp.progress import TICK
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


INTERNAL_ERROR_STATUS = 3
"""Exit status of a bug in raptor-cp (an exception that is not a user mistake)."""


class Terminated(BaseException):
    """SIGTERM arrived: unwinds the stack like `KeyboardInterrupt`, so staged files go."""


class InternalError(click.ClickException):
    """A bug in raptor-cp: one ``error: internal error: ...`` line, exit status 3."""

    exit_code = INTERNAL_ERROR_STATUS

    def show(self, file: object = None) -> None:
        click.echo(f"error: internal error: {self.format_message()}", err=True)


_NO_ARGS_IS_HELP: tuple[type[Exception], ...] = tuple(
    getattr(click.exceptions, name)
    for name in ("NoArgsIsHelpError",)
    if hasattr(click.exceptions, name)
)


class RaptorGroup(click.Group):
    """A command group that turns every exception into one ``error:`` line and an exit status.

    Click's usage errors (an unknown option, a bad value), `RaptorError` and
    `OSError` (an unwritable ``--out``, say) are user mistakes: `UserError`,
    status 2. Any other exception is a bug:
    `InternalError`, status 3, unless the group's ``--debug`` flag asks for the
    traceback. SIGTERM raises `Terminated` while the command runs.
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except _NO_ARGS_IS_HELP:
            raise  # bare ``raptor-cp``: click prints the help
        except click.UsageError as error:
            raise usage_line(error) from None

    def invoke(self, ctx: click.Context) -> object:
        with _sigterm_unwinds():
            try:
                return super().invoke(ctx)
            except click.UsageError as error:
                raise usage_line(error) from None
            except Terminated:
                ctx.exit(128 + signal.SIGTERM)
            except KeyboardInterrupt:
                ctx.exit(128 + signal.SIGINT)
            except (click.ClickException, click.exceptions.Exit, click.Abort):
                raise
            except RaptorError as error:
                raise UserError(one_line(str(error))) from None
            except OSError as error:
                where = f"{error.filename}: " if error.filename else ""
                raise UserError(one_line(where + (error.strerror or str(error)))) from None
            except Exception as error:
                if ctx.params.get("debug"):
                    raise
                raise InternalError(internal_error_message(error)) from None
        return None  # unreachable: ctx.exit raises


def usage_line(error: click.UsageError) -> UserError:
    """A command-line mistake as one ``error:`` line pointing at the command's help."""
    where = f" (see {error.ctx.command_path} --help)" if error.ctx is not None else ""
    return UserError(one_line(error.format_message()).rstrip(".") + where)


def internal_error_message(error: Exception) -> str:
    """The one-line text of a bug report request for ``error`` (no traceback)."""
    what = one_line(f"{type(error).__name__}: {error}")
    if len(what) > 300:
        what = what[:297] + "..."
    return (
        f"{what}. This is a bug in raptor-cp: please report it to its maintainers with the "
        "command line and the traceback that raptor-cp --debug ... prints"
    )


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """Turn SIGTERM into `Terminated` inside the block (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Reporter:
    """Prints a flow's progress on stderr (silent with ``quiet``, as under ``--json``).

    Used as the ``progress(phase, detail)`` callback of `raptor_cp.flows` and
    `raptor_cp.audit.verify`: a finished phase prints ``phase  seconds  detail``
    with the time since the previous phase; ``warning`` prints a warning line;
    ``audit-start`` opens a per-instance line that ``audit`` completes.

    ``tick`` events (`raptor_cp.progress.tick`) name what a long phase is doing
    now. They print nothing themselves: while one is current, a heartbeat thread
    prints ``phase  seconds  detail ...`` once `HEARTBEAT_S` have passed since
    the last line, then at growing intervals (half the phase's time so far), so
    a phase of ``t`` seconds adds ``O(log t)`` lines and a quick one none. Use
    the reporter as a context manager to stop the thread at the end.
    """

    HEARTBEAT_S = 2.0
    """Silence after which a running phase shows what it is doing."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.last = time.perf_counter()
        self._printed = self.last
        self._activity: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the heartbeat thread (if one was started)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __call__(self, phase: str, detail: str) -> None:
        if phase == "warning":  # not a phase: the next phase's time still runs
            if not self.quiet:
                self._echo(f"warning: {detail}")
            return
        if phase == TICK:
            self._tick(detail)
            return
        now = time.perf_counter()
        with self._lock:
            elapsed, self.last = now - self.last, now
            self._activity = None
        if self.quiet:
            return
        if phase == "audit-start":
            self._echo(f"{detail} ... ", nl=False)
        elif phase == "audit":
            self._echo(f"{detail}, {elapsed:.2f} s")
        else:
            self._echo(f"{phase:<9}{elapsed:7.2f} s  {detail}")

    def _echo(self, line: str, nl: bool = True) -> None:
        click.echo(line, err=True, nl=nl)
        self._printed = time.perf_counter()

    def _tick(self, activity: str) -> None:
        if self.quiet:
            return
        with self._lock:
            self._activity = activity
        if self._thread is None:
            self._thread = threading.Thread(target=self._heartbeat, daemon=True)
            self._thread.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(0.25):
            with self._lock:
                if self._activity is None:
                    continue
                now = time.perf_counter()
                running = now - self.last
                if now - self._printed < max(self.HEARTBEAT_S, running / 2):
                    continue
                phase, _, detail = self._activity.partition(": ")
                self._echo(f"{phase:<9}{running:7.2f} s  {detail} ...")


class PositiveFinite(click.ParamType):
    """A float ``> 0`` that is finite: ``nan`` and ``inf`` are rejected (a budget must end)."""

    name = "positive number"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not (math.isfinite(number) and number > 0):
            self.fail(f"{value!r} is not a positive finite number", param, ctx)
        return number


MAX_WORKERS = 256
"""Most CP-SAT workers ``--workers`` accepts."""
MAX_BITS = 64
"""Widest precision ``--bits`` accepts."""

model_argument = click.argument("model", required=False, type=click.Path(path_type=Path))
target_option = click.option(
    "--target",
    "-t",
    default=DEFAULT_TARGET,
    show_default=True,
    help=target_help(),
)
cores_option = click.option(
    "--cores",
    type=click.IntRange(min=1),
    help="Scale the target to N cores: a preset's mesh grows (named PRESET:N), generic:P "
    "becomes generic:N, an IPU gets N tiles (docs/cli.md, Targets).",
)
lanes_option = click.option(
    "--lanes",
    type=click.IntRange(min=1),
    help="Lanes (output-row chunks) per operation; default: chosen per model and target.",
)
bits_option = click.option(
    "--bits",
    type=click.IntRange(min=1, max=MAX_BITS),
    help="Activation/weight precision in bits, 1..64 (default: the model's).",
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
