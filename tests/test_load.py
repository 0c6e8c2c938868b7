"""`load_workload`: which reader each file reaches, and the dispatcher's own errors."""

from __future__ import annotations

import json
import re
import shutil
import sys
import types
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidInputError
from raptor_cp.workload.load import load_workload
from raptor_cp.workload.model import Workload

DATA = Path(__file__).parent / "data"


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


def test_stg_file_goes_to_the_stg_reader() -> None:
    workload = load_workload(DATA / "stg" / "rand0000.stg")
    assert {op.op_type for op in workload.operations} == {"stg"}
    assert len(workload.operations) == 52


def test_raptor_graph_json_goes_to_the_raptor_reader() -> None:
    workload = load_workload(DATA / "raptor" / "fork_join.json", bits=4)
    assert workload.name == "fork-join"
    assert [op.task_cost for op in workload.operations] == [40, 120, 100, 30]


def test_node_list_json_goes_to_the_pimcomp_reader_with_bits() -> None:
    workload = load_workload(DATA / "pimcomp" / "resnet18.json", bits=4)
    assert workload.operations[0].op_type == "OP_INPUT"
    assert {op.bits for op in workload.operations} == {4}


def test_node_array_json_goes_to_the_pimcomp_reader() -> None:
    workload = load_workload(DATA / "pimcomp" / "pimsyn_msra_A.json")
    assert {op.bits for op in workload.operations} == {16}


def test_extension_is_case_insensitive(tmp_path: Path) -> None:
    path = tmp_path / "G.STG"
    shutil.copy(DATA / "stg" / "rand0000.stg", path)
    assert len(load_workload(path).operations) == 52


@pytest.mark.parametrize(("bits", "expected"), [(None, 8), (4, 4)])
def test_onnx_file_goes_to_read_onnx_with_default_8_bits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bits: int | None, expected: int
) -> None:
    calls: list[tuple[Path, int]] = []

    def read_onnx(path: Path, bits: int) -> Workload:
        calls.append((path, bits))
        return Workload(name="fake", operations=())

    fake = types.ModuleType("raptor_cp.workload.onnx_reader")
    fake.read_onnx = read_onnx  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "raptor_cp.workload.onnx_reader", fake)
    path = tmp_path / "m.onnx"
    path.write_bytes(b"")
    assert load_workload(path, bits=bits).name == "fake"
    assert calls == [(path, expected)]


def test_missing_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "none.onnx"
    with pytest.raises(InvalidInputError, match=exactly(f"{path}: no such file")):
        load_workload(path)


def test_unknown_extension_lists_accepted_ones(tmp_path: Path) -> None:
    path = tmp_path / "model.txt"
    path.write_text("")
    message = f"{path}: unknown workload format '.txt' (accepted: .json, .onnx, .stg)"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        load_workload(path)


def test_file_without_extension_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "model"
    path.write_text("")
    message = f"{path}: unknown workload format '(no extension)' (accepted: .json, .onnx, .stg)"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        load_workload(path)


def test_other_json_format_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"format": "raptor-cp-schedule", "version": 1}))
    message = f"{path}: unknown JSON workload format 'raptor-cp-schedule' (expected 'raptor-graph')"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        load_workload(path)


@pytest.mark.parametrize("document", [{"tasks": []}, [], [{"name": "x"}], 3])
def test_unrecognised_json_is_rejected(tmp_path: Path, document: object) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(document))
    message = (
        f'{path}: unrecognised JSON workload: expected a raptor-graph document ("format": '
        '"raptor-graph"), a PIMCOMP-NN model ({"node_list": [...]}) or an array of '
        "PIMCOMP-NN nodes"
    )
    with pytest.raises(InvalidInputError, match=exactly(message)):
        load_workload(path)


def test_invalid_json_is_rejected_before_dispatch(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text("{")
    message = (
        f"{path}: invalid JSON at line 1 column 2: "
        "Expecting property name enclosed in double quotes"
    )
    with pytest.raises(InvalidInputError, match=exactly(message)):
        load_workload(path)
