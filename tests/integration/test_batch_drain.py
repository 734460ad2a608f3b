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
from clm_sandbox.controlplane import ControlPlane
from tests.integration.test_drain import QUICK, HealthyCounter, Sandbox, deployment, node_sandbox, pdb

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
