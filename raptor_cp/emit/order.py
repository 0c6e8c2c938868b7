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
  emitted program is the one the pipeline's periodic prediction was made for.

`item_steps` turns items back into the `Step` programs the periodic model
prices (`raptor_cp.periodic.events`). Time ``O(I)`` for ``I`` items.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic.rendezvous_order import QUANTUM_NS, UnitCuts
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Step, Store, Wait
from raptor_cp.pipeline.realize import PipelineRealization
from raptor_cp.targets.base import SchedulingTarget


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
    STORE makes for ``task`` (`ComputeGraph.baseline`; -1 for stage boundaries).
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


def with_baseline(graph: ComputeGraph, items: CoreItems) -> CoreItems:
    """``items`` with the graph's baseline requests placed around their tasks.

    A read (a network input or constant) is a LOAD right before the task's first
    item, a write (an output) a STORE right after its last (scheduling.md:
    inputs, constants and output collection "are included through their
    emitted instructions"). ``O(I + B)`` for ``B`` requests.
    """
    baseline = graph.baseline
    reads: dict[int, list[Item]] = {}
    writes: dict[int, list[Item]] = {}
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
        for p, item in enumerate(core_items):
            if item.kind is ItemKind.TASK and item.task not in seen:
                seen.add(item.task)
                placed += reads.get(item.task, [])
            placed.append(item)
            if item.kind is ItemKind.TASK and last[item.task] == p:
                placed += writes.get(item.task, [])
        out.append(placed)
    return out


def item_steps(graph: ComputeGraph, target: SchedulingTarget, items: CoreItems) -> list[list[Step]]:
    """The `Step` program of every core (consecutive tasks merged into one `Compute`).

    A part of a task costs what the realization's `UnitCuts` price it at (a
    matrix task's parts add up to its cost; a task of an untimed operator costs
    nothing, `StepTiming.untimed_operations`).
    """
    cuts = UnitCuts(graph, target, QUANTUM_NS)
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
