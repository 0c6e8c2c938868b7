"""Writing results: all-or-nothing output directories, deterministic JSON, durations.

A compile either leaves a complete output directory or none at all: files are
written into a fresh temporary directory beside the destination, which replaces
the destination by rename only once every file is written. JSON is rendered
with sorted keys and no timestamps so identical inputs give byte-identical files.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from raptor_cp.errors import InvalidInputError

_UNITS = ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))


def time_unit(ns: int) -> tuple[int, str]:
    """The largest unit ``(divisor, name)`` in which ``ns`` is at least 1 (ns for 0)."""
    return next(((d, u) for d, u in _UNITS if ns >= d), _UNITS[-1])


def format_ns(ns: int) -> str:
    """A duration for people: three significant digits in its natural unit (whole ns).

    >>> format_ns(1_234_567), format_ns(66), format_ns(25_000)
    ('1.23 ms', '66 ns', '25.0 µs')
    """
    divisor, unit = time_unit(ns)
    value = ns / divisor
    decimals = 0 if value >= 100 or divisor == 1 else 1 if value >= 10 else 2
    return f"{value:.{decimals}f} {unit}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1.

    >>> count(1, "stage"), count(3, "stage"), count(1, "dependency", "dependencies")
    ('1 stage', '3 stages', '1 dependency')
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def dumps(value: object, inline_depth: int = 2) -> str:
    """Render ``value`` as JSON text with sorted keys, ending in a newline.

    Containers nested at least ``inline_depth`` levels deep, and containers of
    scalars only, are written on one line, so a list of records reads (and
    diffs) as one record per line instead of one field per line.

    >>> print(dumps({"b": [{"y": 1, "x": 2}], "a": 0, "c": [1, 2]}), end="")
    {
      "a": 0,
      "b": [
        {"x": 2, "y": 1}
      ],
      "c": [1, 2]
    }
    """
    return _render(value, 0, inline_depth) + "\n"


def _render(value: object, depth: int, inline_depth: int) -> str:
    if depth >= inline_depth or not _holds_containers(value):
        return json.dumps(value, sort_keys=True, allow_nan=False)
    pad = "  " * (depth + 1)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(key)}: {_render(value[key], depth + 1, inline_depth)}"
            for key in sorted(value)
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
    items = [pad + _render(item, depth + 1, inline_depth) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + "  " * depth + "]"


def _holds_containers(value: object) -> bool:
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(isinstance(item, dict | list) for item in items)


@contextmanager
def staged_directory(destination: Path, replaceable: Collection[str]) -> Iterator[Path]:
    """Yield an empty directory that becomes ``destination`` if the block succeeds.

    The staging directory is created next to ``destination`` (same file system,
    so the final move is a rename). If the block raises, or the process gets
    SIGTERM or Ctrl-C (the CLI turns both into exceptions), the staging directory
    is removed and ``destination`` is left untouched. An existing
    ``destination`` is replaced only when it is a directory whose whole tree holds
    nothing but the relative paths in ``replaceable`` (files and directories a
    previous run wrote, ``"reports/x.json"`` style): raptor-cp never deletes files
    it did not write. The check walks the tree breadth first and stops at the
    third foreign path, so it costs ``O(entries)`` at most.

    Raises
    ------
    InvalidInputError
        If ``destination`` is a file, the current directory or one of its
        ancestors, a directory holding other files, or cannot be created.
    """
    check_destination(destination, replaceable)
    _make_parent(destination)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    except OSError as error:
        raise InvalidInputError(
            f"{destination}: cannot write in {destination.parent}: {error.strerror}"
        ) from None
    try:
        staging.chmod(0o777 & ~_umask())  # mkdtemp makes it private; the result should not be
        yield staging
        with _signals_deferred():
            _swap_into_place(staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_destination(destination: Path, replaceable: Collection[str]) -> None:
    """Raise `InvalidInputError` now if `staged_directory` would refuse ``destination``."""
    resolved = destination.resolve()
    if resolved == Path.cwd() or resolved in Path.cwd().parents:
        raise InvalidInputError(
            f"{destination}: is the current directory or one of its parents; "
            "--out needs a directory of its own"
        )
    _check_parent(destination)
    if not destination.exists():
        return
    if destination.is_symlink():
        raise InvalidInputError(f"{destination}: is a symbolic link; choose another --out")
    if not destination.is_dir():
        raise InvalidInputError(f"{destination}: exists and is not a directory")
    foreign = _foreign_paths(destination, frozenset(replaceable), limit=3)
    if foreign:
        raise InvalidInputError(
            f"{destination}: refusing to replace a directory holding files raptor-cp did not "
            f"write ({', '.join(foreign)}); choose another --out"
        )


def _foreign_paths(root: Path, replaceable: frozenset[str], limit: int) -> list[str]:
    """Up to ``limit`` paths under ``root`` that are not in ``replaceable``.

    Paths are relative to ``root``, found breadth first in sorted order; symbolic
    links are not followed.
    """
    foreign: list[str] = []
    level = [root]
    while level and len(foreign) < limit:
        below: list[Path] = []
        for directory in level:
            for entry in sorted(directory.iterdir()):
                relative = entry.relative_to(root).as_posix()
                if relative not in replaceable:
                    foreign.append(relative)
                elif entry.is_dir() and not entry.is_symlink():
                    below.append(entry)
        level = below
    return foreign[:limit]


def _check_parent(path: Path) -> None:
    """Raise if the nearest existing ancestor of ``path`` is not a directory."""
    nearest = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if nearest is not None and not nearest.is_dir():
        raise InvalidInputError(f"{path}: {nearest} is not a directory")


def _make_parent(path: Path) -> None:
    """Create the missing parent directories of ``path``, with an error naming the obstacle."""
    _check_parent(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InvalidInputError(
            f"{path}: cannot create directory {path.parent}: {error.strerror}"
        ) from None


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, so that a rename pair is never cut in half.

    Signal masks can only be set for the main thread; elsewhere the block runs as is.
    """
    held = {signal.SIGINT, signal.SIGTERM}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _swap_into_place(staging: Path, destination: Path) -> None:
    """Rename ``staging`` to ``destination``, moving an old ``destination`` aside first."""
    if not destination.exists():
        staging.rename(destination)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{destination.name}.old.", dir=destination.parent))
    retired.rmdir()
    destination.rename(retired)
    try:
        staging.rename(destination)
    except OSError:
        retired.rename(destination)
        raise
    shutil.rmtree(retired, ignore_errors=True)


@contextmanager
def staged_file(path: Path | None) -> Iterator[Path | None]:
    """Yield a temporary file beside ``path`` that replaces ``path`` if the block succeeds.

    The temporary file is created first, so an unwritable destination fails
    before any work; if the block raises, it is removed and ``path`` is left as
    it was (on SIGTERM and Ctrl-C too). Yields None (and does nothing) when
    ``path`` is None.
    """
    if path is None:
        yield None
        return
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory; --out takes a file name")
    _make_parent(path)
    try:
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        where = f"{path}: cannot write in {path.parent}"
        raise InvalidInputError(f"{where}: {error.strerror}") from None
    staging = Path(name)
    try:
        os.fchmod(handle, 0o666 & ~_umask())  # mkstemp makes it private; a report should not be
        os.close(handle)
        yield staging
        staging.replace(path)
    finally:
        staging.unlink(missing_ok=True)
