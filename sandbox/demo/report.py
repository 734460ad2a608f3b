"""The demo's account of a roll: figures from the executions' histories (state transitions, Lambda calls and
seconds, evictions and PDB refusals from the drain passes) and a timeline picture of the nodes (HTML + SVG)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clm.cli.timeline_svg import Bar, Row, timeline_page, timeline_svg
from clm_sandbox.demo.watch import NodePhases

_STATE_ENTERED = "StateEntered"


@dataclass
class RunFigures:
    """Counted over an execution and every child execution it started."""

    executions: int = 0
    transitions: int = 0
    lambda_calls: int = 0
    lambda_seconds: float = 0.0
    evictions: int = 0
    pdb_refusals: int = 0


def history(sfn: Any, arn: str) -> list[dict[str, Any]]:
    """Every event of the execution, oldest first."""
    pages = sfn.get_paginator("get_execution_history").paginate(executionArn=arn)
    return [event for page in pages for event in page["events"]]


def run_figures(sfn: Any, arn: str) -> RunFigures:
    """Figures of the execution `arn` and of its children (found through their TaskSucceeded/Submitted output)."""
    figures, pending, seen = RunFigures(), [arn], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        figures.executions += 1
        _count(history(sfn, current), figures, pending)
    return figures


def _count(events: list[dict[str, Any]], figures: RunFigures, children: list[str]) -> None:
    started: dict[int, Any] = {}
    for event in events:
        kind = event["type"]
        figures.transitions += kind.endswith(_STATE_ENTERED)
        if kind in {"LambdaFunctionStarted", "TaskStarted"}:
            started[event["id"]] = event["timestamp"]
        elif kind in {"LambdaFunctionSucceeded", "LambdaFunctionFailed"}:
            _count_call(event, started, figures)
            if kind == "LambdaFunctionSucceeded":
                _count_drain(event["lambdaFunctionSucceededEventDetails"].get("output") or "{}", figures)
        elif kind == "TaskSubmitted":
            details = event["taskSubmittedEventDetails"]
            if details.get("resourceType") == "states":
                children.append(json.loads(details["output"])["ExecutionArn"])
            elif details.get("resourceType") == "lambda":  # a lambda:invoke task (ParkDrain): its function returned
                _count_call(event, started, figures)


def _count_call(end: dict[str, Any], started: dict[int, Any], figures: RunFigures) -> None:
    figures.lambda_calls += 1
    begun = started.get(end.get("previousEventId", -1))
    if begun is not None:
        figures.lambda_seconds += (end["timestamp"] - begun).total_seconds()


def _count_drain(output: str, figures: RunFigures) -> None:
    result = json.loads(output)
    if isinstance(result, dict) and "evicted" in result and "blocked" in result:
        figures.evictions += len(result["evicted"])
        figures.pdb_refusals += int(result.get("refused") or 0)
    elif isinstance(result, dict) and isinstance(result.get("batch_drain"), dict):  # a batch's pass: counts a node
        for node in (result["batch_drain"].get("nodes") or {}).values():
            figures.evictions += int(node.get("evicted", 0))
            figures.pdb_refusals += int(node.get("refused", 0))


_PHASES = (  # (label, start field, end field, colour)
    ("drain", "cordoned", "drained", "#f0a030"),
    ("terminate", "drained", "gone", "#d04040"),
    ("boot", "seen", "ready", "#4080d0"),
)
_READY = "#40a060"


def timeline_html(nodes: list[NodePhases], title: str, end: float) -> str:
    """A row per node with its cordon → drained → gone and launched → Ready phases, on one time axis."""
    rows = [_launched(n, nodes) for n in nodes if n.cordoned is not None or (n.seen or 0) > 0]
    rows.sort(key=lambda n: n.cordoned if n.cordoned is not None else (n.seen or 0))
    ticks = [(second, f"{second} s") for second in range(0, int(end) + 1, max(1, int(end) // 10 or 1))]
    svg = timeline_svg([Row(node.name, _bars(node, end)) for node in rows], end, ticks)
    legend = [(label, colour) for label, _, _, colour in _PHASES] + [("Ready", _READY)]
    return timeline_page(title, legend, svg)


def _bars(node: NodePhases, end: float) -> tuple[Bar, ...]:
    """A node's phases; a replacement's serving time (from Ready on) as a thin band."""
    bars = []
    for label, start_field, end_field, colour in _PHASES:
        start, stop = getattr(node, start_field), getattr(node, end_field)
        if start is None or (label == "boot" and node.cordoned is not None):
            continue
        stop = end if stop is None else stop
        bars.append(Bar(start, stop, colour, f"{label}: {start:.1f} to {stop:.1f} s"))
    if node.cordoned is None and node.ready is not None:
        bars.append(Bar(node.ready, end, _READY, thin=True))
    return tuple(bars)


def _launched(node: NodePhases, nodes: list[NodePhases]) -> NodePhases:
    """A replacement's row starts when the node it replaces went (its instance was terminated, the group launched
    the new one): the simulator registers a Node only once it is Ready."""
    if node.cordoned is not None or node.ready is None:
        return node
    gone = [n.gone for n in nodes if n.gone is not None and n.gone <= node.ready]
    return replace(node, seen=max(gone)) if gone else node


def write_timeline(path: Path, nodes: list[NodePhases], title: str, end: float) -> Path:
    """Write the timeline page; returns its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(timeline_html(nodes, title, end))
    return path
