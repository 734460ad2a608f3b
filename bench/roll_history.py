"""Where a run's time and cost went, read from the execution histories of a provision run and its children.

Every Lambda call (which step, when, how long, its input and output; Lambda tasks and `lambda:invoke` tasks alike)
and every Wait state (which, how long), on one time axis (epoch seconds); per node, its drain: first pass to
the pass that found it empty; the batches the plans took out together; and the chain of roll-node-pool executions
(each hands over to the next after its budget of steps), with their history events.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clm_sandbox.demo.report import history

History = list[dict[str, Any]]
_LAMBDA_ENDS = {"LambdaFunctionSucceeded", "LambdaFunctionFailed", "LambdaFunctionTimedOut"}


@dataclass(frozen=True)
class LambdaCall:
    """One Lambda invocation of a Task state, in `execution`."""

    execution: str
    step: str
    started: float
    ended: float
    event: dict[str, Any]
    result: Any

    @property
    def seconds(self) -> float:
        return self.ended - self.started


@dataclass(frozen=True)
class WaitSpan:
    """One pass through a Wait state."""

    state: str
    started: float
    ended: float

    @property
    def seconds(self) -> float:
        return self.ended - self.started


@dataclass
class Trace:
    """The Lambda calls and Wait states of a run and its child executions, oldest first."""

    calls: list[LambdaCall] = field(default_factory=list)
    waits: list[WaitSpan] = field(default_factory=list)
    executions: dict[str, tuple[float, float | None]] = field(default_factory=dict)  # arn -> (start, stop)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # arn -> the execution's input

    def pool_calls(self, pool: str) -> list[LambdaCall]:
        """The calls of the roll-node-pool executions of `pool`."""
        return [c for c in self.calls if (self.inputs.get(c.execution, {}).get("pool") or {}).get("node_pool") == pool]

    def by_step(self) -> dict[str, list[LambdaCall]]:
        """Lambda calls grouped by step, in order of first call."""
        steps: dict[str, list[LambdaCall]] = defaultdict(list)
        for call in self.calls:
            steps[call.step].append(call)
        return dict(steps)

    def by_wait_state(self) -> dict[str, list[WaitSpan]]:
        """Wait states passed through, grouped by state name."""
        states: dict[str, list[WaitSpan]] = defaultdict(list)
        for wait in self.waits:
            states[wait.state].append(wait)
        return dict(states)


@dataclass(frozen=True)
class NodeDrain:
    """The drain of one node: from its first pass's start to the end of the pass that found it done."""

    node: str
    started: float
    done: float | None
    passes: int
    evicted: int
    forced: int
    parks: int
    lambda_seconds: float  # of its passes and parks


def run_histories(sfn: Any, arn: str) -> dict[str, History]:
    """The histories of the execution `arn` and of every child execution it started, by execution ARN."""
    histories: dict[str, History] = {}
    pending = [arn]
    while pending:
        current = pending.pop()
        if current in histories:
            continue
        histories[current] = history(sfn, current)
        pending.extend(_children(histories[current]))
    return histories


def _children(events: History) -> list[str]:
    children = []
    for event in events:
        details = event.get("taskSubmittedEventDetails") or {}
        if event["type"] == "TaskSubmitted" and details.get("resourceType") == "states":
            children.append(json.loads(details["output"])["ExecutionArn"])
    return children


def trace(histories: dict[str, History]) -> Trace:
    """The calls and waits of every history, on one time axis."""
    result = Trace()
    for arn, events in histories.items():
        by_id = {event["id"]: event for event in events}
        start = stop = None
        for event in events:
            kind = event["type"]
            if kind == "ExecutionStarted":
                start = _epoch(event["timestamp"])
                result.inputs[arn] = json.loads(event["executionStartedEventDetails"].get("input") or "{}")
            elif kind in {"ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"}:
                stop = _epoch(event["timestamp"])
            elif kind in _LAMBDA_ENDS:
                result.calls.append(_call(arn, event, by_id))
            elif kind == "TaskSubmitted" and event["taskSubmittedEventDetails"].get("resourceType") == "lambda":
                result.calls.append(_invoke_call(arn, event, by_id))
            elif kind == "WaitStateExited":
                entered = by_id[event["previousEventId"]]
                result.waits.append(
                    WaitSpan(
                        event["stateExitedEventDetails"]["name"],
                        _epoch(entered["timestamp"]),
                        _epoch(event["timestamp"]),
                    )
                )
        result.executions[arn] = (start or 0.0, stop)
    result.calls.sort(key=lambda call: call.started)
    result.waits.sort(key=lambda wait: wait.started)
    return result


def _call(arn: str, end: dict[str, Any], by_id: dict[int, dict[str, Any]]) -> LambdaCall:
    started = by_id[end["previousEventId"]]
    scheduled = by_id[started["previousEventId"]]
    event = json.loads(scheduled["lambdaFunctionScheduledEventDetails"].get("input") or "{}")
    output = (end.get("lambdaFunctionSucceededEventDetails") or {}).get("output")
    return LambdaCall(
        arn,
        str(event.get("step", "?")),
        _epoch(started["timestamp"]),
        _epoch(end["timestamp"]),
        event,
        json.loads(output) if output else None,
    )


def _invoke_call(arn: str, submitted: dict[str, Any], by_id: dict[int, dict[str, Any]]) -> LambdaCall:
    """A Lambda call of an `arn:aws:states:::lambda:invoke` task (ParkDrain): from TaskStarted to TaskSubmitted,
    when the function returned (the task itself may wait on for its token)."""
    started = by_id[submitted["previousEventId"]]
    scheduled = by_id[started["previousEventId"]]
    payload = json.loads(scheduled["taskScheduledEventDetails"].get("parameters") or "{}").get("Payload") or {}
    output = json.loads(submitted["taskSubmittedEventDetails"].get("output") or "{}").get("Payload")
    step = str(payload.get("step", "?"))
    return LambdaCall(arn, step, _epoch(started["timestamp"]), _epoch(submitted["timestamp"]), payload, output)


def _epoch(value: datetime | str | float) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value).timestamp()
    return float(value)


def node_passes(call: LambdaCall) -> dict[str, dict[str, Any]]:
    """The nodes a drain call passed over, each with its pass's result (a batch's: counts, clm.workflow.drain_steps)."""
    if call.step == "drain" and (node := (call.event.get("replacement") or {}).get("node")):
        return {} if (call.result or {}).get("batched") else {node: call.result or {}}
    if call.step == "drain_batch":
        return dict(((call.result or {}).get("batch_drain") or {}).get("nodes") or {})
    return {}


def terminations(calls: list[LambdaCall]) -> list[float]:
    """When each replaced node's instance was terminated (epoch seconds), oldest first: the end of its Terminate
    call, or the time a drain pass terminated it (its result's `terminated_at`, a batch's replacement's)."""
    ends = [call.ended for call in calls if call.step == "terminate"]
    for call in calls:
        if call.step == "drain" and "terminated_at" in (call.result or {}):
            ends.append(call.result["terminated_at"])
        if call.step == "drain_batch":
            ends += [r["terminated_at"] for r in (call.result or {}).get("replace") or [] if "terminated_at" in r]
    return sorted(set(ends))


def _count(value: Any) -> int:
    """A pass's `evicted` or `forced`: a list of names (a node's pass) or a count (a batch's)."""
    return len(value) if isinstance(value, list) else int(value or 0)


def node_drains(calls: list[LambdaCall]) -> list[NodeDrain]:
    """Per node, its drain passes (a batch's passes over it among them) and parks, in order of the first pass."""
    passes: dict[str, list[tuple[LambdaCall, dict[str, Any]]]] = defaultdict(list)
    parks: dict[str, list[LambdaCall]] = defaultdict(list)
    for call in calls:
        for node, result in node_passes(call).items():
            passes[node].append((call, result))
        if call.step == "park":
            parks[call.event.get("node", "")].append(call)
    drains = []
    for node, of_node in passes.items():
        done = next((call.ended for call, result in of_node if result.get("done")), None)
        drains.append(
            NodeDrain(
                node,
                of_node[0][0].started,
                done,
                len(of_node),
                sum(_count(result.get("evicted")) for _, result in of_node),
                sum(_count(result.get("forced")) for _, result in of_node),
                len(parks[node]),
                sum(call.seconds for call in [*(call for call, _ in of_node), *parks[node]]),
            )
        )
    return sorted(drains, key=lambda drain: drain.started)


def batches(calls: list[LambdaCall], drains: list[NodeDrain]) -> list[list[NodeDrain]]:
    """The drains grouped as the plans took their nodes out (each `replace` decision one batch), in order."""
    by_node = {drain.node: drain for drain in drains}
    grouped: list[list[NodeDrain]] = []
    for call in calls:
        result = call.result or {}
        if call.step != "plan" or result.get("action") != "replace":
            continue
        batch = [by_node.pop(node) for r in result.get("replace") or [] if (node := r.get("node")) in by_node]
        if batch:
            grouped.append(batch)
    grouped += [[drain] for drain in by_node.values()]  # drains no plan named (none expected)
    return sorted(grouped, key=lambda batch: min(drain.started for drain in batch))


@dataclass(frozen=True)
class RollExecution:
    """One roll-node-pool execution of the chain: its history's length and the nodes whose drain it ran."""

    arn: str
    events: int
    started: float
    stopped: float | None
    nodes: int
    handed_over: bool


def roll_chain(histories: dict[str, History], run_trace: Trace) -> list[RollExecution]:
    """The roll-node-pool executions (those started with a pool), oldest first."""
    chain = []
    for arn, (started, stopped) in run_trace.executions.items():
        if not run_trace.inputs.get(arn, {}).get("pool"):
            continue
        calls = [c for c in run_trace.calls if c.execution == arn]
        nodes = {node for c in calls for node in node_passes(c)}
        handed_over = any(c.step == "plan" and (c.result or {}).get("action") == "continue" for c in calls)
        chain.append(RollExecution(arn, len(histories[arn]), started, stopped, len(nodes), handed_over))
    return sorted(chain, key=lambda execution: execution.started)
