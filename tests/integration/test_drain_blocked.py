"""Cordon and continue (issue 28, part 5), end to end on the sandbox with IAM enforced: a pool of 3 with the pool
option `drain_blocked: continue` whose middle node holds a pod its budget never lets go (a Deployment's pod behind a
PDB with maxUnavailable 0): the other two nodes are replaced first, the blocked one stays cordoned until CLM's force
rules (scaled: the grace period 20 s) delete the pod, and one `Drain Blocked` event on CLM's bus names the pod, its
owner and budget; a `Node Replaced` event names each old node and its successor."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from kubernetes import client as k8s

from clm.cli.main import cli
from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import (
    ROOT,
    TERMINATED_AT,
    Deployment,
    instances,
    provisioned,
    the_run,
    upload_new_ami,
)
from tests.integration.fleet import capture_events, received
from tests.integration.node_looks import NodeLooks
from tests.integration.test_drain_parking import (
    FORCE_AFTER_20_S,
    _roll_events,
    create_budget,
    in_new_namespace,
    remove_namespace,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),  # moto skips resources it does not model
]

NAMESPACE = "blocked"
NAME = "stuck.v1"  # dots: names are DNS subdomains, and travel as such through annotations, events and lines


@pytest.fixture
def cleanup(kube_api: k8s.ApiClient) -> Iterator[None]:
    yield
    remove_namespace(k8s.CoreV1Api(kube_api), NAMESPACE)


def _register(deployment: Deployment) -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items.update({"kube_auth_secret": "clm/kube-1", **FORCE_AFTER_20_S})
    cluster.node_pools[0].config_items["drain_blocked"] = "continue"
    deployment.registry.put(cluster)


def _stuck_on(kube_api: k8s.ApiClient, node: str, name: str = NAME) -> str:
    """A Deployment `name` of one pod pinned to `node`, behind a budget `name` that allows no disruption; returns
    the pod's name once it is Ready."""
    core, apps = k8s.CoreV1Api(kube_api), k8s.AppsV1Api(kube_api)
    if not any(n.metadata.name == NAMESPACE for n in core.list_namespace().items):
        core.create_namespace({"metadata": {"name": NAMESPACE}})
    labels = {"app": name}
    template = {
        "metadata": {"labels": labels},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "stuck", "image": "registry.k8s.io/pause:3.9"}],
        },
    }
    spec = {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}
    in_new_namespace(lambda: apps.create_namespaced_deployment(NAMESPACE, {"metadata": {"name": name}, "spec": spec}))
    create_budget(kube_api, NAMESPACE, name, {"maxUnavailable": 0, "selector": {"matchLabels": labels}})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={name}").items
        ready = [p for p in pods if any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]
        if ready and ready[0].spec.node_name == node:
            return str(ready[0].metadata.name)
        time.sleep(0.1)
    pytest.fail(f"the stuck pod is not Ready on {node}")


def _entered(history: list[dict[str, Any]], state: str) -> list[dict[str, Any]]:
    details = [e["stateEnteredEventDetails"] for e in history if "stateEnteredEventDetails" in e]
    return [json.loads(d["input"]) for d in details if d["name"] == state]


def _outputs(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outputs = [(e.get("lambdaFunctionSucceededEventDetails") or {}).get("output") for e in history]
    return [r for r in (json.loads(o) for o in outputs if o) if isinstance(r, dict)]


def _drains(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in _outputs(history) if "blocked" in r]


def _status_while_set_aside(deployment: Deployment, node: str, timeout: float = 180.0) -> str:
    """`clm status` (its warnings: the blocked drains) once the roll has set `node` aside."""
    deadline = time.monotonic() + timeout
    while not any(d["node"] == node and d["set_aside"] for d in _drains(_roll_events(deployment))):
        assert time.monotonic() < deadline, f"{node} not set aside within {timeout} s"
        time.sleep(0.5)
    table = deployment.outputs["RegistryTableName"]
    result = CliRunner().invoke(cli, ["--table", table, "status"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stderr


def test_a_node_its_budget_blocks_is_set_aside_cordoned_and_forced_last(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient, cleanup: None
) -> None:
    _register(deployment)
    before = provisioned(deployment, nodes, kube_api)
    names = sorted(n.metadata.name for n in k8s.CoreV1Api(kube_api).list_node().items)
    middle = names[1]
    pod = _stuck_on(kube_api, middle)
    queue = capture_events(deployment, "clm.node")
    cordons = NodeLooks(kube_api)
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)
    status = _status_while_set_aside(deployment, middle)
    the_run(deployment.settle(known, timeout=240))

    history = _roll_events(deployment)
    terminated = [step["replacement"]["node"] for name in TERMINATED_AT for step in _entered(history, name)]
    assert len(terminated) == 3 and terminated[-1] == middle, terminated  # the other two were replaced first
    drains = _drains(history)
    aside = [d for d in drains if d["node"] == middle and d["set_aside"]]
    assert aside, [(d["node"], d["set_aside"], d["blocked"]) for d in drains]
    forced = [d for d in drains if d["forced"]]
    assert [(d["node"], d["forced"]) for d in forced] == [(middle, [f"{NAMESPACE}/{pod}"])]
    others = [d for d in drains if d["node"] != middle]
    assert all(d["done"] or not d["set_aside"] for d in others)
    # Set aside, the roll went on: another node was drained after it (and all before its own forced end).
    assert drains.index(aside[0]) < max(drains.index(d) for d in others if d["done"]) < drains.index(forced[0])
    assert forced[0]["drain_start"] == aside[0]["drain_start"]  # one drain clock, from when the drain first started
    # Cordoned from the first look after its drain began until it was gone: never uncordoned meanwhile.
    seen = cordons.of(middle)
    assert all(seen[seen.index(True) :]), seen

    # `clm status` meanwhile: the node, its pod with owner and budget, since when
    assert (
        f"drain blocked: {middle}: " in status
        and f"{NAMESPACE}/{pod} (Deployment {NAME}; PDB {NAMESPACE}/{NAME})" in status
    )
    assert f"blocked since {aside[0]['blocked_since']}" in status or "parked for" in status, status

    events = received(deployment, queue)
    blocked = [e for e in events if e["detail-type"] == "Drain Blocked"]
    assert len(blocked) == 1, blocked  # once per blocked spell, though the drain came back to it
    detail = blocked[0]["detail"]
    assert blocked[0]["source"] == "clm.node"
    assert (detail["cluster_id"], detail["node_pool"], detail["node"]) == (
        deployment.cluster_id,
        "default-worker",
        middle,
    )
    assert detail["pods"] == [
        {
            "namespace": NAMESPACE,
            "name": pod,
            "owner_kind": "Deployment",
            "owner_name": NAME,
            "budget": f"{NAMESPACE}/{NAME}",
            "reason": detail["pods"][0]["reason"],
        }
    ]
    assert f"PodDisruptionBudget {NAMESPACE}/{NAME} allows 0 disruptions" in detail["pods"][0]["reason"]
    assert detail["blocked_since"] <= detail["until"] and detail["instance_id"] in before
    replaced = [e["detail"] for e in events if e["detail-type"] == "Node Replaced"]
    plans = [(d.get("action"), d.get("awaiting"), d.get("reason")) for d in _outputs(history) if "action" in d]
    assert sorted(r["node"] for r in replaced) == names, (replaced, plans)
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before
    assert {r["new_instance_id"] for r in replaced} == after


def test_a_workload_blocking_every_node_cannot_cordon_the_pool_and_the_force_rules_end_the_roll(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient, cleanup: None
) -> None:
    """The attack: a pod no budget lets go on every node. With max_unavailable 1: one node set aside at a time, the
    next one's drain parks until the force rules allow (announced too), never more than 2 nodes cordoned at once,
    one node replaced at a time, and the roll ends with every pod forced."""
    _register(deployment)
    before = provisioned(deployment, nodes, kube_api)
    names = sorted(n.metadata.name for n in k8s.CoreV1Api(kube_api).list_node().items)
    owners = {node: f"stuck.{i}.x-y" for i, node in enumerate(names)}
    pods = {node: _stuck_on(kube_api, node, owner) for node, owner in owners.items()}
    queue = capture_events(deployment, "clm.node")
    cordons = NodeLooks(kube_api)
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)
    the_run(deployment.settle(known, timeout=300))
    cordons.of(names[0])

    history = _roll_events(deployment)
    plans = [d for d in _outputs(history) if d.get("action") == "replace"]
    assert all(len(d["replace"]) == 1 for d in plans), plans  # max_unavailable 1: one node replaced at a time
    assert max(sum(n.unschedulable for n in look.values()) for look in cordons.seen) <= 2  # one aside, one replaced
    forced = sorted(pod for d in _drains(history) for pod in d["forced"])
    assert forced == sorted(f"{NAMESPACE}/{pod}" for pod in pods.values())
    assert len([d for d in _drains(history) if d["set_aside"]]) >= 1
    blocked = [e["detail"] for e in received(deployment, queue) if e["detail-type"] == "Drain Blocked"]
    assert sorted(d["node"] for d in blocked) == names  # each node's spell once, set aside or parked
    for detail in blocked:
        [pod] = detail["pods"]
        node = detail["node"]
        assert (pod["name"], pod["owner_kind"], pod["owner_name"]) == (pods[node], "Deployment", owners[node])
        assert pod["budget"] == f"{NAMESPACE}/{owners[node]}"
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before
