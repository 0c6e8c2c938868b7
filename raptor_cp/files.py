"""Reading the text and JSON files users give raptor-cp, with one error format.

Every reader (workloads, pimsim-nn configs and network tables, instruction
artifacts, exchange plans, Dasdan graphs) goes through `read_text` and
`read_json`, so a missing, unreadable, non-UTF-8 or malformed file is reported
the same way everywhere: one line that starts with the file's name (or the
caller's ``label`` for it) and says what is wrong. ``error`` is the
`RaptorError` subclass the caller's domain raises (`InvalidInputError` for
inputs, `InvalidConfigError` for hardware configurations).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError, RaptorError
from raptor_cp.limits import integer_text


def read_text(
    path: str | Path, *, label: str | None = None, error: type[RaptorError] = InvalidInputError
) -> str:
    """The UTF-8 text of ``path``; a missing, unreadable or non-UTF-8 file raises ``error``."""
    file = Path(path)
    where = label or str(path)
    if not file.exists():
        raise error(f"{where}: no such file")
    if not file.is_file():
        raise error(f"{where}: not a regular file")
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except OSError as exc:
        raise error(f"{where}: cannot read: {exc.strerror}") from None


def read_json(
    path: str | Path, *, label: str | None = None, error: type[RaptorError] = InvalidInputError
) -> Any:
    """Parse ``path`` as JSON (see `parse_json`)."""
    return parse_json(read_text(path, label=label, error=error), label or str(path), error)


def parse_json(text: str, where: str, error: type[RaptorError] = InvalidInputError) -> Any:
    """Parse JSON ``text`` read from ``where``.

    A syntax error, including a truncated file, becomes ``"<where>: invalid JSON
    at line L column C: <reason>"``; nesting too deep for the parser becomes
    ``"<where>: JSON nested too deeply"``.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply") from None


EXCERPT_CHARS = 40
"""How much of a JSON value an error message quotes."""


def excerpt(value: Any) -> str:
    """``value`` as JSON for an error message: long integers and long texts are elided.

    >>> excerpt(12), excerpt("abc"), excerpt([[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]])
    ('12', '"abc"', '[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]...')
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return integer_text(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 3] + "..."
