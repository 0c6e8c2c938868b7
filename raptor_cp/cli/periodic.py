"""``raptor-cp periodic ARTIFACT --target T``: periodic analysis of a pimsim-nn instruction file.

ARTIFACT is a single-file JSON artifact (plain or gzip) or a directory of
``config.json`` and ``core_<id>.json`` / ``core_<id>.pim`` files
(`raptor_cp.targets.pim.artifact`); T is a pimsim-nn target (a preset or a
chip config path). The command builds the artifact's periodic event graph,
computes the recurrence bound (maximum cycle ratio with a witness cycle;
``--method``: the seeds' bounded bisection by default, Howard's policy
iteration, or ``both``, which reports Howard as the exact cross-check), runs
the queue engine in both tie orders and one generation of it for the
single-pass (latency-mode) estimate, then prints a summary, or with ``--json``
the whole document (`raptor_cp.reports.periodic_report`); ``--out FILE`` also
writes it.

ARTIFACT may also be a ``compile --emit`` directory: its program is then
analysed on its ``config.json`` (unless ``--target`` is given) with the
``memory_controller`` estimate on, and the report adds the round trip against
the compile's prediction (`raptor_cp.emit.round_trip`).

Model switches (scheduling.md, "Post-codegen instruction diagnostic"):
``--model-network-queues/--no-model-network-queues`` (source-switch FIFOs),
``--model-issue/--no-model-issue`` (scalar issue time; SYNC keeps its clock)
and ``--model-memory-controller`` (adds the separate ``memory_controller``
estimate, with the controller's FIFO).

Exit status: 0 when analysed (the queue estimate may still be ``unavailable``,
with its reason) and when the whole report is ``unavailable`` (timing outside
the supported range); 1 when the artifact deadlocks (a cycle of
same-generation dependencies; the report names its events); 2 on bad input,
including a WAIT that no SYNC ever satisfies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from raptor_cp.periodic.analysis import QueueModel


@click.command("periodic", short_help="Recurrence and queue estimate of an instruction artifact.")
@click.argument("artifact", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--target",
    "-t",
    help="pimsim-nn preset or chip config path the artifact was compiled for "
    "(default for a compile --emit directory: its config.json).",
)
@click.option(
    "--method",
    type=click.Choice(["bisection", "howard", "both"]),
    default="bisection",
    show_default=True,
    help="Recurrence: the bounded bisection, Howard, or both (Howard as the cross-check).",
)
@click.option(
    "--model-network-queues/--no-model-network-queues",
    default=True,
    show_default=True,
    help="Model the source switches' message FIFOs.",
)
@click.option(
    "--model-issue/--no-model-issue",
    default=True,
    show_default=True,
    help="Charge scalar issue time (SYNC keeps its one-clock execution either way).",
)
@click.option(
    "--model-memory-controller",
    is_flag=True,
    help="Add the memory_controller estimate: the controller serves requests in arrival order.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as one JSON object.")
@click.option("--out", type=click.Path(path_type=Path), help="Also write the report to this file.")
@click.pass_context
def periodic_command(
    ctx: click.Context,
    artifact: Path,
    target: str | None,
    method: str,
    model_network_queues: bool,
    model_issue: bool,
    model_memory_controller: bool,
    as_json: bool,
    out: Path | None,
) -> None:
    """Analyse the periodic execution of a pimsim-nn instruction ARTIFACT on a target."""
    from raptor_cp.cli.common import UserError
    from raptor_cp.errors import RaptorError
    from raptor_cp.periodic.analysis import QueueModel

    model = QueueModel(model_network_queues, model_memory_controller)
    try:
        document = _analyse(artifact, target, method, model, model_issue)
        if out is not None:
            from raptor_cp.reports.output import dumps

            out.write_text(dumps(document), encoding="utf-8")
    except RaptorError as error:
        raise UserError(" ".join(str(error).split())) from None
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        raise UserError(where + (error.strerror or str(error))) from None
    if as_json:
        click.echo(json.dumps(document, sort_keys=True))
    else:
        for line in summary_lines(document):
            click.echo(line)
    deadlock = document.get("recurrence", {}).get("status") == "deadlock"
    ctx.exit(1 if deadlock else 0)


def _analyse(
    artifact: Path, spec: str | None, method: str, model: QueueModel, model_issue: bool
) -> dict[str, Any]:
    from dataclasses import replace

    from raptor_cp.cli.common import UserError
    from raptor_cp.emit.round_trip import emission_directory, round_trip
    from raptor_cp.errors import CapabilityUnavailableError, TimingUnavailableError
    from raptor_cp.periodic.analysis import analyse_periodic
    from raptor_cp.periodic.events import build_events
    from raptor_cp.reports.periodic_report import periodic_document, unavailable_document
    from raptor_cp.targets.registry import resolve_target

    emitted = emission_directory(artifact)
    source = artifact
    if emitted is not None:
        artifact, config, emission = emitted
        spec = spec or str(config)
        model = replace(model, memory_controller=True)
    if spec is None:
        raise UserError("--target is required unless ARTIFACT is a compile --emit directory")
    target = resolve_target(spec)
    frontend = target.instruction_frontend()
    if frontend is None:
        raise CapabilityUnavailableError(
            f"--target {spec}: instruction artifacts need a pimsim-nn target "
            "(a preset or a chip config path)",
            target=target.name,
            capability="instruction_frontend",
        )
    programs = frontend.read(artifact, model_issue=model_issue)
    timing = target.step_timing()
    try:
        if timing is None:
            raise TimingUnavailableError(f"target {target.name} has no complete step timing")
        events = build_events(programs.cores, timing, name=programs.source, origin=programs.origin)
        analysis = analyse_periodic(
            events,
            "bisection" if method == "both" else method,
            cross_check=method == "both",
            model=model,
        )
    except TimingUnavailableError as error:
        document = unavailable_document(
            str(error), source=str(source), target=target.name, missing_effects=programs.effects
        )
    else:
        document = periodic_document(
            analysis, source=str(source), target=target.name, missing_effects=programs.effects
        )
    document["instructions"] = programs.instructions
    document["warnings"] = list(target.warnings)
    if emitted is not None and document["status"] != "unavailable":
        document["round_trip"] = round_trip(emission, document)
    return document


def _ns(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g} ns"


def summary_lines(document: dict[str, Any]) -> list[str]:
    """The human-readable summary of a periodic document."""
    from raptor_cp.reports.output import count

    if document["status"] == "unavailable":
        return [
            f"{document['source']} on {document['target']}: "
            f"{count(document['instructions'], 'instruction')}",
            f"unavailable: {document['reason']}",
        ]
    recurrence = document["recurrence"]
    lines = [
        f"{document['source']} on {document['target']}: "
        f"{count(document['instructions'], 'instruction')}, {count(document['events'], 'event')}, "
        f"{count(document['dependencies'], 'dependency', 'dependencies')}, "
        f"{count(len(document['active_cores']), 'active core')}"
    ]
    if recurrence["status"] == "deadlock":
        cycle = " -> ".join(
            f"{e['kind']}@core{e['core']}#{e['step']}" for e in recurrence["cycle"][:8]
        )
        more = " -> ..." if len(recurrence["cycle"]) > 8 else ""
        lines.append(f"deadlock: a cycle of same-generation dependencies: {cycle}{more}")
        return lines
    if recurrence["status"] == "acyclic":
        lines.append("recurrence: no cycle (no event repeats)")
    else:
        witness = recurrence["witness"]
        cores = ", ".join(map(str, witness["cores"])) or "none"
        lines.append(
            f"recurrence: {_ns(recurrence['interval_ns'])} (ratio {recurrence['ratio']}, "
            f"{recurrence['method']}); critical cycle of "
            f"{count(witness['length'], 'dependency', 'dependencies')} through "
            f"{'core' if len(witness['cores']) == 1 else 'cores'} {cores}"
        )
    check = document.get("cross_check")
    if check is not None:
        verdict = "agrees" if check["agrees"] else "DISAGREES"
        lines.append(
            f"cross-check: {check['method']} {_ns(check['interval_ns'])} ({verdict} exactly)"
        )
    memory = document["memory_service"]
    busiest = document["busiest_core"]
    if busiest is None:
        lines.append("work: every core is idle")
    else:
        lines.append(
            f"work: busiest core {busiest} {document['core_work_ns'][str(busiest)]} ns; memory "
            f"controller {memory['service_ns']} ns ({memory['loads']} loads, "
            f"{memory['stores']} stores)"
        )
        estimate = document["interval_estimate"]
        lines.append(f"interval estimate: {_ns(estimate['ns'])} (bound by {estimate['bound_by']})")
    queue = document["queue"]
    if queue["status"] == "converged":
        cycle = queue["window_generations"]
        repeating = f", repeating a cycle of {cycle}" if cycle > 2 else ""
        lines.append(
            f"queue: {_ns(queue['interval_ns'])} after {queue['generations']} generations"
            f"{repeating} (reversed ties: {_ns(queue['alternative_tie_interval_ns'])}); "
            f"max memory-request wait {queue['max_request_wait_ns']} ns"
        )
    else:
        lines.append(f"queue: unavailable: {queue['reason']}")
    controller = document.get("memory_controller")
    if controller is not None:
        if controller["status"] == "converged":
            lines.append(
                f"memory_controller: {_ns(controller['interval_ns'])} (reversed ties: "
                f"{_ns(controller['alternative_tie_interval_ns'])}); max memory-request wait "
                f"{controller['max_request_wait_ns']} ns"
            )
        else:
            lines.append(f"memory_controller: unavailable: {controller['reason']}")
    single = document["single_pass"]
    if single["latency_ns"] is None:
        lines.append(f"single pass: unavailable: {single['reason']}")
    else:
        lines.append(
            f"single pass (latency mode): {_ns(single['latency_ns'])} (reversed ties: "
            f"{_ns(single['alternative_tie_latency_ns'])}); without queues "
            f"{_ns(single['unqueued_ns'])}"
        )
    if "round_trip" in document:
        lines += round_trip_lines(document["round_trip"])
    lines.append(
        f"{len(document['missing_effects'])} missing effects listed in the report; "
        "not eligible for schedule selection"
    )
    return lines


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}%"


def round_trip_lines(trip: dict[str, Any]) -> list[str]:
    """The round trip of an emitted program against its compile, for the summary."""
    verdict = "holds" if trip["holds"] else "does not hold"
    rounds = trip.get("generations_per_round", 1)
    lines = (
        []
        if rounds == 1
        else [f"the program runs {rounds} inferences per round; figures are per inference"]
    )
    lines += [
        f"round trip: {_ns(trip['program_ns'])} against the compile's {trip['compile_figure']} "
        f"{_ns(trip['compile_ns'])}: {_percent(trip['difference_percent'])} ({verdict} within "
        f"{trip['within_percent']}%)",
        f"against the schedule's {trip['schedule_figure']} {_ns(trip['schedule_ns'])}: "
        f"{_percent(trip['schedule_difference_percent'])}",
    ]
    lines += [f"  {e['change_ns']:+g} ns: {e['effect']}" for e in trip["effects"]]
    return lines
