"""Property tests on random graphs, targets and configs (hypothesis).

For any input the generators produce, valid or not:

* ``raptor-cp`` never shows a traceback: it succeeds (exit 0) or reports one
  ``error:`` line with exit 2;
* every schedule it writes passes the independent checker again, read back
  from ``schedule.json`` (not taken from memory);
* two runs on identical inputs write byte-identical ``schedule.json`` and
  ``trace.json`` (pipeline mode: ``schedule.json`` and the selection report);
* a pimsim-nn config of random fields is read or rejected with
  `InvalidConfigError`, nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from raptor_cp.cli import main
from raptor_cp.errors import InvalidConfigError
from raptor_cp.flows import prepare
from raptor_cp.problems import LatencyProblem
from raptor_cp.problems.latency import check_schedule
from raptor_cp.schedule import Schedule
from raptor_cp.targets.pim.config import parse_chip_config

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
COST = st.one_of(st.integers(0, 200), st.integers(0, 2**48))
"""Mostly small costs; sometimes large enough to reach the 2^46 ns horizon limit."""


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, Any]:
    """A raptor-graph document: a random DAG, sometimes with a back edge (a cycle)."""
    n = draw(st.integers(1, 10))
    weights = [
        {"name": f"w{i}", "size": draw(st.integers(1, 40))} for i in range(draw(st.integers(0, 3)))
    ]
    tasks = []
    for i in range(n):
        task: dict[str, Any] = {"name": f"t{i}", "cost": draw(COST)}
        used = (
            draw(st.lists(st.sampled_from([w["name"] for w in weights]), unique=True, max_size=2))
            if weights
            else []
        )
        if used:
            task["weights"] = used
        tasks.append(task)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=14)) if pairs else []
    edges = [
        {"src": f"t{i}", "dst": f"t{j}", "bytes": draw(st.integers(0, 5000))} for i, j in chosen
    ]
    if chosen and draw(st.integers(0, 9)) == 0:
        i, j = chosen[0]
        edges.append({"src": f"t{j}", "dst": f"t{i}", "bytes": 1})
    return {"format": "raptor-graph", "version": 1, "name": "random", "weights": weights,
            "tasks": tasks, "edges": edges}  # fmt: skip


@st.composite
def pim_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid pimsim-nn chip config: a small mesh with random capacity and clocks."""
    cores = draw(st.integers(1, 9))
    cols = draw(st.integers(1, cores))
    layout = [-(-cores // cols), cols]
    return {
        "chip_config": {
            "core_cnt": cores,
            "network_config": {"layout": layout, "bus_width": draw(st.integers(1, 64))},
            "core_config": {
                "period": draw(st.sampled_from([0.5, 1, 2.5])),
                "matrix_config": {"xbar_array_count": draw(st.integers(1, 60))},
            },
        }
    }  # fmt: skip


TARGETS = st.one_of(
    st.builds(lambda p, c: f"generic:{p}:{c}", st.integers(1, 6), st.integers(0, 3)),
    pim_configs(),
)


def _write(tmp: Path, document: dict[str, Any], target: str | dict[str, Any]) -> tuple[Path, str]:
    model = tmp / "model.json"
    model.write_text(json.dumps(document))
    if isinstance(target, dict):
        config = tmp / "chip.json"
        config.write_text(json.dumps(target))
        target = str(config)
    return model, target


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _assert_success_or_one_error(result: Result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr


def _schedule_from_file(problem: LatencyProblem, document: dict[str, Any]) -> Schedule:
    """The schedule ``schedule.json`` describes, rebuilt on ``problem``'s task ids."""
    index = {name: i for i, name in enumerate(problem.graph.names)}
    order = tuple(tuple(index[name] for name in core) for core in document["core_order"])
    start = np.zeros(problem.graph.num_tasks, dtype=np.int64)
    for task in document["tasks"]:
        start[index[task["name"]]] = task["start_ns"]
    return Schedule(order, start, document["scheduler"])


@SETTINGS
@given(document=graphs(), target=TARGETS, scheduler=st.sampled_from(["peft", "heft"]))
def test_latency_compile_is_checked_and_byte_identical(
    tmp_path_factory: Any, document: dict[str, Any], target: Any, scheduler: str
) -> None:
    tmp = tmp_path_factory.mktemp("latency")
    model, spec = _write(tmp, document, target)
    first = _run(
        "compile", model, "-t", spec, "--scheduler", scheduler, "--out", tmp / "a", "--json"
    )
    _assert_success_or_one_error(first)
    if first.exit_code != 0:
        assert not (tmp / "a").exists()
        return
    written = json.loads((tmp / "a" / "schedule.json").read_text())
    prepared = prepare(model, spec)
    problem = LatencyProblem(prepared.graph, prepared.target)
    assert check_schedule(problem, _schedule_from_file(problem, written)) == written["makespan_ns"]
    second = _run(
        "compile", model, "-t", spec, "--scheduler", scheduler, "--out", tmp / "b", "--json"
    )
    assert second.exit_code == 0
    for name in ("schedule.json", "trace.json"):
        assert (tmp / "a" / name).read_bytes() == (tmp / "b" / name).read_bytes(), name


@SETTINGS
@given(document=graphs(), target=TARGETS, depth=st.integers(2, 4))
def test_pipeline_compile_never_fails_with_a_traceback_and_is_byte_identical(
    tmp_path_factory: Any, document: dict[str, Any], target: Any, depth: int
) -> None:
    tmp = tmp_path_factory.mktemp("pipeline")
    model, spec = _write(tmp, document, target)
    first = _run("compile", model, "-t", spec, "--pipeline", depth, "--out", tmp / "a", "--json")
    _assert_success_or_one_error(first)
    event(f"exit {first.exit_code}")
    if first.exit_code != 0:
        return
    second = _run("compile", model, "-t", spec, "--pipeline", depth, "--out", tmp / "b", "--json")
    assert second.exit_code == 0
    for name in ("schedule.json", "reports/pipeline_selection.json"):
        a = json.loads((tmp / "a" / name).read_text())
        b = json.loads((tmp / "b" / name).read_text())
        a.pop("phase_times_s", None), b.pop("phase_times_s", None)  # measured wall times
        assert a == b, name


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
CONFIG_FIELDS = st.sampled_from(
    ["core_cnt", "global_memory_switch_id", "network_config", "core_config", "layout", "bus_width",
     "period", "matrix_config", "xbar_size", "xbar_array_count", "cell_precision", "dac_count",
     "adc_count", "pipeline_mode", "local_memory_config", "data_width", "typo_field"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    chip=st.dictionaries(CONFIG_FIELDS, JSON_VALUES, max_size=6),
    network=st.dictionaries(CONFIG_FIELDS, JSON_VALUES, max_size=3),
)
def test_a_random_pimsim_config_is_read_or_rejected_with_one_message(
    chip: dict[str, Any], network: dict[str, Any]
) -> None:
    document = {"chip_config": {"network_config": {"layout": [2, 2], **network}, **chip}}
    try:
        parse_chip_config(json.loads(json.dumps(document)), "cfg.json")
    except InvalidConfigError as error:
        event("rejected")
        assert "\n" not in str(error) and str(error).startswith("cfg.json: ")
    else:
        event("read")


ARCS = st.lists(
    st.tuples(
        st.integers(1, 6),
        st.integers(1, 6),
        st.one_of(st.integers(-50, 50), st.integers(-(2**60), 2**60)),
        st.integers(0, 3),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(arcs=ARCS, minimum=st.booleans(), method=st.sampled_from(["howard", "bisection"]))
def test_a_random_dasdan_graph_gives_a_ratio_or_one_error(
    tmp_path_factory: Any, arcs: list[tuple[int, int, int, int]], minimum: bool, method: str
) -> None:
    path = tmp_path_factory.mktemp("mcr") / "g.d"
    lines = [f"p g 6 {len(arcs)}", *(f"a {u} {v} {w} {d}" for u, v, w, d in arcs)]
    path.write_text("\n".join(lines) + "\n")
    args = ["cycle-ratio", path, "--method", method, "--json", *(["--min"] if minimum else [])]
    result = _run(*args)
    _assert_success_or_one_error(result)
    event(f"exit {result.exit_code}")
    if result.exit_code == 0:
        assert json.loads(result.stdout)["graph"] == str(path)
