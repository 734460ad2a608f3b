"""A drain blocked by a budget that will not change on its own parks (lambda:invoke.waitForTaskToken on moto's
interpreter, the task token on the registry item): it costs no passes while parked, a run started by a change
wakes it, and when nobody does, the task times out when CLM's force rules allow and the next pass forces."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import (
    ROOT,
    Deployment,
    instances,
    provisioned,
    the_run,
    upload_new_ami,
    wait_for_ready_pods,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),  # moto skips resources it does not model
]

NAMESPACE = "parking"
LABELS = {"app": "stuck"}
FORCE_AFTER_20_S = {  # the force rules allow after drain_grace_period alone; parks when longer than the poll
    "drain_grace_period": "20s",
    "drain_poll_interval": "5s",
    "drain_min_pod_lifetime": "0s",
    "drain_min_healthy_sibling_lifetime": "0s",
    "drain_min_unhealthy_sibling_lifetime": "0s",
}


@pytest.fixture
def stuck_pod(kube_api: k8s.ApiClient) -> Iterator[Callable[[], None]]:
    """Creates (once the cluster has Nodes) a pod behind a budget that allows no disruption (minAvailable 1 of 1,
    not CLM's) and waits until it is Ready; removes its namespace after the test. The pod has no controller:
    once evicted or forced, it stays gone."""
    core = k8s.CoreV1Api(kube_api)

    def create() -> None:
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        spec = {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "stuck", "image": "registry.k8s.io/pause:3.9"}],
        }
        pod = {"metadata": {"name": "stuck", "labels": LABELS}, "spec": spec}
        in_new_namespace(lambda: core.create_namespaced_pod(NAMESPACE, pod))
        create_budget(kube_api, NAMESPACE, "stuck", {"minAvailable": 1, "selector": {"matchLabels": LABELS}})
        wait_for_ready_pods(kube_api, 1, namespace=NAMESPACE, selector="app=stuck")

    yield create
    remove_namespace(core, NAMESPACE)


def in_new_namespace(create: Callable[[], Any], timeout: float = 30.0) -> None:
    """Call `create` (the first object of a new namespace) until the namespace takes it: it refuses objects until
    its default service account has a token."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            create()
            return
        except k8s.ApiException as exc:
            if exc.status != 500 or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def create_budget(kube_api: k8s.ApiClient, namespace: str, name: str, spec: dict[str, Any]) -> None:
    """Create a PodDisruptionBudget (policy/v1beta1: the sandbox's Kubernetes 1.20)."""
    kube_api.call_api(
        f"/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets",
        "POST",
        body={"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )


def remove_namespace(core: k8s.CoreV1Api, namespace: str) -> None:
    """Delete the namespace (if there) and wait until it is gone, its pods deleted at once."""
    if any(n.metadata.name == namespace for n in core.list_namespace().items):
        core.delete_namespace(namespace)
    deadline = time.monotonic() + 60
    while any(n.metadata.name == namespace for n in core.list_namespace().items):
        assert time.monotonic() < deadline, f"namespace {namespace} still there after the test"
        core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        time.sleep(0.5)


def _register(deployment: Deployment, **items: str) -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items.update({"kube_auth_secret": "clm/kube-1", **items})
    deployment.registry.put(cluster)


def _parked(deployment: Deployment) -> dict[str, Any]:
    item = deployment.session.client("dynamodb").get_item(
        TableName=deployment.outputs["RegistryTableName"], Key={"id": {"S": deployment.cluster_id}}
    )["Item"]
    return item.get("parked", {}).get("M", {})


def _wait_until_parked(deployment: Deployment, timeout: float = 180.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        parked = _parked(deployment)
        if parked:
            return min(parked)
        time.sleep(0.1)
    passes = [(d["node"], d["done"], d["evicted"], d["forced"], d["blocked"]) for d in _drains_of(deployment)]
    pytest.fail(f"no drain parked within {timeout} s; drain passes: {passes}")


def _drains_of(deployment: Deployment, node: str | None = None) -> list[dict[str, Any]]:
    """The results of every drain pass (over `node`), in order."""
    results = []
    for event in _roll_events(deployment):
        output = (event.get("lambdaFunctionSucceededEventDetails") or {}).get("output")
        result = json.loads(output) if output else None
        if isinstance(result, dict) and "blocked" in result and node in {None, result.get("node")}:
            results.append(result)
    return results


def test_a_parked_drain_costs_no_passes_and_a_run_started_by_a_change_wakes_it(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient, stuck_pod: Callable[[], None]
) -> None:
    _register(deployment)  # CLM's force rules: the stuck pod may be forced only after 72 h
    before = provisioned(deployment, nodes, kube_api)
    stuck_pod()
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)
    node = _wait_until_parked(deployment)
    passes = len(_drains_of(deployment, node))
    time.sleep(5)  # 250 s of the workflow's time (waits x 0.02): polling every 30 s would take 8 passes
    drains = _drains_of(deployment, node)
    assert len(drains) == passes, "a parked drain took passes"
    assert drains[-1]["park"]["seconds"] > 250_000 and drains[-1]["blocked"][0]["pdb"] == f"{NAMESPACE}/stuck"

    kube_api.call_api(  # someone fixes the budget: Kubernetes tells nobody
        f"/apis/policy/v1beta1/namespaces/{NAMESPACE}/poddisruptionbudgets/stuck",
        "DELETE",
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    deployment.sfn.start_execution(  # what `clm provision` starts
        stateMachineArn=deployment.provision,
        input=json.dumps({"cluster_id": deployment.cluster_id, "reason": "manual: clm provision"}),
    )
    runs = deployment.settle(known, timeout=120)
    work = the_run(runs)
    waking = [json.loads(e["output"])["plan"]["reason"] for e in runs if e is not work]
    assert any(reason.endswith(f"woke its parked drains of {node}") for reason in waking), waking
    drains = _drains_of(deployment, node)
    assert drains[-1]["done"] and not any(d["forced"] for d in drains)  # evicted once the budget was gone
    assert f"{NAMESPACE}/stuck" in [pod for d in drains for pod in d["evicted"]]
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before
    assert _parked(deployment) == {} and deployment.registry.lock_holder(deployment.cluster_id) is None


def test_a_parked_drain_nobody_wakes_is_forced_when_the_force_rules_allow(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient, stuck_pod: Callable[[], None]
) -> None:
    _register(deployment, **FORCE_AFTER_20_S)
    before = provisioned(deployment, nodes, kube_api)
    stuck_pod()
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)
    node = _wait_until_parked(deployment)
    the_run(deployment.settle(known, timeout=120))
    drains = _drains_of(deployment, node)
    parked = [d for d in drains if d["park"]]
    assert 10 < parked[0]["park"]["seconds"] <= 20  # until the grace period ends (its start kept in whole seconds)
    # The force rules count real seconds, the sandbox's Wait states and timeouts 1/50 of them: the drain parks
    # again (shorter each time) until the real 20 s have passed; each park ends in a timeout, none in a wake.
    forced = [d for d in drains if d["forced"]]
    assert [d["forced"] for d in forced] == [[f"{NAMESPACE}/stuck"]] and drains[-1]["done"]
    start, end = drains.index(parked[0]), drains.index(forced[0])
    # from the first park to the force: parks, and Waits only once the force is within the poll interval
    assert all(d["park"] or d["wait_seconds"] <= 5 for d in drains[start:end])
    timed_out = [e for e in _roll_events(deployment) if e["type"] == "TaskTimedOut"]
    assert len(timed_out) == len(parked)
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before


def _roll_events(deployment: Deployment) -> list[dict[str, Any]]:
    return [
        event
        for execution in deployment.executions(deployment.roll_node_pool)
        for page in deployment.sfn.get_paginator("get_execution_history").paginate(
            executionArn=execution["executionArn"]
        )
        for event in page["events"]
    ]
