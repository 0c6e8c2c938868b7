"""Initial pipeline pieces: spare cores, the interval estimate's terms, compact stage runs."""

from __future__ import annotations

import numpy as np

from raptor_cp.pipeline.initial import add_spare_cores
from raptor_cp.pipeline.report import task_stage_runs
from raptor_cp.pipeline.schedule import IntervalEstimate
from raptor_cp.pipeline_problems import Stage


def test_spare_cores_go_to_the_most_loaded_stage_per_core() -> None:
    stages = (Stage(0, 2, 1), Stage(2, 3, 2), Stage(3, 5, 1))
    # Work per core: 90, 30, 40 -> stage 0 twice (45, then 30), then stage 2 (40 > 30).
    grown = add_spare_cores(stages, 7, work=[90, 60, 40], tasks=[10, 10, 10])
    assert [s.cores for s in grown] == [3, 2, 2]
    assert [(s.first, s.stop) for s in grown] == [(0, 2), (2, 3), (3, 5)]


def test_ties_go_to_the_earlier_stage() -> None:
    grown = add_spare_cores((Stage(0, 1, 1), Stage(1, 2, 1)), 3, work=[50, 50], tasks=[9, 9])
    assert [s.cores for s in grown] == [2, 1]


def test_a_stage_never_gets_more_cores_than_tasks_and_the_rest_stay_idle() -> None:
    grown = add_spare_cores((Stage(0, 1, 1), Stage(1, 2, 1)), 10, work=[100, 1], tasks=[2, 3])
    assert [s.cores for s in grown] == [2, 3]


def test_the_interval_is_the_largest_term_and_names_it() -> None:
    estimate = IntervalEstimate(core_work_ns=10, stage_span_ns=25, memory_service_ns=25)
    assert estimate.interval_ns == 25
    assert estimate.binding == "stage_span"
    assert IntervalEstimate(7, 3, 9).binding == "memory_service"
    assert IntervalEstimate(9, 9, 9).binding == "core_work"


def test_task_stage_runs_are_compact() -> None:
    assert task_stage_runs(np.array([0, 0, 1, 1, 1, 0, 2])) == [
        [0, 2, 0],
        [2, 5, 1],
        [5, 6, 0],
        [6, 7, 2],
    ]
    assert task_stage_runs(np.array([], dtype=np.int64)) == []
