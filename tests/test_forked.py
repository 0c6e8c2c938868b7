"""`raptor_cp.forked`: side-by-side evaluation gives what one-at-a-time evaluation gives."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest

from raptor_cp.forked import ForkedBatch, can_fork, usable_cpus

needs_fork = pytest.mark.skipif(not can_fork(), reason="forked evaluation runs on Linux only")


def forked_map(function: Callable[[int], object], items: list[int], jobs: int) -> list[object]:
    """Every item submitted at once, then every result, in item order."""
    batch: ForkedBatch[int, object] = ForkedBatch(function, jobs)
    for item in items:
        batch.submit(item)
    return batch.results()


def _square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@needs_fork
@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_results_come_back_in_item_order(jobs: int) -> None:
    found = forked_map(_square_and_pid, list(range(7)), jobs)
    assert [value for value, _ in found] == [x * x for x in range(7)]
    # The first item ran in a child (where the others ran depends on when children end).
    assert found[0][1] != os.getpid()


def _started_at(x: int) -> float:
    return time.monotonic()


@needs_fork
def test_a_submitted_item_starts_before_results_are_asked_for() -> None:
    # The first item runs in a child while this process sleeps; the second is submitted after.
    batch = ForkedBatch(_started_at, 2)
    batch.submit(0)
    submitted = time.monotonic()
    time.sleep(1.0)  # the caller's own work
    batch.submit(1)
    started, last = batch.results()
    assert started < submitted + 0.5 < last


def test_one_job_runs_everything_in_this_process() -> None:
    found = forked_map(_square_and_pid, [1, 2, 3], 1)
    assert found == [(1, os.getpid()), (4, os.getpid()), (9, os.getpid())]


def _fail_on_odd(x: int) -> int:
    if x % 2:
        raise ValueError(f"odd {x}")
    return x


@needs_fork
def test_the_first_failing_item_in_order_raises() -> None:
    with pytest.raises(ValueError, match="odd 1"):
        forked_map(_fail_on_odd, [0, 1, 2, 3], 4)
    with pytest.raises(ValueError, match="odd 3"):
        forked_map(_fail_on_odd, [2, 3], 2)


def _die_in_child(x: int) -> int:
    if x == 1:
        os._exit(7)
    return x


@needs_fork
def test_a_child_that_dies_is_an_error_not_a_missing_result() -> None:
    with pytest.raises(RuntimeError, match="ended without a result"):
        forked_map(_die_in_child, [1, 0], 2)


def _unpicklable(x: int) -> object:
    return threading.Lock()


@needs_fork
def test_an_unpicklable_result_comes_back_as_an_error() -> None:
    with pytest.raises(RuntimeError, match=r"result .*cannot be returned"):
        forked_map(_unpicklable, [0, 1], 2)


def test_usable_cpus_is_positive() -> None:
    assert usable_cpus() >= 1


@needs_fork
def test_close_stops_the_children_of_a_failed_caller() -> None:
    batch = ForkedBatch(time.sleep, 2)
    batch.submit(60)
    (_, child), *_ = batch.running
    batch.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)
    assert batch.running == [] and batch.waiting == []


@needs_fork
def test_a_finished_child_frees_its_cpu_for_the_next_item() -> None:
    batch = ForkedBatch(_square_and_pid, 2)
    batch.submit(2)
    (_, child), *_ = batch.running
    deadline = time.monotonic() + 30
    while not child.ready() and time.monotonic() < deadline:
        time.sleep(0.01)
    batch.submit(3)  # starts in a child too: the first one's outcome is read
    found = batch.results()
    assert [value for value, _ in found] == [4, 9]
    assert all(pid != os.getpid() for _, pid in found)
