"""`Step`: one entry of a core's in-order program, the input of `build_events`.

A program is one list of steps per physical core, one generation's worth, in
program order. `raptor_cp.periodic.events.build_events` realizes it as an
`EventGraph`; its module docstring gives the timing semantics of each step.
Sizes are bytes, durations integer nanoseconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Compute:
    """An atomic compute (or local-memory) run of ``ns`` nanoseconds on the core."""

    ns: int


@dataclass(frozen=True)
class Send:
    """A direct transfer of ``nbytes`` to core ``peer`` (matched to its `Recv`)."""

    peer: int
    nbytes: int


@dataclass(frozen=True)
class Recv:
    """Receive ``nbytes`` from core ``peer`` (matched to its `Send`)."""

    peer: int
    nbytes: int


@dataclass(frozen=True)
class Load:
    """A global-memory read of ``nbytes`` into local memory."""

    nbytes: int


@dataclass(frozen=True)
class Store:
    """A global-memory write of ``nbytes`` from local memory."""

    nbytes: int


@dataclass(frozen=True)
class Signal:
    """A SYNC: add one token to event register ``register`` of core ``peer``."""

    peer: int
    register: int


@dataclass(frozen=True)
class Wait:
    """A WAIT: block until ``count`` tokens are on ``register``, then consume them."""

    register: int
    count: int


Step = Compute | Send | Recv | Load | Store | Signal | Wait
"""One step of a core's in-order sequence (see `raptor_cp.periodic.events`)."""
