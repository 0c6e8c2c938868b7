"""Pause Python's cyclic garbage collector around allocation-heavy work.

Realizing a candidate and extracting its events allocate millions of tuples
and lists that form no reference cycles. With the collector on, each
burst of allocations triggers collections that re-scan everything the process
holds (the lowered graph, the stage costs, every plan): on ResNet-50, half of a
candidate's realization time (1.8 s -> 1.0 s with the collector paused,
docs/benchmarks.md). Reference counting still frees everything at once; only
cyclic garbage made during the pause waits for the next collection.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off; restore its state after (nests)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
