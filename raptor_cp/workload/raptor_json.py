"""Read raptor-cp's own JSON task-graph format (``"format": "raptor-graph"``).

For hand-made research graphs: tasks with integer costs (ns), edges with
integer bytes and named resident weights with integer sizes (slots). The
structure is enforced by the JSON Schema shipped as package data
(``raptor_cp/schemas/raptor-graph.schema.json``, draft 2020-12); names are
then cross-checked (duplicates, unknown tasks in edges, undefined weights,
cycles). docs/formats.md documents the format with an example.

Every task becomes an `OpKind.TASK` operation: its inputs are the sources of
the edges entering it, in file order, with their bytes in ``input_bytes``, and
``resident`` lists its weights with their sizes.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import excerpt, read_json
from raptor_cp.limits import MAX_INTEGER
from raptor_cp.toposort import CycleFound, cycle_text, order_from_predecessors
from raptor_cp.workload.model import ALL_ROWS, Operation, OpKind, Workload

FORMAT = "raptor-graph"
"""The value of the ``format`` field that identifies the format."""


def read_raptor_json(path: str | Path) -> Workload:
    """Read a raptor-graph JSON file; errors name the file and the JSON path."""
    return raptor_graph_workload(read_json(path), str(path))


def raptor_graph_workload(document: Any, source: str) -> Workload:
    """Build the `Workload` of an already parsed raptor-graph document."""
    _validate(document, source)
    sizes: dict[str, int] = {}
    for i, weight in enumerate(document.get("weights", [])):
        _unique(weight["name"], sizes, "weight", f"$.weights[{i}]", source)
        sizes[weight["name"]] = int(weight["size"])

    tasks = document["tasks"]
    index_of: dict[str, int] = {}
    for i, task in enumerate(tasks):
        _unique(task["name"], index_of, "task", f"$.tasks[{i}]", source)
        index_of[task["name"]] = i
        for j, weight in enumerate(task.get("weights", [])):
            if weight not in sizes:
                raise InvalidInputError(
                    f"{source}: $.tasks[{i}].weights[{j}]: undefined weight {weight!r} "
                    "(declare it in $.weights)"
                )

    incoming: list[list[tuple[str, int]]] = [[] for _ in tasks]
    first_edge: dict[tuple[str, str], int] = {}
    for e, edge in enumerate(document.get("edges", [])):
        for end in ("src", "dst"):
            if edge[end] not in index_of:
                raise InvalidInputError(f"{source}: $.edges[{e}].{end}: unknown task {edge[end]!r}")
        pair = (edge["src"], edge["dst"])
        if pair in first_edge:
            raise InvalidInputError(
                f"{source}: $.edges[{e}]: duplicate edge {pair[0]!r} -> {pair[1]!r} "
                f"(first at $.edges[{first_edge[pair]}])"
            )
        first_edge[pair] = e
        incoming[index_of[edge["dst"]]].append((edge["src"], int(edge.get("bytes", 0))))

    try:
        order = order_from_predecessors([[index_of[src] for src, _ in edges] for edges in incoming])
    except CycleFound as found:
        names = cycle_text([tasks[i]["name"] for i in found.cycle])
        raise InvalidInputError(f"{source}: dependency cycle through tasks {names}") from None
    operations = tuple(
        Operation(
            name=tasks[i]["name"],
            op_type=tasks[i].get("type", "task"),
            kind=OpKind.TASK,
            inputs=tuple(src for src, _ in incoming[i]),
            windows=tuple(ALL_ROWS for _ in incoming[i]),
            task_cost=int(tasks[i]["cost"]),
            input_bytes=tuple(size for _, size in incoming[i]),
            resident=tuple((w, sizes[w]) for w in tasks[i].get("weights", [])),
        )
        for i in order
    )
    name = document.get("name", Path(source).stem)
    return Workload(name=name, operations=operations, source=source)


def _unique(name: str, seen: dict[str, int], what: str, path: str, source: str) -> None:
    if name in seen:
        raise InvalidInputError(f"{source}: {path}.name: duplicate {what} name {name!r}")


# -- schema validation -------------------------------------------------------------


@cache
def schema() -> dict[str, Any]:
    """The raptor-graph JSON Schema (draft 2020-12), read from the package data."""
    text = resources.files("raptor_cp").joinpath("schemas", "raptor-graph.schema.json")
    return json.loads(text.read_text(encoding="utf-8"))


ANNOTATIONS = frozenset({"description", "title"})
"""Keywords beside a ``$ref`` that only annotate: `inlined` merges them into the definition."""


def inlined(node: Any, definitions: dict[str, Any]) -> Any:
    """``node`` with every ``$ref`` to ``#/$defs/NAME`` replaced by that definition.

    Annotation keywords beside a ``$ref`` are merged into the definition; any other
    keyword keeps its own place, the definition joining under ``allOf`` (a ``$ref``
    beside other keywords applies both, draft 2020-12). ``$defs`` is dropped.
    """
    if isinstance(node, list):
        return [inlined(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    body = {k: inlined(v, definitions) for k, v in node.items() if k not in ("$ref", "$defs")}
    reference = node.get("$ref")
    if reference is None:
        return body
    target = inlined(definitions[reference.removeprefix("#/$defs/")], definitions)
    if set(body) <= ANNOTATIONS:
        return {**target, **body}
    return {**body, "allOf": [target]}


@cache
def _validator() -> Any:
    """A draft 2020-12 validator of `schema` with its definitions inlined.

    The same rules, checked faster: jsonschema resolves a ``$ref`` through its
    registry at every use, about eight per task and edge, which took most of a
    large graph's validation (a 100,000-task chain: 27-33 s with references,
    9-13 s inlined; docs/benchmarks.md, "Twenty-second pass").
    """
    import jsonschema

    document = schema()
    return jsonschema.Draft202012Validator(inlined(document, document["$defs"]))


def _validate(document: Any, source: str) -> None:
    """Raise the most relevant schema violation as one line: JSON path, what was expected."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(document))
    if error is not None:
        path, message = _explain(error)
        raise InvalidInputError(f"{source}: {path}: {message}")


_ARTICLE_TYPE = {
    "array": "an array",
    "boolean": "a boolean",
    "integer": "an integer",
    "null": "null",
    "number": "a number",
    "object": "an object",
    "string": "a string",
}


def _describe(value: Any) -> str:
    """A short rendering of a JSON value for an error message."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return excerpt(value)


def _field_path(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def _explain(error: Any) -> tuple[str, str]:
    """(JSON path of the offending field, what was expected) for one `ValidationError`."""
    path, value, rule, instance = (
        error.json_path,
        error.validator_value,
        error.validator,
        error.instance,
    )
    if rule == "required":
        missing = next(key for key in value if key not in instance)
        return _field_path(path, missing), "required field is missing"
    if rule == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unexpected = sorted(key for key in instance if key not in allowed)[0]
        return _field_path(path, unexpected), f"unexpected field (allowed: {', '.join(allowed)})"
    if rule == "type":
        return path, f"expected {_ARTICLE_TYPE[value]}, got {_describe(instance)}"
    if rule == "minimum":
        return path, f"expected an integer >= {value}, got {_describe(instance)}"
    if rule == "maximum":
        limit = "2^53" if value == MAX_INTEGER else str(value)
        return path, f"expected an integer <= {limit}, got {_describe(instance)}"
    if rule == "minLength":
        return path, "expected a non-empty string"
    if rule == "minItems":
        return path, f"expected at least {value} item{'s' if value != 1 else ''}"
    if rule == "const":
        return path, f"expected {json.dumps(value)}, got {_describe(instance)}"
    if rule == "uniqueItems":
        repeated = next(item for i, item in enumerate(instance) if item in instance[:i])
        return path, f"expected distinct items, {_describe(repeated)} appears twice"
    return path, " ".join(error.message.split())
