"""The roll benchmark's arithmetic: its lower bound and the reading of execution histories (bench/roll_*.py)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bench.roll_bound import Simulation, budget_bound, capacity_bound, roll_bound, stretches
from bench.roll_history import batches, node_drains, roll_chain, run_histories, terminations, trace
from bench.roll_watch import budget_turns, idle_shares

SIM = Simulation(nodes=3, replicas=6, boot_delay=5.0, grace=3, pod_ready_delay=1.0)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_drain_bound_is_the_budget_gated_evictions_then_the_last_grace_period() -> None:
    assert [SIM.drain_bound(pods) for pods in (0, 1, 2, 3)] == [0.0, 3.0, 4.0, 5.0]
    assert SIM.node_bound(2) == 9.0
    assert roll_bound([2, 0, 3], SIM) == 9.0 + 5.0 + 10.0


def test_one_at_a_time_the_bound_is_every_nodes_drain_and_boot_in_turn() -> None:
    """max_unavailable 1: the capacity term is the sum of each node's drain and boot, and the budget term
    (every eviction in turn, then one grace and one boot) never exceeds it while pod_ready <= grace + boot."""
    for pods in ([2, 0, 3], [0, 0], [1], [7, 1, 0, 2, 2]):
        assert roll_bound(pods, SIM) == sum(SIM.node_bound(k) for k in pods) == capacity_bound(pods, SIM)
        assert budget_bound(pods, SIM) <= capacity_bound(pods, SIM)
    # a pod slower to become Ready than a node's grace and boot: the next node's first eviction waits for it
    slow = dataclasses.replace(SIM, boot_delay=1.0, grace=1, pod_ready_delay=10.0)
    assert capacity_bound([1, 1], slow) == 4.0
    assert roll_bound([1, 1], slow) == budget_bound([1, 1], slow) == 10.0 + 1 + 1


def test_in_batches_boots_overlap_but_the_budgets_evictions_do_not() -> None:
    wide = dataclasses.replace(SIM, nodes=20, max_unavailable=10)
    # 20 nodes of 2 pods: 40 evictions one after the other (39 waits for a replacement pod), one grace, one boot
    assert budget_bound([2] * 20, wide) == 39 * 1.0 + 3 + 5.0
    assert capacity_bound([2] * 20, wide) == 20 * (1.0 + 3 + 5.0) / 10
    assert roll_bound([2] * 20, wide) == 47.0
    # few pods, slow boots: the slots are the limit (20 boots of 60 s, 10 at a time)
    slow_boots = dataclasses.replace(wide, boot_delay=60.0)
    assert roll_bound([1] + [0] * 19, slow_boots) == capacity_bound([1] + [0] * 19, slow_boots) == (3 + 20 * 60) / 10
    # more slots never raise the bound; one slot is the one-at-a-time roll
    pods = [3, 0, 1, 2, 2, 5]
    bounds = [roll_bound(pods, dataclasses.replace(SIM, max_unavailable=m)) for m in (1, 2, 3, 6, 10)]
    assert bounds == sorted(bounds, reverse=True)
    assert bounds[0] == sum(SIM.node_bound(k) for k in pods)
    assert roll_bound([], SIM) == 0.0


def test_a_surge_of_the_whole_pool_is_one_boot_then_every_eviction_in_turn_then_the_last_grace() -> None:
    """surge = N: the surge boots, then the budget lets the evictions go one after the other; no node needs a
    successor's boot (the surplus covers them all), and the slots never bind."""
    pods = [2] * 10
    for max_unavailable in (0, 1, 3):
        pool = dataclasses.replace(SIM, nodes=10, surge=10, max_unavailable=max_unavailable)
        assert budget_bound(pods, pool) == 5.0 + 19 * 1.0 + 3 == 27.0  # drain(20) holds the last grace
        assert capacity_bound(pods, pool) == 5.0 + 10 * (1.0 + 3) / (10 + max_unavailable)
        assert roll_bound(pods, pool) == 27.0
    # a surge above the pool's size surges one node per outdated node at most
    assert capacity_bound(pods, dataclasses.replace(SIM, surge=50, max_unavailable=0)) == 5.0 + 40 / 10
    # one at a time without a surge: 10 x (drain 4 + boot 5)
    assert roll_bound(pods, dataclasses.replace(SIM, nodes=10)) == 90.0


def test_a_partial_surge_shares_the_drains_and_the_remaining_boots_among_surge_plus_max_unavailable_slots() -> None:
    one = dataclasses.replace(SIM, nodes=10, surge=1, max_unavailable=1)
    pods = [2] * 10
    # the surge's boot, then 10 drains of 4 s and 9 successors' boots over 2 slots
    assert capacity_bound(pods, one) == 5.0 + (10 * 4.0 + 9 * 5.0) / 2 == 47.5
    assert roll_bound(pods, one) == 47.5
    # the budget term does not depend on the surge: its boot comes before the first eviction instead of last
    assert budget_bound(pods, one) == budget_bound(pods, dataclasses.replace(one, surge=0))
    # more surge never raises the bound, down to the budget term
    bounds = [roll_bound(pods, dataclasses.replace(one, surge=s)) for s in (1, 2, 5, 10)]
    assert bounds == sorted(bounds, reverse=True) and bounds[-1] == 27.0
    # a surge with max_unavailable 0: the surge's slots alone
    assert capacity_bound([2, 2], dataclasses.replace(SIM, surge=1, max_unavailable=0)) == 5.0 + (8.0 + 5.0) / 1


def test_each_replacement_ends_where_the_next_drain_starts_and_the_last_at_the_roll_end() -> None:
    nodes = stretches([(("a",), 2, 10.0, 15.0), (("b", "c"), 0, 21.0, 21.5)], roll_end=27.0, simulation=SIM)
    assert [(n.nodes, n.drain_seconds, n.replace_seconds) for n in nodes] == [
        (("a",), 5.0, 6.0),
        (("b", "c"), 0.5, 5.5),
    ]
    assert [(n.drain_overhead, n.replace_overhead) for n in nodes] == [(1.0, 1.0), (0.5, 0.5)]


def test_a_batch_the_next_started_beside_waits_for_no_boot() -> None:
    """The window slid: the next batch started 2 s after the first was drained (the boot is 5 s); the last batch
    waits for its successors' boot before the roll ends."""
    nodes = stretches([(("a",), 2, 10.0, 15.0), (("b",), 2, 17.0, 22.0)], roll_end=28.0, simulation=SIM)
    assert [(n.boot_delay, n.replace_overhead) for n in nodes] == [(0.0, 2.0), (5.0, 1.0)]


def test_a_batch_the_surges_surplus_covers_waits_for_no_boot() -> None:
    """surge 2, max_unavailable 1: the first batch of 3 has 2 nodes terminated with decrement and one successor to
    boot; the batches after it boot their successors; with surge = pool no batch boots (the surge booted first)."""
    batches = [(("a", "b", "c"), 6, 10.0, 16.0), (("d",), 2, 22.0, 26.0), (("e",), 2, 32.0, 36.0)]
    surged = dataclasses.replace(SIM, surge=2)
    assert [s.boot_delay for s in stretches(batches, 42.0, surged)] == [5.0, 5.0, 5.0]
    whole = dataclasses.replace(SIM, surge=5, max_unavailable=1)
    one_batch = [(("a", "b", "c", "d", "e"), 10, 10.0, 22.0)]
    [stretch] = stretches(one_batch, 22.5, whole)
    assert (stretch.boot_delay, stretch.replace_overhead, stretch.drain_bound) == (0.0, 0.5, 12.0)
    two = [(("a", "b"), 4, 10.0, 16.0), (("c",), 2, 16.5, 20.0)]
    assert [s.boot_delay for s in stretches(two, 21.0, dataclasses.replace(SIM, surge=2))] == [0.0, 5.0]


class _History:
    """Events of one execution with ids, previous ids and timestamps (seconds after T0)."""

    def __init__(self, arn: str, execution_input: dict[str, Any], started: float = 0.0):
        self.arn, self.events = arn, []
        self.add(started, "ExecutionStarted", executionStartedEventDetails={"input": json.dumps(execution_input)})

    def add(self, at: float, kind: str, previous: int | None = None, **details: Any) -> int:
        event_id = len(self.events) + 1
        self.events.append(
            {
                "id": event_id,
                "previousEventId": previous if previous is not None else event_id - 1,
                "timestamp": T0 + timedelta(seconds=at),
                "type": kind,
                **details,
            }
        )
        return event_id

    def call(self, start: float, end: float, event: dict[str, Any], output: dict[str, Any]) -> None:
        self.add(start, "LambdaFunctionScheduled", lambdaFunctionScheduledEventDetails={"input": json.dumps(event)})
        self.add(start, "LambdaFunctionStarted")
        self.add(end, "LambdaFunctionSucceeded", lambdaFunctionSucceededEventDetails={"output": json.dumps(output)})

    def invoke(self, start: float, end: float, payload: dict[str, Any], output: dict[str, Any]) -> None:
        """A `lambda:invoke.waitForTaskToken` task: its function runs from `start` to `end`, then it waits on."""
        parameters = {"FunctionName": "run", "Payload": payload}
        self.add(start, "TaskScheduled", taskScheduledEventDetails={"parameters": json.dumps(parameters)})
        self.add(start, "TaskStarted")
        submitted = {"resourceType": "lambda", "output": json.dumps({"Payload": output})}
        self.add(end, "TaskSubmitted", taskSubmittedEventDetails=submitted)

    def wait(self, start: float, end: float, name: str) -> None:
        entered = self.add(start, "WaitStateEntered", stateEnteredEventDetails={"name": name})
        self.add(end, "WaitStateExited", entered, stateExitedEventDetails={"name": name})


class _Sfn:
    def __init__(self, *histories: _History):
        self.histories = {h.arn: h.events for h in histories}

    def get_paginator(self, name: str) -> Any:
        assert name == "get_execution_history"
        sfn = self

        class Pages:
            def paginate(self, executionArn: str) -> list[dict[str, Any]]:  # noqa: N803 - boto3's name
                return [{"events": sfn.histories[executionArn]}]

        return Pages()


def _drain(node: str) -> dict[str, Any]:
    return {"step": "drain", "replacement": {"node": node}, "execution": "child"}


def test_budget_turns_split_each_eviction_into_its_replacements_start_and_the_wait_for_the_next() -> None:
    """6 of 6 Ready; evicted at 10 (5 Ready) until the replacement is Ready at 11.5; the next eviction at 11.7,
    Ready at 13; then between batches (outside the windows) an eviction at 20 and Ready at 21."""
    timeline = [(0.0, 6), (10.0, 5), (11.5, 6), (11.7, 5), (13.0, 6), (20.0, 5), (21.0, 6)]
    dips, idles = budget_turns(timeline, 6, [(9.0, 14.0)])
    assert dips == pytest.approx([1.5, 1.3]) and idles == pytest.approx([0.2])
    assert budget_turns(timeline, 6, [(9.0, 14.0), (19.0, 22.0)])[0] == pytest.approx([1.5, 1.3, 1.0])


def test_each_wait_for_the_next_eviction_splits_where_the_budgets_status_turned_allowing() -> None:
    """Ready again at 11.5, the status allows at 11.55, evicted at 11.7: 0.05 s the disruption controller's, 0.15 s
    CLM's; at 13.0 the status was seen 0.1 s before the pod (two watches, each at its pace): 0 and all of it CLM's;
    a stretch with no turn seen (the watch missed it) is left out."""
    timeline = [(0.0, 6), (10.0, 5), (11.5, 6), (11.7, 5), (13.0, 6), (13.3, 5), (14.5, 6), (14.6, 5), (15.0, 6)]
    controller, clm = idle_shares(timeline, 6, [(9.0, 16.0)], [9.0, 11.55, 12.9])
    assert controller == pytest.approx([0.05, 0.0]) and clm == pytest.approx([0.15, 0.3])


def test_trace_reads_calls_waits_and_each_nodes_drain_across_child_executions() -> None:
    parent = _History("parent", {"cluster_id": "c"})
    parent.call(0.5, 0.75, {"step": "begin"}, {"action": "provision"})
    parent.add(
        1.0,
        "TaskSubmitted",
        taskSubmittedEventDetails={"resourceType": "states", "output": json.dumps({"ExecutionArn": "child"})},
    )
    child = _History("child", {"pool": {"node_pool": "workers"}})
    child.call(1.5, 2.0, {"step": "plan"}, {"action": "replace"})
    child.call(2.0, 7.0, _drain("n1"), {"done": False, "evicted": ["ns/a", "ns/b"], "forced": []})
    child.invoke(7.0, 7.25, {"step": "park", "node": "n1", "token": "t"}, {"node": "n1", "parked": True})
    child.add(9.0, "TaskTimedOut")
    child.call(9.0, 9.5, _drain("n1"), {"done": True, "evicted": [], "forced": ["ns/c"]})
    child.call(9.5, 9.75, {"step": "terminate"}, {})
    child.wait(9.75, 10.0, "WaitToPlan")
    child.add(10.0, "ExecutionSucceeded")

    run = trace(run_histories(_Sfn(parent, child), "parent"))

    assert [c.step for c in run.calls] == ["begin", "plan", "drain", "park", "drain", "terminate"]
    assert {step: len(calls) for step, calls in run.by_step().items()} == {
        "begin": 1,
        "plan": 1,
        "drain": 2,
        "park": 1,
        "terminate": 1,
    }
    assert [(w.state, w.seconds) for w in run.waits] == [("WaitToPlan", 0.25)]
    assert [c.step for c in run.pool_calls("workers")] == ["plan", "drain", "park", "drain", "terminate"]
    [drain] = node_drains(run.calls)
    start = T0.timestamp()
    assert (drain.node, drain.started - start, drain.done and drain.done - start) == ("n1", 2.0, 9.5)
    assert (drain.passes, drain.parks, drain.evicted, drain.forced) == (2, 1, 2, 1)
    assert drain.lambda_seconds == pytest.approx(5.75)  # passes and the park's function, not its wait
    assert run.executions["child"] == (start, start + 10.0)


def test_batches_are_the_plans_replace_decisions_and_the_chain_the_roll_executions() -> None:
    parent = _History("parent", {"cluster_id": "c"})
    for child in ("roll-1", "roll-2"):
        output = json.dumps({"ExecutionArn": child})
        parent.add(1.0, "TaskSubmitted", taskSubmittedEventDetails={"resourceType": "states", "output": output})
    first = _History("roll-1", {"pool": {"node_pool": "workers"}}, started=0.9)
    first.call(1.0, 1.5, {"step": "plan"}, {"action": "replace", "replace": [{"node": "n1"}, {"node": "n2"}]})
    first.call(1.5, 3.0, _drain("n2"), {"done": True, "evicted": ["ns/a"]})
    first.call(1.6, 4.0, _drain("n1"), {"done": True, "evicted": ["ns/b", "ns/c"]})
    first.call(9.0, 9.5, {"step": "plan"}, {"action": "continue", "spent": 3})
    first.add(9.6, "ExecutionSucceeded")
    second = _History("roll-2", {"pool": {"node_pool": "workers"}}, started=9.7)
    second.call(10.0, 10.5, {"step": "plan"}, {"action": "replace", "replace": [{"node": "n3"}]})
    second.call(10.5, 12.0, _drain("n3"), {"done": True, "evicted": []})
    second.call(18.0, 18.5, {"step": "plan"}, {"action": "done"})
    second.add(19.0, "ExecutionSucceeded")
    histories = run_histories(_Sfn(parent, first, second), "parent")
    run = trace(histories)

    grouped = batches(run.calls, node_drains(run.calls))
    assert [[d.node for d in batch] for batch in grouped] == [["n1", "n2"], ["n3"]]  # the plan's order
    assert [sum(d.evicted for d in batch) for batch in grouped] == [3, 0]
    chain = roll_chain(histories, run)
    assert [(e.arn, e.events, e.nodes, e.handed_over) for e in chain] == [
        ("roll-1", len(first.events), 2, True),
        ("roll-2", len(second.events), 1, False),
    ]


def test_a_batchs_passes_count_as_each_of_its_nodes_passes() -> None:
    """DrainBatch passes over several nodes at once (clm.workflow.drain_steps.drain_batch): each node's drain runs
    from the first batch pass to the one that found it done, its evictions the batch's counts for it; a node the
    batch left goes on with passes of its own."""
    roll = _History("roll", {"pool": {"node_pool": "workers"}})
    roll.call(1.0, 1.5, {"step": "plan"}, {"action": "replace", "replace": [{"node": "n1"}, {"node": "n2"}]})
    first = {"n1": {"done": False, "evicted": 1, "forced": 0}, "n2": {"done": False, "evicted": 0, "forced": 0}}
    second = {"n1": {"done": True, "evicted": 1, "forced": 0}, "n2": {"done": False, "evicted": 1, "forced": 1}}
    roll.call(1.5, 3.0, {"step": "drain_batch"}, {"batch_drain": {"nodes": first}})
    terminated = [{"node": "n1", "drained": True, "terminated": "InProgress", "terminated_at": T0.timestamp() + 4.5}]
    roll.call(4.0, 5.0, {"step": "drain_batch"}, {"batch_drain": {"nodes": second}, "replace": terminated})
    roll.call(5.1, 5.2, _drain("n1"), {"done": True, "batched": True})  # Replace's Drain of a node drained
    roll.call(5.5, 6.0, _drain("n2"), {"done": True, "evicted": ["ns/c"], "forced": []})
    roll.call(6.0, 6.5, {"step": "terminate"}, {"terminated": "InProgress"})
    roll.add(7.0, "ExecutionSucceeded")
    histories = run_histories(_Sfn(roll), "roll")
    run = trace(histories)

    drains = node_drains(run.calls)
    start = T0.timestamp()
    assert [(d.node, d.started - start, d.done and d.done - start) for d in drains] == [
        ("n1", 1.5, 5.0),
        ("n2", 1.5, 6.0),
    ]
    assert [(d.passes, d.evicted, d.forced) for d in drains] == [(2, 2, 0), (3, 2, 1)]
    assert [[d.node for d in batch] for batch in batches(run.calls, drains)] == [["n1", "n2"]]
    assert [e.nodes for e in roll_chain(histories, run)] == [2]
    # n1 terminated by the batch's pass, n2 by Replace's Terminate
    assert [at - start for at in terminations(run.calls)] == [4.5, 6.5]


def test_a_node_its_own_drain_terminated_counts_from_the_drains_terminated_at() -> None:
    """A one-node drain terminates its node's instance as its pass drains it (clm.workflow.drain_steps.drain): the
    termination is when the pass says, not the end of a Terminate call."""
    roll = _History("roll", {"pool": {"node_pool": "workers"}})
    roll.call(1.0, 1.5, {"step": "plan"}, {"action": "replace", "replace": [{"node": "n1"}]})
    roll.call(1.5, 3.0, _drain("n1"), {"done": True, "terminated": "InProgress", "terminated_at": T0.timestamp() + 2.9})
    roll.add(4.0, "ExecutionSucceeded")
    run = trace(run_histories(_Sfn(roll), "roll"))
    assert [round(at - T0.timestamp(), 2) for at in terminations(run.calls)] == [2.9]
