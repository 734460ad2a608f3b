"""`cluster_update_block` set while a roll drains (CLM cancels a running update: controller/cluster_list.go): the node
being drained is finished, the run stops before the next node with a problem naming the block, the pools are resumed
and the lock released; once the item is removed the next run rolls the rest."""

from __future__ import annotations

import dataclasses

import pytest
from kubernetes import client as k8s

from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import (
    Deployment,
    instances,
    provisioned,
    register_example_cluster,
    the_run,
    upload_new_ami,
    wait_for_roll,
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]


def test_block_set_mid_drain_stops_the_run_before_the_next_node_and_the_next_run_continues(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    before = provisioned(deployment, nodes, kube_api)
    cluster = deployment.registry.get(deployment.cluster_id)
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)
    wait_for_roll(deployment, lambda states: "Drain" in states, "a drain")
    blocked = dataclasses.replace(cluster, config_items={**cluster.config_items, "cluster_update_block": "freeze"})
    deployment.registry.put(blocked)  # its own trigger's run skips: updates are blocked

    runs = deployment.settle(known)
    failed = [e for e in runs if e["status"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["error"] == "ClusterRunFailed", [(e["status"], e.get("error")) for e in runs]
    [roll] = deployment.executions(deployment.roll_node_pool)[-1:]
    assert deployment.states(roll["executionArn"])[-1] == "Plan"  # stopped at a plan, never inside a drain
    replaced = before - instances(deployment.session)
    assert 1 <= len(replaced) < 3, replaced  # the node being drained was finished, the rest left for later
    live = instances(deployment.session)  # the finished node's Node may outlive its terminated instance a while
    cordoned = [
        n.metadata.name
        for n in k8s.CoreV1Api(kube_api).list_node().items
        if n.spec.unschedulable and (n.spec.provider_id or "").rsplit("/", 1)[-1] in live
    ]
    assert cordoned == []  # no node of a running instance left half-drained
    status = deployment.registry.get(deployment.cluster_id).status
    assert status.problems[-1].title.startswith(
        f"UpdateBlocked: cluster {deployment.cluster_id}: updates blocked by config item cluster_update_block "
        "('freeze') during the run; stopped before the next node of node pool default-worker"
    ), status.problems[-1].title
    assert status.next_version and status.next_version != status.current_version  # the update is still due
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    groups = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert [g["SuspendedProcesses"] for g in groups] == [[]]

    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(cluster)  # the block removed: the next run rolls what is left
    the_run(deployment.settle(known))
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before, (before, after)
    assert deployment.registry.get(deployment.cluster_id).status.current_version == status.next_version
