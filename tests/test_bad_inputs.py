"""The bad-input corpus: every reader, option and output mistake a user can make.

Each case writes its input files into a fresh directory, runs one ``raptor-cp``
command from a working directory inside it, and is checked the same way
(`_assert_bad_input`): exit status 2, nothing on stdout, exactly one stderr line
``error: ...`` that is short and names the problem (the case's ``expect``
fragment), no traceback, and no file or directory left behind (staging
directories included). Commands run with ``--json`` where they have it, so that
progress lines do not mix with the error line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_cp.cli import main

DATA = Path(__file__).parent / "data"
FORK_JOIN = str(DATA / "raptor" / "fork_join.json")
LENET = str(DATA / "models" / "lenet5.onnx")
STG = str(DATA / "stg" / "rand0000.stg")
GOLDEN_PLAN = Path(__file__).parent / "golden" / "exchange-lenet5" / "exchange_plan.json"
MAX_LINE = 400
"""No error line is longer: long inputs (a 5,000-task cycle) are summarised."""

Maker = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    """One bad input: files to create, the command (``{d}`` = the case directory), the error."""

    name: str
    args: list[str]
    expect: str
    """A fragment of the error line: it names what is wrong (and where)."""
    files: dict[str, str | bytes | Maker] = field(default_factory=dict)


# -- input builders ----------------------------------------------------------------------


def graph(tasks: list[dict[str, object]], edges: list[tuple[str, str, int]] = (), **extra: object):
    """A raptor-graph document as text."""
    document = {
        "format": "raptor-graph",
        "version": 1,
        "tasks": tasks,
        "edges": [{"src": s, "dst": d, "bytes": b} for s, d, b in edges],
        **extra,
    }
    return json.dumps(document)


def chain(costs: list[object]) -> str:
    tasks = [{"name": f"t{i}", "cost": c} for i, c in enumerate(costs)]
    return graph(tasks, [(f"t{i}", f"t{i + 1}", 1) for i in range(len(costs) - 1)])


def cycle(length: int) -> str:
    tasks = [{"name": f"t{i}", "cost": 1} for i in range(length)]
    return graph(tasks, [(f"t{i}", f"t{(i + 1) % length}", 1) for i in range(length)])


TWO = [{"name": "a", "cost": 1}, {"name": "b", "cost": 1}]


def stg(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def config(chip: dict[str, object], **extra: object) -> str:
    chip = {"network_config": {"layout": [2, 2]}, "core_cnt": 4, **chip}
    return json.dumps({"chip_config": chip, **extra})


def onnx_model(nodes: list[tuple[str, list[str], list[str]]], dims: list[int]) -> Maker:
    """An ONNX file with ``nodes`` (op, inputs, outputs) from input ``x`` to output ``y``."""

    def make(path: Path) -> None:
        import onnx
        from onnx import TensorProto, helper

        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        made = [helper.make_node(op, i, o, name=f"n{k}") for k, (op, i, o) in enumerate(nodes)]
        model = helper.make_model(
            helper.make_graph(made, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]
        )
        onnx.save(model, path)

    return make


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def pimcomp(nodes: list[dict[str, object]]) -> str:
    return json.dumps({"node_list": nodes})


PIM_INPUT = {
    "name": "in",
    "operation": "OP_INPUT",
    "output_dim": [1, 1, 4, 4],
    "provider": [],
    "consumer": ["relu"],
    "bitwidth": 8,
}


def pim_node(name: str, providers: list[str], operation: str = "OP_RELU") -> dict[str, object]:
    return {
        "name": name,
        "operation": operation,
        "output_dim": [1, 1, 4, 4],
        "provider": providers,
        "consumer": [],
        "bitwidth": 8,
    }


def plan_with(**fields: object) -> str:
    """The golden LeNet-5 exchange plan with ``fields`` replaced."""
    plan = json.loads((GOLDEN_PLAN).read_text(encoding="utf-8"))
    return json.dumps({**plan, **fields})


def out_below_a_file(path: Path) -> None:
    path.write_text("a file")


def foreign_deep(path: Path) -> None:
    (path / "reports" / "mine").mkdir(parents=True)
    (path / "reports" / "mine" / "notes.txt").write_text("keep me")


def symlink_to_dir(path: Path) -> None:
    path.with_name("real").mkdir()
    path.symlink_to(path.with_name("real"))


def directory(path: Path) -> None:
    path.mkdir()


def only_text(path: Path) -> None:
    path.mkdir()
    (path / "notes.txt").write_text("not a model")


COMPILE = ["compile", "--json", "--out", "{d}/out"]
FJ = [*COMPILE, FORK_JOIN, "-t", "generic:2"]
VERIFY = ["verify", "--json", "-t", "generic:2"]

CASES: list[Case] = [
    # -- raptor-graph JSON ------------------------------------------------------------------
    Case("json-truncated", [*COMPILE, "{d}/m.json"], "invalid JSON at line 1",
         {"m.json": '{"format": "raptor-graph", "version": 1, "tasks": ['}),
    Case("json-not-utf8", [*COMPILE, "{d}/m.json"], "not UTF-8 text", {"m.json": b"\xff\xfe{}"}),
    Case("json-empty-file", [*COMPILE, "{d}/m.json"], "invalid JSON", {"m.json": ""}),
    Case("json-unknown-kind", [*COMPILE, "{d}/m.json"], "m.json", {"m.json": "[1, 2, 3]"}),
    Case("json-version-2", [*COMPILE, "{d}/m.json"], "$.version: expected 1, got 2",
         {"m.json": graph(TWO).replace('"version": 1', '"version": 2')}),
    Case("json-no-tasks", [*COMPILE, "{d}/m.json"], "$.tasks: required field is missing",
         {"m.json": json.dumps({"format": "raptor-graph", "version": 1})}),
    Case("json-zero-tasks", [*COMPILE, "{d}/m.json"], "$.tasks: expected at least 1 item",
         {"m.json": graph([])}),
    Case("json-unknown-field", [*COMPILE, "{d}/m.json"], "$.tasks[0].costt: unexpected field",
         {"m.json": graph([{"name": "a", "cost": 1, "costt": 2}])}),
    Case("json-negative-cost", [*COMPILE, "{d}/m.json"], "expected an integer >= 0, got -1",
         {"m.json": chain([-1])}),
    Case("json-string-cost", [*COMPILE, "{d}/m.json"], "expected an integer, got \"5\"",
         {"m.json": chain(["5"])}),
    Case("json-cost-2-63", [*COMPILE, "{d}/m.json"], "expected an integer <= 2^53",
         {"m.json": chain([2**63, 1, 1])}),
    Case("json-cost-1e30", [*COMPILE, "{d}/m.json"], "expected an integer <= 2^53, got 1e+30",
         {"m.json": chain([1e30])}),
    Case("json-cost-10-30", [*COMPILE, "{d}/m.json"], "(31 digits)", {"m.json": chain([10**30])}),
    Case("json-bytes-2-63", [*COMPILE, "{d}/m.json"], "$.edges[0].bytes: expected an integer <=",
         {"m.json": graph(TWO, [("a", "b", 2**63)])}),
    Case("json-weight-size-0", [*COMPILE, "{d}/m.json"], "$.weights[0].size",
         {"m.json": graph(TWO, weights=[{"name": "w", "size": 0}])}),
    Case("json-duplicate-task", [*COMPILE, "{d}/m.json"], "duplicate task name 'a'",
         {"m.json": graph([{"name": "a", "cost": 1}] * 2)}),
    Case("json-unknown-edge-task", [*COMPILE, "{d}/m.json"], "unknown task 'z'",
         {"m.json": graph(TWO, [("a", "z", 1)])}),
    Case("json-duplicate-edge", [*COMPILE, "{d}/m.json"], "duplicate edge 'a' -> 'b'",
         {"m.json": graph(TWO, [("a", "b", 1), ("a", "b", 2)])}),
    Case("json-undefined-weight", [*COMPILE, "{d}/m.json"], "undefined weight 'w'",
         {"m.json": graph([{"name": "a", "cost": 1, "weights": ["w"]}])}),
    Case("json-cycle", [*COMPILE, "{d}/m.json"], "dependency cycle through tasks 't0' -> 't1'",
         {"m.json": cycle(3)}),
    Case("json-long-cycle", [*COMPILE, "{d}/m.json"], "-> ... (a cycle of 5000)",
         {"m.json": cycle(5000)}),
    Case("json-self-loop", [*COMPILE, "{d}/m.json"], "dependency cycle through tasks 'a'",
         {"m.json": graph(TWO, [("a", "a", 1)])}),
    Case("json-deep-nesting", [*COMPILE, "{d}/m.json"], "JSON nested too deeply",
         {"m.json": deep_json(100_000)}),
    Case("json-empty-name", [*COMPILE, "{d}/m.json"], "expected a non-empty string",
         {"m.json": graph([{"name": "", "cost": 1}])}),
    Case("json-horizon", [*COMPILE, "{d}/m.json", "-t", "generic:2"],
         "beyond the limit of 2^46 ns", {"m.json": chain([2**50, 2**50, 2**50])}),
    Case("json-horizon-transfers", [*COMPILE, "{d}/m.json", "-t", "generic:2:1000000"],
         "(slowest task costs plus dearest transfers)",
         {"m.json": graph(TWO, [("a", "b", 2**40)])}),
    # -- STG --------------------------------------------------------------------------------
    Case("stg-empty", [*COMPILE, "{d}/g.stg"], "empty file", {"g.stg": ""}),
    Case("stg-bad-count", [*COMPILE, "{d}/g.stg"], "line 1: expected a non-negative integer",
         {"g.stg": stg(["two"])}),
    Case("stg-missing-lines", [*COMPILE, "{d}/g.stg"], "file ends after 1 of 3 task lines",
         {"g.stg": stg(["1", "0 0 0"])}),
    Case("stg-extra-data", [*COMPILE, "{d}/g.stg"], "unexpected data after the last task",
         {"g.stg": stg(["0", "0 0 0", "1 0 1 0", "7 7 7"])}),
    Case("stg-negative-cost", [*COMPILE, "{d}/g.stg"], "found '-5'",
         {"g.stg": stg(["1", "0 0 0", "1 -5 1 0", "2 0 1 1"])}),
    Case("stg-huge-cost", [*COMPILE, "{d}/g.stg"], "is outside the accepted range 0..2^53",
         {"g.stg": stg(["1", "0 0 0", "1 " + "9" * 30 + " 1 0", "2 0 1 1"])}),
    Case("stg-unknown-predecessor", [*COMPILE, "{d}/g.stg"], "unknown predecessor 9",
         {"g.stg": stg(["1", "0 0 0", "1 1 1 9", "2 0 1 1"])}),
    Case("stg-repeated-predecessor", [*COMPILE, "{d}/g.stg"], "lists predecessor 0 twice",
         {"g.stg": stg(["1", "0 0 0", "1 1 2 0 0", "2 0 1 1"])}),
    Case("stg-cycle", [*COMPILE, "{d}/g.stg"], "dependency cycle through tasks 1 -> 2 -> 1",
         {"g.stg": stg(["2", "0 0 0", "1 1 1 2", "2 1 1 1", "3 0 2 1 2"])}),
    Case("stg-wrong-id", [*COMPILE, "{d}/g.stg"], "expected task id 1, found 5",
         {"g.stg": stg(["1", "0 0 0", "5 1 1 0", "2 0 1 1"])}),
    # -- ONNX -------------------------------------------------------------------------------
    Case("onnx-not-onnx", [*COMPILE, "{d}/m.onnx"], "m.onnx", {"m.onnx": b"not a model"}),
    Case("onnx-truncated", [*COMPILE, "{d}/m.onnx"], "m.onnx",
         {"m.onnx": (DATA / "models" / "lenet5.onnx").read_bytes()[:2000]}),
    Case("onnx-unknown-op", [*COMPILE, "{d}/m.onnx"], "unsupported op type 'Frobnicate'",
         {"m.onnx": onnx_model([("Frobnicate", ["x"], ["y"])], [1, 3, 8, 8])}),
    Case("onnx-only-views", [*COMPILE, "{d}/m.onnx"], "nothing to schedule",
         {"m.onnx": onnx_model([("Flatten", ["x"], ["y"])], [1, 3, 8, 8])}),
    # -- PIMCOMP-NN node lists --------------------------------------------------------------
    Case("pimcomp-empty-list", [*COMPILE, "{d}/p.json"], "p.json", {"p.json": pimcomp([])}),
    Case("pimcomp-unknown-provider", [*COMPILE, "{d}/p.json"], "'ghost'",
         {"p.json": pimcomp([PIM_INPUT, pim_node("relu", ["ghost"])])}),
    # -- the model argument -----------------------------------------------------------------
    Case("model-missing", [*COMPILE, "{d}/absent.onnx"], "absent.onnx: no such file"),
    Case("model-directory", [*COMPILE, "{d}/dir"], "dir: not a file", {"dir": directory}),
    Case("model-and-example", [*COMPILE, FORK_JOIN, "--example"], "give either MODEL or --example"),
    Case("model-none", COMPILE, "missing MODEL"),
    Case("model-unknown-extension", [*COMPILE, "{d}/m.txt"], "unknown workload format '.txt'",
         {"m.txt": "hello"}),
    # -- targets and pimsim-nn configurations -----------------------------------------------
    Case("target-unknown", [*COMPILE, FORK_JOIN, "-t", "arch-z"], "unknown target 'arch-z'"),
    Case("target-empty", [*COMPILE, FORK_JOIN, "-t", ""], "--target is empty"),
    Case("target-generic-0", [*COMPILE, FORK_JOIN, "-t", "generic:0"], "at least 1 core"),
    Case("target-generic-text", [*COMPILE, FORK_JOIN, "-t", "generic:abc"], "bad generic target"),
    Case("target-generic-huge", [*COMPILE, FORK_JOIN, "-t", "generic:100000000"],
         "100000000 cores exceed the limit of 65,536"),
    Case("target-generic-negative-price", [*COMPILE, FORK_JOIN, "-t", "generic:4:-1"],
         "negative ns_per_byte"),
    Case("target-generic-huge-price", [*COMPILE, FORK_JOIN, "-t", "generic:4:" + "9" * 30],
         "is above 2^53"),
    Case("config-bad-json", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"], "invalid JSON",
         {"c.json": "{"}),
    Case("config-core-cnt-string", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         'chip_config.core_cnt: expected a positive integer, got "abc"',
         {"c.json": config({"core_cnt": "abc"})}),
    Case("config-misspelt-field", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         "chip_config.core_cnnt: unknown field (did you mean core_cnt?)",
         {"c.json": config({"core_cnnt": 4})}),
    Case("config-misspelt-nested", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         "matrix_config.xbar_array_cnt: unknown field (did you mean xbar_array_count?)",
         {"c.json": config({"core_config": {"matrix_config": {"xbar_array_cnt": 4}}})}),
    Case("config-layout-too-large", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         "a 3x3 grid for core_cnt 2 leaves whole rows empty",
         {"c.json": config({"core_cnt": 2, "network_config": {"layout": [3, 3]}})}),
    Case("config-layout-too-small", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         "fewer than core_cnt 8",
         {"c.json": config({"core_cnt": 8})}),
    Case("config-core-cnt-huge", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         "10000000 cores exceed the limit of 2,048",
         {"c.json": config({"core_cnt": 10**7, "network_config": {"layout": [2500, 4000]}})}),
    Case("config-layout-missing", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         "chip_config.network_config.layout: missing",
         {"c.json": json.dumps({"chip_config": {"core_cnt": 4}})}),
    Case("config-top-level-list", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         "expected an object", {"c.json": "[1]"}),
    Case("config-xbar-zero", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"],
         "xbar_size: expected 2 positive integers",
         {"c.json": config({"core_config": {"matrix_config": {"xbar_size": [0, 128]}}})}),
    Case("config-huge-period", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"], "within 2^53",
         {"c.json": config({"core_config": {"period": 1e300}})}),
    Case("config-network-bad-json", [*COMPILE, FORK_JOIN, "-t", "{d}/c.json"], "net.json",
         {"c.json": config({"network_config": {"layout": [2, 2], "net_config_file_path":
                                               "net.json"}}), "net.json": "{"}),
    Case("cores-zero", [*FJ, "--cores", "0"], "Invalid value for '--cores'"),
    Case("cores-over-limit", [*COMPILE, FORK_JOIN, "--cores", "5000"],
         "5000 cores exceed the limit of 2,048"),
    Case("cores-with-a-network-table", [*COMPILE, FORK_JOIN, "-t", "pimsim-64", "--cores", "80"],
         "--cores needs the mesh network model"),
    # -- compile options --------------------------------------------------------------------
    Case("lanes-zero", [*FJ, "--lanes", "0"], "Invalid value for '--lanes'"),
    Case("lanes-text", [*FJ, "--lanes", "many"], "Invalid value for '--lanes'"),
    Case("lanes-too-many-tasks", [*COMPILE, "{d}/tall.onnx", "--lanes", "100000"],
         "make 1,200,000 tasks, above the limit of 1,000,000",
         {"tall.onnx": onnx_model(
             [("Relu", [f"r{i}" if i else "x"], [f"r{i + 1}" if i < 11 else "y"])
              for i in range(12)], [1, 1, 100_000, 8])}),
    Case("bits-zero", [*FJ, "--bits", "0"], "Invalid value for '--bits'"),
    Case("bits-65", [*FJ, "--bits", "65"], "65 is not in the range 1<=x<=64"),
    Case("mode-unknown", [*FJ, "--mode", "fast"], "Invalid value for '--mode'"),
    Case("pipeline-zero", [*FJ, "--pipeline", "0"], "Invalid value for '--pipeline'"),
    Case("pipeline-1-with-mode", [*FJ, "--pipeline", "1", "--mode", "pipeline"],
         "--pipeline 1 is latency mode"),
    Case("pipeline-with-latency-mode", [*FJ, "--pipeline", "4", "--mode", "latency"],
         "--pipeline 4 selects pipeline mode"),
    Case("pipeline-with-scheduler", [*FJ, "--pipeline", "4", "--scheduler", "heft"],
         "pipeline mode has its own"),
    Case("pipeline-with-plot", [*FJ, "--pipeline", "4", "--plot"], "--plot is not available"),
    Case("periodic-without-pipeline", [*FJ, "--periodic-diagnostics"],
         "--periodic-diagnostics needs pipeline mode"),
    Case("exchange-with-pipeline", [*FJ, "--pipeline", "2", "--exchange-budget", "64"],
         "--exchange-budget is available in latency mode only"),
    Case("exchange-budget-zero", [*FJ, "--exchange-budget", "0"],
         "Invalid value for '--exchange-budget'"),
    Case("exchange-budget-generic", [*FJ, "--exchange-budget", "4096"], "generic:2"),
    Case("scheduler-unknown", [*FJ, "--scheduler", "magic"], "Invalid value for '--scheduler'"),
    Case("polish-zero", [*FJ, "--polish", "0"], "Invalid value for '--polish'"),
    Case("polish-nan", [*FJ, "--polish", "nan"], "'nan' is not a positive finite number"),
    Case("polish-with-cpsat", [*FJ, "--scheduler", "cpsat", "--polish", "1"],
         "--polish improves a heuristic's schedule; --scheduler cpsat takes --time-limit"),
    Case("polish-with-pipeline", [*FJ, "--pipeline", "2", "--polish", "1"],
         "--polish is a latency-mode option"),
    Case("polish-with-exchange", [*FJ, "--exchange-budget", "64", "--polish", "1"],
         "--polish is not available with --exchange-budget"),
    Case("time-limit-without-cpsat", [*FJ, "--time-limit", "5"],
         "--time-limit is the budget of --scheduler cpsat; to improve a heuristic's schedule"),
    Case("time-limit-inf", [*FJ, "--scheduler", "cpsat", "--time-limit", "inf"],
         "Invalid value for '--time-limit'"),
    Case("option-unknown", [*FJ, "--frob"], "No such option '--frob'"),
    Case("target-directory", [*COMPILE, FORK_JOIN, "-t", "{d}/dir"], "is a directory, not a",
         {"dir": directory}),
    Case("command-unknown", ["frobnicate"], "No such command 'frobnicate'"),
    Case("weights-exceed-the-chip", [*COMPILE, str(DATA / "models" / "vgg16.onnx")],
         "--cores 353 or more"),
    Case("task-fits-no-core", [*COMPILE, "{d}/m.json", "-t", "pimsim-64"],
         "oversized task 'a'",
         {"m.json": graph([{"name": "a", "cost": 1, "weights": ["w"]}],
                          weights=[{"name": "w", "size": 10_000}])}),
    # -- verify options ---------------------------------------------------------------------
    Case("verify-time-limit-nan", [*VERIFY, STG, "--time-limit", "nan"],
         "'nan' is not a positive finite number"),
    Case("verify-time-limit-inf", [*VERIFY, STG, "--time-limit", "inf"],
         "'inf' is not a positive finite number"),
    Case("verify-time-limit-zero", [*VERIFY, STG, "--time-limit", "0"],
         "'0' is not a positive finite number"),
    Case("verify-workers-zero", [*VERIFY, STG, "--workers", "0"], "Invalid value for '--workers'"),
    Case("verify-workers-huge", [*VERIFY, STG, "--workers", "100000"],
         "100000 is not in the range 1<=x<=256"),
    Case("verify-wall-cap-negative", [*VERIFY, STG, "--wall-cap", "-1"],
         "'-1' is not a positive finite number"),
    Case("verify-mode-unknown", [*VERIFY, STG, "--mode", "fast"], "verify --mode fast"),
    Case("verify-no-models-in-directory", [*VERIFY, "{d}/dir"], "dir", {"dir": only_text}),
    Case("verify-out-directory", [*VERIFY, STG, "--out", "{d}/dir"], "is a directory",
         {"dir": directory}),
    Case("verify-cpsat-as-heuristic", [*VERIFY, STG, "--scheduler", "cpsat"],
         "Invalid value for '--scheduler'"),
    Case("verify-missing-model", [*VERIFY], "Missing argument 'MODEL...'"),
    # -- --out mistakes ---------------------------------------------------------------------
    Case("out-empty", ["compile", "--json", FORK_JOIN, "-t", "generic:2", "--out", ""],
         "is the current directory"),
    Case("out-dot", ["compile", "--json", FORK_JOIN, "-t", "generic:2", "--out", "."],
         "is the current directory"),
    Case("out-parent", ["compile", "--json", FORK_JOIN, "-t", "generic:2", "--out", ".."],
         "is the current directory or one of its parents"),
    Case("out-below-a-file", ["compile", "--json", FORK_JOIN, "--out", "{d}/afile/sub"],
         "afile is not a directory", {"afile": out_below_a_file}),
    Case("out-in-proc", ["compile", "--json", FORK_JOIN, "--out", "/proc/raptor-out"],
         "/proc/raptor-out: cannot write in /proc"),
    Case("out-is-a-file", ["compile", "--json", FORK_JOIN, "--out", "{d}/afile"],
         "exists and is not a directory", {"afile": out_below_a_file}),
    Case("out-holds-a-foreign-file-deep", ["compile", "--json", FORK_JOIN, "--out", "{d}/o"],
         "(reports/mine)", {"o": foreign_deep}),
    Case("out-symlink", ["compile", "--json", FORK_JOIN, "--out", "{d}/link"],
         "is a symbolic link", {"link": symlink_to_dir}),
    Case("verify-out-below-a-file", [*VERIFY, STG, "--out", "{d}/afile/r.md"],
         "afile is not a directory", {"afile": out_below_a_file}),
    # -- report suites ----------------------------------------------------------------------
    Case("report-missing-suite", ["report", "{d}/s.toml", "--out", "{d}/r", "--quiet"], "s.toml"),
    Case("report-bad-toml", ["report", "{d}/s.toml", "--out", "{d}/r", "--quiet"], "s.toml",
         {"s.toml": "name = [unclosed\n"}),
    Case("report-unknown-executor",
         ["report", "{d}/s.toml", "--out", "{d}/r", "--quiet", "--executor", "slurm"],
         "Invalid value for '--executor'", {"s.toml": "name = 'x'\n"}),
    Case("report-no-out", ["report", "{d}/s.toml", "--quiet"], "Missing option '--out'",
         {"s.toml": "name = 'x'\n"}),
    # -- cycle-ratio, periodic, exchange ----------------------------------------------------
    Case("dasdan-bad-line", ["cycle-ratio", "--json", "{d}/g.d"], "g.d:2: expected a 'c', 'p'",
         {"g.d": "p g 2 1\nx 1 2\n"}),
    Case("dasdan-weight-1e40", ["cycle-ratio", "--json", "{d}/g.d"], "(41 digits)",
         {"g.d": "p g 2 2\na 1 2 1" + "0" * 40 + " 1\na 2 1 1 1\n"}),
    Case("dasdan-deadlock", ["cycle-ratio", "--json", "{d}/g.d"], "deadlock",
         {"g.d": "p g 2 2\na 1 2 1 0\na 2 1 1 0\n"}),
    Case("dasdan-node-out-of-range", ["cycle-ratio", "--json", "{d}/g.d"],
         "node 3 is outside 1..2", {"g.d": "p g 2 1\na 1 3 1 1\n"}),
    Case("dasdan-arc-count", ["cycle-ratio", "--json", "{d}/g.d"],
         "1 arc but the 'p' line announces 2", {"g.d": "p g 2 2\na 1 2 1 1\n"}),
    Case("periodic-bad-json", ["periodic", "--json", "{d}/a.json", "--target", "pimsim-64"],
         "invalid JSON", {"a.json": "{"}),
    Case("periodic-generic-target",
         ["periodic", "--json", str(DATA / "pimsim_fixtures" / "single.json"), "-t", "generic:4"],
         "generic:4"),
    Case("exchange-missing-plan", ["exchange", "--json", "{d}/plan.json"], "plan.json"),
    Case("exchange-bad-plan", ["exchange", "--json", "{d}/plan.json"], "plan.json",
         {"plan.json": '{"format": "nope"}'}),
    Case("exchange-plan-huge-tiles", ["exchange", "--json", "{d}/plan.json"],
         "1000000000000 tiles exceed the limit of 65,536", {"plan.json": plan_with(tiles=10**12)}),
    Case("exchange-plan-huge-integer", ["exchange", "--json", "{d}/plan.json"],
         "an integer within 2^53", {"plan.json": plan_with(max_transfer_words=2**60)}),
    Case("periodic-core-count", ["periodic", "--json", "{d}/a.json", "--target", "pimsim-64"],
         "core_cnt is 1000000000, but target pimsim-64 has 64 cores",
         {"a.json": json.dumps({"config": {"core_cnt": 10**9, "array_group_map": {"core0": [1]}},
                                "core0": []})}),
]  # fmt: skip


def _tree(root: Path) -> set[str]:
    """Every path under ``root``, hidden ones included, relative to it."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def _assert_bad_input(case: Case, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, content in case.files.items():
        path = root / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            content(path)
    work = root / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    before = _tree(root)
    args = [arg.replace("{d}", str(root)) for arg in case.args]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and len(lines[0]) <= MAX_LINE, lines[0]
    assert case.expect in lines[0]
    assert "Traceback" not in result.stderr
    assert _tree(root) == before, "debris left behind"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_is_one_line_exit_2_and_no_debris(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.name == "out-in-proc" and not Path("/proc/self").exists():
        pytest.skip("needs Linux /proc")
    _assert_bad_input(case, tmp_path, monkeypatch)


def test_the_corpus_covers_at_least_80_mistakes() -> None:
    assert len(CASES) >= 80
    assert len({case.name for case in CASES}) == len(CASES)
