"""Reading pimsim-nn instruction artifacts and realizing them as event graphs."""

from __future__ import annotations

import gzip
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
from raptor_cp.targets.pim.artifact import (
    NO_ISSUE_EFFECT,
    TIMING_FIELDS,
    Artifact,
    load_artifact,
)
from raptor_cp.targets.pim.isa import OPCODES, CoreProgram

DATA = Path(__file__).parent / "data" / "pimsim_fixtures"


def target(config: str) -> PimTarget:
    return PimTarget.from_file(DATA / config)


def artifact_events(artifact: Artifact, chip: PimTarget) -> EventGraph:
    """``artifact``'s event graph on ``chip``, built as ``raptor-cp periodic`` builds it."""
    programs = chip.instruction_frontend().programs(artifact)
    return build_events(
        programs.cores, chip.step_timing(), name=programs.source, origin=programs.origin
    )


def timed(program: CoreProgram) -> list[tuple[str, dict[str, int]]]:
    """Each instruction's op and the non-zero fields the timing model reads."""
    return [
        (
            OPCODES[int(program.op[i])],
            {f: int(program.column(f)[i]) for f in TIMING_FIELDS if program.column(f)[i]},
        )
        for i in range(len(program))
    ]


def I(op: str, **fields: int) -> tuple[str, dict[str, int]]:  # noqa: E743
    return (op, fields)


def pim_file(path: Path, records: list[tuple[int, ...]], count: int | None = None) -> None:
    """Write a ``.pim`` file of (opcode, rd, r1, flags, r2, g1, g2, g3) records."""
    header = struct.pack("<4sII", b"PIMB", 1, len(records) if count is None else count)
    body = b"".join(struct.pack("<BBBBiiii", *record) for record in records)
    path.write_bytes(header + body)


def test_single_file_fixture_loads() -> None:
    artifact = load_artifact(DATA / "single.json")
    assert artifact.core_cnt == 1
    assert artifact.array_group_map == {0: (1,)}
    assert {c: timed(p) for c, p in artifact.cores.items()} == {0: []}


def test_throughput_fixture_loads() -> None:
    artifact = load_artifact(DATA / "throughput.json")
    assert {c: timed(p) for c, p in artifact.cores.items()} == {
        0: [I("sldi")],
        1: [I("sldi"), I("sldi")],
    }


def test_sync_tokens_fixture_loads() -> None:
    artifact = load_artifact(DATA / "sync_tokens.json")
    assert timed(artifact.cores[0]) == [I("sync", core=1)] * 2
    assert timed(artifact.cores[1]) == [
        I("lldi", len=1),
        I("wait", wait_value=1),
        I("wait", wait_value=1),
    ]


def test_latency_timeout_fixture_loads() -> None:
    artifact = load_artifact(DATA / "latency_timeout.json")
    assert {c: timed(p) for c, p in artifact.cores.items()} == {0: [I("wait", wait_value=1)]}


def test_directory_fixture_loads() -> None:
    artifact = load_artifact(DATA / "directory")
    assert artifact.source == str(DATA / "directory")
    assert {c: timed(p) for c, p in artifact.cores.items()} == {0: []}
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
    assert timed(artifact.cores[0]) == [
        I("sync", core=1),
        I("mvmul", mbiw=8, group=1),
        I("setbw", ibiw=4, obiw=8),
        I("vvadd", len=32),
        I("ld", size=64),
        I("send", core=1, size=64),
    ]
    assert artifact.cores[0].instruction(1) == {
        "op": "mvmul",
        "rd": 1,
        "rs1": 2,
        "group": 1,
        "mbiw": 8,
        "relu": 0,
    }
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


def test_binary_wins_over_json_for_one_core_as_in_the_simulator(tmp_path: Path) -> None:
    shutil.copytree(DATA / "directory", tmp_path / "art")
    (tmp_path / "art" / "core_0.json").write_text('[{"op": "vrelu", "len": 4}]')
    pim_file(tmp_path / "art" / "core_0.pim", [(32, 0, 0, 0, 0, 0, 0, 0)])
    assert timed(load_artifact(tmp_path / "art").cores[0]) == [I("sync")]


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


def single(path: Path, cores: dict[str, list[dict[str, object]]], **config: object) -> Path:
    document = {"config": {"core_cnt": 2, "array_group_map": {"core0": [1], "core1": [1]}}}
    document["config"].update(config)  # type: ignore[union-attr]
    path.write_text(json.dumps({**document, **cores}))
    return path


def test_integral_floats_are_read_as_the_simulator_reads_them(tmp_path: Path) -> None:
    path = single(tmp_path / "a.json", {"core0": [{"op": "vrelu", "len": 64.0, "rd": 0.0}]})
    assert timed(load_artifact(path).cores[0]) == [I("vrelu", len=64)]


def test_a_fractional_field_is_rejected(tmp_path: Path) -> None:
    path = single(tmp_path / "a.json", {"core0": [{"op": "ld", "size": 64.5}]})
    with pytest.raises(InvalidInputError) as error:
        load_artifact(path)
    assert str(error.value) == f"{path}: core0[0]: size: expected an integer, got 64.5"


def test_a_negative_size_is_rejected(tmp_path: Path) -> None:
    path = single(tmp_path / "a.json", {"core1": [{"op": "st", "size": -1}]})
    with pytest.raises(InvalidInputError) as error:
        load_artifact(path)
    assert str(error.value) == (
        f"{path}: core1[0]: size: expected a non-negative 32-bit integer, got -1"
    )


def test_nop_is_rejected_because_it_crashes_the_simulator(tmp_path: Path) -> None:
    path = single(tmp_path / "a.json", {"core0": [{"op": "sldi"}, {"op": "nop"}]})
    with pytest.raises(InvalidInputError) as error:
        load_artifact(path)
    assert str(error.value) == (
        f"{path}: core0[1]: op nop: nop crashes pimsim-nn (it enters the reorder buffer with "
        "no unit)"
    )


def test_gzip_is_detected_by_content_whatever_the_name(tmp_path: Path) -> None:
    plain = single(tmp_path / "a.json", {"core0": [{"op": "vrelu", "len": 8}]})
    packed = tmp_path / "program.json"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert timed(load_artifact(packed).cores[0]) == [I("vrelu", len=8)]


def test_gzip_core_files_are_rejected_as_the_simulator_rejects_them(tmp_path: Path) -> None:
    shutil.copy(DATA / "directory" / "config.json", tmp_path)
    (tmp_path / "core_0.json").write_bytes(gzip.compress(b"[]"))
    with pytest.raises(InvalidInputError) as error:
        load_artifact(tmp_path)
    assert str(error.value) == (
        f"{tmp_path / 'core_0.json'}: gzip is accepted only for a single-file artifact "
        "(as in pimsim-nn)"
    )


def test_config_after_the_cores_is_read_all_the_same(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    config = {"core_cnt": 1, "array_group_map": {"core0": [2]}}
    text = json.dumps({"core0": [{"op": "mvmul", "group": 0, "mbiw": 8}], "config": config})
    path.write_text(text)
    chip = target("sync_tokens_config.json")
    programs = chip.instruction_frontend().read(path)
    # No setbw: pimsim-nn's widths are 0 bits, so the product moves no bytes.
    mvm = chip.execution_ns(MatrixWork(1, 128, 128, 2, 8, input_bits=0, output_bits=0))
    assert programs.cores[0] == [Compute(mvm)]


def test_chunked_parsing_matches_whole_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raptor_cp.targets.pim import json_stream

    ops = [{"op": "vrelu", "len": i, "offset": {"offset_select": 0}} for i in range(1, 300)]
    ops += [{"op": "send", "core": 1, "size": 32}]
    path = single(tmp_path / "a.json", {"core0": ops, "core1": [{"op": "recv", "core": 0}]})
    whole = timed(load_artifact(path).cores[0])
    monkeypatch.setattr(json_stream, "CHUNK", 64)
    monkeypatch.setattr(json_stream, "BLOCK", 50)
    assert timed(load_artifact(path).cores[0]) == whole
    assert len(whole) == 300


def test_malformed_json_names_line_and_column_past_a_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raptor_cp.targets.pim import json_stream

    monkeypatch.setattr(json_stream, "CHUNK", 64)
    monkeypatch.setattr(json_stream, "BLOCK", 16)
    path = tmp_path / "a.json"
    lines = ['{"config": {"core_cnt": 1, "array_group_map": {"core0": []}},', '"core0": [']
    lines += ['{"op": "sldi"},'] * 5 + ['{"op": "sldi" "rd": 1}]}']
    path.write_text("\n".join(lines))
    with pytest.raises(InvalidInputError) as error:
        load_artifact(path)
    assert str(error.value) == (
        f"{path}: invalid JSON at line 8 column 15: Expecting ',' delimiter"
    )
