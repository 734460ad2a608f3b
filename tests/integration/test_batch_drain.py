"""A batch's drain passes over its nodes together (clm.kube.batch_drain) on the real v1.20.2 control plane.

Two nodes holding the six pods of a Deployment behind one PodDisruptionBudget (maxUnavailable 1), drained by
batch passes with the Waits a workflow would do between them: the budget is never broken, each eviction sent is
one the budget allows (a drain per node would race the other for every disruption), and both nodes end empty.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from kubernetes import client

from clm.kube.batch_drain import drain_batch_pass
from clm.kube.settings import DrainSettings
from clm.workflow.drain_steps import after_batch_pass
from clm_sandbox.controlplane import ControlPlane
from tests.integration.test_drain import (
    QUICK,
    HealthyCounter,
    Sandbox,
    deployment,
    healthy,
    node_sandbox,
    pdb,
    wait_for,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def four_nodes(control_plane: ControlPlane, kube_api: client.ApiClient, aws: boto3.Session) -> Iterator[Sandbox]:
    with node_sandbox(control_plane, kube_api, aws, count=4) as made:
        yield made


def batch_until_done(sandbox: Sandbox, nodes: list[str], timeout: float = 90.0) -> list[dict[str, Any]]:
    """Batch passes (each about 3 s) with the Wait a workflow would do between them, until every node is done."""
    settings = DrainSettings.from_config_items(QUICK)
    passes, seen, left, deadline = [], {}, list(nodes), time.monotonic() + timeout
    while left:
        results = drain_batch_pass(sandbox.kube, left, settings, budget_seconds=3.0, seen=seen)
        json.dumps(results)  # a Lambda's payload
        passes.append(results)
        left = [node for node, result in results.items() if not result["done"]]
        seen = {node: results[node]["budgets_seen"] for node in left}
        assert time.monotonic() < deadline, f"batch not drained after {timeout:.0f} s: {results}"
        time.sleep(min((results[node]["wait_seconds"] for node in left), default=0))
    return passes


def test_a_batch_pass_evicts_for_its_nodes_through_one_budget_as_it_allows(four_nodes: Sandbox, monkeypatch):
    sandbox = four_nodes
    victims = sandbox.nodes[:2]
    sandbox.place_on(2, deployment("web", 6, grace=1) + pdb("web", "maxUnavailable: 1"), {"app=web": 6})
    counter = HealthyCounter(sandbox.api, sandbox.namespace, "app=web")
    counter.start()
    sent: list[str] = []
    request = sandbox.kube.request

    def counting(method: str, path: str, **kwargs: Any) -> Any:
        if path.endswith("/eviction"):
            sent.append(path)
        return request(method, path, **kwargs)

    monkeypatch.setattr(sandbox.kube, "request", counting)
    time.sleep(0.5)  # the counter has listed the pods
    counter.arm()
    try:
        passes = batch_until_done(sandbox, victims)
    finally:
        counter.stop()
    assert counter.fewest is not None and counter.fewest >= 5, f"the budget was broken: {counter.counts}"
    evicted = [pod for results in passes for result in results.values() for pod in result.get("evicted") or []]
    assert len(evicted) == len(set(evicted)) == 6
    assert len(sent) == 6, f"evictions refused by the budget: {len(sent) - 6} ({sent})"
    assert not [p for node in victims for p in sandbox.pods("app=web", node)]


def test_a_node_only_a_steady_budget_blocks_leaves_the_batch_to_park(four_nodes: Sandbox):
    """A pod whose budget never allows a disruption (maxUnavailable 0, every pod healthy) holds its node: the batch
    drains the other node, and once only that steady budget blocks, the batch ends (`again` false) with the node's
    `park` set, so its own passes park it (or set it aside) as a single node's drain does, instead of the batch
    polling it every second."""
    sandbox = four_nodes
    victims = sandbox.nodes[:2]
    web = deployment("web", 4, grace=1) + pdb("web", "maxUnavailable: 1")
    stuck = deployment("stuck", 1) + pdb("stuck", "maxUnavailable: 0")
    sandbox.place_on(2, web + stuck, {"app=web": 4, "app=stuck": 1})
    [holder] = sandbox.pods("app=stuck")
    held = holder["spec"]["nodeName"]
    settings = DrainSettings.from_config_items(QUICK)
    decision = {"action": "replace", "replace": [{"instance_id": f"i-{n}", "node": n} for n in victims]}
    deadline = time.monotonic() + 90
    while True:
        pending = [r["node"] for r in decision["replace"] if not r.get("drained")]
        seen = (decision.get("batch_drain") or {}).get("seen") or {}
        decision = after_batch_pass(decision, drain_batch_pass(sandbox.kube, pending, settings, seen=seen), {})
        if not decision["batch_drain"]["again"]:
            break
        assert time.monotonic() < deadline, f"the batch polled on: {decision['batch_drain']}"
        time.sleep(decision["batch_drain"]["wait_seconds"])
    left = [r["node"] for r in decision["replace"] if not r.get("drained")]
    assert left == [held]
    assert decision["batch_drain"]["nodes"][held]["blocked"] == 1
    # Every web pod was evicted (the held node's last, fewest pods first: they may still be in their 1 s grace).
    assert all(p["metadata"].get("deletionTimestamp") for node in victims for p in sandbox.pods("app=web", node))
    wait_for("the web pods gone from the batch", lambda: not [p for n in victims for p in sandbox.pods("app=web", n)])


def test_nodes_are_drained_one_after_another_and_handed_over_as_soon_as_drained(four_nodes: Sandbox, monkeypatch):
    """One pod on the first node, eight on the second, all behind one budget (maxUnavailable 1): the node with the
    fewest pods left goes first, so the first node is drained (its pod gone after its 1 s grace) and handed to
    `on_drained` (the workflow terminates its instance then) while the pass still evicts from the second. Its
    margin: the second node's 8 evictions are each a replacement pod's Ready (0.3 s) apart, at least 2.1 s after
    the first node's eviction, against the first pod's 1 s grace; load only slows the evictions down."""
    sandbox = four_nodes
    first, second = sandbox.nodes[:2]
    web = "".join(deployment(name, n, app="web") for name, n in (("web-a", 1), ("web-b", 8))) + pdb(
        "web", "maxUnavailable: 1"
    )
    sandbox.set_unschedulable(sandbox.nodes[1:], True)
    sandbox.apply(deployment("web-a", 1, app="web") + pdb("web", "maxUnavailable: 1"))
    wait_for("web-a on the first node", lambda: [healthy(p) for p in sandbox.pods("app=web", first)] == [True])
    sandbox.set_unschedulable(sandbox.nodes[1:], False)
    sandbox.set_unschedulable([first, *sandbox.nodes[2:]], True)
    sandbox.apply(web)
    wait_for("web-b on the second node", lambda: sum(healthy(p) for p in sandbox.pods("app=web", second)) == 8)
    sandbox.set_unschedulable([first, *sandbox.nodes[2:]], False)
    wait_for("the budget settled", lambda: sandbox.budget_settled("web", 1))
    evictions: dict[str, int] = {first: 0, second: 0}
    handed: dict[str, int] = {}
    request = sandbox.kube.request
    owners = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in sandbox.pods("app=web")}

    def counting(method: str, path: str, **kwargs: Any) -> Any:
        if method == "POST" and path.endswith("/eviction"):
            evictions[owners[path.split("/")[-2]]] += 1
        return request(method, path, **kwargs)

    monkeypatch.setattr(sandbox.kube, "request", counting)
    settings = DrainSettings.from_config_items(QUICK)
    results = drain_batch_pass(
        sandbox.kube, [second, first], settings, on_drained=lambda node: handed.setdefault(node, evictions[second])
    )
    assert all(result["done"] for result in results.values()), results
    assert list(handed) == [first, second]
    assert handed[first] < 8, f"the first node was handed over only after the second's {handed[first]} evictions"
    assert evictions == {first: 1, second: 8}


class LateStream:
    """A watch whose events come `seconds` late each (a loaded API server): the pass acts before it sees them."""

    def __init__(self, stream: Any, seconds: float):
        self.stream, self.seconds = stream, seconds

    def events(self) -> Iterator[dict[str, Any]]:
        for event in self.stream.events():
            time.sleep(self.seconds)
            yield event

    def close(self) -> None:
        self.stream.close()


@pytest.mark.parametrize("late", [0.0, 0.3])
def test_a_pass_follows_the_budget_by_one_watch_and_evicts_each_time_it_allows(
    four_nodes: Sandbox, monkeypatch: pytest.MonkeyPatch, late: float
) -> None:
    """Six pods behind one budget (maxUnavailable 1) on one node, in one pass: each eviction waits for the budget to
    allow it again, seen by the one watch the pass keeps on the budgets (listed once), not by listing them after
    each eviction and opening a watch for each wait; no eviction is refused and the budget is never broken. With
    the budget's events late, the pass sees its own eviction first: the budget is one that opens again (not a block
    to park the node on, which ended the pass after one eviction)."""
    sandbox = four_nodes
    [victim] = sandbox.nodes[:1]
    sandbox.set_unschedulable(sandbox.nodes[1:], True)
    sandbox.apply(deployment("web", 6, grace=1) + pdb("web", "maxUnavailable: 1"))
    wait_for("web on the first node", lambda: sum(healthy(p) for p in sandbox.pods("app=web", victim)) == 6)
    sandbox.set_unschedulable(sandbox.nodes[1:], False)
    wait_for("the budget settled", lambda: sandbox.budget_settled("web", 1))
    counter = HealthyCounter(sandbox.api, sandbox.namespace, "app=web")
    counter.start()
    calls: list[str] = []
    request, watch = sandbox.kube.request, sandbox.kube.watch

    def counting(method: str, path: str, **kwargs: Any) -> Any:
        calls.append(f"{method} {path}")
        return request(method, path, **kwargs)

    def watching(path: str, query: dict[str, Any], timeout: float) -> Any:
        calls.append(f"WATCH {path}")
        return LateStream(watch(path, query, timeout), late)

    monkeypatch.setattr(sandbox.kube, "request", counting)
    monkeypatch.setattr(sandbox.kube, "watch", watching)
    time.sleep(0.5)  # the counter has listed the pods
    counter.arm()
    try:
        results = drain_batch_pass(sandbox.kube, [victim], DrainSettings.from_config_items(QUICK))
    finally:
        counter.stop()
    assert results[victim]["done"] and len(results[victim]["evicted"]) == 6, results
    assert counter.fewest is not None and counter.fewest >= 5, f"the budget was broken: {counter.counts}"
    budgets = [call for call in calls if call.endswith("/poddisruptionbudgets")]
    path = "/apis/policy/v1beta1/poddisruptionbudgets"
    assert budgets == [f"GET {path}", f"WATCH {path}"]
    assert sum(call.endswith("/eviction") for call in calls) == 6, f"evictions refused: {calls}"
