"""`update_strategy: clc` end to end on the sandbox (IAM enforced, a real kube-apiserver, simulated nodes).

CLM's pkg/updatestrategy/clc_update.go: CLM only taints and labels the outdated nodes `decommission-pending`
(node_pool_manager.go MarkNodeForDecommission: NoSchedule with `decommission_node_no_schedule_taint: "true"`) and
waits while the in-cluster cluster-lifecycle-controller drains and replaces them; the update ends when no outdated
node is left. The controller is not in the sandbox: a stand-in here does what it does with CLM's marks, through the
same API server and the sandbox's AWS (one node at a time: label it draining, evict its pods through the Eviction
API, terminate its instance through its auto scaling group, which launches the successor). CLM evicts nothing: its
roll never enters Drain or Terminate, and no node ever says CLM drains it.

Switching the strategy mid-roll (the registry item, read at every plan) never puts both on one node: from `clc` to
`rolling` CLM takes back the hand-overs the controller has not started (CLM's AbortNodeDecommissioning) and drains
them itself; from `rolling` to `clc` the controller is handed only the nodes CLM was not draining.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import Counter
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.convergence import terminated
from tests.integration.deployment import (
    ROOT,
    TERMINATED_AT,
    Deployment,
    HealthyPods,
    instances,
    provisioned,
    the_run,
    the_runs,
    upload_new_ami,
    wait_for_roll,
)
from tests.integration.node_looks import cluster_view

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),  # moto skips resources it does not model
]
DRAINED_BY = "clm/drained-by"


class ControllerStandIn(threading.Thread):
    """The cluster-lifecycle-controller's side of its contract with CLM: a node labelled `decommission-pending`
    is picked (its label set to draining in a write the API server guards by resourceVersion), its replacement
    asked of its group first (desired capacity + 1: the controller's default replacement strategy; every outdated
    node is tainted NoSchedule, so an evicted pod has nowhere else to go), the node cordoned, its pods evicted
    (budgets decide; refused evictions are tried again), and its instance terminated through its group, lowering the
    desired capacity again. `found` keeps each node as it was when picked; `terminated` the instances, in order;
    `errors` anything unexpected."""

    def __init__(self, api: k8s.ApiClient, autoscaling: Any):
        super().__init__(daemon=True)
        self.core, self.autoscaling = k8s.CoreV1Api(api), autoscaling
        self.found: dict[str, dict[str, Any]] = {}
        self.terminated: list[str] = []
        self.errors: list[str] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(0.2):
            try:
                for node in self.core.list_node(label_selector="lifecycle-status=decommission-pending").items[:1]:
                    self._replace(node)
            except Exception as exc:  # reported by the test, never swallowed
                self.errors.append(repr(exc))

    def _replace(self, node: k8s.V1Node) -> None:
        name = node.metadata.name
        self.found.setdefault(name, self.core.api_client.sanitize_for_serialization(node))
        node.metadata.labels["lifecycle-status"] = "draining"
        node.spec.unschedulable = True
        try:
            self.core.replace_node(name, node)  # carries the resourceVersion read: a conflict is a 409
        except ApiException as exc:
            if exc.status == 409:
                return  # changed meanwhile (CLM taking it back, say): look again
            raise
        instance_id = node.spec.provider_id.rsplit("/", 1)[-1]
        [group] = self.autoscaling.describe_auto_scaling_instances(InstanceIds=[instance_id])["AutoScalingInstances"]
        [described] = self.autoscaling.describe_auto_scaling_groups(
            AutoScalingGroupNames=[group["AutoScalingGroupName"]]
        )["AutoScalingGroups"]
        self.autoscaling.set_desired_capacity(
            AutoScalingGroupName=group["AutoScalingGroupName"], DesiredCapacity=described["DesiredCapacity"] + 1
        )
        while pods := self._evictable(name):
            if self._stopping.is_set():  # the test is over: a drain its budgets still block is left as it is
                return
            for pod in pods:
                self._evict(pod)
            time.sleep(0.2)
        self.autoscaling.terminate_instance_in_auto_scaling_group(
            InstanceId=instance_id, ShouldDecrementDesiredCapacity=True
        )
        self.terminated.append(instance_id)

    def _evictable(self, node: str) -> list[k8s.V1Pod]:
        pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
        return [
            p
            for p in pods
            if not p.metadata.deletion_timestamp
            and not any(o.kind == "DaemonSet" for o in p.metadata.owner_references or [])
        ]

    def _evict(self, pod: k8s.V1Pod) -> None:
        meta = {"name": pod.metadata.name, "namespace": pod.metadata.namespace}
        body = {"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": meta}
        try:
            self.core.create_namespaced_pod_eviction(pod.metadata.name, pod.metadata.namespace, body)
        except ApiException as exc:
            if exc.status not in (404, 429):  # gone, or its budget says not now
                raise

    def stop(self) -> None:
        self._stopping.set()
        self.join()


def _register(deployment: Deployment, strategy: str = "clc") -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items.update(
        {"kube_auth_secret": "clm/kube-1", "update_strategy": strategy, "decommission_node_no_schedule_taint": "true"}
    )
    deployment.registry.put(cluster)


def _switch(deployment: Deployment, strategy: str) -> None:
    """Edit the registry item's update_strategy (its run is skipped while the roll's holds the lock; reconcile, which
    follows the roll, brings the edit once the roll's run has ended)."""
    cluster = deployment.registry.get(deployment.cluster_id)
    items = {**cluster.config_items, "update_strategy": strategy}
    deployment.registry.put(dataclasses.replace(cluster, config_items=items))


def _settled(
    deployment: Deployment, kube_api: k8s.ApiClient, known: int, controller: ControllerStandIn | None = None
) -> list[dict[str, Any]]:
    """`deployment.settle(known)`; when it does not, fails saying what the roll waits on: its last decisions, the
    nodes, pods and groups, and what the controller stand-in has done."""
    try:
        return deployment.settle(known, timeout=300)
    except pytest.fail.Exception as exc:
        plans = [
            (out["decision"].get("action"), out["decision"].get("reason"))
            for out in _states(deployment, "Plan", "Exited")
        ]
        view = cluster_view(kube_api, deployment.session.client("autoscaling"))
        done = controller and (controller.found.keys(), controller.terminated, controller.errors)
        pytest.fail(f"{exc}\nlast plans: {plans[-12:]}\n{view}\ncontroller (found, terminated, errors): {done}")


def _states(deployment: Deployment, state: str, edge: str = "Entered") -> list[dict[str, Any]]:
    """What the rolls' `state` states were given (`edge` Entered) or returned (Exited), in order."""
    seen = []
    for execution in deployment.executions(deployment.roll_node_pool):
        pages = deployment.sfn.get_paginator("get_execution_history").paginate(executionArn=execution["executionArn"])
        for event in (e for page in pages for e in page["events"]):
            details = event.get(f"state{edge}EventDetails")
            if details and details["name"] == state:
                seen.append(json.loads(details["input" if edge == "Entered" else "output"]))
    return seen


def _marks(deployment: Deployment) -> list[dict[str, Any]]:
    """The decisions the rolls' Mark states carried out, in order."""
    return [given["decision"] for given in _states(deployment, "Mark")]


def _handed(kube_api: k8s.ApiClient) -> set[str]:
    nodes = k8s.CoreV1Api(kube_api).list_node(label_selector="lifecycle-status=decommission-pending").items
    return {n.metadata.name for n in nodes if (n.metadata.annotations or {}).get(DRAINED_BY)}


def test_clc_marks_the_outdated_nodes_and_waits_while_the_controller_replaces_them(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    _register(deployment)
    before = provisioned(deployment, nodes, kube_api)
    old_nodes = set(nodes.ready_nodes)
    controller = ControllerStandIn(kube_api, deployment.session.client("autoscaling"))
    watcher = HealthyPods(kube_api)
    controller.start()
    watcher.start()
    try:
        known = len(deployment.executions(deployment.provision))
        upload_new_ami(deployment)  # every node outdated: reconcile starts the run
        run = the_run(deployment.settle(known, timeout=300))
    finally:
        controller.stop()
        watcher.stop()

    assert controller.errors == []
    assert run["status"] == "SUCCEEDED"
    states = deployment.roll_states()
    assert "Mark" in states and "WaitToPlan" in states
    assert "Drain" not in states and "Terminate" not in states, "CLM evicted or terminated"
    assert sorted(controller.terminated) == sorted(before), "the controller replaced every outdated node, once"
    assert instances(deployment.session).isdisjoint(before) and len(instances(deployment.session)) == 3
    assert set(controller.found) == old_nodes
    for name, node in controller.found.items():  # as CLM left it for the controller
        assert node["metadata"]["labels"]["lifecycle-status"] == "decommission-pending", name
        assert node["metadata"]["annotations"][DRAINED_BY] == "cluster-lifecycle-controller", name
        taint = {"key": "decommission-pending", "value": "rolling-upgrade", "effect": "NoSchedule"}
        assert taint in node["spec"]["taints"], (name, node["spec"]["taints"])
        assert not node["spec"].get("unschedulable"), f"{name}: CLM cordoned it"
    for node in k8s.CoreV1Api(kube_api).list_node().items:
        assert (node.metadata.annotations or {}).get(DRAINED_BY) != "clm", node.metadata.name
    assert watcher.lowest is not None and watcher.lowest >= 2, watcher.at_lowest  # the budget held


def test_switching_from_clc_to_rolling_mid_roll_takes_the_nodes_back_before_clm_drains_them(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    """No controller runs: the nodes handed to it wait, until the registry says `rolling`; CLM then takes them back
    (they were never started) and rolls them itself."""
    _register(deployment)
    before = provisioned(deployment, nodes, kube_api)
    old_nodes = set(nodes.ready_nodes)
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)
    deadline = time.monotonic() + 120
    while _handed(kube_api) != old_nodes and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _handed(kube_api) == old_nodes
    _switch(deployment, "rolling")
    the_runs(_settled(deployment, kube_api, known), 2)  # the roll, then the edit

    [handed, taken, *_] = _marks(deployment)
    assert sorted(handed["mark"]) == sorted(old_nodes) and not handed.get("take_back")
    assert sorted(taken["take_back"]) == sorted(old_nodes) and not taken.get("mark")
    assert terminated(deployment) == Counter(before), "CLM replaced each outdated node once"
    assert instances(deployment.session).isdisjoint(before)


def test_switching_from_rolling_to_clc_mid_roll_hands_over_only_what_clm_is_not_draining(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    """CLM drains its first node when the registry says `clc`: the node it drains stays its own, the others go to
    the controller (stand-in); no instance is terminated by both."""
    _register(deployment, "rolling")
    before = provisioned(deployment, nodes, kube_api)
    controller = ControllerStandIn(kube_api, deployment.session.client("autoscaling"))
    controller.start()
    try:
        known = len(deployment.executions(deployment.provision))
        upload_new_ami(deployment)
        wait_for_roll(deployment, lambda states: "Drain" in states, "a drain")
        _switch(deployment, "clc")
        the_runs(_settled(deployment, kube_api, known, controller), 2)  # the roll, then the edit
    finally:
        controller.stop()

    assert controller.errors == []
    by_clm = _terminated_by_clm(deployment)
    assert by_clm and controller.terminated, (by_clm, controller.terminated)
    assert by_clm.isdisjoint(controller.terminated) and by_clm | set(controller.terminated) == before
    assert Counter(controller.terminated) == Counter(set(controller.terminated))  # each once
    for name, node in controller.found.items():
        assert node["metadata"]["annotations"][DRAINED_BY] == "cluster-lifecycle-controller", name
    assert instances(deployment.session).isdisjoint(before)


def _terminated_by_clm(deployment: Deployment) -> set[str]:
    """The instances CLM's roll terminated: by its Terminate states, or by the drains whose pass terminated their node
    (TerminatedByDrain)."""
    return {given["replacement"]["instance_id"] for name in TERMINATED_AT for given in _states(deployment, name)}
