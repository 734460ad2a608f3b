"""Node pools removed from the registry: their stacks are found by name and tag, then deleted (protection off), on
moto."""

from __future__ import annotations

import dataclasses

from clm.model import NodePool
from clm.stacks.delete import start_delete
from clm.stacks.deploy import check, start
from clm.stacks.names import cluster_stack_tags, node_pool_stack_tags
from clm.stacks.removed import RemovedNodePool, node_pool_stacks, removed_node_pools
from clm.stacks.spec import StackSpec, cluster_stack_spec, node_pool_stack_spec
from tests.unit.test_stacks_support import (
    EXPORTS_STACK,
    Clients,
    clients,
    example_cluster,
    moto_stack,
    render,
    stacks_aws,
)

__all__ = ["clients", "stacks_aws"]  # fixtures

CLUSTER_ID = "aws:123456789012:eu-central-1:kube-2"
WORKER_STACK = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-2"
BATCH_STACK = "nodepool-batch-aws-123456789012-eu-central-1-kube-2"


def test_removed_pool_is_listed_then_its_stack_deleted_with_its_instances(stacks_aws):
    clients = Clients(stacks_aws, "eu-central-1")
    cfn, s3 = clients["cloudformation"], clients["s3"]
    cluster = example_cluster("kube-2")
    rendered = render(cluster)
    for spec in (
        cluster_stack_spec(rendered),
        *(node_pool_stack_spec(rendered, p) for p in ("default-worker", "batch")),
    ):
        start(cfn, s3, spec)
    # Another cluster's node pool in the same account and region is none of kube-2's business.
    other = StackSpec(
        cluster_id="other",
        name="nodepool-x-other",
        body="Resources:\n  Q:\n    Type: AWS::SQS::Queue\n",
        template={},
        tags=node_pool_tags("other", "x"),
        parameters={},
    )
    start(cfn, s3, other)
    assert removed_node_pools(cfn, cluster) == []

    without_worker = dataclasses.replace(cluster, node_pools=[p for p in cluster.node_pools if p.name == "batch"])
    removed = removed_node_pools(cfn, without_worker)
    assert removed == [RemovedNodePool(WORKER_STACK, "default-worker", "worker-default", "CREATE_COMPLETE")]
    assert removed[0].to_dict()["node_pool"] == "default-worker"
    group = cfn.describe_stacks(StackName=WORKER_STACK)["Stacks"][0]["Outputs"][0]["OutputValue"]
    instance_ids = [
        i["InstanceId"]
        for i in clients["autoscaling"].describe_auto_scaling_groups(AutoScalingGroupNames=[group])[
            "AutoScalingGroups"
        ][0]["Instances"]
    ]

    result = start_delete(cfn, WORKER_STACK, CLUSTER_ID)
    assert result.to_dict() == {
        "stack_name": WORKER_STACK,
        "action": "delete_started",
        "status": "CREATE_COMPLETE",
        "next_step": "check",
    }
    assert check(cfn, WORKER_STACK).state == "deleted"
    assert clients["autoscaling"].describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"] == []
    states = clients["ec2"].describe_instances(InstanceIds=instance_ids)["Reservations"][0]["Instances"]
    assert {i["State"]["Name"] for i in states} == {"terminated"}
    assert removed_node_pools(cfn, without_worker) == []
    assert start_delete(cfn, WORKER_STACK, CLUSTER_ID).to_dict()["action"] == "absent"
    names = [s["StackName"] for s in cfn.describe_stacks()["Stacks"]]
    assert names == [EXPORTS_STACK, "kube-2", BATCH_STACK, other.name]


def test_a_stack_already_being_deleted_is_waited_on(clients):
    cfn = clients["cloudformation"]
    spec = StackSpec(
        cluster_id="c1",
        name="gone",
        body="Resources:\n  Q:\n    Type: AWS::SQS::Queue\n",
        template={},
        tags=cluster_stack_tags("c1"),
        parameters={},
    )
    start(cfn, clients["s3"], spec)
    moto_stack("gone").status = "DELETE_IN_PROGRESS"  # moto deletes within the call; only its backend shows this
    assert start_delete(cfn, "gone", "c1").to_dict()["action"] == "waiting"
    assert check(cfn, "gone").state == "in_progress"


def node_pool_tags(cluster_id: str, pool: str) -> dict[str, str]:
    """The tags CLM puts on a node-pool stack of the cluster (profile `p`)."""
    return node_pool_stack_tags(cluster_id, NodePool(name=pool, profile="p", min_size=0, max_size=1, instance_types=[]))


def queue_stack(name: str, tags: dict[str, str]) -> StackSpec:
    """A stack of one queue with the given name and tags."""
    body = "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n"
    return StackSpec(cluster_id="any", name=name, body=body, template={}, tags=tags, parameters={})


def test_node_pool_stacks_are_listed_by_name_and_described_by_name_only(clients):
    """ListStacks, then DescribeStacks with a StackName: no call reads every stack (that needs ListStacks too)."""
    cfn = clients["cloudformation"]
    cluster_id = "aws:123456789012:eu-central-1:kube-1"
    tags = {**node_pool_tags(cluster_id, "a"), "kubernetes.io/node-pool/profile": "p"}
    # Cluster z-...:kube-1's pool x ends like a pool of kube-1; its tag tells them apart.
    foreign_id = "z-aws:123456789012:eu-central-1:kube-1"
    foreign = node_pool_tags(foreign_id, "x")
    for spec in (
        queue_stack("nodepool-a-aws-123456789012-eu-central-1-kube-1", tags),
        queue_stack("nodepool-x-z-aws-123456789012-eu-central-1-kube-1", foreign),
        queue_stack("kube-1", {"kubernetes.io/cluster/" + cluster_id: "owned"}),
        queue_stack("elsewhere", tags),  # tagged like a pool, not named like one: not CLM's
        queue_stack("nodepool-gone-aws-123456789012-eu-central-1-kube-1", tags),
    ):
        start(clients["cloudformation"], clients["s3"], spec)
    start_delete(cfn, "nodepool-gone-aws-123456789012-eu-central-1-kube-1", cluster_id)  # listed as DELETE_COMPLETE
    calls: list[tuple[str, dict]] = []
    cfn.meta.events.register(
        "provide-client-params.cloudformation", lambda model, params, **_: calls.append((model.name, dict(params)))
    )

    found = node_pool_stacks(cfn, cluster_id, cluster_id)

    assert found == [RemovedNodePool("nodepool-a-aws-123456789012-eu-central-1-kube-1", "a", "p", "CREATE_COMPLETE")]
    assert [name for name, _ in calls] == ["ListStacks", "DescribeStacks", "DescribeStacks"]
    assert "DELETE_COMPLETE" not in calls[0][1]["StackStatusFilter"]
    assert [params for _, params in calls[1:]] == [  # the two named like kube-1's pools
        {"StackName": "nodepool-a-aws-123456789012-eu-central-1-kube-1"},
        {"StackName": "nodepool-x-z-aws-123456789012-eu-central-1-kube-1"},
    ]
    assert node_pool_stacks(cfn, foreign_id, foreign_id)[0].node_pool == "x"
