"""What every non-ONNX workload reader shares: reading a file with one-line errors
and ordering a named DAG deterministically.

The readers (`pimcomp_reader`, `stg_reader`, `raptor_json`) each phrase their
own cycle message (node names, task ids with line numbers, JSON tasks), so
`topological_order` reports a cycle as a list of indices and lets the caller
word it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError


def read_text(path: str | Path) -> str:
    """The UTF-8 text of ``path``; a missing or unreadable file is an `InvalidInputError`."""
    file = Path(path)
    if not file.exists():
        raise InvalidInputError(f"{path}: no such file")
    if not file.is_file():
        raise InvalidInputError(f"{path}: not a regular file")
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInputError(
            f"{path}: not UTF-8 text (bad byte at offset {error.start})"
        ) from None
    except OSError as error:
        raise InvalidInputError(f"{path}: cannot read: {error.strerror}") from None


def read_json(path: str | Path) -> Any:
    """Parse ``path`` as JSON.

    A syntax error, including a truncated file, becomes
    ``"<path>: invalid JSON at line L column C: <reason>"``.
    """
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInputError(
            f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
