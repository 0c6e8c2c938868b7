"""Read a large JSON document as a stream: top-level tokens, and arrays in chunks.

An instruction artifact is one JSON object whose values are arrays of millions
of small objects (`raptor_cp.targets.pim.artifact`). Parsing it whole takes
gigabytes of Python objects; `JsonStream` instead keeps a sliding text buffer
(blocks of `BLOCK` characters from a text file, gzip or not) and hands out

* single values with the C scanner of the standard `json` module (`value`),
  refilling the buffer and retrying when a value runs past its end, and
* the elements of an array in chunks of about `CHUNK` characters
  (`array_chunks`): a chunk ends at an element boundary ``}`` ``,`` ``{`` (or at
  the array's closing bracket) and is parsed by one `json.loads` call. When a
  chunk does not parse -- a malformed element, or an element that holds arrays
  or such separators itself -- its elements are scanned one at a time, which is
  exact for any JSON and names the error's line and column.

Time ``O(L)`` for ``L`` characters; memory ``O(CHUNK + BLOCK)`` characters plus
the largest single value and one chunk's elements.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from json.scanner import make_scanner
from typing import Any, TextIO

from raptor_cp.errors import InvalidInputError

BLOCK = 1 << 22
"""Characters read from the file at a time."""
CHUNK = 1 << 22
"""Characters of array elements parsed by one `json.loads` call."""
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SEPARATOR = re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{")
_scan = make_scanner(json.JSONDecoder())


class JsonStream:
    """A sliding window over a JSON text file (see the module docstring).

    ``where`` names the file in error messages, which read like `raptor_cp.files`'s:
    ``"<where>: invalid JSON at line L column C: <reason>"``.
    """

    def __init__(self, handle: TextIO, where: str) -> None:
        self._handle = handle
        self.where = where
        self._buf = ""
        self._pos = 0
        self._offset = 0
        """Characters of the file before the buffer's first character."""
        self._eof = False
        self._line = 1
        """Line number of the buffer's first character."""
        self._column = 1
        """Column of the buffer's first character."""

    # -- buffer ----------------------------------------------------------------

    def _refill(self) -> bool:
        """Append the next block, dropping the consumed prefix; False at end of file."""
        if self._eof:
            return False
        try:
            block = self._handle.read(BLOCK)
        except UnicodeDecodeError:
            raise InvalidInputError(f"{self.where}: not UTF-8 text") from None
        except (OSError, EOFError) as exc:
            raise InvalidInputError(f"{self.where}: cannot read: {exc}") from None
        dropped = self._buf[: self._pos]
        newlines = dropped.count("\n")
        if newlines:
            self._line += newlines
            self._column = len(dropped) - dropped.rfind("\n")
        else:
            self._column += len(dropped)
        self._buf = self._buf[self._pos :] + block
        self._offset += self._pos
        self._pos = 0
        if not block:
            self._eof = True
        return bool(block)

    def _error(self, pos: int, reason: str) -> InvalidInputError:
        line = self._line + self._buf.count("\n", 0, pos)
        last = self._buf.rfind("\n", 0, pos)
        column = pos - last if last >= 0 else self._column + pos
        return InvalidInputError(
            f"{self.where}: invalid JSON at line {line} column {column}: {reason}"
        )

    # -- tokens ----------------------------------------------------------------

    def skip_whitespace(self) -> None:
        while True:
            self._pos = _WHITESPACE.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf) or not self._refill():
                return

    def peek(self) -> str:
        """The next non-blank character ('' at end of file)."""
        self.skip_whitespace()
        return self._buf[self._pos : self._pos + 1]

    def expect(self, chars: str) -> str:
        """Consume the next non-blank character, which must be one of ``chars``."""
        found = self.peek()
        if not found or found not in chars:
            wanted = " or ".join(repr(c) for c in chars)
            got = repr(found) if found else "end of file"
            raise self._error(self._pos, f"expected {wanted}, got {got}")
        self._pos += 1
        return found

    def at_end(self) -> bool:
        """True when only whitespace is left."""
        return self.peek() == ""

    def value(self) -> Any:
        """Parse the next JSON value."""
        self.skip_whitespace()
        while True:
            try:
                value, end = _scan(self._buf, self._pos)
            except StopIteration:
                if self._refill():
                    continue
                raise self._error(self._pos, "Expecting value") from None
            except json.JSONDecodeError as exc:
                if self._refill():
                    continue
                raise self._error(exc.pos, exc.msg) from None
            except RecursionError:
                raise InvalidInputError(f"{self.where}: JSON nested too deeply") from None
            if end >= len(self._buf) and self._refill():
                continue  # a number may go on in the next block
            self._pos = end
            return value

    # -- arrays ----------------------------------------------------------------

    def array_chunks(self) -> Iterator[list[Any]]:
        """The elements of the array that starts here, in chunks (module docstring)."""
        self.expect("[")
        if self.peek() == "]":
            self._pos += 1
            return
        done = False
        while not done:
            while len(self._buf) - self._pos < CHUNK and self._refill():
                pass
            start, limit = self._pos, self._pos + CHUNK
            close = self._buf.find("]", start, limit)
            if close >= 0:
                stop, resume = close, close + 1
            else:
                boundary = _SEPARATOR.search(self._buf, start + CHUNK // 2, limit)
                stop = start + 1 if boundary is None else boundary.start() + 1
                resume = -1 if boundary is None else boundary.end() - 1
            try:
                if resume < 0:
                    raise ValueError("no element boundary in this chunk")
                chunk = json.loads("[" + self._buf[start:stop] + "]")
            except (ValueError, RecursionError):
                chunk, done = self._elements(self._offset + stop)
            else:
                self._pos = resume
                done = close >= 0
            yield chunk

    def _elements(self, stop: int) -> tuple[list[Any], bool]:
        """Scan elements one at a time until past absolute offset ``stop`` or the array's end.

        Exact for any JSON, and names the line and column of an error. Returns the
        elements and whether the array ended.
        """
        items: list[Any] = []
        while True:
            items.append(self.value())
            if self.expect(",]") == "]":
                return items, True
            if self._offset + self._pos > stop:
                return items, False
