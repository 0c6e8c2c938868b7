"""Kasahara STG reader: shipped graphs and every error path, with line numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidInputError
from raptor_cp.workload.model import OpKind, Workload
from raptor_cp.workload.stg_reader import read_stg

DATA = Path(__file__).parent / "data" / "stg"


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


def critical_path(workload: Workload) -> int:
    finish: dict[str, int] = {}
    for op in workload.operations:
        finish[op.name] = max((finish[p] for p in op.inputs), default=0) + op.task_cost
    return max(finish.values())


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "g.stg"
    path.write_text(text)
    return path


# 2 real tasks: 0 -> 1 -> 3, 0 -> 2 -> 3
GOOD = "2\n0 0 0\n1 4 1 0\n2 5 1 0\n3 0 2 1 2\n# info\n"


@pytest.mark.parametrize(
    ("name", "cp_length"), [("rand0000.stg", 55), ("rand0045.stg", 79), ("rand0090.stg", 48)]
)
def test_shipped_graph_has_52_tasks_and_its_recorded_critical_path(
    name: str, cp_length: int
) -> None:
    workload = read_stg(DATA / name)
    assert len(workload.operations) == 52
    assert {op.kind for op in workload.operations} == {OpKind.TASK}
    assert critical_path(workload) == cp_length


def test_rand0000_tasks_keep_ids_costs_and_predecessors() -> None:
    workload = read_stg(DATA / "rand0000.stg")
    assert workload.name == "rand0000"
    ops = workload.by_name()
    assert (ops["1"].task_cost, ops["1"].inputs, ops["1"].input_bytes) == (9, ("0",), (0,))
    assert ops["45"].inputs == ("24", "27", "37")
    assert ops["51"].task_cost == 0
    assert len(ops["51"].inputs) == 11
    assert sum(op.task_cost for op in workload.operations) == 262


def test_small_graph_maps_every_task(tmp_path: Path) -> None:
    workload = read_stg(write(tmp_path, GOOD))
    assert [(op.name, op.task_cost, op.inputs) for op in workload.operations] == [
        ("0", 0, ()),
        ("1", 4, ("0",)),
        ("2", 5, ("0",)),
        ("3", 0, ("1", "2")),
    ]


def test_forward_predecessor_is_reordered(tmp_path: Path) -> None:
    workload = read_stg(write(tmp_path, "2\n0 0 0\n1 4 1 2\n2 5 1 0\n3 0 1 1\n"))
    assert [op.name for op in workload.operations] == ["0", "2", "1", "3"]


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "# only a comment\n\n")
    message = f"{path}: empty file (expected the task count on line 1)"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_bad_task_count_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "two\n")
    message = f"{path}: line 1: expected a non-negative integer task count, found 'two'"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_header_with_extra_fields_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "2 3\n")
    message = f"{path}: line 1: expected only the task count, found 2 fields"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_truncated_file_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "2\n0 0 0\n1 4 1 0\n")
    message = f"{path}: file ends after 2 of 4 task lines (tasks 0..3)"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_negative_cost_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("2 5 1 0", "2 -5 1 0"))
    message = f"{path}: line 4: expected a non-negative integer cost of task 2, found '-5'"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_task_out_of_sequence_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("2 5 1 0", "7 5 1 0"))
    message = f"{path}: line 4: expected task id 2, found 7"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_short_task_line_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("2 5 1 0", "2 5"))
    message = (
        f"{path}: line 4: expected 'task_id cost num_predecessors predecessors...', found 2 fields"
    )
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_predecessor_count_mismatch_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("3 0 2 1 2", "3 0 3 1 2"))
    message = f"{path}: line 5: task 3 declares 3 predecessors but lists 2"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_unknown_predecessor_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("3 0 2 1 2", "3 0 2 1 9"))
    message = f"{path}: line 5: task 3 names unknown predecessor 9 (tasks are 0..3)"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_repeated_predecessor_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("3 0 2 1 2", "3 0 2 1 1"))
    message = f"{path}: line 5: task 3 lists predecessor 1 twice"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_cycle_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("1 4 1 0", "1 4 1 2").replace("2 5 1 0", "2 5 1 1"))
    message = f"{path}: line 3: dependency cycle through tasks 1 -> 2 -> 1"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_data_after_last_task_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "4 0 0\n")
    message = f"{path}: line 7: unexpected data after the last task 3: '4 0 0'"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_stg(path)


def test_missing_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "none.stg"
    with pytest.raises(InvalidInputError, match=exactly(f"{path}: no such file")):
        read_stg(path)
