"""Experiment: a stage's own recurrence if sends did not wait for their receivers.

Usage::

    python benchmarks/experiments/mailbox.py MODEL TARGET FIRST:STOP:CORES ...

The stages are built as `benchmarks/bench_stage_split.py` builds them. Per
stage, the script builds one periodic graph of its cores' compute, send and
receive steps (one node per step, its start; a core's steps in order, its last
step's end releasing its first of the next generation) under two transfer
semantics, and prints each maximum cycle ratio:

* **rendezvous** (pimsim-nn's blocking ``send``/``recv``): a send starts only
  once its receive is posted, and the receive ends when the payload is written;
* **mailbox** (one slot per transfer): a send starts without its receiver; the
  receive starts no earlier than the send's end and ends when the payload is
  written; the send of generation ``k + 1`` waits until the receive of ``k``
  has freed the slot.

Each step's duration is what `transfer_busy_ns` charges (the sender's part; the
receiver's part beyond the sender's for a receive). This is a simpler model than
the event graph (`raptor_cp.periodic.events`: no switch queues, no request and
permission flits of their own), so the rendezvous column is checked against the
stage's own recurrence from the product (printed beside it). It answers "how much
would receive-side buffering decouple this stage?" (docs/benchmarks.md,
"Twelfth pass"); pimsim-nn has no such send.
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
from split import hand_split

from raptor_cp.periodic.cycle_ratio import maximum_cycle_ratio
from raptor_cp.periodic.graph import PeriodicGraph
from raptor_cp.periodic.rendezvous_order import transfer_busy_ns
from raptor_cp.periodic.steps import Compute, Recv, Send, Step
from raptor_cp.pipeline.stage_recurrence import stage_recurrences
from raptor_cp.targets.base import StepTiming


def recurrence_ns(programs: list[list[Step]], timing: StepTiming, mailbox: bool) -> float:
    """The maximum cycle ratio of ``programs`` (only compute, send and receive steps)
    under rendezvous or mailbox transfers (module docstring)."""
    node: list[list[int]] = []
    duration: list[list[int]] = []
    count = 0
    for c, program in enumerate(programs):
        node.append(list(range(count, count + len(program))))
        count += len(program)
        spans = []
        for step in program:
            if isinstance(step, Compute):
                spans.append(step.ns)
            elif isinstance(step, Send):
                spans.append(transfer_busy_ns(timing, c, step.peer, step.nbytes)[0])
            else:
                assert isinstance(step, Recv)
                send, receive = transfer_busy_ns(timing, step.peer, c, step.nbytes)
                spans.append(receive - send if mailbox else receive)
        duration.append(spans)
    edges: list[tuple[int, int, int, int]] = []
    for c, program in enumerate(programs):
        for i in range(len(program)):
            following = (i + 1) % len(program)
            edges.append((node[c][i], node[c][following], duration[c][i], int(following == 0)))
    sends: dict[tuple[int, int], list[int]] = defaultdict(list)
    receives: dict[tuple[int, int], list[int]] = defaultdict(list)
    for c, program in enumerate(programs):
        for i, step in enumerate(program):
            if isinstance(step, Send):
                sends[c, step.peer].append(node[c][i])
            elif isinstance(step, Recv):
                receives[step.peer, c].append(node[c][i])
    span = {n: duration[c][i] for c in range(len(programs)) for i, n in enumerate(node[c])}
    alias = np.arange(count)
    for pair, sent in sends.items():
        for s, r in zip(sent, receives[pair], strict=True):
            if mailbox:
                edges.append((s, r, span[s], 0))  # the payload is in the slot
                edges.append((r, s, span[r], 1))  # the slot is free again
            else:
                alias[r] = s  # both start together: one node
    edges = [(int(alias[u]), int(alias[v]), w, d) for u, v, w, d in edges]
    ratio = maximum_cycle_ratio(PeriodicGraph.from_edges(count, edges))
    return 0.0 if ratio is None else float(ratio.ratio)


def main(argv: list[str]) -> None:
    model, target, *stage_specs = argv
    split = hand_split(model, target, stage_specs)
    timing, realization, core_stage = split.timing, split.realization, split.core_stage
    print(f"python benchmarks/experiments/mailbox.py {' '.join(argv)}")
    print("stage  occupancy  own recurrence  rendezvous (this model)  mailbox")
    for entry in stage_recurrences(realization, core_stage, timing):
        programs = [
            [x for x in program if isinstance(x, (Compute, Send, Recv))]
            if core_stage[c] == entry.stage
            else []
            for c, program in enumerate(realization.cores)
        ]
        own = entry.own_recurrence_ns or 0.0
        blocking = recurrence_ns(programs, timing, mailbox=False)
        buffered = recurrence_ns(programs, timing, mailbox=True)
        print(
            f"{entry.stage:>5}  {entry.occupancy_ns / 1e6:>9.3f}  {own / 1e6:>14.3f}  "
            f"{blocking / 1e6:>23.3f}  {buffered / 1e6:>7.3f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
