"""The documented size limits, checked up front with one line that names the limit.

raptor-cp computes in int64 numpy arrays and allocates per core and per task.
Inputs that declare sizes they do not back with content (``generic:100000000``,
``core_cnt`` 10^7, a Dasdan ``p`` line announcing 10^9 nodes), or integers no
int64 sum can hold, would otherwise end in the kernel's OOM killer or an
`OverflowError` deep inside a scheduler. Each limit below is checked where the
size is first read, before anything is allocated; docs/cli.md ("Limits") lists
them with the memory a run at the limit costs.

* `MAX_INTEGER`: every integer a file or option gives (costs, bytes, weight
  sizes, Dasdan weights and transits, ``NS_PER_BYTE``) lies in
  ``[-MAX_INTEGER, MAX_INTEGER]``. 2^53 keeps every value exact in a JSON
  reader that uses doubles (Perfetto, JavaScript) and leaves int64 headroom.
* `MAX_TIME_NS`: the *horizon* of a problem, the sum over tasks of their
  slowest cost plus the sum over edges of their dearest transfer, bounds every
  start and finish any scheduler or evaluator computes; checked with Python
  integers in `check_horizon`. 2^46 ns (about 19.5 hours) leaves room for the
  largest int64 quantity the schedulers form, a priority summed over up to
  `MAX_CORES` = 2^16 cores (PEFT's OCT row sum, HEFT's ``P``-scaled rank):
  2^62 < 2^63.
* `MAX_TOTAL`: totals of edge bytes and of weight slots (int64 sums in reports
  and bounds).
* `MAX_CORES`: cores of a target whose transfers cost the same between every
  pair of distinct cores (``generic``, the IPU presets); schedulers use
  ``O(P)`` memory for them.
* `MAX_PAIRWISE_CORES`: cores of a pimsim-nn chip, whose network prices each
  ordered pair: its latency tables, and PEFT's hop-distance check, are
  ``P x P``.
* `MAX_TASKS`: tasks of a lowered graph (checked from the exact count before
  lowering builds it, and by the readers).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.errors import InvalidConfigError, InvalidInputError, InvalidInstanceError

if TYPE_CHECKING:
    from raptor_cp.graph import ComputeGraph
    from raptor_cp.targets.base import SchedulingTarget

MAX_INTEGER = 2**53
"""Largest magnitude of an integer read from a file or an option (9,007,199,254,740,992)."""
MAX_TIME_NS = 2**46
"""Largest horizon (sum of slowest costs and dearest transfers) of a problem, in ns (~19.5 h)."""
MAX_TOTAL = 2**62
"""Largest total of edge bytes, or of weight slots, of one graph."""
MAX_CORES = 65_536
"""Most cores of a target with uniform transfers (``generic:P``)."""
MAX_PAIRWISE_CORES = 2_048
"""Most cores of a pimsim-nn chip (pairwise network tables: ``P x P`` memory)."""
MAX_TASKS = 1_000_000
"""Most tasks of one graph."""


def integer_text(value: int | str) -> str:
    """An integer (or its decimal text) for an error message, elided beyond 24 digits.

    >>> integer_text(12), integer_text(10**40), integer_text("-" + "9" * 30)
    ('12', '1000000000...0000000000 (41 digits)', '-9999999999...9999999999 (30 digits)')
    """
    text = str(value)
    sign = text[:1] == "-"
    digits = len(text) - sign
    if digits <= 24:
        return text
    return f"{text[: 10 + sign]}...{text[-10:]} ({digits} digits)"


def check_integer(value: int, what: str, *, minimum: int = 0) -> int:
    """``value`` if it lies in ``[minimum, MAX_INTEGER]``, else `InvalidInputError`.

    The message reads ``"<what> <value> is outside the accepted range <minimum>..2^53"``.
    """
    if not minimum <= value <= MAX_INTEGER:
        low = "-2^53" if minimum == -MAX_INTEGER else str(minimum)
        raise InvalidInputError(
            f"{what} {integer_text(value)} is outside the accepted range {low}..2^53"
        )
    return value


def check_cores(cores: int, what: str, limit: int = MAX_CORES) -> None:
    """Raise `InvalidConfigError` naming ``limit`` when ``cores`` exceeds it."""
    if cores > limit:
        raise InvalidConfigError(
            f"{what}: {integer_text(cores)} cores exceed the limit of {limit:,} "
            "(docs/cli.md, Limits)"
        )


def check_tasks(tasks: int, what: str) -> None:
    """Raise `InvalidInputError` naming `MAX_TASKS` when ``tasks`` exceeds it."""
    if tasks > MAX_TASKS:
        raise InvalidInputError(
            f"{what}: {integer_text(tasks)} tasks exceed the limit of {MAX_TASKS:,} "
            "(docs/cli.md, Limits)"
        )


def check_total(values: Iterable[int], what: str, where: str, limit: int = MAX_TOTAL) -> int:
    """The exact (Python integer) sum of ``values``; `InvalidInstanceError` above ``limit``."""
    total = sum(values)
    if total > limit:
        raise InvalidInstanceError(
            f"{where}: {what} total {integer_text(total)}, beyond the limit of "
            f"2^{limit.bit_length() - 1} (docs/cli.md, Limits)"
        )
    return total


def check_horizon(graph: ComputeGraph, target: SchedulingTarget) -> int:
    """The horizon of ``graph`` on ``target`` (module docstring); raises above `MAX_TIME_NS`.

    ``O(T + E)`` with one `SchedulingTarget.max_transfer_ns` call per distinct
    byte count; Python integers throughout, so the check itself cannot overflow.
    """
    slowest = graph.cost if graph.core_cost is None else graph.core_cost.max(axis=1, initial=0)
    sizes, counts = np.unique(graph.edge_bytes, return_counts=True)
    transfers = (
        target.max_transfer_ns(int(b)) * int(n)
        for b, n in zip(sizes.tolist(), counts.tolist(), strict=True)
    )
    horizon = sum(itertools.chain(slowest.tolist(), transfers))
    if horizon > MAX_TIME_NS:
        raise InvalidInstanceError(
            f"{graph.name} on {target.name}: a schedule may last up to {integer_text(horizon)} ns "
            "(slowest task costs plus dearest transfers), beyond the limit of 2^46 ns "
            "(docs/cli.md, Limits)"
        )
    return horizon
