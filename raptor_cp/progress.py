"""Progress from inside a long phase, without passing a callback through every solver.

A flow reports a finished phase through its ``progress(phase, detail)``
callback (`raptor_cp.flows`). A phase that can run for seconds (pipeline
partitioning prices 10^5 stage costs and packs each stage; CP-SAT searches;
exchange admission places and encodes candidates) also says what it is doing
*now*: the flow runs the solver inside ``with reporting(progress):`` and the
solver calls ``tick(phase, detail)`` at its sub-steps. Outside `reporting`
`tick` does nothing, so library callers and tests pay nothing.

CP-SAT reports from its own threads, where the context-local sink is not
set: `ticker` binds ``tick`` to the current sink first (the CP-SAT models tick
their best-so-far and bound this way, `raptor_cp.models.solve.search_ticker`).

A tick reaches the callback as ``progress("tick", "<phase>: <detail>")``; the
CLI's `raptor_cp.cli.common.Reporter` turns an activity that lasts about two
seconds or more into ``partition   12.31 s  packing stage 2 of 3 ...`` lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Progress = Callable[[str, str], None]
"""``progress(phase, detail)``: called after each phase of a flow (``load``, ``lower``,
``schedule``, ``check``...); ``warning`` carries a target warning, ``tick`` what a long
phase is doing now."""

TICK = "tick"
"""The ``phase`` of a progress event sent by `tick`."""

_current: ContextVar[Progress | None] = ContextVar("raptor_cp_progress", default=None)


@contextmanager
def reporting(progress: Progress) -> Iterator[None]:
    """Send the `tick` calls made inside the block to ``progress``."""
    token = _current.set(progress)
    try:
        yield
    finally:
        _current.reset(token)


def ticker(phase: str) -> Callable[[str], None] | None:
    """`tick` for ``phase`` bound to the current sink, callable from any thread; None
    outside `reporting` (nobody listens, so callers can skip the work of reporting)."""
    progress = _current.get()
    if progress is None:
        return None

    def report(detail: str) -> None:
        progress(TICK, f"{phase}: {detail}")

    return report


def tick(phase: str, detail: str) -> None:
    """Say what ``phase`` is doing now (``"pricing 118,600 stage costs"``); cheap, O(1)."""
    progress = _current.get()
    if progress is not None:
        progress(TICK, f"{phase}: {detail}")
