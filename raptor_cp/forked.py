"""Evaluate independent items side by side in forked child processes.

Pipeline selection spends most of its time building candidates and
evaluating them (realization, event extraction, two queue runs and the
recurrence witness: 1-2 s each for ResNet-50), and the candidates of one beam
round are independent of each other's results. `ForkedBatch` computes such a
batch on up to ``jobs`` CPUs: an item starts in a forked child as soon as it
is submitted (while the parent goes on with the next one), and the parent
computes the last item itself. A child shares the parent's memory
copy-on-write, so nothing is pickled on the way in (the prepared graph and
the plans stay where they are); only the result comes back, pickled through
a pipe. Results are returned in item order and do not depend on ``jobs``, so
a compile is byte for byte the same with one CPU or several.

Forking is used only where it is safe and cheap: on Linux (the platform's
``fork`` keeps the numpy state usable in the child), and only when more than
one CPU is usable. Elsewhere, or with ``jobs`` 1, the items run one after the
other in this process. A child ignores Ctrl-C (the parent stops it), never
runs the parent's cleanup (it leaves through ``os._exit``), and reports an
exception by returning it; an exception that cannot be pickled comes back as
its text.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
from collections.abc import Callable
from typing import Generic, TypeVar

from raptor_cp.progress import reporting

T = TypeVar("T")
R = TypeVar("R")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    """True where `ForkedBatch` forks: Linux (see the module docstring)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


class ForkedBatch(Generic[T, R]):
    """A batch of items evaluated by ``function``, started as they are submitted.

    A submitted item starts at once in a forked child while fewer than ``jobs -
    1`` children run (the CPUs beside this process), so that the caller goes on
    with its own work (building the next candidate, say) while the child
    computes. `results` runs the items still waiting: in children while CPUs
    are free, the last one (and any other that finds every child CPU busy) in
    this process, and returns every outcome in submission order. With ``jobs``
    1 or where `can_fork` is false, everything runs in this process at
    `results`. Call `close` when the caller fails before `results`: it stops
    the children.
    """

    def __init__(self, function: Callable[[T], R], jobs: int) -> None:
        self.function = function
        self.fork = jobs > 1 and can_fork()
        self.child_limit = max(0, jobs - 1)
        self.outcomes: list[tuple[bool, object] | None] = []
        self.running: list[tuple[int, _Child]] = []
        self.waiting: list[tuple[int, T]] = []

    def submit(self, item: T) -> None:
        """Add ``item``; start it in a child now if a child CPU is free (a child that has
        finished frees its CPU: its outcome is read now)."""
        position = len(self.outcomes)
        self.outcomes.append(None)
        for index, (done, child) in reversed(list(enumerate(self.running))):
            if child.ready():
                del self.running[index]
                self.outcomes[done] = child.collect()
        if self.fork and len(self.running) < self.child_limit:
            self.running.append((position, _Child.start(self.function, item)))
        else:
            self.waiting.append((position, item))

    def results(self) -> list[R]:
        """Every submitted item's result in submission order; the batch is empty after.

        Raises the exception of the first failing item in order, after every
        child has ended.
        """
        try:
            while self.waiting:
                if self.fork and len(self.waiting) > 1 and len(self.running) < self.child_limit:
                    position, item = self.waiting.pop(0)
                    self.running.append((position, _Child.start(self.function, item)))
                    continue
                position, item = self.waiting.pop(0)
                self.outcomes[position] = _call(self.function, item)
                if self.running and self.waiting:
                    self._collect_oldest()  # it ran beside this one: free its CPU
            while self.running:
                self._collect_oldest()
        finally:
            self.close()
        outcomes, self.outcomes = self.outcomes, []
        results: list[R] = []
        for outcome in outcomes:
            assert outcome is not None
            ok, value = outcome
            if not ok:
                assert isinstance(value, BaseException)
                raise value
            results.append(value)  # type: ignore[arg-type]
        return results

    def close(self) -> None:
        """Stop every child still running and forget the items still waiting."""
        running, self.running, self.waiting = self.running, [], []
        for _, child in running:
            child.stop()

    def _collect_oldest(self) -> None:
        position, child = self.running.pop(0)
        try:
            self.outcomes[position] = child.collect()
        finally:
            child.stop()


def _call(function: Callable[[T], R], item: T) -> tuple[bool, object]:
    try:
        return True, function(item)
    except Exception as error:  # returned, raised by the parent in item order
        return False, error


class _Child:
    """One forked child computing one item and writing the pickled outcome to a pipe."""

    def __init__(self, pid: int, read_fd: int) -> None:
        self.pid = pid
        self.read_fd = read_fd
        self.reaped = False

    @classmethod
    def start(cls, function: Callable[[T], R], item: T) -> _Child:
        sys.stdout.flush()
        sys.stderr.flush()
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, write, leave without the parent's cleanup
            status = 1
            try:
                os.close(read_fd)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                with reporting(lambda phase, detail: None):
                    outcome = _call(function, item)
                try:
                    payload = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as error:
                    failure = RuntimeError(
                        f"a forked evaluation's {'result' if outcome[0] else 'error'} "
                        f"({type(outcome[1]).__name__}: {outcome[1]}) cannot be returned: {error}"
                    )
                    payload = pickle.dumps((False, failure))
                with os.fdopen(write_fd, "wb") as pipe:
                    pipe.write(payload)
                status = 0
            finally:
                os._exit(status)
        os.close(write_fd)
        return cls(pid, read_fd)

    def ready(self) -> bool:
        """Whether the child's outcome has arrived (its pipe has data or is closed)."""
        return bool(select.select([self.read_fd], [], [], 0)[0])

    def collect(self) -> tuple[bool, object]:
        """Read the child's outcome and reap it."""
        with os.fdopen(self.read_fd, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        self.reaped = True
        if not payload:
            return False, RuntimeError(
                f"a forked evaluation process ended without a result (wait status {status})"
            )
        try:
            outcome = pickle.loads(payload)
        except Exception as error:
            return False, RuntimeError(f"a forked evaluation's outcome cannot be read: {error}")
        assert isinstance(outcome, tuple)
        return outcome

    def stop(self) -> None:
        """Kill and reap the child if `collect` did not (the parent failed or was interrupted)."""
        if self.reaped:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.reaped = True
        with contextlib.suppress(OSError):  # already closed by an interrupted `collect`
            os.close(self.read_fd)
