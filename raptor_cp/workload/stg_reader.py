"""Read Kasahara Standard Task Graph Set (``.stg``) files into a `Workload` of plain tasks.

Format (kasahara.cs.waseda.ac.jp/schedule/format_e.html): the first data line
holds ``N``, the number of real tasks; then one line per task ``0..N+1``::

    task_id  processing_time  number_of_predecessors  pred_1 ... pred_k

Task 0 is the dummy entry and task N+1 the dummy exit (both cost 0). Lines
starting with ``#`` (the information block at the end of every file) and blank
lines are skipped. Every task keeps its id as its name (``"0"`` ... ``"N+1"``)
and becomes a `OpKind.TASK` operation whose cost is the processing time; the
set has no communication costs and no weights.

References
----------
T. Tobita and H. Kasahara, "A standard task graph set for fair evaluation of
multiprocessor scheduling algorithms", Journal of Scheduling 5(5):379-394, 2002.
"""

from __future__ import annotations

from pathlib import Path

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import read_text
from raptor_cp.limits import MAX_INTEGER, integer_text
from raptor_cp.toposort import CycleFound, cycle_text, order_from_predecessors
from raptor_cp.workload.model import ALL_ROWS, Operation, OpKind, Workload


def read_stg(path: str | Path) -> Workload:
    """Read one STG file; every error names the file and the line."""
    source = str(path)
    lines = [
        (number, line.split())
        for number, line in enumerate(read_text(path).splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        raise InvalidInputError(f"{source}: empty file (expected the task count on line 1)")

    def number(line: int, token: str, what: str) -> int:
        if not (token.isascii() and token.isdigit()):
            raise InvalidInputError(
                f"{source}: line {line}: expected a non-negative integer {what}, found {token!r}"
            )
        if len(token) > 20 or int(token) > MAX_INTEGER:  # length first: no 4300-digit parse
            raise InvalidInputError(
                f"{source}: line {line}: {what} {integer_text(token)} is outside the accepted "
                "range 0..2^53"
            )
        return int(token)

    first_line, header = lines[0]
    if len(header) != 1:
        raise InvalidInputError(
            f"{source}: line {first_line}: expected only the task count, found {len(header)} fields"
        )
    total = number(first_line, header[0], "task count") + 2
    if len(lines) - 1 < total:
        raise InvalidInputError(
            f"{source}: file ends after {len(lines) - 1} of {total} task lines "
            f"(tasks 0..{total - 1})"
        )
    if len(lines) - 1 > total:
        extra_line, extra = lines[total + 1]
        raise InvalidInputError(
            f"{source}: line {extra_line}: unexpected data after the last task "
            f"{total - 1}: {' '.join(extra)!r}"
        )

    costs: list[int] = []
    predecessors: list[list[int]] = []
    line_of: list[int] = []
    for task, (line, fields) in enumerate(lines[1:]):
        if len(fields) < 3:
            raise InvalidInputError(
                f"{source}: line {line}: expected 'task_id cost num_predecessors "
                f"predecessors...', found {len(fields)} fields"
            )
        found = number(line, fields[0], "task id")
        if found != task:
            raise InvalidInputError(
                f"{source}: line {line}: expected task id {task}, found {found}"
            )
        costs.append(number(line, fields[1], f"cost of task {task}"))
        count = number(line, fields[2], f"predecessor count of task {task}")
        if len(fields) - 3 != count:
            raise InvalidInputError(
                f"{source}: line {line}: task {task} declares {count} predecessors but lists "
                f"{len(fields) - 3}"
            )
        preds: list[int] = []
        seen: set[int] = set()
        for token in fields[3:]:
            pred = number(line, token, f"predecessor id of task {task}")
            if pred >= total:
                raise InvalidInputError(
                    f"{source}: line {line}: task {task} names unknown predecessor {pred} "
                    f"(tasks are 0..{total - 1})"
                )
            if pred in seen:
                raise InvalidInputError(
                    f"{source}: line {line}: task {task} lists predecessor {pred} twice"
                )
            preds.append(pred)
            seen.add(pred)
        predecessors.append(preds)
        line_of.append(line)

    try:
        order = order_from_predecessors(predecessors)
    except CycleFound as found:
        ids = cycle_text([str(t) for t in found.cycle], render=str)
        raise InvalidInputError(
            f"{source}: line {line_of[found.cycle[0]]}: dependency cycle through tasks {ids}"
        ) from None
    operations = tuple(
        Operation(
            name=str(task),
            op_type="stg",
            kind=OpKind.TASK,
            inputs=tuple(str(p) for p in predecessors[task]),
            windows=tuple(ALL_ROWS for _ in predecessors[task]),
            task_cost=costs[task],
            input_bytes=tuple(0 for _ in predecessors[task]),
        )
        for task in order
    )
    return Workload(name=Path(source).stem, operations=operations, source=source)
