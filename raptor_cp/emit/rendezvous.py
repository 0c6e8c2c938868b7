"""The static deadlock check: simulate the blocking rendezvous order of a program.

pimsim-nn's ``send`` and ``recv`` are blocking rendezvous matched per ordered
pair of cores in program order (the k-th send from ``s`` to ``r`` meets the
k-th recv on ``r`` from ``s``); ``sync`` adds a token to an event register of
its destination without blocking; ``wait`` blocks until the register holds
its count, then takes it (the HEAPLab fork's counting semantics). Every other
instruction finishes on its own. A program deadlocks exactly when, in the
abstract execution that only follows these rules, some core can never pass an
instruction (/work/notes/pimsim-nn.md section 4.6).

`check_rendezvous` runs that abstract execution: each core advances over its
transfer and synchronization instructions until it blocks; a ``send`` and the
matching ``recv`` pass together; a ``sync`` may wake a waiting core. In
latency mode every core runs its stream once; in throughput mode (pimsim-nn
loops each stream) every core runs it `ROUNDS` times, a core waiting on one
that has finished its rounds lets that core run one more (bounded by
`ROUNDS` plus the number of cores). When no core can move before all have
finished, `DeadlockError` names the cycle of waiting cores, each with the
instruction it is blocked at, or the chain that ends at a core which finished
or at a register no core signals.

Time ``O(R (F + S) + P)`` for ``R`` rounds, ``F`` transfers, ``S`` sync/wait
instructions and ``P`` cores; the instruction streams are only indexed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import RaptorError
from raptor_cp.targets.pim.isa import RECV, SEND, SYNC, WAIT, CoreProgram

ROUNDS = 3
"""Passes every core makes in the throughput-mode check."""


class DeadlockError(RaptorError):
    """The rendezvous order of a program can deadlock; the message names the cycle."""

    def __init__(self, message: str, cycle: tuple[int, ...]) -> None:
        super().__init__(message)
        self.cycle = cycle


@dataclass(frozen=True)
class RendezvousCheck:
    """A passed check: what was simulated."""

    rounds: int
    """Passes of the slowest core."""
    transfers: int
    """send/recv pairs matched, all rounds."""
    tokens: int
    """sync tokens delivered, all rounds."""


def check_rendezvous(cores: dict[int, CoreProgram], looping: bool) -> RendezvousCheck:
    """Simulate the rendezvous order of ``cores`` (module docstring).

    ``looping``: throughput mode (each stream repeats). Raises `DeadlockError`.
    """
    return _Rendezvous(cores, looping).run()


class _Rendezvous:
    def __init__(self, cores: dict[int, CoreProgram], looping: bool) -> None:
        self.looping = looping
        self.ids = sorted(c for c, p in cores.items() if len(p))
        self.ops: dict[int, list[tuple[int, int, int, int, int]]] = {}
        self.programs = cores
        for c in self.ids:
            program = cores[c]
            mask = np.isin(program.op, [SEND, RECV, SYNC, WAIT])
            index = np.flatnonzero(mask)
            self.ops[c] = list(
                zip(
                    program.op[index].tolist(),
                    program.column("core")[index].tolist(),
                    program.column("event_register")[index].tolist(),
                    program.column("wait_value")[index].tolist(),
                    index.tolist(),
                    strict=True,
                )
            )
        self.pc = dict.fromkeys(self.ids, 0)
        self.rounds = dict.fromkeys(self.ids, 0)
        self.target = ROUNDS if looping else 1
        self.cap = dict.fromkeys(self.ids, self.target)
        self.tokens: dict[tuple[int, int], int] = {}
        self.signallers: dict[tuple[int, int], set[int]] = {}
        for c in self.ids:
            for code, peer, register, _, _ in self.ops[c]:
                if code == SYNC:
                    self.signallers.setdefault((peer, register), set()).add(c)
        self.matched = 0
        self.delivered = 0

    def current(self, c: int) -> tuple[int, int, int, int, int] | None:
        """The instruction core ``c`` is at, or None once it has finished its rounds."""
        if self.rounds[c] >= self.cap[c]:
            return None
        return self.ops[c][self.pc[c]]

    def advance(self, c: int) -> None:
        self.pc[c] += 1
        if self.pc[c] == len(self.ops[c]):
            self.pc[c] = 0
            self.rounds[c] += 1

    def run(self) -> RendezvousCheck:
        for c in self.ids:
            if not self.ops[c]:
                self.rounds[c] = self.cap[c]
        work = list(self.ids)
        while True:
            while work:
                self.step(work.pop(), work)
            if all(self.rounds[c] >= self.target for c in self.ids):
                break
            if not self.extend():
                self.fail()
            work = list(self.ids)
        rounds = min((self.rounds[c] for c in self.ids), default=0)
        return RendezvousCheck(rounds, self.matched, self.delivered)

    def step(self, c: int, work: list[int]) -> None:
        """Advance core ``c`` until it blocks or finishes; queue cores it unblocks."""
        while (op := self.current(c)) is not None:
            code, peer, register, count, _ = op
            if code == SYNC:
                key = (peer, register)
                self.tokens[key] = self.tokens.get(key, 0) + 1
                self.delivered += 1
                self.advance(c)
                if peer in self.pc:
                    work.append(peer)
            elif code == WAIT:
                key = (c, register)
                if self.tokens.get(key, 0) < count:
                    return
                self.tokens[key] -= count
                self.advance(c)
            else:
                partner = self.current(peer) if peer in self.pc else None
                wanted = RECV if code == SEND else SEND
                if partner is None or partner[0] != wanted or partner[1] != c:
                    return
                self.matched += 1
                self.advance(c)
                self.advance(peer)
                work.append(peer)

    def extend(self) -> bool:
        """In throughput mode, let finished cores that others wait for run another round."""
        if not self.looping:
            return False
        grown = False
        for c in self.ids:
            op = self.current(c)
            if op is None:
                continue
            for peer in self.waits_for(c, op):
                if self.current(peer) is None and self.cap[peer] < ROUNDS + len(self.ids):
                    self.cap[peer] += 1
                    grown = True
        return grown

    def waits_for(self, c: int, op: tuple[int, int, int, int, int]) -> list[int]:
        code, peer, register, _, _ = op
        if code == WAIT:
            return sorted(self.signallers.get((c, register), ()))
        return [peer]

    def fail(self) -> None:
        blocked = [c for c in self.ids if self.current(c) is not None]
        start = blocked[0]
        path: list[int] = []
        seen: dict[int, int] = {}
        c: int | None = start
        ending = ""
        while c is not None and c not in seen:
            seen[c] = len(path)
            path.append(c)
            op = self.current(c)
            assert op is not None
            peers = self.waits_for(c, op)
            waiting = [p for p in peers if p in self.pc and self.current(p) is not None]
            if waiting:
                c = waiting[0]
            else:
                c = None
                if not peers:
                    ending = " -> no core signals that register"
                elif peers[0] not in self.pc:
                    ending = f" -> core {peers[0]}, which has no instructions"
                else:
                    ending = f" -> core {peers[0]}, which has finished its stream"
        cycle = path[seen[c] :] if c is not None else path
        shown = [self.describe(x) for x in cycle]
        if c is not None:
            text = " -> ".join([*shown, f"core {c}"])
            kind = "a cycle of waiting cores"
        else:
            text = " -> ".join(shown) + ending
            kind = "a chain of waiting cores"
        raise DeadlockError(
            f"deadlock under blocking rendezvous: {kind}: {text} ({len(blocked)} core(s) blocked)",
            tuple(cycle),
        )

    def describe(self, c: int) -> str:
        op = self.current(c)
        assert op is not None
        index = op[4]
        pass_note = f", pass {self.rounds[c] + 1}" if self.looping else ""
        return f"core {c} (instruction {index}: {self.programs[c].describe(index)}{pass_note})"
