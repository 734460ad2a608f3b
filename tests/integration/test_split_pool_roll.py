"""A node pool of one auto scaling group per zone rolled end to end on the sandbox, IAM enforced.

The pool uses a test profile modelled on Zalando's worker-splitaz (tests/fixtures/splitaz): three groups, one per zone
of the example cluster, one node each. CLM gets, scales and rolls across every group of a pool
(pkg/updatestrategy/aws_asg.go getNodePoolASGs, Get, Scale; rolling_update.go counts the pool as one); CLM here
finds the groups in the pool's stack, counts surge and max_unavailable for the pool and makes each change to the
group of the nodes it is for, so that each successor comes up in its predecessor's zone. A new AMI replaces all
three nodes with the example app's PodDisruptionBudget (minAvailable 2 of 3) never broken, each zone keeping its
node, every group's processes resumed and no surge left. A group tagged for the pool outside its stack (anyone with
autoscaling:CreateOrUpdateTags can tag one) is never touched: not suspended, scaled nor its instance terminated.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.convergence import terminated
from tests.integration.deployment import (
    ROOT,
    Deployment,
    HealthyPods,
    instances,
    provisioned,
    the_run,
    upload_new_ami,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),  # moto skips resources it does not model
]

PROFILE = Path(__file__).parents[1] / "fixtures" / "splitaz" / "node-pools" / "worker-splitaz" / "stack.yaml"
POOL = "split"
STACK = "nodepool-split-aws-123456789012-eu-central-1-kube-1"
MIN_AVAILABLE = 2  # the example app's PodDisruptionBudget
ROLL_PROCESSES = {"AZRebalance", "ReplaceUnhealthy"}


def _register_split_pool(deployment: Deployment, *, beside_default: bool = False) -> Cluster:
    """Upload the split profile, then put kube-1 with a pool on it (3 nodes, one per zone; surge 1), its only pool
    or `beside_default` its example pool; returns the cluster as registered."""
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"],
        Key="config/cluster/node-pools/worker-splitaz/stack.yaml",
        Body=PROFILE.read_bytes(),
    )
    deployment.settle()  # the upload's reconcile (no cluster yet)
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    pool = dataclasses.replace(
        cluster.node_pools[0], name=POOL, profile="worker-splitaz", config_items={"surge": "1", "max_unavailable": "1"}
    )
    registered = dataclasses.replace(cluster, node_pools=[*cluster.node_pools, pool] if beside_default else [pool])
    deployment.registry.put(registered)
    return registered


def _groups(deployment: Deployment) -> list[dict[str, Any]]:
    """The split pool's groups, as Auto Scaling describes them, in the stack's order."""
    resources = deployment.session.client("cloudformation").list_stack_resources(StackName=STACK)
    names = [
        r["PhysicalResourceId"]
        for r in resources["StackResourceSummaries"]
        if r["ResourceType"] == "AWS::AutoScaling::AutoScalingGroup"
    ]
    groups = deployment.session.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=names)
    by_name = {g["AutoScalingGroupName"]: g for g in groups["AutoScalingGroups"]}
    return [by_name[name] for name in names]


def _zones(session: Any, ids: set[str]) -> dict[str, str]:
    """Each instance's zone, by id."""
    reservations = session.client("ec2").describe_instances(InstanceIds=sorted(ids))["Reservations"]
    return {i["InstanceId"]: i["Placement"]["AvailabilityZone"] for r in reservations for i in r["Instances"]}


def _roll_outputs(deployment: Deployment) -> list[dict[str, Any]]:
    """What every step of every roll execution returned."""
    outputs = []
    for execution in deployment.executions(deployment.roll_node_pool):
        pages = deployment.sfn.get_paginator("get_execution_history").paginate(executionArn=execution["executionArn"])
        details = [e.get("lambdaFunctionSucceededEventDetails") for page in pages for e in page["events"]]
        outputs += [json.loads(d["output"]) for d in details if d and d.get("output")]
    return [out for out in outputs if isinstance(out, dict)]


@contextlib.contextmanager
def intruder(deployment: Deployment) -> Iterator[str]:
    """A group of one instance tagged for kube-1's pool `split` (as CLM's tag search would find it) outside the
    pool's stack, in its first zone, launching the pool's launch template (outdated once the AMI changes)."""
    autoscaling = deployment.session.client("autoscaling")
    subnet = _groups(deployment)[0]["VPCZoneIdentifier"].split(",")[0]
    tags = {f"kubernetes.io/cluster/{deployment.cluster_id}": "owned", "NodePool": POOL}
    tags["kubernetes.io/node-pool"] = POOL
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="intruder",
        MinSize=1,
        MaxSize=1,
        LaunchTemplate={"LaunchTemplateName": "kube-1-split", "Version": "1"},
        VPCZoneIdentifier=subnet,
        Tags=[{"Key": key, "Value": value, "PropagateAtLaunch": True} for key, value in tags.items()],
    )
    try:
        yield "intruder"
    finally:
        autoscaling.delete_auto_scaling_group(AutoScalingGroupName="intruder", ForceDelete=True)


def test_a_three_zone_split_pool_is_rolled_end_to_end_within_its_pdb_each_zone_keeping_its_node(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    _register_split_pool(deployment)
    before = provisioned(deployment, nodes, kube_api)
    groups = _groups(deployment)
    assert [(g["AvailabilityZones"], g["DesiredCapacity"], len(g["Instances"])) for g in groups] == [
        (["eu-central-1a"], 1, 1),
        (["eu-central-1b"], 1, 1),
        (["eu-central-1c"], 1, 1),
    ]
    zones_before = sorted(_zones(deployment.session, before).values())
    known = len(deployment.executions(deployment.provision))
    watcher = HealthyPods(kube_api)
    watcher.start()
    try:  # the upload starts reconcile, which starts provision
        upload_new_ami(deployment)
        execution = the_run(deployment.settle(known))
    finally:
        watcher.stop()
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before, (before, after)
    assert sorted(_zones(deployment.session, after).values()) == zones_before  # each zone kept its node
    assert watcher.samples > 10 and watcher.lowest is not None and watcher.lowest >= MIN_AVAILABLE, watcher.at_lowest
    assert deployment.states(execution["executionArn"]).count("RollNodePool") == 1
    roll = deployment.roll_states()
    assert terminated(deployment) == Counter(before) and "Scale" in roll  # each node once; the surge, and back
    for group in _groups(deployment):
        assert (group["DesiredCapacity"], group["SuspendedProcesses"]) == (1, [])
        assert not [t for t in group.get("Tags", []) if t["Key"] == "clm:roll-baseline-desired"]
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3


def test_a_group_tagged_for_the_pool_outside_its_stack_is_never_touched(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    _register_split_pool(deployment)
    provisioned(deployment, nodes, kube_api)
    autoscaling = deployment.session.client("autoscaling")
    with intruder(deployment) as name:
        [group] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
        [theirs] = [i["InstanceId"] for i in group["Instances"]]
        known = len(deployment.executions(deployment.provision))
        upload_new_ami(deployment)
        the_run(deployment.settle(known))
        [group] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    assert [i["InstanceId"] for i in group["Instances"]] == [theirs]  # not terminated, though outdated
    assert (group["DesiredCapacity"], group["MinSize"], group["SuspendedProcesses"]) == (1, 1, [])
    assert sum(terminated(deployment).values()) == 3 and theirs not in terminated(deployment)  # the pool's only
    pool_groups = sorted(g["AutoScalingGroupName"] for g in _groups(deployment))
    suspended = [sorted(out["asgs"]) for out in _roll_outputs(deployment) if "suspended" in out]
    assert suspended and all(names == pool_groups for names in suspended)  # every group of the pool, no other


def test_a_removed_split_pool_is_drained_from_every_group_and_deleted_then_the_cluster_decommissioned(
    deployment: Deployment, nodes: NodeSimulator
) -> None:
    """A pool gone from the registry: every group may shrink to zero, each node drained and terminated with decrement,
    then the stack deleted (CLM: MarkForDecommission sets every group's min size to 0, aws_asg.go)."""
    cluster = _register_split_pool(deployment, beside_default=True)
    the_run(deployment.settle(known=0))
    assert len(nodes.wait_for_ready_nodes(6, timeout=30)) == 6
    split_instances = {i["InstanceId"] for g in _groups(deployment) for i in g["Instances"]}
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(dataclasses.replace(cluster, node_pools=cluster.node_pools[:1]))  # the split pool goes
    the_run(deployment.settle(known))
    cloudformation = deployment.session.client("cloudformation")
    stacks = {s["StackName"] for s in cloudformation.describe_stacks()["Stacks"]}
    assert stacks == {"Clm", "kube-1", "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"}
    assert not split_instances & instances(deployment.session)
    shrunk = [out for out in _roll_outputs(deployment) if "groups" in out]
    assert [sorted(g["MinSize"] for g in out["groups"]) for out in shrunk] == [[0, 0, 0]]  # every group, one call
    assert terminated(deployment) == Counter(split_instances)
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
    known = len(deployment.executions(deployment.provision))
    remaining = cluster.node_pools[:1]
    deployment.registry.put(
        dataclasses.replace(cluster, node_pools=remaining, lifecycle_status="decommission-requested")
    )
    the_run(deployment.settle(known))
    assert {s["StackName"] for s in cloudformation.describe_stacks()["Stacks"]} == {"Clm"}
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "decommissioned"
