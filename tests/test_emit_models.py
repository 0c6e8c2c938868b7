"""Every shipped model that fits arch-a emits a program that round-trips, in both modes.

The round trip is ``compile --emit DIR`` followed by ``raptor-cp periodic DIR``:
the program read back from the written files must reproduce the compile's
prediction of it within 2 %. vgg16, vit_b16, alexnet and pimsyn_msra_A need
more crossbars than arch-a has (docs/benchmarks.md) and are left out;
vit_b16_1layer round-trips in latency mode only, as its pipeline selection
alone takes minutes (docs/benchmarks.md, "Nineteenth pass", where pimsim-nn
runs both of its programs). The small models run in the default suite, the
others are marked slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_cp.cli import main

DATA = Path(__file__).parent / "data"
SMALL = [DATA / "models" / "lenet5.onnx", DATA / "pimcomp" / "mnist8.json"]
LARGE = [
    DATA / "models" / "resnet18.onnx",
    DATA / "models" / "mobilenetv2.onnx",
    DATA / "models" / "resnet50.onnx",
    DATA / "pimcomp" / "resnet18.json",
]
MODES = [[], ["--pipeline", "4"]]


def round_trip(model: Path, mode: list[str], tmp_path: Path) -> dict[str, object]:
    runner = CliRunner()
    emit = tmp_path / "emit"
    args = ["compile", str(model), *mode, "--out", str(tmp_path / "out"), "--emit", str(emit)]
    compiled = runner.invoke(main, args)
    assert compiled.exit_code == 0, compiled.output
    periodic = runner.invoke(main, ["periodic", str(emit), "--json"])
    assert periodic.exit_code == 0, periodic.output
    trip = json.loads(periodic.stdout)["round_trip"]
    assert isinstance(trip, dict)
    return trip


@pytest.mark.parametrize("mode", MODES, ids=["latency", "pipeline"])
@pytest.mark.parametrize("model", SMALL, ids=lambda p: p.stem)
def test_small_model_round_trips(model: Path, mode: list[str], tmp_path: Path) -> None:
    trip = round_trip(model, mode, tmp_path)
    assert trip["holds"] is True, trip


SHIPPED = [
    pytest.param(model, mode, id=f"{model.parent.name}-{model.stem}-{name}")
    for model in LARGE
    for mode, name in zip(MODES, ["latency", "pipeline"], strict=True)
] + [pytest.param(DATA / "models" / "vit_b16_1layer.onnx", [], id="models-vit_b16_1layer-latency")]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "mode"), SHIPPED)
def test_shipped_model_round_trips(model: Path, mode: list[str], tmp_path: Path) -> None:
    trip = round_trip(model, mode, tmp_path)
    assert trip["holds"] is True, trip
