"""The demo's figures from execution histories and its timeline picture."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from clm_sandbox.demo.report import RunFigures, _count, timeline_html
from clm_sandbox.demo.watch import NodePhases

T0 = datetime(2026, 11, 22, tzinfo=UTC)


def _event(event_id: int, kind: str, seconds: float, **details: object) -> dict[str, object]:
    return {
        "id": event_id,
        "previousEventId": event_id - 1,
        "type": kind,
        "timestamp": T0 + timedelta(seconds=seconds),
        **details,
    }


def test_figures_count_transitions_lambda_time_evictions_refusals_and_children() -> None:
    drain = {
        "node": "n1",
        "done": False,
        "evicted": ["example/web-1"],
        "refused": 1,  # the server refused web-2's eviction (429); a pod the listed budget held back is no refusal
        "blocked": [
            {"pod": "example/web-2", "reason": "budget", "pdb": "example/web"},
            {"pod": "example/web-3", "reason": "budget allows 0", "pdb": "example/web"},
            {"pod": "x/y", "reason": "n", "pdb": None},
        ],
    }
    child = "arn:aws:states:eu-central-1:123456789012:execution:roll:1"
    events = [
        _event(1, "TaskStateEntered", 0),
        _event(2, "LambdaFunctionStarted", 0.5),
        _event(3, "LambdaFunctionSucceeded", 2.0, lambdaFunctionSucceededEventDetails={"output": json.dumps(drain)}),
        _event(4, "WaitStateEntered", 2.1),
        _event(
            5,
            "TaskSubmitted",
            3,
            taskSubmittedEventDetails={"resourceType": "states", "output": json.dumps({"ExecutionArn": child})},
        ),
        _event(6, "TaskStateEntered", 4),  # ParkDrain: lambda:invoke.waitForTaskToken
        _event(7, "TaskStarted", 4.0),
        _event(8, "TaskSubmitted", 4.25, taskSubmittedEventDetails={"resourceType": "lambda", "output": "{}"}),
        _event(9, "TaskTimedOut", 60),  # the wait for the token costs no Lambda time
    ]
    figures, children = RunFigures(), []
    _count(events, figures, children)
    assert (figures.transitions, figures.lambda_calls, figures.lambda_seconds) == (3, 2, 1.75)
    assert (figures.evictions, figures.pdb_refusals, children) == (1, 1, [child])


def test_a_batch_pass_counts_each_nodes_evictions_and_refusals() -> None:
    nodes = {"n1": {"done": True, "evicted": 2, "refused": 0}, "n2": {"done": False, "evicted": 1, "refused": 1}}
    output = json.dumps({"action": "replace", "batch_drain": {"nodes": nodes}})
    events = [_event(1, "LambdaFunctionSucceeded", 1.0, lambdaFunctionSucceededEventDetails={"output": output})]
    figures = RunFigures()
    _count(events, figures, [])
    assert (figures.evictions, figures.pdb_refusals) == (3, 1)


def test_timeline_rows_drain_terminate_and_boot_from_the_replaced_nodes_end() -> None:
    nodes = [NodePhases("old-1", 0, 0, 5, 7, 8), NodePhases("new-1", 10, 10), NodePhases("steady", 0, 0)]
    page = timeline_html(nodes, "roll", 20)
    assert re.findall(r"<title>([^<]*)<", page) == [
        "roll",
        "drain: 5.0 to 7.0 s",
        "terminate: 7.0 to 8.0 s",
        "boot: 8.0 to 10.0 s",
    ]
    assert "steady" not in page  # a node the roll never touched has no row
