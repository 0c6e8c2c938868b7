"""Reader for heterogeneous task graphs in the CSV layout of the HEFT test suite.

The layout is the one of github.com/mackncheesiest/heft (used there for the
Topcuoglu, Hariri, Wu 2002 example DAG): in one folder,

- ``<name>_task_exe_time.csv``: a header row of core names, then one row per
  task with its execution time on each core;
- ``<name>_task_connectivity.csv``: an n x n matrix with header row and column
  of task names, entry (i, j) > 0 being the communication cost of edge i -> j
  (0 means no edge, so a free edge cannot be expressed);
- optionally ``<name>_resource_BW.csv``: a P x P bandwidth matrix. Only uniform
  bandwidth 1 between distinct cores is supported (communication time = edge
  cost), which is what `GenericTarget` with ``ns_per_byte=1`` models.

Times are read as integer nanoseconds and edge costs as bytes.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from raptor_cp.errors import InvalidInputError
from raptor_cp.graph import ComputeGraph
from raptor_cp.targets.generic import GenericTarget


def read_topcuoglu(folder: str | Path) -> tuple[ComputeGraph, GenericTarget]:
    """Read a heterogeneous task graph and its unit-bandwidth target from ``folder``.

    The graph's ``core_cost`` is the execution-time table (its ``cost`` is each
    task's fastest time) and ``edge_bytes`` the connectivity costs; the target
    is ``GenericTarget(P, ns_per_byte=1)``.

    Raises
    ------
    InvalidInputError
        Naming the file, row and column of a missing file, a non-integer or
        negative entry, inconsistent task lists or non-unit bandwidth.
    """
    folder = Path(folder)
    exe_path = _one_file(folder, "_task_exe_time.csv")
    conn_path = _one_file(folder, "_task_connectivity.csv")
    exe_header, exe_names, exe = _read_table(exe_path)
    conn_header, conn_names, conn = _read_table(conn_path)
    if conn_header != conn_names:
        raise InvalidInputError(
            f"{conn_path}: row names {conn_names} differ from column names {conn_header}"
        )
    if len(exe_names) != len(conn_names):
        raise InvalidInputError(
            f"{exe_path}: {len(exe_names)} tasks but {conn_path.name} has {len(conn_names)}"
        )
    bw_files = sorted(folder.glob("*_resource_BW.csv"))
    if bw_files:
        _check_unit_bandwidth(bw_files[0], len(exe_header))
    src, dst = np.nonzero(conn)
    graph = ComputeGraph(
        names=tuple(conn_names),
        cost=exe.min(axis=1),
        edge_src=src,
        edge_dst=dst,
        edge_bytes=conn[src, dst],
        core_cost=exe,
        name=exe_path.name.removesuffix("_task_exe_time.csv"),
    )
    return graph, GenericTarget(len(exe_header), ns_per_byte=1)


def _one_file(folder: Path, suffix: str) -> Path:
    matches = sorted(folder.glob(f"*{suffix}"))
    if len(matches) != 1:
        raise InvalidInputError(
            f"{folder}: expected exactly one *{suffix} file, found {len(matches)}"
        )
    return matches[0]


def _read_table(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Header (without the corner cell), row names and the non-negative integer body."""
    with path.open(newline="") as handle:
        rows = [row for row in csv.reader(handle) if row]
    if len(rows) < 2:
        raise InvalidInputError(f"{path}: expected a header row and at least one data row")
    header = [cell.strip() for cell in rows[0][1:]]
    names: list[str] = []
    body: list[list[int]] = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header) + 1:
            raise InvalidInputError(
                f"{path}: row {line} has {len(row) - 1} values, expected {len(header)}"
            )
        names.append(row[0].strip())
        values: list[int] = []
        for column, cell in zip(header, row[1:], strict=True):
            try:
                value = int(cell)
            except ValueError:
                raise InvalidInputError(
                    f"{path}: row {line} column {column}: expected an integer, got {cell!r}"
                ) from None
            if value < 0:
                raise InvalidInputError(
                    f"{path}: row {line} column {column}: negative value {value}"
                )
            values.append(value)
        body.append(values)
    return header, names, np.asarray(body, dtype=np.int64)


def _check_unit_bandwidth(path: Path, cores: int) -> None:
    header, _, bandwidth = _read_table(path)
    if bandwidth.shape != (cores, cores):
        raise InvalidInputError(f"{path}: expected a {cores} x {cores} bandwidth matrix")
    off_diagonal = ~np.eye(cores, dtype=bool)
    bad = np.argwhere(off_diagonal & (bandwidth != 1))
    if bad.size:
        i, j = (int(x) for x in bad[0])
        raise InvalidInputError(
            f"{path}: bandwidth {int(bandwidth[i, j])} from {header[i]} to {header[j]}; "
            "only uniform bandwidth 1 is supported"
        )
