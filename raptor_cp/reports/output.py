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
import tempfile
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
    so the final move is a rename). If the block raises, the staging directory
    is removed and ``destination`` is left untouched. An existing
    ``destination`` is replaced only when it is a directory holding nothing but
    file names from ``replaceable`` (the files a previous run wrote): raptor-cp
    never deletes files it did not write.

    Raises
    ------
    InvalidInputError
        If ``destination`` is a file, or a directory holding other files.
    """
    _check_replaceable(destination, replaceable)
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    staging.chmod(0o777 & ~_umask())  # mkdtemp makes it private; the result should not be
    try:
        yield staging
        _swap_into_place(staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _check_replaceable(destination: Path, replaceable: Collection[str]) -> None:
    if not destination.exists():
        return
    if not destination.is_dir():
        raise InvalidInputError(f"{destination}: exists and is not a directory")
    foreign = sorted(p.name for p in destination.iterdir() if p.name not in replaceable)
    if foreign:
        raise InvalidInputError(
            f"{destination}: refusing to replace a directory holding files raptor-cp did not "
            f"write ({', '.join(foreign[:3])}); choose another --out"
        )


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
    it was. Yields None (and does nothing) when ``path`` is None.
    """
    if path is None:
        yield None
        return
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory; --out takes a file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    staging = Path(name)
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        os.fchmod(handle, 0o666 & ~mask)  # mkstemp makes it private; a report should not be
        os.close(handle)
        yield staging
        staging.replace(path)
    finally:
        staging.unlink(missing_ok=True)
