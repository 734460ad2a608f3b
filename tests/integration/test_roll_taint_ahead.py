"""The taint a roll puts on the nodes ahead of its drains never leaves a drain's pods nowhere to go.

Zalando's production configuration asks for NoSchedule decommission taints (kubernetes-on-aws
cluster/config-defaults.yaml: `decommission_node_no_schedule_taint: "true"`). CLM puts that taint on every old node
at each step of a rolling update (pkg/updatestrategy/rolling_update.go markOldNodes) after it has surged
(scaleOutAndWaitForNodesToBeReady), so the pods it evicts have the new nodes. A pool here need not surge (the
default), and NoSchedule on the nodes ahead left the first drain's pods no node: with two pods of a budget that lets
one go at a time, the second eviction waited for the first pod to run again, which no node would take, until the
drain was forced (hours later, under Zalando's drain rules).
"""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import ROOT, Deployment, instances, provisioned, the_run, upload_new_ami
from tests.integration.node_looks import ready

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),  # moto skips resources it does not model
]
NAMESPACE = "example"  # removed after each test with the example's objects


def _pile(kube_api: k8s.ApiClient, node: str, others: list[str], app: str) -> None:
    """Two pods of a Deployment `app` on `node` (the `others` cordoned meanwhile), behind a budget that lets one go
    at a time."""
    core = k8s.CoreV1Api(kube_api)
    for other in others:
        core.patch_node(other, {"spec": {"unschedulable": True}})
    pod = {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": app, "image": "registry.k8s.io/pause:3.9"}],
        },
    }
    k8s.AppsV1Api(kube_api).create_namespaced_deployment(
        NAMESPACE,
        {
            "metadata": {"name": app},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": app}}, "template": pod},
        },
    )
    budget = {
        "apiVersion": "policy/v1beta1",  # the sandbox's Kubernetes 1.20
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
    }
    k8s.CustomObjectsApi(kube_api).create_namespaced_custom_object(
        "policy", "v1beta1", NAMESPACE, "poddisruptionbudgets", budget
    )
    deadline = time.monotonic() + 60
    while len(_ready_on(core, app, node)) < 2:
        assert time.monotonic() < deadline, f"{app}: two Ready pods on {node} within 60 s"
        time.sleep(0.2)
    for other in others:
        core.patch_node(other, {"spec": {"unschedulable": False}})


def _ready_on(core: k8s.CoreV1Api, app: str, node: str) -> list[str]:
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={app}").items
    return [p.metadata.name for p in pods if p.spec.node_name == node and ready(p)]


def test_a_pool_without_surge_rolls_nodes_holding_two_pods_of_a_one_at_a_time_budget_under_no_schedule_taints(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    """Every node holds two pods of its own budget (maxUnavailable 1), so whichever node the roll drains first has
    its second eviction wait for the first pod to run elsewhere. The roll ends within `settle`'s 240 s (about 40 s
    unloaded; before, the drain waited for its force rules, hours away)."""
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items.update({"kube_auth_secret": "clm/kube-1", "decommission_node_no_schedule_taint": "true"})
    deployment.registry.put(cluster)
    before = provisioned(deployment, nodes, kube_api)
    names = sorted(nodes.ready_nodes)
    for index, node in enumerate(names):
        _pile(kube_api, node, [other for other in names if other != node], f"pile-{index}")
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)
    the_run(deployment.settle(known))
    after = instances(deployment.session)
    assert len(after) == 3 and after.isdisjoint(before), (before, after)
