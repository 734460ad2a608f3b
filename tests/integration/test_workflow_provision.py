"""The provision workflow end to end on the sandbox: the real ASL on moto's interpreter, our Lambda handlers,
CloudFormation stacks in moto, manifests on the real control plane, and Nodes from the node simulator."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections import Counter
from typing import Any

import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm.version import spec_hash
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.convergence import terminated
from tests.integration.deployment import (
    ROOT,
    Deployment,
    HealthyPods,
    instances,
    nodes_terminated,
    provisioned,
    register_example_cluster,
    the_run,
    the_runs,
    upload_new_ami,
    working_runs,
)
from tests.integration.kill_switch import KillSwitch, When
from tests.integration.node_looks import NodeLooks

pytestmark = [
    pytest.mark.integration,
    # moto's CloudFormation skips AWS::S3::BucketPolicy and AWS::CloudWatch::Alarm (nothing tested here needs them)
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),
]


def test_provision_creates_stacks_applies_manifests_and_records_the_version(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)  # the registry change starts the first run
    execution = the_run(deployment.settle(known=0))
    states = deployment.states(execution["executionArn"])
    assert [s for s in states if s in {"Render", "StartStack", "ApplyPhase", "RollNodePool", "Succeed"}] == [
        "Render",
        "StartStack",
        "StartStack",
        "ApplyPhase",
        "ApplyPhase",
        "ApplyPhase",
        "ApplyPhase",  # karpenter_pools: reconciled at every run, as CLM's since 66f2c05
        "Succeed",
    ]  # a new cluster's first run rolls nothing: every node is new (CLM provisioner/clusterpy.go)
    output = json.loads(execution["output"])
    status = deployment.registry.get(deployment.cluster_id).status
    assert (status.current_version, status.next_version, status.problems) == (output["rendering"]["version"], "", [])
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    stacks = {
        s["StackName"]: s["StackStatus"]
        for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]
        if s["StackName"] != "Clm"  # CLM's own deployment
    }
    assert stacks == {
        "kube-1": "CREATE_COMPLETE",
        "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1": "CREATE_COMPLETE",
    }
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
    deployments = k8s.AppsV1Api(kube_api).list_namespaced_deployment("example").items
    assert [d.metadata.name for d in deployments] == ["web"]
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "ready"  # requested -> ready
    again = deployment.start()  # ready is a spec change, so one more run follows, as in CLM; it changes no stack
    assert json.loads(again["output"])["plan"]["action"] == "provision"
    assert "RollNodePool" in deployment.states(again["executionArn"])
    current = deployment.registry.get(deployment.cluster_id).status.current_version
    assert current != status.current_version
    third = deployment.start()
    assert third["status"] == "SUCCEEDED"
    assert json.loads(third["output"])["plan"] == {
        "cluster_id": deployment.cluster_id,
        "action": "skip",
        "reason": f"up to date at {current}",
        "desired_version": current,
        "target": {"account": "123456789012", "region": "eu-central-1"},  # where its steps act
        "apply_only": False,  # stacks and manifests without a roll (CLM's --apply-only): not this deployment's
        "left_outdated": {},  # what an apply-only run left outdated, by pool
    }
    assert len(instances(deployment.session)) == 3  # nothing was replaced


def test_config_change_rolls_every_node_without_breaking_the_pdb(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    """Before its first cordon the roll taints every outdated node (PreferNoSchedule), as CLM marks them
    (pkg/updatestrategy/rolling_update.go markOldNodes): evicted pods prefer the up-to-date nodes. No node waiting
    is labelled decommission-pending: that label hands a node to the cluster-lifecycle-controller."""
    register_example_cluster(deployment)
    before = provisioned(deployment, nodes, kube_api)
    old = {node.metadata.name for node in k8s.CoreV1Api(kube_api).list_node().items}
    known = len(deployment.executions(deployment.provision))
    watcher = HealthyPods(kube_api)
    watcher.start()
    looks = NodeLooks(kube_api)
    try:  # the upload starts reconcile (S3 Object Created), which starts provision
        upload_new_ami(deployment)
        execution = the_run(deployment.settle(known))
    finally:
        watcher.stop()
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before, (before, after)
    assert watcher.samples > 10 and watcher.lowest is not None and watcher.lowest >= 2  # PDB minAvailable=2
    cordoning = [look for look in looks.stopped() if any(look[n].unschedulable for n in old & look.keys())]
    assert cordoning and all(look[n].tainted for look in cordoning for n in old & look.keys()), cordoning[:1]
    assert not [n for look in looks.seen for n in look.values() if n.lifecycle == "decommission-pending"]
    assert deployment.states(execution["executionArn"]).count("RollNodePool") == 1
    assert nodes_terminated(deployment.roll_states()) == 3
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3


def test_a_registry_edit_made_during_a_run_is_brought_as_soon_as_that_run_ends(
    deployment: Deployment, nodes: NodeSimulator
) -> None:
    """No reconcile runs (no configuration change): the edit's own run skips while the first run holds the lock, and
    the first run's end starts the edit's (a `Cluster Changed` event, as the registry's), not the 15-minute
    schedule: CLM's controller would take the cluster at its next pass (controller/cluster_list.go)."""
    register_example_cluster(deployment)
    deadline = time.monotonic() + 60
    while not [
        e
        for e in deployment.executions(deployment.provision, "RUNNING")
        if "StartStack" in deployment.states(e["executionArn"])
    ]:
        assert time.monotonic() < deadline, "the first run never reached its stacks"
        time.sleep(0.05)
    cluster = deployment.registry.get(deployment.cluster_id)
    edited = dataclasses.replace(cluster, config_items={**cluster.config_items, "app_replicas": "4"})
    deployment.registry.put(edited)
    deadline = time.monotonic() + 120
    while len(working_runs(deployment.settle(known=0))) < 2 and time.monotonic() < deadline:
        time.sleep(1)  # the follow-up's event reaches its rule after the first run has ended
    [_, second] = the_runs(deployment.settle(known=0), 2)
    assert "during run" in json.loads(second["input"])["reason"], second["input"]
    now = deployment.registry.get(deployment.cluster_id)  # the edit, and `ready` since the first run (CLM's own)
    assert now.config_items["app_replicas"] == "4" and now.status.current_version.endswith(f"#{spec_hash(now)}")


def test_broken_template_fails_the_run_before_any_stack_and_records_the_problem(deployment: Deployment) -> None:
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"],
        Key="config/cluster/stack.yaml",
        Body=b"Resources:\n  Vpc: {{ cluster.config_items.no_such_item }}\n",
    )
    deployment.settle()  # the upload's reconcile runs (no cluster yet)
    register_example_cluster(deployment)
    runs = deployment.settle(known=0)
    failed = [e for e in runs if e["status"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["error"] == "ClusterRunFailed", [(e["status"], e.get("error")) for e in runs]
    status = deployment.registry.get(deployment.cluster_id).status
    assert status.problems[-1].title == (
        f"RenderError: cluster {deployment.cluster_id}: cluster/stack.yaml:2: undefined variable: "
        "'dict object' has no attribute 'no_such_item'"
    )
    assert status.next_version and not status.current_version
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    stacks = [s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]]
    assert stacks == ["Clm"]


def test_removed_pool_is_drained_and_deleted_then_the_cluster_decommissioned(
    deployment: Deployment, nodes: NodeSimulator
) -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    extra = dataclasses.replace(cluster.node_pools[0], name="extra", min_size=1, max_size=2, config_items={})
    deployment.registry.put(dataclasses.replace(cluster, node_pools=[*cluster.node_pools, extra]))
    the_run(deployment.settle(known=0))
    assert len(nodes.wait_for_ready_nodes(4, timeout=30)) == 4
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(cluster)  # the pool "extra" is gone from the registry
    the_run(deployment.settle(known))
    stacks = {s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]}
    assert stacks == {"Clm", "kube-1", "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"}
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(dataclasses.replace(cluster, lifecycle_status="decommission-requested"))
    decommission = the_run(deployment.settle(known))
    assert json.loads(decommission["output"])["plan"]["action"] == "decommission"
    stacks = {s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]}
    assert stacks == {"Clm"}
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "decommissioned"


def test_replacement_that_never_becomes_ready_stops_the_roll_naming_the_instance(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    cluster.node_pools[0].config_items["node_startup_timeout"] = "20s"
    deployment.registry.put(cluster)
    before = provisioned(deployment, nodes, kube_api)
    nodes.boot_delay = 3600.0  # from now on, new instances never register a Node
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)
    runs = deployment.settle(known)
    failed = [e for e in runs if e["status"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["error"] == "ClusterRunFailed", [(e["status"], e.get("error")) for e in runs]
    replacement = (instances(deployment.session) - before).pop()
    problem = deployment.registry.get(deployment.cluster_id).status.problems[-1]
    assert re.fullmatch(
        rf"NodeStartupTimeout: node pool default-worker: instance {replacement} \(eu-central-1\w\) not Ready after "
        r"\d+ s \(no Node registered; node startup timeout 20 s\)",
        problem.title,
    ), problem.title
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    groups = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert [g["SuspendedProcesses"] for g in groups] == [[]]  # resumed after the failure


def _second_node_drain() -> When:
    """Accepts the first drain call for a node other than the first drained: the roll replaced one node and is
    draining the next."""
    first: list[str] = []

    def when(event: dict[str, Any]) -> bool:
        if event.get("step") != "drain":
            return False
        node = event["replacement"]["instance_id"]
        first[:] = first or [node]
        return node != first[0]

    return when


def test_killed_mid_drain_and_triggered_again_the_roll_completes_replacing_each_node_once(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    before = provisioned(deployment, nodes, kube_api)
    watcher = HealthyPods(kube_api)
    watcher.start()
    provisions = {e["executionArn"] for e in deployment.executions(deployment.provision)}
    since = len(deployment.terminations)
    try:
        with KillSwitch(deployment) as switch:
            switch.arm(_second_node_drain(), provisions, "killed by the test mid-drain")
            upload_new_ami(deployment)
            deployment.settle(len(provisions))
        assert switch.killed, "the roll never drained a second node"
        assert deployment.registry.lock_holder(deployment.cluster_id) == switch.killed  # as a crash leaves it
        again = deployment.start()
    finally:
        watcher.stop()
    assert again["status"] == "SUCCEEDED", again
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before, (before, after)
    rolls = deployment.executions(deployment.roll_node_pool)
    # the child stopped with its parent (moto ends an execution stopped inside a Map FAILED, AWS ABORTED)
    stopped = [deployment.states(e["executionArn"]) for e in rolls if e["status"] in {"ABORTED", "FAILED"}]
    # killed mid-roll: after its first replacement, as the second node's drain began
    assert len(stopped) == 1 and nodes_terminated(stopped[0]) == 1, stopped
    # every node replaced exactly once over both runs (the killed second drain's call terminated its node: a call
    # begun before the stop runs to its end, as on AWS)
    assert terminated(deployment, since) == Counter(before)
    assert watcher.lowest is not None and watcher.lowest >= 2  # PDB minAvailable=2 held throughout
    cluster = deployment.registry.get(deployment.cluster_id)
    assert cluster.status.current_version == json.loads(again["output"])["rendering"]["version"]
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    groups = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert [g["SuspendedProcesses"] for g in groups] == [[]]
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
