"""Reading pimsim-nn instruction artifacts and realizing them as event graphs."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidInputError, InvalidInstanceError
from raptor_cp.periodic.events import EventGraph, EventKind, build_events
from raptor_cp.periodic.steps import Compute
from raptor_cp.targets.base import MatrixWork, VectorWork
from raptor_cp.targets.pim import PimTarget
from raptor_cp.targets.pim.artifact import NO_ISSUE_EFFECT, Artifact, Instruction, load_artifact

DATA = Path(__file__).parent / "data" / "pimsim_fixtures"


def target(config: str) -> PimTarget:
    return PimTarget.from_file(DATA / config)


def artifact_events(artifact: Artifact, chip: PimTarget) -> EventGraph:
    """``artifact``'s event graph on ``chip``, built as ``raptor-cp periodic`` builds it."""
    programs = chip.instruction_frontend().programs(artifact)
    return build_events(
        programs.cores, chip.step_timing(), name=programs.source, origin=programs.origin
    )


def pim_file(path: Path, records: list[tuple[int, ...]], count: int | None = None) -> None:
    """Write a ``.pim`` file of (opcode, rd, r1, flags, r2, g1, g2, g3) records."""
    header = struct.pack("<4sII", b"PIMB", 1, len(records) if count is None else count)
    body = b"".join(struct.pack("<BBBBiiii", *record) for record in records)
    path.write_bytes(header + body)


def test_single_file_fixture_loads() -> None:
    artifact = load_artifact(DATA / "single.json")
    assert artifact.core_cnt == 1
    assert artifact.array_group_map == {0: (1,)}
    assert artifact.cores == {0: ()}


def test_throughput_fixture_loads() -> None:
    artifact = load_artifact(DATA / "throughput.json")
    assert artifact.cores == {
        0: (Instruction("sldi", imm=1),),
        1: (Instruction("sldi", imm=1), Instruction("sldi", imm=2)),
    }


def test_sync_tokens_fixture_loads() -> None:
    artifact = load_artifact(DATA / "sync_tokens.json")
    assert artifact.cores[0] == (Instruction("sync", core=1),) * 2
    assert artifact.cores[1] == (
        Instruction("lldi", len=1),
        Instruction("wait", wait_value=1),
        Instruction("wait", wait_value=1),
    )


def test_latency_timeout_fixture_loads() -> None:
    artifact = load_artifact(DATA / "latency_timeout.json")
    assert artifact.cores == {0: (Instruction("wait", wait_value=1),)}


def test_directory_fixture_loads() -> None:
    artifact = load_artifact(DATA / "directory")
    assert artifact.source == str(DATA / "directory")
    assert artifact.cores == {0: ()}
    assert artifact.array_group_map == {0: (1,)}


@pytest.mark.parametrize(
    ("fixture", "message"),
    [
        (
            "malformed_filename",
            "{d}: malformed per-core instruction file name 'core_bad.json'; expected "
            "core_<id>.json or core_<id>.pim",
        ),
        (
            "malformed_map",
            "{d}/config.json: array_group_map.core0[0]: expected a positive crossbar count, got 0",
        ),
        ("missing", "{d}: missing core_0.json or core_0.pim (config.json sets core_cnt 1)"),
        (
            "missing_map",
            '{d}/config.json: array_group_map: missing; expected {{"core<id>": '
            "[crossbars per array group]}}",
        ),
    ],
)
def test_malformed_fixture_fails_with_its_message(fixture: str, message: str) -> None:
    directory = DATA / fixture
    with pytest.raises(InvalidInputError) as error:
        load_artifact(directory)
    assert str(error.value) == message.format(d=directory)


def test_binary_core_file_matches_its_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"core_cnt": 2, "array_group_map": {"core0": [1, 2], "core1": [1]}})
    )
    # sync core 1 register 0; mvmul mbiw 8 group 1; setbw 4/8; vvadd len 32; ld / send 64 B.
    pim_file(
        tmp_path / "core_0.pim",
        [
            (32, 0, 0, 0, 1, 0, 0, 0),
            (9, 1, 2, 0, 8, 0, 1, 0),
            (8, 0, 0, 0, 0, 4, 8, 0),
            (10, 3, 4, 0, 5, 0, 0, 32),
            (25, 1, 2, 0, 0, 0, 0, 64),
            (29, 1, 0, 0, 1, 0, 0, 64),
        ],
    )
    (tmp_path / "core_1.json").write_text(
        json.dumps(
            [
                {"op": "recv", "core": 0, "size": 64, "rd": 1},
                {"op": "wait", "event_register": 0, "wait_value": 1},
            ]
        )
    )
    artifact = load_artifact(tmp_path)
    assert artifact.cores[0] == (
        Instruction("sync", core=1),
        Instruction("mvmul", rd=1, rs1=2, mbiw=8, group=1),
        Instruction("setbw", ibiw=4, obiw=8),
        Instruction("vvadd", rd=3, rs1=4, rs2=5, len=32),
        Instruction("ld", rd=1, rs1=2, size=64),
        Instruction("send", rd=1, core=1, size=64),
    )
    chip = target("sync_tokens_config.json")
    events = artifact_events(artifact, chip)
    # The mvmul runs before setbw: pimsim-nn's widths are 0 there (no bytes moved).
    mvm = chip.execution_ns(MatrixWork(1, 128, 128, 2, 8, input_bits=0, output_bits=0))
    vector = chip.execution_ns(VectorWork(32, 2, 4))
    # sync (1 clock), setbw (1 clock), the MVM, the vector op, the load's local write and
    # the send's source read (64 B = 4 accesses: 4 x 10 and 4 x 8 cycles of 1 ns).
    assert events.core_work[0] == 1 + mvm + 1 + vector + 40 + 32
    kinds = sorted(EventKind(int(k)).name for k in events.kind[events.memory_requests])
    assert kinds == ["LOAD_SERVICE"]
    assert events.step[events.memory_requests].tolist() == [4]


def test_json_and_binary_for_one_core_is_rejected(tmp_path: Path) -> None:
    shutil.copytree(DATA / "directory", tmp_path / "art")
    pim_file(tmp_path / "art" / "core_0.pim", [])
    with pytest.raises(InvalidInputError) as error:
        load_artifact(tmp_path / "art")
    assert str(error.value) == (
        f"{tmp_path / 'art'}: core 0 has two instruction files: core_0.json and core_0.pim"
    )


def test_truncated_binary_is_rejected(tmp_path: Path) -> None:
    shutil.copy(DATA / "directory" / "config.json", tmp_path)
    pim_file(tmp_path / "core_0.pim", [(1, 0, 0, 0, 7, 0, 0, 0)], count=2)
    with pytest.raises(InvalidInputError) as error:
        load_artifact(tmp_path)
    assert str(error.value) == (
        f"{tmp_path / 'core_0.pim'}: the header announces 2 instructions (52 bytes), "
        "the file has 32 bytes"
    )


def test_vsoftmax_gets_no_timed_work_and_is_listed_in_the_effects(tmp_path: Path) -> None:
    # The seeds: pimsim-nn omits vsoftmax before fetch, so the queue model times nothing
    # for it (pimsim-nn f7446df in fact rejects it; the effect says so). Before this
    # change the artifact was rejected.
    shutil.copy(DATA / "directory" / "config.json", tmp_path)
    vvadd = (10, 0, 0, 0, 0, 0, 0, 4)
    pim_file(tmp_path / "core_0.pim", [vvadd, (21, 0, 0, 0, 0, 0, 0, 4), vvadd])
    chip = target("latency_config.json")
    programs = chip.instruction_frontend().read(tmp_path)
    alone = chip.execution_ns(VectorWork(4, 2, 0))
    assert programs.cores[0] == [Compute(2 * alone)]
    assert programs.effects[0].startswith("1 vsoftmax instruction(s): vsoftmax is given no")
    assert "actually rejects vsoftmax" in programs.effects[0]


def test_vector_writeback_follows_the_oracle_width_rules(tmp_path: Path) -> None:
    # setbw ibiw 8 obiw 16: vvadd writes len x ceil(8/8) B, vvmul (an output-byte op)
    # len x ceil(16/8) B (pimsim-nn VectorUnit::inst_use_output_byte).
    shutil.copy(DATA / "directory" / "config.json", tmp_path)
    setbw = (8, 0, 0, 0, 0, 8, 16, 0)
    pim_file(
        tmp_path / "core_0.pim", [setbw, (10, 0, 0, 0, 0, 0, 0, 64), (12, 0, 0, 0, 0, 0, 0, 64)]
    )
    chip = target("latency_config.json")
    programs = chip.instruction_frontend().read(tmp_path, model_issue=False)
    vvadd = chip.execution_ns(VectorWork(64, 2, 8, 8))
    vvmul = chip.execution_ns(VectorWork(64, 2, 8, 16))
    assert vvmul > vvadd
    assert programs.cores[0] == [Compute(vvadd + vvmul)]
    assert programs.effects == (NO_ISSUE_EFFECT,)


def test_no_model_issue_drops_scalar_time_but_keeps_sync(tmp_path: Path) -> None:
    artifact = load_artifact(DATA / "sync_tokens.json")
    chip = target("sync_tokens_config.json")
    issued = chip.instruction_frontend().programs(artifact)
    bare = chip.instruction_frontend().programs(artifact, model_issue=False)
    steps = [s for core in issued.cores for s in core]
    assert steps == [s for core in bare.cores for s in core]  # lldi and syncs only here
    throughput = load_artifact(DATA / "throughput.json")
    frontend = target("throughput_config.json").instruction_frontend()
    assert frontend.programs(throughput).cores == [[Compute(1)], [Compute(2)]]
    assert frontend.programs(throughput, model_issue=False).cores == [[], []]


def test_unknown_json_op_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    config = {"core_cnt": 1, "array_group_map": {"core0": [1]}}
    path.write_text(json.dumps({"config": config, "core0": [{"op": "jump"}]}))
    with pytest.raises(InvalidInputError) as error:
        load_artifact(path)
    assert str(error.value) == f"{path}: core0[0]: unknown op 'jump'"


def test_mvmul_group_outside_the_map_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    config = {"core_cnt": 1, "array_group_map": {"core0": [1]}}
    path.write_text(json.dumps({"config": config, "core0": [{"op": "mvmul", "group": 1}]}))
    with pytest.raises(InvalidInputError) as error:
        load_artifact(path)
    assert str(error.value) == (
        f"{path}: core 0 instruction 0 (mvmul): group 1 outside config.array_group_map.core0 "
        "(1 group)"
    )


def test_throughput_events_are_one_chunk_per_core() -> None:
    events = artifact_events(
        load_artifact(DATA / "throughput.json"), target("throughput_config.json")
    )
    assert events.num_events == 2
    assert events.core_work.tolist() == [1, 2]


def test_sync_tokens_events_carry_one_token_per_wait() -> None:
    events = artifact_events(
        load_artifact(DATA / "sync_tokens.json"), target("sync_tokens_config.json")
    )
    kinds = [EventKind(int(k)).name for k in events.kind]
    assert kinds.count("SIGNAL") == 2 and kinds.count("WAIT") == 2
    # lldi of 1 byte: one local write access of 10 cycles of 1 ns.
    assert events.core_work.tolist() == [2, 10]


def test_artifact_needing_more_cores_than_the_target_is_rejected() -> None:
    with pytest.raises(InvalidInputError) as error:
        artifact_events(load_artifact(DATA / "throughput.json"), target("latency_config.json"))
    assert str(error.value) == (
        f"{DATA / 'throughput.json'}: core_cnt is 2, but target "
        f"{DATA / 'latency_config.json'} has 1 core"
    )


def test_wait_without_signal_is_reported() -> None:
    with pytest.raises(InvalidInstanceError) as error:
        artifact_events(load_artifact(DATA / "latency_timeout.json"), target("latency_config.json"))
    assert str(error.value) == (
        f"{DATA / 'latency_timeout.json'}: core 0 event register 0: WAITs consume 1 token(s) "
        "per generation but SYNCs deliver 0; a WAIT never completes (deadlock)"
    )
