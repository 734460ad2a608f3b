"""What a CLM run's execution history says, step by step: lines to print, child executions to follow, and how far
each node pool's roll has got.

Pure functions over Step Functions history events as GetExecutionHistory returns them, fed in order and in
batches, so the rendering is tested on recorded events; `clm.cli.follow` polls and displays. A step's line is made
from its Lambda result (the states and result shapes of statemachines/*.asl.json and clm.workflow.*_steps).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clm.cli.drain_text import drain_batch_line, drain_line, listed, terminated_by
from clm.cli.executions import execution_name

# The helpers clm.workflow.run.fail makes problem titles with: a failed step reads as the problem it records.
from clm.workflow.run import error_title, innermost_error

END_STATUS = {
    "ExecutionSucceeded": ("SUCCEEDED", "executionSucceededEventDetails"),
    "ExecutionFailed": ("FAILED", "executionFailedEventDetails"),
    "ExecutionTimedOut": ("TIMED_OUT", "executionTimedOutEventDetails"),
    "ExecutionAborted": ("ABORTED", "executionAbortedEventDetails"),
}
SUCCEEDED = ("LambdaFunctionSucceeded", "TaskSucceeded")
FAILED = ("LambdaFunctionFailed", "LambdaFunctionTimedOut", "TaskFailed", "TaskTimedOut")
# The outdated count in the planner's replace reason, e.g. "replace 1 of 3 outdated node(s)".
OUTDATED_RE = re.compile(r"\bof (\d+) outdated\b")


@dataclass(frozen=True)
class Line:
    """One line of progress: when it happened, what, and a rich style ("" plain, "red", "yellow", "green")."""

    time: datetime | None
    text: str
    style: str = ""


@dataclass(frozen=True)
class Child:
    """A child execution (roll-node-pool, decommission) started by a step, with the label its lines carry."""

    arn: str
    label: str


@dataclass(frozen=True)
class End:
    """How an execution ended: SUCCEEDED, FAILED, TIMED_OUT or ABORTED, with the error and cause of a failure."""

    status: str
    error: str = ""
    cause: str = ""


@dataclass
class PoolProgress:
    """A node pool's roll: nodes replaced (terminated) out of the outdated ones found, replacements not Ready yet."""

    replaced: int = 0
    outdated: int = 0
    awaiting_ready: int = 0
    terminated: set[str | None] = field(default_factory=set)  # their instance ids


@dataclass
class Reading:
    """What one batch of events added."""

    lines: list[Line] = field(default_factory=list)
    children: list[Child] = field(default_factory=list)
    end: End | None = None


@dataclass(frozen=True)
class _Step:
    """A state being run: its name and its input, to which the task events that follow it belong."""

    name: str
    input: dict[str, Any]


class HistoryReader:
    """Reads one execution's history in batches of new events (`last_id` says where the next batch starts).

    `label` prefixes the lines of a child execution (the node pool). After reading, `progress` holds the pool's
    roll, `problem` the problem a failed run recorded, and `skipped` why a run decided to do nothing.
    """

    def __init__(self, label: str = ""):
        self.label = label
        self.last_id = 0
        self.progress = PoolProgress()
        self.problem: str | None = None
        self.skipped: str | None = None
        self._steps: dict[int, _Step] = {}
        self._last_text: str | None = None

    def read(self, events: Iterable[dict[str, Any]]) -> Reading:
        """Take the next events (ids above `last_id`, in order) and return the lines, children and end they add."""
        reading = Reading()
        for event in events:
            if event["id"] <= self.last_id:
                continue
            self.last_id = event["id"]
            self._read_event(event, reading)
        return reading

    def _read_event(self, event: dict[str, Any], reading: Reading) -> None:
        kind = event["type"]
        if kind.endswith("StateEntered"):
            details = event["stateEnteredEventDetails"]
            self._steps[event["id"]] = _Step(details["name"], json_object(details.get("input")))
            return
        step = self._steps.get(event.get("previousEventId", 0))
        if kind in END_STATUS:
            status, key = END_STATUS[kind]
            details = event.get(key) or {}
            reading.end = End(status, details.get("error", ""), details.get("cause", ""))
            if self.label:  # a child's end; the parent's is the caller's to report
                self._emit(reading, event, status, "green" if status == "SUCCEEDED" else "red")
            return
        if step is None:
            return
        self._steps[event["id"]] = step  # task events chain to their state through previousEventId
        if kind == "TaskSubmitted":
            submitted = json_object(event["taskSubmittedEventDetails"].get("output"))
            if submitted.get("ExecutionArn"):
                pool = _pool_label(step)
                child = Child(submitted["ExecutionArn"], pool or step.name.lower())
                reading.children.append(child)
                target = f"{step.name} {pool}" if pool else step.name
                self._emit(reading, event, f"{target}: started execution {execution_name(child.arn)}")
        elif kind in SUCCEEDED:
            details = event.get("lambdaFunctionSucceededEventDetails") or event.get("taskSucceededEventDetails") or {}
            self._succeeded(event, step, json_object(details.get("output")), reading)
        elif kind == "TaskTimedOut" and step.name == "ParkDrain":  # how a park nobody woke ends: not a failure
            self._emit(reading, event, "ParkDrain: the force rules allow now; next drain pass")
        elif kind in FAILED:
            details = next((v for k, v in event.items() if k.endswith("EventDetails")), {})
            if not details.get("resource", "").startswith("startExecution"):  # a child's failure: its lines say it
                text = f"{step.name} failed: {_error_message(details.get('error', ''), details.get('cause', ''))}"
                self._emit(reading, event, text, "red")

    def _succeeded(self, event: dict[str, Any], step: _Step, result: dict[str, Any], reading: Reading) -> None:
        if step.name == "Plan" and result.get("action") != "wait" and self.progress.awaiting_ready:
            ready = self.progress.awaiting_ready
            self.progress.awaiting_ready = 0
            self._emit(reading, event, f"{ready} replacement node(s) Ready", "green")
        self._track(step, result)
        describe = STEP_LINES.get(step.name)
        line = describe(step.input, result) if describe else None
        if line is not None:
            text, style = line
            if terminated_by(step.name, step.input, result):
                text += f" ({self.progress.replaced}/{self.progress.outdated} replaced)"
            self._emit(reading, event, text, style)

    def _track(self, step: _Step, result: dict[str, Any]) -> None:
        """Keep the pool's progress, the recorded problem and a skip decision."""
        progress = self.progress
        if step.name == "Begin" and result.get("action") == "skip":
            self.skipped = result.get("reason", "")
        elif step.name == "RecordFailure":
            self.problem = result.get("problem")
        elif step.name == "Plan" and result.get("action") == "replace":
            match = OUTDATED_RE.search(result.get("reason", ""))
            remaining = int(match[1]) if match else len(result.get("replace", []))
            progress.outdated = max(progress.outdated, progress.replaced + remaining)
        for replacement in terminated_by(step.name, step.input, result):
            if replacement.get("instance_id") in progress.terminated:
                continue
            progress.terminated.add(replacement.get("instance_id"))
            progress.replaced += 1
            progress.outdated = max(progress.outdated, progress.replaced)
            if not replacement.get("decrement"):
                progress.awaiting_ready += 1

    def _emit(self, reading: Reading, event: dict[str, Any], text: str, style: str = "") -> None:
        """Add a line unless it repeats the previous one (a wait or a blocked drain polled again)."""
        if text == self._last_text:
            return
        self._last_text = text
        prefix = f"[{self.label}] " if self.label else ""
        reading.lines.append(Line(event.get("timestamp"), prefix + text, style))


def json_object(text: Any) -> dict[str, Any]:
    """A JSON object from an event's input or output text ({} for anything else)."""
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _pool_label(step: _Step) -> str:
    """The node pool a step works on (its stack's name for the cluster stack), or "" when none."""
    pool = step.input.get("pool") or {}
    return pool.get("node_pool") or pool.get("stack_name") or ""


def _error_message(error: str, cause: str) -> str:
    """`Error: message` as CLM records problems: a child execution's own error, a Lambda error's errorMessage."""
    return error_title(*innermost_error(error, cause))


# --- one function per state: (state input, Lambda result) -> (text, style), or None for no line ----------------

StepLine = tuple[str, str] | None


def _begin(_: dict[str, Any], plan: dict[str, Any]) -> StepLine:
    return f"Begin: {plan.get('action')} ({plan.get('reason')})", "yellow" if plan.get("action") == "skip" else ""


def _left_outdated(_: dict[str, Any], left: dict[str, Any]) -> StepLine:
    """An apply-only run's count of the outdated nodes it did not roll (clm.workflow.apply_only)."""
    if not left:
        return "Apply-only: no node pool rolled, none outdated", ""
    pools = ", ".join(f"{pool} ({count})" for pool, count in sorted(left.items()))
    return f"Apply-only: no node pool rolled; outdated nodes left: {pools}", "yellow"


def _render(_: dict[str, Any], rendering: dict[str, Any]) -> StepLine:
    pools = ", ".join(rendering.get("node_pools", [])) or "none"
    text = (
        f"Render: version {rendering.get('version')} ({rendering.get('manifests', 0)} manifests; node pools: {pools})"
    )
    warnings = rendering.get("warnings") or []
    if warnings:  # e.g. a manifest's duplicate key: rendered as kubectl would, never silent
        return f"{text}; {rendering.get('warning_count', len(warnings))} warning(s): {listed(warnings)}", "yellow"
    return text, ""


def _start_stack(_: dict[str, Any], started: dict[str, Any]) -> StepLine:
    status = f" ({started['status']})" if started.get("status") else ""
    return f"StartStack {started.get('stack_name')}: {started.get('action')}{status}", ""


def _check_stack(_: dict[str, Any], state: dict[str, Any]) -> StepLine:
    if state.get("state") == "in_progress":
        return None
    reason = f": {state['reason']}" if state.get("reason") else ""
    return f"Stack {state.get('stack_name')}: {state.get('status') or state.get('state')}{reason}", ""


def _apply(_: dict[str, Any], applied: dict[str, Any]) -> StepLine:
    phase = applied.get("phase")
    if not applied.get("done"):
        return f"ApplyPhase {phase}: waiting for {applied.get('waiting_for') or 'a CRD'}", "yellow"
    if "configured" in applied:
        return (
            f"ApplyPhase {phase}: {applied.get('created', 0)} created, {applied['configured']} configured, "
            f"{applied.get('skipped_count', 0)} skipped"
            + (f", {len(applied['deleted'])} deleted" if applied.get("deleted") else "")  # Karpenter pools gone
            + (f", {len(applied['limited'])} limited to 0 until drained" if applied.get("limited") else "")
        ), ""
    deleted = f"ApplyPhase {phase}: {applied.get('count', len(applied.get('deleted', [])))} deleted"
    warnings = applied.get("warnings") or []
    if warnings:  # kinds the cluster does not serve, namespaces ignored: shown, never silent
        return f"{deleted}; {len(warnings)} warning(s): {listed(warnings)}", "yellow"
    return deleted, ""


def _pools(_: dict[str, Any], pools: dict[str, Any]) -> StepLine:
    items = pools.get("pools", [])
    if pools.get("cluster_stack"):  # a decommission: the cluster stack is deleted after the pools
        items = [*items, {"stack_name": pools["cluster_stack"], "removing": True}]
    rolled = "none rolled (apply-only)" if pools.get("apply_only") else "none"
    if not items:
        return f"Node pools: {rolled}", ""
    described = [rolled] if pools.get("apply_only") else []
    for pool in items:
        name = pool.get("node_pool") or f"cluster stack {pool.get('stack_name')}"
        described.append(f"{name} ({'delete' if pool.get('removing') else 'roll'})")
    return "Node pools: " + ", ".join(described), ""


def _plan(_: dict[str, Any], decision: dict[str, Any]) -> StepLine:
    action, reason = decision.get("action"), decision.get("reason")
    if action == "wait":
        return f"Plan: wait {decision.get('wait_seconds', 0)} s: {reason}", "yellow"
    if action == "scale":
        return f"Plan: scale to {decision.get('desired')}: {reason}", ""
    if action == "replace":
        nodes = [r.get("node") or r.get("instance_id") for r in decision.get("replace", [])]
        return f"Plan: {reason}: {listed(nodes)}", ""
    return f"Plan: {action}: {reason}", "green" if action == "done" else ""


def _mark(_: dict[str, Any], marked: dict[str, Any]) -> StepLine:
    """update_strategy clc: the nodes handed to the cluster-lifecycle-controller, or taken back from it."""
    parts = []
    if marked.get("handed_over"):
        parts.append(f"handed to the cluster-lifecycle-controller: {listed(marked['handed_over'])}")
    if marked.get("taken_back"):
        parts.append(f"taken back from the cluster-lifecycle-controller: {listed(marked['taken_back'])}")
    return "Mark: " + ("; ".join(parts) or "nothing to change"), ""


def _scale(_: dict[str, Any], scaled: dict[str, Any]) -> StepLine:
    groups = scaled.get("groups")
    if groups is None:  # a run of a version before pools of several groups
        return f"Scale: desired capacity {scaled.get('DesiredCapacity')}", ""
    if len(groups) == 1:
        return f"Scale: desired capacity {groups[0].get('DesiredCapacity')}", ""
    return "Scale: desired capacity " + ", ".join(f"{g.get('DesiredCapacity')} of {g.get('asg')}" for g in groups), ""


def _terminate(step_input: dict[str, Any], terminated: dict[str, Any]) -> StepLine:
    replacement = step_input.get("replacement", {})
    node = f" (node {replacement['node']})" if replacement.get("node") else ""
    return f"Terminate {terminated.get('instance_id')}{node}", ""


def _delete_stack(_: dict[str, Any], deleting: dict[str, Any]) -> StepLine:
    return f"DeleteStack {deleting.get('stack_name')}: {deleting.get('action')}", ""


def _ingress_stacks(_: dict[str, Any], swept: dict[str, Any]) -> StepLine:
    if swept.get("done"):
        left = swept.get("left") or []
        return "IngressStacks: none left" + (f"; foreign stacks left alone: {listed(left)}" if left else ""), ""
    return f"IngressStacks: deleting {listed(swept.get('deleting', []))}", "yellow"


def _health_gate(_: dict[str, Any], gate: dict[str, Any]) -> StepLine:
    if not gate.get("gated"):
        return None
    needed, most, every = gate.get("checks_needed"), gate.get("max_checks"), gate.get("interval_seconds")
    return f"HealthGate: {needed} healthy checks in a row, {every} s apart, within {most}", ""


def _check_health(_: dict[str, Any], health: dict[str, Any]) -> StepLine:
    if health.get("done"):
        return f"CheckHealth: healthy {health.get('healthy')} checks in a row: the gate passed", "green"
    found = health.get("findings") or []
    text = f"CheckHealth: check {health.get('checks')} of {health.get('max_checks')}, "
    text += f"{health.get('healthy')} of {health.get('checks_needed')} healthy in a row"
    return (f"{text}: {listed(found)}", "yellow") if found else (text, "")


def _succeed(_: dict[str, Any], done: dict[str, Any]) -> StepLine:
    if done.get("action") == "decommission":
        return "Succeed: cluster decommissioned", "green"
    if done.get("left_outdated"):  # an apply-only run (clm.workflow.apply_only): the version is not recorded
        left = sum(done["left_outdated"].values())
        return f"Succeed: version {done.get('version')} applied (apply-only), {left} outdated node(s) left", "yellow"
    return f"Succeed: cluster at version {done.get('version')}", "green"


def _record_failure(_: dict[str, Any], recorded: dict[str, Any]) -> StepLine:
    return f"RecordFailure: problem recorded: {recorded.get('problem')}", "red"


def _named(text: str) -> Callable[[dict[str, Any], dict[str, Any]], StepLine]:
    return lambda _input, _result: (text, "")


STEP_LINES: dict[str, Callable[[dict[str, Any], dict[str, Any]], StepLine]] = {
    "Begin": _begin,
    "Render": _render,
    "StartStack": _start_stack,
    "CheckStack": _check_stack,
    "ApplyPhase": _apply,
    "ProvisionPools": _pools,
    "LeftOutdated": _left_outdated,
    "DecommissionPools": _pools,
    "Suspend": _named("Suspend: AZRebalance and ReplaceUnhealthy suspended"),
    "Plan": _plan,
    "Scale": _scale,
    "Mark": _mark,
    "DrainBatch": drain_batch_line,
    "Drain": drain_line,
    "ParkDrain": lambda _input, woken: (f"ParkDrain: woken by {woken.get('woken_by')}", ""),
    "Terminate": _terminate,
    "Resume": _named("Resume: auto scaling processes resumed"),
    "DeletePoolStack": _delete_stack,
    "CheckDelete": _check_stack,
    "DeleteIngressStacks": _ingress_stacks,
    "CheckIngressStacks": _ingress_stacks,
    "DeleteClusterStack": _delete_stack,
    "CheckClusterStack": _check_stack,
    "HealthGate": _health_gate,
    "CheckHealth": _check_health,
    "Succeed": _succeed,
    "RecordFailure": _record_failure,
}
