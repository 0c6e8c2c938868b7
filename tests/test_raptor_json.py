"""raptor-graph JSON reader: the documented example, the schema and every error path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from raptor_cp.errors import InvalidInputError
from raptor_cp.workload.model import OpKind
from raptor_cp.workload.raptor_json import inlined, read_raptor_json, schema

DATA = Path(__file__).parent / "data" / "raptor"
DOCS = Path(__file__).parent.parent / "docs" / "formats.md"


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


def graph(**fields: Any) -> dict[str, Any]:
    """A valid two-task graph a -> b, with ``fields`` replacing top-level entries."""
    document: dict[str, Any] = {
        "format": "raptor-graph",
        "version": 1,
        "weights": [{"name": "w", "size": 2}],
        "tasks": [{"name": "a", "cost": 5, "weights": ["w"]}, {"name": "b", "cost": 3}],
        "edges": [{"src": "a", "dst": "b", "bytes": 64}],
    }
    return document | fields


def write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(document))
    return path


def rejects(tmp_path: Path, document: Any, message: str) -> None:
    path = write(tmp_path, document)
    with pytest.raises(InvalidInputError, match=exactly(f"{path}: {message}")):
        read_raptor_json(path)


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_inlined_reference_merges_annotations_and_keeps_other_keywords() -> None:
    definitions = {"n": {"type": "integer"}}
    described = {"$ref": "#/$defs/n", "description": "d"}
    assert inlined(described, definitions) == {"type": "integer", "description": "d"}
    bounded = {"$ref": "#/$defs/n", "minimum": 1}
    assert inlined(bounded, definitions) == {"minimum": 1, "allOf": [{"type": "integer"}]}
    assert "$ref" not in json.dumps(inlined(schema(), schema()["$defs"]))


@pytest.mark.parametrize(
    "document",
    [
        graph(),
        graph(name=""),
        graph(tasks=[{"name": "a"}]),
        graph(tasks=[{"name": "a", "cost": -1, "type": ""}]),
        graph(tasks=[{"name": "a", "cost": 1, "weights": ["w", "w"], "colour": 2}]),
        graph(weights=[{"name": "w", "size": 0}, {"size": 1.5}]),
        graph(edges=[{"src": "a", "dst": "b", "bytes": 2**60}, {"src": 3}]),
        graph(version=2, tasks=[]),
        [1, 2],
    ],
)
def test_inlined_schema_finds_what_the_referencing_schema_finds(document: Any) -> None:
    def violations(document_schema: dict[str, Any]) -> list[tuple[str, str, str]]:
        validator = jsonschema.Draft202012Validator(document_schema)
        return sorted(
            (error.json_path, str(error.validator), json.dumps(error.validator_value))
            for error in validator.iter_errors(document)
        )

    assert violations(inlined(schema(), schema()["$defs"])) == violations(schema())


def test_docs_example_is_the_shipped_test_file() -> None:
    block = re.search(r"```json\n(.*?)```", DOCS.read_text(), re.S)
    assert block is not None
    assert json.loads(block.group(1)) == json.loads((DATA / "fork_join.json").read_text())


def test_fork_join_maps_costs_bytes_and_shared_weights() -> None:
    workload = read_raptor_json(DATA / "fork_join.json")
    assert workload.name == "fork-join"
    ops = workload.by_name()
    assert [op.name for op in workload.operations] == ["a", "b", "c", "d"]
    assert {op.kind for op in workload.operations} == {OpKind.TASK}
    assert (ops["a"].task_cost, ops["a"].op_type, ops["a"].resident) == (40, "load", (("w0", 2),))
    assert ops["b"].resident == ops["c"].resident == (("w1", 3),)
    assert (ops["d"].inputs, ops["d"].input_bytes) == (("b", "c"), (64, 64))
    assert ops["d"].resident == ()


def test_defaults_name_type_bytes_and_weights(tmp_path: Path) -> None:
    document = graph(weights=[], edges=[{"src": "a", "dst": "b"}])
    document["tasks"] = [{"name": "a", "cost": 5}, {"name": "b", "cost": 3}]
    workload = read_raptor_json(write(tmp_path, document))
    b = workload.by_name()["b"]
    assert (workload.name, b.op_type, b.input_bytes, b.resident) == ("g", "task", (0,), ())


def test_tasks_listed_after_their_successors_are_reordered(tmp_path: Path) -> None:
    document = graph()
    document["tasks"] = document["tasks"][::-1]
    workload = read_raptor_json(write(tmp_path, document))
    assert [op.name for op in workload.operations] == ["a", "b"]


def test_truncated_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text('{\n  "format": "raptor-graph",\n  "tasks": [')
    message = f"{path}: invalid JSON at line 3 column 13: Expecting value"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_raptor_json(path)


def test_missing_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "none.json"
    with pytest.raises(InvalidInputError, match=exactly(f"{path}: no such file")):
        read_raptor_json(path)


def test_missing_cost_names_the_field(tmp_path: Path) -> None:
    rejects(
        tmp_path,
        graph(tasks=[{"name": "a"}], edges=[]),
        "$.tasks[0].cost: required field is missing",
    )


def test_negative_cost_names_the_field(tmp_path: Path) -> None:
    rejects(
        tmp_path,
        graph(tasks=[{"name": "a", "cost": -5}], edges=[]),
        "$.tasks[0].cost: expected an integer >= 0, got -5",
    )


def test_fractional_bytes_are_rejected(tmp_path: Path) -> None:
    rejects(
        tmp_path,
        graph(edges=[{"src": "a", "dst": "b", "bytes": 1.5}]),
        "$.edges[0].bytes: expected an integer, got 1.5",
    )


def test_misspelt_field_is_rejected(tmp_path: Path) -> None:
    rejects(
        tmp_path,
        graph(tasks=[{"name": "a", "cost": 1, "cots": 1}], edges=[]),
        "$.tasks[0].cots: unexpected field (allowed: cost, name, type, weights)",
    )


def test_zero_size_weight_is_rejected(tmp_path: Path) -> None:
    rejects(
        tmp_path,
        graph(weights=[{"name": "w", "size": 0}]),
        "$.weights[0].size: expected an integer >= 1, got 0",
    )


def test_wrong_version_is_rejected(tmp_path: Path) -> None:
    rejects(tmp_path, graph(version=2), "$.version: expected 1, got 2")


def test_empty_task_list_is_rejected(tmp_path: Path) -> None:
    rejects(tmp_path, graph(tasks=[], edges=[]), "$.tasks: expected at least 1 item")


def test_edges_must_be_an_array(tmp_path: Path) -> None:
    rejects(tmp_path, graph(edges={}), "$.edges: expected an array, got an object")


def test_repeated_task_weight_is_rejected(tmp_path: Path) -> None:
    rejects(
        tmp_path,
        graph(tasks=[{"name": "a", "cost": 1, "weights": ["w", "w"]}], edges=[]),
        '$.tasks[0].weights: expected distinct items, "w" appears twice',
    )


def test_document_must_be_an_object(tmp_path: Path) -> None:
    rejects(tmp_path, [1, 2], "$: expected an object, got an array")


def test_duplicate_task_name_is_rejected(tmp_path: Path) -> None:
    document = graph(tasks=[{"name": "a", "cost": 1}, {"name": "a", "cost": 2}], edges=[])
    rejects(tmp_path, document, "$.tasks[1].name: duplicate task name 'a'")


def test_duplicate_weight_name_is_rejected(tmp_path: Path) -> None:
    document = graph(weights=[{"name": "w", "size": 1}, {"name": "w", "size": 2}])
    rejects(tmp_path, document, "$.weights[1].name: duplicate weight name 'w'")


def test_undefined_weight_is_rejected(tmp_path: Path) -> None:
    rejects(
        tmp_path,
        graph(weights=[]),
        "$.tasks[0].weights[0]: undefined weight 'w' (declare it in $.weights)",
    )


def test_edge_to_unknown_task_is_rejected(tmp_path: Path) -> None:
    rejects(
        tmp_path,
        graph(edges=[{"src": "a", "dst": "zz"}]),
        "$.edges[0].dst: unknown task 'zz'",
    )


def test_duplicate_edge_is_rejected(tmp_path: Path) -> None:
    edge = {"src": "a", "dst": "b"}
    rejects(
        tmp_path,
        graph(edges=[edge, edge]),
        "$.edges[1]: duplicate edge 'a' -> 'b' (first at $.edges[0])",
    )


def test_cycle_is_rejected_with_its_tasks(tmp_path: Path) -> None:
    document = graph(edges=[{"src": "a", "dst": "b"}, {"src": "b", "dst": "a"}])
    rejects(tmp_path, document, "dependency cycle through tasks 'a' -> 'b' -> 'a'")


def test_self_loop_is_a_cycle(tmp_path: Path) -> None:
    document = graph(edges=[{"src": "b", "dst": "b"}])
    rejects(tmp_path, document, "dependency cycle through tasks 'b' -> 'b'")
