"""The program order of each core: tasks, transfers and synchronization as `Item` lists.

An emitted program is, per core, one ordered list of items: a task's compute,
a direct ``send``/``recv`` of one edge, a global ``ld``/``st`` and a
``sync``/``wait``. Two sources:

* **Latency schedules** (`raptor_cp.emit.latency_order`): tasks in the
  schedule's core order, cut into parts, with one rendezvous per cross-core
  edge placed where a simulation of the program lets it happen;
* **Pipeline schedules** (`pipeline_items`). The realization of the periodic
  diagnostic (`raptor_cp.pipeline.realize`): its steps, with the tasks each
  realizes, become items one to one (a compute run becomes its tasks), so the
  emitted program is the one the pipeline's periodic prediction was made for;
  `unrolled` lays out two generations per round, one per copy of the
  publications.

`item_steps` turns items back into the `Step` programs the periodic model
prices (`raptor_cp.periodic.events`). Time ``O(I)`` for ``I`` items.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum

from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic.rendezvous_order import UnitCuts
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Step, Store, Wait
from raptor_cp.pipeline.realize import PipelineRealization


class ItemKind(IntEnum):
    """What an `Item` does."""

    TASK = 0
    SEND = 1
    RECV = 2
    LOAD = 3
    STORE = 4
    SIGNAL = 5
    WAIT = 6


@dataclass(frozen=True)
class Item:
    """One entry of a core's program; unused fields stay at their defaults.

    ``task`` is the computed task (TASK) or the stored producer (STORE);
    ``part`` the products ``[first, stop)`` of a matrix TASK that this item
    runs (``(0, 0)``: the whole task); ``edge`` the graph edge a SEND, RECV or
    LOAD moves; ``peer`` the other core of a SEND, RECV or SIGNAL; ``register``
    and ``count`` those of a SIGNAL or WAIT (the register is the destination's,
    as the realization numbers them); ``request`` the baseline request a LOAD or
    STORE makes for ``task`` (`ComputeGraph.baseline`; -1 for stage boundaries);
    ``copy`` the copy of a publication a stage-boundary LOAD or STORE addresses
    (`unrolled`).
    """

    kind: ItemKind
    task: int = -1
    part: tuple[int, int] = (0, 0)
    edge: int = -1
    peer: int = -1
    nbytes: int = 0
    register: int = -1
    count: int = 0
    request: int = -1
    copy: int = 0


CoreItems = list[list[Item]]
"""Per core, its items in program order."""


def pipeline_items(graph: ComputeGraph, realization: PipelineRealization) -> CoreItems:
    """The items of a pipeline realization, one per step (a compute run: one per unit)."""
    edge_of = {
        (u, v): e
        for e, (u, v) in enumerate(
            zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), strict=True)
        )
    }
    items: CoreItems = []
    for steps, owners, parts in zip(
        realization.cores, realization.tasks, realization.parts, strict=True
    ):
        core_items: list[Item] = []
        for step, who, part in zip(steps, owners, parts, strict=True):
            if isinstance(step, Compute):
                core_items.extend(
                    Item(ItemKind.TASK, task=t, part=p) for t, p in zip(who, part, strict=True)
                )
            elif isinstance(step, Send):
                core_items.append(
                    Item(ItemKind.SEND, edge=edge_of[who], peer=step.peer, nbytes=step.nbytes)
                )
            elif isinstance(step, Recv):
                core_items.append(
                    Item(ItemKind.RECV, edge=edge_of[who], peer=step.peer, nbytes=step.nbytes)
                )
            elif isinstance(step, Load):
                consumer, producer = who
                core_items.append(
                    Item(ItemKind.LOAD, edge=edge_of[producer, consumer], nbytes=step.nbytes)
                )
            elif isinstance(step, Store):
                core_items.append(Item(ItemKind.STORE, task=who[0], nbytes=step.nbytes))
            elif isinstance(step, Signal):
                core_items.append(Item(ItemKind.SIGNAL, peer=step.peer, register=step.register))
            else:
                assert isinstance(step, Wait)
                core_items.append(Item(ItemKind.WAIT, register=step.register, count=step.count))
        items.append(core_items)
    return items


def unrolled(items: CoreItems, copies: int) -> CoreItems:
    """Every core's ``items`` ``copies`` times in a row, one generation per copy of the
    publications (`in_copy`).

    Double buffering (``copies`` = `COPIES`, `raptor_cp.pipeline.realize`):
    pimsim-nn loops a core's stream and has no branch, so a program alternates
    the two copies of a publication by holding two generations: the first
    stores and loads copy 0, the second copy 1. Each copy also has its own
    READY, release and FREE registers. One set would not do: a producer may
    store generation ``k + 1`` once every reader has *entered* ``k``, before a
    slow reader has passed its READY wait of ``k``, so that wait could count
    the fast producer's token of ``k + 1`` in place of a slow producer's of
    ``k``; and a release-tree child could signal its entry of ``k + 1`` before
    its parent consumed its entry of ``k``. With one set per copy, tokens of
    ``k`` and ``k + 2`` can never meet: ``k + 2`` needs the permission of the
    end of ``k + 1``, given when every reader (every tree node) has entered
    ``k + 1``, long after it consumed the tokens of ``k``. The copies never
    meet either: generation ``k + 2`` overwrites copy ``k mod 2`` only after
    every reader entered ``k + 1``, so finished loading ``k``. Local buffers are
    dead at the end of a generation, so every copy reuses one allocation
    (`raptor_cp.emit.lower`). ``O(copies I)`` for ``I`` items.
    """
    return [
        [in_copy(item, copy, copies) for copy in range(copies) for item in core_items]
        for core_items in items
    ]


def in_copy(item: Item, copy: int, copies: int) -> Item:
    """``item`` as the generation on publication copy ``copy`` of ``copies`` runs it: a
    SIGNAL's or WAIT's register ``r`` becomes ``copies r + copy``, a stage-boundary LOAD or
    STORE addresses copy ``copy``; baseline requests (network inputs, constants, outputs)
    keep their one address."""
    if item.kind in (ItemKind.SIGNAL, ItemKind.WAIT):
        return replace(item, register=copies * item.register + copy)
    if item.kind in (ItemKind.LOAD, ItemKind.STORE) and item.request < 0:
        return replace(item, copy=copy)
    return item


def with_baseline(graph: ComputeGraph, items: CoreItems) -> CoreItems:
    """``items`` with the graph's baseline requests placed around their tasks.

    A read (a network input or constant) is a LOAD right before the first item
    of the first task on its core that reads its piece; the core's later readers
    of that piece use the same buffer (load folding, `BaselineMemory.first_loads`,
    which the selection's baseline demand counts the same way). A write (an
    output) is a STORE right after its task's last item (scheduling.md: inputs,
    constants and output collection "are included through their emitted
    instructions"). ``O(I + B)`` for ``B`` requests.
    """
    baseline = graph.baseline
    reads: dict[int, list[Item]] = {}
    writes: dict[int, list[Item]] = {}
    pieces = baseline.piece.tolist()
    columns = (baseline.task.tolist(), baseline.nbytes.tolist(), baseline.write.tolist())
    requests = zip(*columns, strict=True)
    for i, (task, nbytes, write) in enumerate(requests):
        kind = ItemKind.STORE if write else ItemKind.LOAD
        side = writes if write else reads
        side.setdefault(task, []).append(Item(kind, task=task, nbytes=nbytes, request=i))
    if not reads and not writes:
        return items
    out: CoreItems = []
    for core_items in items:
        last = {item.task: p for p, item in enumerate(core_items) if item.kind is ItemKind.TASK}
        placed: list[Item] = []
        seen: set[int] = set()
        loaded: set[int] = set()
        for p, item in enumerate(core_items):
            if item.kind is ItemKind.TASK and item.task not in seen:
                seen.add(item.task)
                for load in reads.get(item.task, ()):
                    if pieces[load.request] not in loaded:
                        loaded.add(pieces[load.request])
                        placed.append(load)
            placed.append(item)
            if item.kind is ItemKind.TASK and last[item.task] == p:
                placed += writes.get(item.task, [])
        out.append(placed)
    return out


def item_steps(items: CoreItems, cuts: UnitCuts) -> list[list[Step]]:
    """The `Step` program of every core (consecutive tasks merged into one `Compute`).

    A part of a task costs what ``cuts`` price it at: the `UnitCuts` that cut the
    items' tasks (a matrix task's parts add up to its cost; a task of an untimed
    operator costs nothing, `StepTiming.untimed_operations`); sharing them saves
    cutting every task again.
    """
    cores: list[list[Step]] = []
    for c, core_items in enumerate(items):
        steps: list[Step] = []
        run = 0
        for item in core_items:
            if item.kind is ItemKind.TASK:
                run += cuts(item.task, c)[item.part]
                continue
            if run:
                steps.append(Compute(run))
                run = 0
            steps.append(_step(item))
        if run:
            steps.append(Compute(run))
        cores.append(steps)
    return cores


def _step(item: Item) -> Step:
    kind = item.kind
    if kind is ItemKind.SEND:
        return Send(item.peer, item.nbytes)
    if kind is ItemKind.RECV:
        return Recv(item.peer, item.nbytes)
    if kind is ItemKind.LOAD:
        return Load(item.nbytes)
    if kind is ItemKind.STORE:
        return Store(item.nbytes)
    if kind is ItemKind.SIGNAL:
        return Signal(item.peer, item.register)
    return Wait(item.register, item.count)
