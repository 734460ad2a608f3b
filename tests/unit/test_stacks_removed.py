"""Node pools removed from the registry: their stacks are found by tag, then deleted (protection off), on moto."""

from __future__ import annotations

import dataclasses

from clm.stacks.delete import start_delete
from clm.stacks.deploy import check, start
from clm.stacks.removed import RemovedNodePool, removed_node_pools
from clm.stacks.spec import StackSpec, cluster_stack_spec, node_pool_stack_spec
from tests.unit.test_stacks_support import Clients, clients, example_cluster, moto_stack, render, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

CLUSTER_ID = "aws:123456789012:eu-west-1:kube-2"
WORKER_STACK = "nodepool-default-worker-aws-123456789012-eu-west-1-kube-2"
BATCH_STACK = "nodepool-batch-aws-123456789012-eu-west-1-kube-2"


def test_removed_pool_is_listed_then_its_stack_deleted_with_its_instances(stacks_aws):
    clients = Clients(stacks_aws, "eu-west-1")
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
        tags={"kubernetes.io/cluster/other": "owned", "node-pool": "x"},
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
    assert [s["StackName"] for s in cfn.describe_stacks()["Stacks"]] == ["kube-2", BATCH_STACK, other.name]


def test_a_stack_already_being_deleted_is_waited_on(clients):
    cfn = clients["cloudformation"]
    spec = StackSpec(
        cluster_id="c1",
        name="gone",
        body="Resources:\n  Q:\n    Type: AWS::SQS::Queue\n",
        template={},
        tags={},
        parameters={},
    )
    start(cfn, clients["s3"], spec)
    moto_stack("gone").status = "DELETE_IN_PROGRESS"  # moto deletes within the call; only its backend shows this
    assert start_delete(cfn, "gone", "c1").to_dict()["action"] == "waiting"
    assert check(cfn, "gone").state == "in_progress"
