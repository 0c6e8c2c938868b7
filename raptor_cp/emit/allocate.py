"""Local-memory allocation: an address for every buffer of a core, within its memory.

The backend check of the seeds' steps 9–10 ("lower, allocate, verify, and emit
only the selected program"): a schedule whose live buffers do not fit a core's
local memory cannot be emitted. That is a *candidate-specific* resource failure
(`LocalMemoryExhausted`): pipeline selection discards the candidate and selects
again (`raptor_cp.emit.backend`).

A buffer lives from the first to the last program position that uses it
(`Buffer.first`, `Buffer.last`, inclusive). Buffers are placed first-fit in
order of their first use, after every buffer whose last use came earlier has
been freed (a buffer read and another written by the same item are both live
there). Every buffer takes its size rounded up to the memory's access width
plus one more access: pimsim-nn's hazard ranges are closed intervals, so
buffers that touch would conflict (/work/notes/pimsim-nn.md section 4.8).

The limit is the config's ``memory_size`` (pimsim-nn's default 1 MiB), and
never more than the signed 32-bit address space the seeds' allocator guards.

Time ``O(B log B + B F)`` for ``B`` buffers and at most ``F`` free holes.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from raptor_cp.errors import RaptorError

ADDRESS_SPACE = 2**31 - 1
"""Largest address a register (a signed 32-bit ``sldi`` immediate) can hold."""


class BackendResourceError(RaptorError):
    """A candidate-specific resource limit of the backend (seeds: discard, select again)."""


class LocalMemoryExhausted(BackendResourceError):
    """A core's live buffers exceed its local memory."""


@dataclass(frozen=True)
class Buffer:
    """One buffer of a core: ``nbytes`` live from position ``first`` to ``last``."""

    name: str
    nbytes: int
    first: int
    last: int


@dataclass(frozen=True)
class Allocation:
    """Addresses of a core's buffers (by name) and the highest byte in use."""

    address: dict[str, int]
    peak_bytes: int


def slot_bytes(nbytes: int, width: int) -> int:
    """Bytes a buffer of ``nbytes`` takes: whole accesses of ``width`` plus a one-access gap."""
    return (-(-nbytes // width) + 1) * width


def allocate(buffers: list[Buffer], width: int, limit: int, core: int) -> Allocation:
    """First-fit addresses for ``buffers`` (module docstring).

    Raises `LocalMemoryExhausted` naming the core, the bytes needed at the peak,
    the limit, and the buffers live there.
    """
    limit = min(limit, ADDRESS_SPACE)
    order = sorted(range(len(buffers)), key=lambda b: (buffers[b].first, b))
    holes: list[tuple[int, int]] = []  # (address, size), sorted by address
    top = peak = 0
    live: list[tuple[int, int]] = []  # (last, buffer) heap
    address: dict[str, int] = {}
    start = [0] * len(buffers)
    for b in order:
        buffer = buffers[b]
        while live and live[0][0] < buffer.first:
            _, done = heapq.heappop(live)
            top = _free(holes, start[done], slot_bytes(buffers[done].nbytes, width), top)
        size = slot_bytes(buffer.nbytes, width)
        spot = next((i for i, (_, free) in enumerate(holes) if free >= size), -1)
        if spot >= 0:
            at, free = holes[spot]
            if free == size:
                del holes[spot]
            else:
                holes[spot] = (at + size, free - size)
        else:
            at = top
            top += size
            if top > limit:
                names = [*sorted(buffers[x].name for _, x in live), buffer.name]
                raise LocalMemoryExhausted(
                    f"core {core}: local memory exhausted at program position {buffer.first}: "
                    f"{top} bytes needed, {limit} available; live buffers: "
                    f"{', '.join(names[:6])}{', ...' if len(names) > 6 else ''}"
                )
        peak = max(peak, top)
        start[b] = at
        address[buffer.name] = at
        heapq.heappush(live, (buffer.last, b))
    return Allocation(address, peak)


def _free(holes: list[tuple[int, int]], at: int, size: int, top: int) -> int:
    """Return ``[at, at + size)`` to the holes (merging neighbours); the new top."""
    index = 0
    while index < len(holes) and holes[index][0] < at:
        index += 1
    holes.insert(index, (at, size))
    if index + 1 < len(holes) and holes[index][0] + holes[index][1] == holes[index + 1][0]:
        holes[index] = (at, size + holes[index + 1][1])
        del holes[index + 1]
    if index > 0 and holes[index - 1][0] + holes[index - 1][1] == holes[index][0]:
        holes[index - 1] = (holes[index - 1][0], holes[index - 1][1] + holes[index][1])
        del holes[index]
        index -= 1
    if holes[index][0] + holes[index][1] == top:
        top = holes[index][0]
        del holes[index]
    return top
