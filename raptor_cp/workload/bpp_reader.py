"""Read one-dimensional bin-packing instances: BPPLIB files and OR-Library multi-instance files.

Two formats, told apart by the start of the file (an OR-Library file has a
non-numeric identifier second and exactly three values on the line after it):

* **BPPLIB** (Delorme, Iori and Martello 2018; the Scholl ``.BPP`` files and the
  Falkenauer triplets): the item count ``n``, the bin capacity, then ``n`` item
  sizes. One instance, named after the file (without its extension).
* **OR-Library** (Beasley 1990; Falkenauer's ``binpack1.txt`` ... ``binpack8.txt``):
  the number of instances ``P``; then per instance an identifier (not a number),
  ``capacity n best_known``, then ``n`` item sizes. ``P`` instances, named by their
  identifiers; ``best_known`` is kept as given (it is not always the optimum).

Values are whitespace-separated integers, any number per line; blank lines are
ignored. Every size must lie in ``1..capacity`` and the capacity be positive. A
malformed file raises `InvalidInputError` naming the file and the line (a count
that promises more values than the file holds names the last line).
``O(file size)``.

References
----------
M. Delorme, M. Iori and S. Martello, "BPPLIB: a library for bin packing and
cutting stock problems", Optimization Letters 12, 2018.
J. E. Beasley, "OR-Library: distributing test problems by electronic mail",
Journal of the Operational Research Society 41(11), 1990.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import read_text


@dataclass(frozen=True)
class BinPackingInstance:
    """Items of ``sizes`` into bins of ``capacity``."""

    name: str
    capacity: int
    sizes: tuple[int, ...]
    best_known: int | None = None
    """The OR-Library header's best-known bin count (None for BPPLIB files)."""


def read_bin_packing(path: str | Path) -> list[BinPackingInstance]:
    """The instances of a BPPLIB or OR-Library file (module docstring), in file order."""
    tokens = _Tokens(str(path), read_text(path))
    if tokens.empty:
        raise InvalidInputError(f"{path}: empty file (expected the item count on line 1)")
    if not tokens.or_library():
        instance = _read_one(tokens, Path(path).stem, with_header=False)
        tokens.expect_end()
        return [instance]
    count = tokens.number("instance count", least=1)
    instances = [_read_one(tokens, "", with_header=True) for _ in range(count)]
    tokens.expect_end()
    return instances


def _read_one(tokens: _Tokens, name: str, with_header: bool) -> BinPackingInstance:
    best = None
    if with_header:
        name = tokens.word("instance identifier")
        capacity = tokens.number(f"capacity of {name}", least=1)
        n = tokens.number(f"item count of {name}", least=0)
        best = tokens.number(f"best-known bin count of {name}", least=0)
    else:
        n = tokens.number("item count", least=0)
        capacity = tokens.number("capacity", least=1)
    sizes = []
    for i in range(n):
        line = tokens.line
        size = tokens.number(f"size of item {i + 1} of {n}", least=1)
        if size > capacity:
            raise InvalidInputError(
                f"{tokens.source}: line {line}: item {i + 1} has size {size}, larger than "
                f"the capacity {capacity}"
            )
        sizes.append(size)
    return BinPackingInstance(name, capacity, tuple(sizes), best)


class _Tokens:
    """Whitespace-separated values with their line numbers."""

    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self.values = [
            (number, token)
            for number, line in enumerate(text.splitlines(), start=1)
            for token in line.split()
        ]
        self.last_line = len(text.splitlines())
        self.position = 0

    @property
    def empty(self) -> bool:
        return not self.values

    @property
    def line(self) -> int:
        """Line of the next value (the last line when none is left)."""
        if self.position < len(self.values):
            return self.values[self.position][0]
        return self.last_line

    def or_library(self) -> bool:
        """An identifier second and ``capacity n best`` on the line after it."""
        if len(self.values) < 5 or _is_integer(self.values[1][1]):
            return False
        line = self.values[2][0]
        return [n for n, _ in self.values[2:5]] == [line] * 3 and (
            len(self.values) == 5 or self.values[5][0] != line
        )

    def _next(self, what: str) -> tuple[int, str]:
        if self.position >= len(self.values):
            raise InvalidInputError(
                f"{self.source}: line {self.last_line}: file ends before the {what}"
            )
        value = self.values[self.position]
        self.position += 1
        return value

    def number(self, what: str, least: int) -> int:
        line, token = self._next(what)
        if not _is_integer(token):
            raise InvalidInputError(
                f"{self.source}: line {line}: expected an integer {what}, found {token!r}"
            )
        value = int(token)
        if value < least:
            raise InvalidInputError(
                f"{self.source}: line {line}: {what} must be at least {least}, found {value}"
            )
        return value

    def word(self, what: str) -> str:
        line, token = self._next(what)
        if _is_integer(token):
            raise InvalidInputError(
                f"{self.source}: line {line}: expected the {what}, found {token!r}"
            )
        return token

    def expect_end(self) -> None:
        if self.position < len(self.values):
            line, token = self.values[self.position]
            raise InvalidInputError(
                f"{self.source}: line {line}: unexpected value {token!r} after the last item"
            )


def _is_integer(token: str) -> bool:
    digits = token[1:] if token[:1] in "+-" else token
    return digits.isascii() and digits.isdigit()
