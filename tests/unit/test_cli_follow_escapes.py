"""`--follow` (clm provision, decommission and the demo) prints what a run's history says as text, never as the
terminal's commands nor as rich markup: a failed step's cause, the problem recorded, a node pool's name in its
progress bar, an execution named by the registry's lock."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console

from clm.cli.context import CliContext
from clm.cli.follow import follow, report
from clm.cli.run_cmd import follow_run
from tests.unit.test_cli_helpers import KUBE_1, TABLE, clm  # noqa: F401  (the `clm` fixture)
from tests.unit.test_cli_terminal_escapes import ATTACK, MARKUP, SHOWN

EXECUTION = "arn:aws:states:eu-central-1:123456789012:execution:clm-provision:"
RUN, ROLL = EXECUTION + "run-1", EXECUTION.replace("clm-provision", "clm-roll-node-pool") + "roll-1"
POOL, SHOWN_POOL = "pool\x1b[2J" + MARKUP, "pool\\x1b[2J" + MARKUP
UNTRUSTED, SHOWN_UNTRUSTED = ATTACK + MARKUP, "webhook said: " + SHOWN + MARKUP
CONTROL = "\x1b\x07\x9b"


class Histories:
    """Step Functions answering GetExecutionHistory with each execution's whole history at once."""

    def __init__(self, histories: dict[str, list[dict[str, Any]]]):
        self.histories = histories

    def get_execution_history(self, executionArn: str, **_: Any) -> dict[str, Any]:  # noqa: N803  (boto3's name)
        return {"events": self.histories[executionArn]}


def history(*events: dict[str, Any]) -> list[dict[str, Any]]:
    """The events numbered from 1, each following the one before, a second apart."""
    start = datetime(2026, 11, 22, 14, 0, tzinfo=UTC)
    return [
        {"id": n, "previousEventId": n - 1, "timestamp": start + timedelta(seconds=n), **event}
        for n, event in enumerate(events, start=1)
    ]


def entered(state: str, step_input: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": state, "input": json.dumps(step_input)}}


def returned(result: dict[str, Any]) -> dict[str, Any]:
    return {"type": "LambdaFunctionSucceeded", "lambdaFunctionSucceededEventDetails": {"output": json.dumps(result)}}


def ended(kind: str, error: str = "", cause: str = "") -> dict[str, Any]:
    key = kind[0].lower() + kind[1:] + "EventDetails"
    return {"type": kind, key: {"error": error, "cause": cause} if error else {}}


def test_a_failed_runs_cause_problem_and_pool_are_printed_as_text() -> None:
    pool = {"pool": {"node_pool": POOL}}
    run = history(
        entered("RollNodePool", pool),
        {"type": "TaskSubmitted", "taskSubmittedEventDetails": {"output": json.dumps({"ExecutionArn": ROLL})}},
        entered("RecordFailure"),
        returned({"problem": UNTRUSTED}),
        ended("ExecutionFailed", "ClusterRunFailed", UNTRUSTED),
    )
    roll = history(
        entered("Plan", pool),
        returned({"action": "replace", "reason": "replace 1 of 3 outdated node(s)", "replace": [{"node": "n-1"}]}),
        entered("Plan", pool),
        ended("LambdaFunctionFailed", "NodeStartupTimeout", json.dumps({"errorMessage": UNTRUSTED})),
        ended("ExecutionFailed", "NodeStartupTimeout", UNTRUSTED),
    )
    out = io.StringIO()
    console = Console(file=out, width=300)
    outcome = follow(Histories({RUN: run, ROLL: roll}), RUN, console, 0)
    assert outcome.cause == UNTRUSTED
    report(outcome, console)
    printed = out.getvalue()
    assert not any(c in printed for c in CONTROL), repr(printed)
    lines = [line[10:] if line[:2].isdigit() else line for line in printed.splitlines()]  # after the time stamp
    assert f"RecordFailure: problem recorded: {SHOWN_UNTRUSTED}" in lines
    assert f"[{SHOWN_POOL}] Plan failed: NodeStartupTimeout: {SHOWN_UNTRUSTED}" in lines
    assert lines[-2].startswith(SHOWN_POOL + " ")  # the pool's progress bar
    assert lines[-1] == f"FAILED  execution run-1: {SHOWN_UNTRUSTED}"
    report(outcome.__class__(RUN, "FAILED", "ClusterRunFailed", UNTRUSTED), console)  # no problem recorded
    assert out.getvalue().splitlines()[-1] == f"FAILED  execution run-1: ClusterRunFailed: {SHOWN_UNTRUSTED}"


def test_the_lock_holder_a_skipped_run_leads_to_is_named_as_text(clm, capsys) -> None:  # noqa: F811
    _, store = clm
    name = "holder\x1b]52;c;ZXZpbA==\x07" + MARKUP  # the registry's lock names any execution
    holder = EXECUTION + name
    store.acquire_lock(KUBE_1, holder, lambda _: True)
    skipped = history(entered("Begin"), returned({"action": "skip", "reason": "locked"}), ended("ExecutionSucceeded"))
    done = history(entered("Succeed"), returned({"version": "v"}), ended("ExecutionSucceeded"))
    follow_run(CliContext(table=TABLE), Histories({RUN: skipped, holder: done}), store.get(KUBE_1), RUN, 0)
    printed = capsys.readouterr().out
    assert not any(c in printed for c in CONTROL), repr(printed)
    shown = "holder\\x1b]52;c;ZXZpbA==\\x07" + MARKUP
    assert f"following execution {shown}, which holds the cluster's lock" in printed
    assert printed.rstrip().endswith(f"SUCCEEDED  execution {shown}")
