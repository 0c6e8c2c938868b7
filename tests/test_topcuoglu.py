"""Tests of the Topcuoglu/HEFT-test-suite CSV reader."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidInputError
from raptor_cp.workload.topcuoglu import read_topcuoglu

TOPCUOGLU = Path(__file__).parent / "data" / "topcuoglu"


def test_reads_the_example_dag() -> None:
    graph, target = read_topcuoglu(TOPCUOGLU)
    assert graph.num_tasks == 10
    assert graph.names[0] == "T0"
    assert graph.core_cost[0].tolist() == [14, 16, 9]
    assert graph.num_edges == 15
    assert (int(graph.edge_src[0]), int(graph.edge_dst[0]), int(graph.edge_bytes[0])) == (0, 1, 18)
    assert (target.cores, target.transfer_ns(0, 1, 18), target.transfer_ns(1, 1, 18)) == (3, 18, 0)


def copy_example(tmp_path: Path) -> Path:
    for path in TOPCUOGLU.glob("*.csv"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def test_missing_exe_time_file_is_rejected(tmp_path: Path) -> None:
    folder = copy_example(tmp_path)
    (folder / "canonicalgraph_task_exe_time.csv").unlink()
    with pytest.raises(
        InvalidInputError, match=r"expected exactly one \*_task_exe_time\.csv file, found 0$"
    ):
        read_topcuoglu(folder)


def test_non_integer_time_is_rejected(tmp_path: Path) -> None:
    folder = copy_example(tmp_path)
    path = folder / "canonicalgraph_task_exe_time.csv"
    path.write_text(path.read_text().replace("T_0,14,16,9", "T_0,14,1.5,9"))
    with pytest.raises(
        InvalidInputError,
        match=r"canonicalgraph_task_exe_time\.csv: row 2 column P_1: expected an integer, "
        r"got '1\.5'$",
    ):
        read_topcuoglu(folder)


def test_non_unit_bandwidth_is_rejected(tmp_path: Path) -> None:
    folder = copy_example(tmp_path)
    path = folder / "canonicalgraph_resource_BW.csv"
    path.write_text(path.read_text().replace("P_0,0,1,1", "P_0,0,2,1"))
    with pytest.raises(
        InvalidInputError,
        match=r"bandwidth 2 from P_0 to P_1; only uniform bandwidth 1 is supported$",
    ):
        read_topcuoglu(folder)
