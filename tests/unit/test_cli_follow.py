"""`--follow` on recorded executions: history events -> step lines, children and node-pool progress; the polling loop
replaying recorded runs as if they were running (the live one is tests/integration/test_cli_follow.py)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from clm.cli.context import CliContext
from clm.cli.executions import new_events
from clm.cli.follow import follow, report
from clm.cli.run_cmd import follow_run
from clm.cli.run_history import STEP_LINES, End, HistoryReader, Line
from tests.unit.test_cli_helpers import KUBE_1, TABLE, clm  # noqa: F401  (the `clm` fixture)

HISTORY = Path(__file__).with_name("test_cli_follow_history.json")
PROBLEM = (
    "NodeStartupTimeout: node pool default-worker: instance i-6923c96bad279c36c (eu-central-1a) not Ready after 22 s "
    "(no Node registered; node startup timeout 20 s)"
)


def recorded(run: str) -> list[dict[str, Any]]:
    """The executions of a recorded run (the provision execution first, then its children), timestamps as boto3's."""
    executions = json.loads(HISTORY.read_text())["runs"][run]
    for execution in executions:
        for event in execution["events"]:
            event["timestamp"] = datetime.fromisoformat(event["timestamp"])
    return executions


def read_all(executions: list[dict[str, Any]], batch: int | None = None) -> tuple[dict[str, HistoryReader], list[Line]]:
    """Read every execution of a run in order, children with the labels their parents gave them."""
    readers = {executions[0]["arn"]: HistoryReader()}
    lines: list[Line] = []
    for execution in executions:
        reader, events = readers[execution["arn"]], execution["events"]
        size = batch or len(events)
        for start in range(0, len(events), size):
            reading = reader.read(events[max(start - 2, 0) : start + size])  # batches overlap: seen ids are skipped
            lines += reading.lines
            readers.update({child.arn: HistoryReader(child.label) for child in reading.children})
    return readers, lines


def texts(lines: list[Line]) -> list[str]:
    return [line.text for line in lines]


ROLL_CHILD = [
    "[default-worker] Suspend: AZRebalance and ReplaceUnhealthy suspended",
    "[default-worker] Plan: replace 1 of 3 outdated node(s): ip-10-0-0-4.ec2.internal",
    "[default-worker] Drain ip-10-0-0-4.ec2.internal: drained (1 evicted)",
    "[default-worker] Terminate i-a9686bbf92ec7334d (node ip-10-0-0-4.ec2.internal) (1/3 replaced)",
    "[default-worker] 1 replacement node(s) Ready",
    "[default-worker] Plan: replace 1 of 2 outdated node(s): ip-10-0-32-4.ec2.internal",
    "[default-worker] Drain ip-10-0-32-4.ec2.internal: drained (1 evicted)",
    "[default-worker] Terminate i-e244f946e206c6a8f (node ip-10-0-32-4.ec2.internal) (2/3 replaced)",
    "[default-worker] Plan: wait 1 s: waiting for 1 new node(s) to become Ready: i-10e9183954ecd714f",
    "[default-worker] 1 replacement node(s) Ready",
    "[default-worker] Plan: replace 1 of 1 outdated node(s): ip-10-0-64-4.ec2.internal",
    "[default-worker] Drain ip-10-0-64-4.ec2.internal: drained (2 evicted)",
    "[default-worker] Terminate i-0a350a9e112082934 (node ip-10-0-64-4.ec2.internal) (3/3 replaced)",
    "[default-worker] Plan: wait 1 s: waiting for 1 new node(s) to become Ready: i-ae245752cc10983a9",
    "[default-worker] 1 replacement node(s) Ready",
    "[default-worker] Plan: done: every node is up to date and Ready",
    "[default-worker] Resume: auto scaling processes resumed",
    "[default-worker] SUCCEEDED",
]
ROLL_PARENT = [
    "Begin: provision (2e24067e4c3a#Xf5GpzZs10gBvgCoLM_lB5bsycc -> be467ef8fb15#Xf5GpzZs10gBvgCoLM_lB5bsycc)",
    "Render: version be467ef8fb15#Xf5GpzZs10gBvgCoLM_lB5bsycc (7 manifests; node pools: default-worker)",
    "StartStack kube-1: unchanged (CREATE_COMPLETE)",
    "StartStack nodepool-default-worker-aws-123456789012-eu-central-1-kube-1: update_started (CREATE_COMPLETE)",
    "Stack nodepool-default-worker-aws-123456789012-eu-central-1-kube-1: UPDATE_COMPLETE",
    "ApplyPhase pre_apply: 0 deleted",
    "ApplyPhase manifests: 0 created, 7 configured, 0 skipped",
    "ApplyPhase post_apply: 0 deleted",
    "Node pools: default-worker (roll)",
    "RollNodePool default-worker: started execution 96f27030-9c91-484a-91ec-df65c1c460dc",
]
ROLL_END = ["Succeed: cluster at version be467ef8fb15#Xf5GpzZs10gBvgCoLM_lB5bsycc"]


@pytest.mark.parametrize("batch", [None, 1, 7])
def test_a_roll_reads_as_its_steps_with_the_pool_progress(batch):
    parent, child = recorded("roll")
    readers, lines = read_all([parent, child], batch)
    assert texts(lines) == ROLL_PARENT + ROLL_END + ROLL_CHILD
    progress = readers[child["arn"]].progress
    assert (progress.replaced, progress.outdated, progress.awaiting_ready) == (3, 3, 0)
    styles = {line.text: line.style for line in lines}
    assert styles["[default-worker] 1 replacement node(s) Ready"] == "green"
    assert styles[ROLL_CHILD[8]] == "yellow"
    assert lines[0].time == datetime(2026, 11, 22, 14, 13, 40, 462000, tzinfo=UTC)


def test_a_failed_roll_names_the_step_and_the_problem_recorded():
    parent, child = recorded("fail")
    readers, read = read_all([parent, child])
    lines = texts(read)
    assert lines[-2:] == [
        f"[default-worker] Plan failed: {PROBLEM}",
        "[default-worker] FAILED",
    ]
    assert f"RecordFailure: problem recorded: {PROBLEM}" in lines
    assert not any(line.startswith("RollNodePool failed") for line in lines)  # the child's own line says it
    assert readers[parent["arn"]].problem == PROBLEM
    progress = readers[child["arn"]].progress
    assert (progress.replaced, progress.outdated, progress.awaiting_ready) == (1, 3, 1)


def test_a_decommission_follows_grandchildren():
    _, lines = read_all(recorded("decommission"))
    assert texts(lines) == [
        "Begin: decommission (decommission requested)",
        "Decommission: started execution b912958f-2a68-4fe8-a4ac-85a8e7d03219",
        "Succeed: cluster decommissioned",
        "[decommission] Node pools: default-worker (delete), cluster stack kube-1 (delete)",
        "[decommission] RollNodePool default-worker: started execution 4e675a28-54ba-4b2f-9c3e-ecef08d125e8",
        "[decommission] RollNodePool kube-1: started execution eb4e57f5-16ce-42d9-b663-a58832a5bb96",
        "[decommission] SUCCEEDED",
        "[default-worker] DeleteStack nodepool-default-worker-aws-123456789012-eu-central-1-kube-1: delete_started",
        "[default-worker] Stack nodepool-default-worker-aws-123456789012-eu-central-1-kube-1: DELETE_COMPLETE",
        "[default-worker] SUCCEEDED",
        "[kube-1] DeleteStack kube-1: delete_started",
        "[kube-1] Stack kube-1: DELETE_COMPLETE",
        "[kube-1] SUCCEEDED",
    ]


def test_a_skip_says_why():
    [execution] = recorded("skip")
    reader = HistoryReader()
    reading = reader.read(execution["events"])
    assert [line.text for line in reading.lines] == [
        "Begin: skip (up to date at 2e24067e4c3a#Xf5GpzZs10gBvgCoLM_lB5bsycc)"
    ]
    assert reader.skipped == "up to date at 2e24067e4c3a#Xf5GpzZs10gBvgCoLM_lB5bsycc"
    assert reading.end == End("SUCCEEDED")


def _drain_pass(event_id: int, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one Drain step whose Lambda returned `result` (the shape of clm.kube.drain.drain_pass)."""
    replacement = {"instance_id": "i-1", "node": "node-1", "decrement": False}
    return _lambda_step(event_id, "Drain", {"replacement": replacement}, result)


def test_deletion_warnings_show_in_the_apply_line():
    result = {
        "wait_seconds": 0,
        "phase": "post_apply",
        "done": True,
        "dry_run": False,
        "count": 1,
        "deleted": ["ClusterRole skipper-ingress"],
        "unknown_kinds": ["VerticalPodAutoscaler"],
        "warnings": [
            "deletions.yaml post_apply[0]: kind 'VerticalPodAutoscaler' is not served by the cluster; skipped",
            "deletions.yaml post_apply[1]: ClusterRole is cluster-scoped: namespace 'kube-system' ignored",
        ],
    }
    [line] = HistoryReader().read(_lambda_step(10, "ApplyPhase", {"phase": "post_apply"}, result)).lines
    assert line.style == "yellow"
    assert line.text == (
        "ApplyPhase post_apply: 1 deleted; 2 warning(s): deletions.yaml post_apply[0]: kind 'VerticalPodAutoscaler' "
        "is not served by the cluster; skipped, deletions.yaml post_apply[1]: ClusterRole is cluster-scoped: "
        "namespace 'kube-system' ignored"
    )


def test_the_karpenter_pools_phase_shows_what_it_applied_and_deleted():
    result = {"phase": "karpenter_pools", "done": True, "created": 2, "configured": 0, "skipped_count": 0}
    result["deleted"] = ["NodePool gone", "EC2NodeClass gone"]
    [line] = HistoryReader().read(_lambda_step(10, "ApplyPhase", {"phase": "karpenter_pools"}, result)).lines
    assert line.text == "ApplyPhase karpenter_pools: 2 created, 0 configured, 0 skipped, 2 deleted"


def _lambda_step(event_id: int, state: str, step_input: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one Lambda task state `state` entered with `step_input` whose Lambda returned `result`."""
    return [
        {
            "id": event_id,
            "previousEventId": event_id - 1,
            "type": "TaskStateEntered",
            "stateEnteredEventDetails": {"name": state, "input": json.dumps(step_input)},
        },
        {"id": event_id + 1, "previousEventId": event_id, "type": "LambdaFunctionScheduled"},
        {"id": event_id + 2, "previousEventId": event_id + 1, "type": "LambdaFunctionStarted"},
        {
            "id": event_id + 3,
            "previousEventId": event_id + 2,
            "type": "LambdaFunctionSucceeded",
            "lambdaFunctionSucceededEventDetails": {"output": json.dumps(result)},
        },
    ]


def test_a_blocked_drain_names_the_pods_and_why_once_while_it_stays_blocked():
    blocked = {
        "node": "node-1",
        "done": False,
        "wait_seconds": 4,
        "evicted": [],
        "forced": [],
        "blocked": [
            {"pod": "example/web-1", "reason": "PodDisruptionBudget allows no disruption", "pdb": "web"},
            {"pod": "example/solo", "reason": "no controller; force rules: pod younger than 72h", "pdb": None},
        ],
        "terminating": [],
    }
    done = {**blocked, "done": True, "blocked": [], "evicted": ["example/web-1"], "forced": ["example/solo"]}
    reader = HistoryReader("default-worker")
    lines = [
        line.text
        for events in (_drain_pass(10, blocked), _drain_pass(20, blocked), _drain_pass(30, done))
        for line in reader.read(events).lines
    ]
    assert lines == [
        "[default-worker] Drain node-1: blocked: example/web-1 (PodDisruptionBudget allows no disruption; PDB web), "
        "example/solo (no controller; force rules: pod younger than 72h); next pass in 4 s",
        "[default-worker] Drain node-1: drained (1 evicted, 1 force-deleted)",
    ]


def _park(event_id: int, end: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of a ParkDrain state: its Lambda keeps the token, then the task ends with the event `end`."""
    return [
        {
            "id": event_id,
            "previousEventId": event_id - 1,
            "type": "TaskStateEntered",
            "stateEnteredEventDetails": {"name": "ParkDrain", "input": "{}"},
        },
        {"id": event_id + 1, "previousEventId": event_id, "type": "TaskScheduled"},
        {"id": event_id + 2, "previousEventId": event_id + 1, "type": "TaskStarted"},
        {"id": event_id + 3, "previousEventId": event_id + 2, "type": "TaskSubmitted", "taskSubmittedEventDetails": {}},
        {"id": event_id + 4, "previousEventId": event_id + 3, **end},
    ]


def test_a_parked_drain_says_until_when_and_how_it_ended():
    blocked = {
        "node": "node-1",
        "done": False,
        "wait_seconds": 21599,
        "evicted": [],
        "forced": [],
        "blocked": [{"pod": "example/web-1", "reason": "PodDisruptionBudget allows 0", "pdb": "example/web"}],
        "terminating": [],
        "park": {"seconds": 21599, "since": "2026-11-22T20:00:00Z"},
    }
    woken = {"type": "TaskSucceeded", "taskSucceededEventDetails": {"output": json.dumps({"woken_by": "run-2"})}}
    timed_out = {"type": "TaskTimedOut", "taskTimedOutEventDetails": {"error": "States.Timeout"}}
    reader = HistoryReader("")
    events = [*_drain_pass(10, blocked), *_park(20, woken), *_drain_pass(30, blocked), *_park(40, timed_out)]
    assert texts(reader.read(events).lines) == [
        "Drain node-1: blocked: example/web-1 (PodDisruptionBudget allows 0; PDB example/web); parked for "
        "5h59m59s, until the force rules allow (clm provision wakes it)",
        "ParkDrain: woken by run-2",
        "Drain node-1: blocked: example/web-1 (PodDisruptionBudget allows 0; PDB example/web); parked for "
        "5h59m59s, until the force rules allow (clm provision wakes it)",
        "ParkDrain: the force rules allow now; next drain pass",
    ]


class ReplayedStepFunctions:
    """Recorded executions served as if they were running: each history read moves a clock `tick` on and shows the
    events recorded up to that clock.

    Answers GetExecutionHistory as AWS does (newest first with reverseOrder, pages of maxResults with nextToken).
    """

    def __init__(self, *executions: dict[str, Any], tick: timedelta = timedelta(seconds=1)):
        self.histories = {execution["arn"]: execution["events"] for execution in executions}
        self.clock = executions[0]["events"][0]["timestamp"]
        self.tick = tick
        self.reads = 0

    def get_execution_history(self, **request: Any) -> dict[str, Any]:
        arn, token, size = request["executionArn"], request.get("nextToken"), request.get("maxResults", 100)
        if token is None:
            self.reads += 1
            self.clock += self.tick
        events = [event for event in self.histories[arn] if event["timestamp"] <= self.clock]
        events = events[::-1] if request.get("reverseOrder") else events
        start = int(token or 0)
        page = {"events": events[start : start + size]}
        if start + size < len(events):
            page["nextToken"] = str(start + size)
        return page


def test_follow_shows_a_running_roll_and_its_child_until_both_end():
    parent, child = recorded("roll")
    out = io.StringIO()
    outcome = follow(ReplayedStepFunctions(parent, child), parent["arn"], Console(file=out, width=200), 0)
    assert (outcome.status, outcome.problem, outcome.skipped) == ("SUCCEEDED", None, None)
    shown = [line[10:] for line in out.getvalue().splitlines() if line[:2].isdigit()]  # after the time stamp
    assert sorted(shown) == sorted(ROLL_PARENT + ROLL_END + ROLL_CHILD)  # parent and child interleave as they ran
    assert [line for line in shown if line.startswith("[default-worker]")] == ROLL_CHILD
    assert "default-worker" in out.getvalue().splitlines()[-1]  # the pool's bar, finished: 3/3 nodes replaced
    assert "3/3" in out.getvalue().splitlines()[-1]
    report(outcome, Console(file=out, width=200))
    assert out.getvalue().splitlines()[-1] == "SUCCEEDED  execution kube-1-d9106345705f-1994840"


def test_follow_of_a_failed_run_reports_the_recorded_problem():
    parent, child = recorded("fail")
    outcome = follow(ReplayedStepFunctions(parent, child), parent["arn"], Console(file=io.StringIO()), 0)
    assert (outcome.status, outcome.error, outcome.problem) == ("FAILED", "ClusterRunFailed", PROBLEM)
    out = io.StringIO()
    report(outcome, Console(file=out, width=300))
    assert out.getvalue() == f"FAILED  execution kube-1-7f9fe7f41c06-1994840: {PROBLEM}\n"


def test_a_run_that_skipped_for_the_lock_is_followed_by_the_lock_holder(clm, capsys):  # noqa: F811
    _, store = clm
    [skip], (parent, child) = recorded("skip"), recorded("roll")
    store.acquire_lock(KUBE_1, parent["arn"], lambda _: True)
    follow_run(CliContext(table=TABLE), ReplayedStepFunctions(skip, parent, child), store.get(KUBE_1), skip["arn"], 0)
    printed = capsys.readouterr().out
    assert "SUCCEEDED  execution 3710bb43-d2fe-4a6d-9015-deec6b2300a0 (skipped: up to date at" in printed
    assert "following execution kube-1-d9106345705f-1994840, which holds the cluster's lock" in printed
    assert printed.rstrip().endswith("SUCCEEDED  execution kube-1-d9106345705f-1994840")


def test_follow_run_exits_1_when_the_run_failed(clm):  # noqa: F811
    parent, child = recorded("fail")
    with pytest.raises(SystemExit) as exited:
        follow_run(CliContext(table=TABLE), ReplayedStepFunctions(parent, child), clm[1].get(KUBE_1), parent["arn"], 0)
    assert exited.value.code == 1


def test_new_events_are_those_after_the_last_seen_oldest_first():
    [execution] = recorded("skip")
    sfn = ReplayedStepFunctions(execution, tick=timedelta(hours=1))
    events = new_events(sfn, execution["arn"], after=7)
    assert [event["id"] for event in events] == list(range(8, len(execution["events"]) + 1))
    assert sfn.reads == 1


class Interrupted(ReplayedStepFunctions):
    """Ctrl-C while the history is read."""

    def get_execution_history(self, **request: Any) -> dict[str, Any]:
        raise KeyboardInterrupt


def test_an_interrupted_follow_says_the_run_goes_on(clm, capsys):  # noqa: F811
    [execution] = recorded("skip")
    with pytest.raises(SystemExit) as exited:
        follow_run(CliContext(table=TABLE), Interrupted(execution), clm[1].get(KUBE_1), execution["arn"], 0)
    assert exited.value.code == 130
    assert capsys.readouterr().out == (
        f"stopped following; execution 3710bb43-d2fe-4a6d-9015-deec6b2300a0 goes on (see `clm status {KUBE_1}`)\n"
    )


def test_a_decommission_names_the_cluster_stack_and_the_ingress_controllers_stacks():
    pools = {"pools": [{"node_pool": "default-worker", "removing": True}], "cluster_stack": "kube-1"}
    assert STEP_LINES["DecommissionPools"]({}, pools) == (
        "Node pools: default-worker (delete), cluster stack kube-1 (delete)",
        "",
    )
    deleting = {"deleting": ["kube-ing-a", "kube-ing-b"], "left": ["team-data"], "done": False}
    assert STEP_LINES["DeleteIngressStacks"]({}, deleting) == (
        "IngressStacks: deleting kube-ing-a, kube-ing-b",
        "yellow",
    )
    done = {"deleting": [], "left": ["team-data"], "done": True}
    assert STEP_LINES["CheckIngressStacks"]({}, done) == (
        "IngressStacks: none left; foreign stacks left alone: team-data",
        "",
    )


def test_a_health_gate_reads_as_its_checks_and_its_pass():
    spec = {"gated": True, "interval_seconds": 30, "checks_needed": 2, "max_checks": 4, "checks": 0, "healthy": 0}
    found = ["Deployment kube-system/coredns: 1 of 2 pods updated and available"]
    events = _lambda_step(10, "HealthGate", {}, spec)
    events += _lambda_step(20, "CheckHealth", {}, {**spec, "checks": 1, "findings": found})
    events += _lambda_step(30, "CheckHealth", {}, {**spec, "checks": 2, "healthy": 1, "findings": []})
    events += _lambda_step(40, "CheckHealth", {}, {**spec, "checks": 3, "healthy": 2, "done": True})
    lines = HistoryReader().read(events).lines
    assert [(line.text, line.style) for line in lines] == [
        ("HealthGate: 2 healthy checks in a row, 30 s apart, within 4", ""),
        ("CheckHealth: check 1 of 4, 0 of 2 healthy in a row: " + found[0], "yellow"),
        ("CheckHealth: check 2 of 4, 1 of 2 healthy in a row", ""),
        ("CheckHealth: healthy 2 checks in a row: the gate passed", "green"),
    ]
    assert HistoryReader().read(_lambda_step(10, "HealthGate", {}, {"gated": False})).lines == []


def test_update_strategy_clc_reads_as_the_nodes_handed_over_and_taken_back():
    """`--follow` of a roll under update_strategy clc (clm.rolling.clc): who drains which node."""
    handed = {"handed_over": ["node-1", "node-2"], "taken_back": []}
    assert STEP_LINES["Mark"]({}, handed) == ("Mark: handed to the cluster-lifecycle-controller: node-1, node-2", "")
    taken = {"handed_over": [], "taken_back": ["node-3"]}
    assert STEP_LINES["Mark"]({}, taken) == ("Mark: taken back from the cluster-lifecycle-controller: node-3", "")


def test_nodes_terminated_by_their_drains_count_as_replaced_once_each():
    """A one-node Drain terminates its node as its pass drains it, a DrainBatch pass the nodes it drains (each pass
    naming every one so far): each counts once, as Terminate's did (clm.cli.drain_text.terminated_by)."""
    reader, events, n = HistoryReader("pool"), [], 0

    def step(name: str, given: dict, result: dict) -> None:
        nonlocal n
        events.append(
            {
                "id": n + 1,
                "type": "TaskStateEntered",
                "stateEnteredEventDetails": {"name": name, "input": json.dumps(given)},
            }
        )
        events.append(
            {
                "id": n + 2,
                "previousEventId": n + 1,
                "type": "LambdaFunctionSucceeded",
                "lambdaFunctionSucceededEventDetails": {"output": json.dumps(result)},
            }
        )
        n += 2

    one = {"instance_id": "i-1", "node": "n1", "decrement": False}
    two, three = {**one, "instance_id": "i-2", "node": "n2"}, {**one, "instance_id": "i-3", "node": "n3"}
    step("Plan", {}, {"action": "replace", "reason": "replace 1 of 3 outdated node(s)", "replace": [one]})
    step("Drain", {"replacement": one}, {"node": "n1", "done": True, "evicted": ["a/p"], "terminated": "InProgress"})
    batch = {"action": "replace", "replace": [{**two, "drained": True, "terminated": "InProgress"}, three]}
    step("DrainBatch", {}, {**batch, "batch_drain": {"nodes": {}, "again": True, "wait_seconds": 1}})
    batch["replace"][1] = {**three, "drained": True, "terminated": "InProgress"}
    step("DrainBatch", {}, {**batch, "batch_drain": {"nodes": {}}})
    step("Drain", {"replacement": two}, {"node": "n2", "done": True, "batched": True, "terminated": "InProgress"})
    lines = texts(reader.read(events).lines)
    assert "[pool] Drain n1: drained (1 evicted); instance i-1 terminated (1/3 replaced)" in lines
    assert [line.rsplit("(", 1)[1] for line in lines if line.startswith("[pool] DrainBatch")] == [
        "2/3 replaced)",
        "3/3 replaced)",
    ]
    assert (reader.progress.replaced, reader.progress.outdated, reader.progress.awaiting_ready) == (3, 3, 3)
