"""External latency schedulers as suite cells (`raptor_cp.suite.external`): the instance,
the adapter protocol, and how raptor-cp judges (and refuses) what an adapter answers."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidInputError
from raptor_cp.flows import prepare
from raptor_cp.problems import LatencyProblem
from raptor_cp.suite.external import ExternalScheduler, ExternalSchedulerError, instance_json
from raptor_cp.suite.runner import run_suite
from raptor_cp.suite.spec import load_suite

DATA = Path(__file__).parent / "data"

SERIAL_ADAPTER = '''
"""Every task on core 0 in a topological order; `mode` from argv bends the answer."""
import json, sys
mode, path = sys.argv[1], sys.argv[2]
instance = json.load(open(path))
names = [t["name"] for t in instance["tasks"]]
preds = {n: set() for n in names}
for e in instance["edges"]:
    preds[e["dst"]].add(e["src"])
order, done = [], set()
while len(order) < len(names):
    for n in names:
        if n not in done and preds[n] <= done:
            order.append(n)
            done.add(n)
if mode == "reverse":
    order.reverse()
if mode == "drop":
    order.pop()
if mode == "fail":
    sys.exit("adapter: out of licences")
print(json.dumps({"cores": [order], "wall_s": 0.25}))
'''


def _suite(folder: Path, solvers: str, target: str = "generic:2:1") -> Path:
    shutil.copy(DATA / "raptor" / "fork_join.json", folder / "fork_join.json")
    (folder / "adapter.py").write_text(SERIAL_ADAPTER)
    (folder / "s.toml").write_text(
        f'[[study]]\nname = "ext"\nmode = "latency"\nworkloads = ["fork_join.json"]\n'
        f'targets = ["{target}"]\nsolvers = [{solvers}]\n'
    )
    return folder / "s.toml"


def _external(name: str, mode: str) -> str:
    return (
        f'{{ method = "external", name = "{name}", '
        f'command = ["$RAPTOR_TEST_PYTHON", "adapter.py", "{mode}"] }}'
    )


@pytest.fixture(autouse=True)
def _python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAPTOR_TEST_PYTHON", sys.executable)


def test_the_instance_states_costs_and_transfer_times_by_name() -> None:
    prepared = prepare(str(DATA / "raptor" / "fork_join.json"), "generic:3:2")
    problem = LatencyProblem(prepared.graph, prepared.target)
    instance = instance_json(problem)
    graph = prepared.graph
    assert instance["cores"] == 3 and len(instance["tasks"]) == graph.num_tasks
    assert [t["cost_ns"] for t in instance["tasks"]] == graph.cost.tolist()
    edge = instance["edges"][0]
    assert edge["transfer_ns"] == 2 * edge["bytes"]
    assert (edge["src"], edge["dst"]) == (
        graph.names[int(graph.edge_src[0])],
        graph.names[int(graph.edge_dst[0])],
    )


def test_a_pim_mesh_cannot_be_stated_as_an_external_instance() -> None:
    prepared = prepare(str(DATA / "models" / "lenet5.onnx"), "arch-a")
    message = "external schedulers take identical cores with uniform transfers .* arch-a"
    with pytest.raises(InvalidInputError, match=message):
        instance_json(LatencyProblem(prepared.graph, prepared.target))


def test_an_external_schedule_is_retimed_and_judged_like_raptors_own(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path, f'"peft", {_external("serial", "forward")}'))
    run = run_suite(suite, tmp_path / "out", show_progress=False)
    rows = {row["solver"]: row for row in run.rows}
    assert set(rows) == {"peft", "serial"}
    serial = rows["serial"]
    prepared = prepare(str(tmp_path / "fork_join.json"), "generic:2:1")
    assert serial["objective"] == int(prepared.graph.cost.sum())  # one core, no transfers
    assert serial["status"] == "feasible" and serial["details"] == {"cores_used": 1}
    assert serial["wall_s"] == 0.25  # the adapter's own time
    assert serial["bound"] == rows["peft"]["bound"]
    assert serial["variant"] == "serial"


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (
            "reverse",
            "serial: deadlock: task 'b' waits on itself through a cycle of 3 tasks in "
            "dependencies and core order",
        ),
        ("drop", "serial: task 'd' is not scheduled on any core"),
        ("fail", "serial: exit 1: adapter: out of licences"),
    ],
)
def test_a_wrong_or_failed_answer_is_the_cells_error(
    tmp_path: Path, mode: str, message: str
) -> None:
    suite = load_suite(_suite(tmp_path, _external("serial", mode)))
    run = run_suite(suite, tmp_path / "out", show_progress=False)
    (row,) = run.rows
    assert row["status"] == "error" and row["objective"] is None
    assert row["error"] == message


def test_an_unset_environment_variable_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAPTOR_TEST_PYTHON")
    run = run_suite(
        load_suite(_suite(tmp_path, _external("serial", "forward"))),
        tmp_path / "out",
        show_progress=False,
    )
    assert run.rows[0]["error"] == (
        "solver serial: '$RAPTOR_TEST_PYTHON' names an environment variable that is not set"
    )


def test_a_missing_program_is_named(tmp_path: Path) -> None:
    scheduler = ExternalScheduler("ghost", ("/no/such/python",), tmp_path)
    prepared = prepare(str(DATA / "raptor" / "fork_join.json"), "generic:2")
    with pytest.raises(ExternalSchedulerError, match=r"^ghost: cannot run '/no/such/python'$"):
        scheduler.solve(LatencyProblem(prepared.graph, prepared.target))


@pytest.mark.parametrize(
    ("solver", "mode", "message"),
    [
        (
            '{ method = "external", command = ["x"] }',
            "latency",
            "an external solver needs a 'name'",
        ),
        ('{ method = "external", name = "x", command = "x" }', "latency", "command must be a list"),
        (
            '{ method = "external", name = "x", command = ["x"], colour = 1 }',
            "latency",
            "unknown key 'colour'",
        ),
        (
            '{ method = "external", name = "x", command = ["x"], timeout = 0 }',
            "latency",
            "timeout must be positive seconds",
        ),
        (
            '{ method = "external", name = "x", command = ["x"] }',
            "packing",
            "external solvers run in latency studies only",
        ),
    ],
)
def test_a_bad_external_solver_is_one_line(
    tmp_path: Path, solver: str, mode: str, message: str
) -> None:
    path = _suite(tmp_path, solver)
    path.write_text(path.read_text().replace('mode = "latency"', f'mode = "{mode}"'))
    with pytest.raises(InvalidInputError, match=message):
        load_suite(path)
