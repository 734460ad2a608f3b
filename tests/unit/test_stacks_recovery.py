"""start on stacks left broken by an earlier run, on moto's state (failures recorded as CloudFormation records
them, since moto never fails a resource by itself: see test_stacks_support.record_failure)."""

from __future__ import annotations

import pytest

from clm.stacks.deploy import check, start
from clm.stacks.errors import ClusterStackRolledBack, StackNeedsAttention
from clm.stacks.inventory import node_pool_inventory
from clm.stacks.spec import StackSpec, cluster_stack_spec, node_pool_stack_spec
from tests.unit.test_stacks_support import cfn_ops, clients, example_cluster, moto_stack, record_failure, render

__all__ = ["cfn_ops", "clients"]  # fixtures

POOL_STACK = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"
AMI_MISSING = "The image id '[ami-0c1a7f89451184c8b]' does not exist (Service: Ec2, Status Code: 400)"


def queue_spec() -> StackSpec:
    body = "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n"
    return StackSpec(cluster_id="c1", name="queues", body=body, template={}, tags={}, parameters={}, node_pool="q")


def test_node_pool_stack_rolled_back_after_a_failed_create_is_deleted_then_created_again(clients, cfn_ops):
    cfn, s3 = clients["cloudformation"], clients["s3"]
    rendered = render(example_cluster("kube-1"))
    spec = node_pool_stack_spec(rendered, "default-worker")
    start(cfn, s3, cluster_stack_spec(rendered))
    start(cfn, s3, spec)
    record_failure(POOL_STACK, "ROLLBACK_COMPLETE", "LaunchTemplate", "AWS::EC2::LaunchTemplate", AMI_MISSING)
    assert check(cfn, POOL_STACK).failure.reason == AMI_MISSING

    result = start(cfn, s3, spec)
    assert (result.action, result.status, result.next_step) == ("recreating", "ROLLBACK_COMPLETE", "start")
    assert check(cfn, POOL_STACK).state == "deleted"  # termination protection was turned off first
    assert start(cfn, s3, spec).action == "created"
    assert check(cfn, POOL_STACK).status == "CREATE_COMPLETE"
    instances = node_pool_inventory(cfn, clients["autoscaling"], clients["ec2"], POOL_STACK).instances
    assert [i.lifecycle_state for i in instances] == ["InService"] * 3


def test_cluster_stack_rolled_back_is_an_error_for_a_human_and_is_kept(clients):
    cfn = clients["cloudformation"]
    spec = cluster_stack_spec(render(example_cluster("kube-1")))
    start(cfn, clients["s3"], spec)
    record_failure("kube-1", "ROLLBACK_COMPLETE", "NodeRole", "AWS::IAM::Role", "Role kube-1-worker already exists")
    with pytest.raises(ClusterStackRolledBack) as info:
        start(cfn, clients["s3"], spec)
    assert str(info.value) == (
        "cluster aws:123456789012:eu-central-1:kube-1: stack kube-1: ROLLBACK_COMPLETE: resource NodeRole "
        "(AWS::IAM::Role) CREATE_FAILED: Role kube-1-worker already exists (CLM never deletes a cluster stack: "
        "fix the cause and delete the stack by hand; the next run creates it)"
    )
    assert info.value.asl_name == "ClusterStackRolledBack"
    assert cfn.describe_stacks(StackName="kube-1")["Stacks"][0]["StackStatus"] == "ROLLBACK_COMPLETE"


def test_update_rollback_failed_gets_continue_update_rollback(clients, cfn_ops):
    cfn = clients["cloudformation"]
    start(cfn, clients["s3"], queue_spec())
    record_failure("queues", "UPDATE_ROLLBACK_FAILED", "Queue", "AWS::SQS::Queue", "queue is being deleted")
    result = start(cfn, clients["s3"], queue_spec())
    assert (result.action, result.status, result.next_step) == ("rollback_continued", "UPDATE_ROLLBACK_FAILED", "start")
    assert check(cfn, "queues").status == "UPDATE_ROLLBACK_COMPLETE"


def test_a_continued_rollback_that_fails_again_needs_a_human(clients, cfn_ops):
    cfn = clients["cloudformation"]
    start(cfn, clients["s3"], queue_spec())
    record_failure("queues", "UPDATE_ROLLBACK_FAILED", "Queue", "AWS::SQS::Queue", "queue is being deleted")
    assert start(cfn, clients["s3"], queue_spec()).action == "rollback_continued"
    record_failure("queues", "UPDATE_ROLLBACK_FAILED", "Queue", "AWS::SQS::Queue", "queue is still being deleted")
    with pytest.raises(StackNeedsAttention, match=r"UPDATE_ROLLBACK_FAILED: resource Queue .*queue is being deleted"):
        start(cfn, clients["s3"], queue_spec())


@pytest.mark.parametrize("status", ["ROLLBACK_FAILED", "DELETE_FAILED", "REVIEW_IN_PROGRESS"])
def test_states_clm_does_not_repair_need_a_human(clients, status):
    cfn = clients["cloudformation"]
    start(cfn, clients["s3"], queue_spec())
    moto_stack("queues").status = status  # a state moto never reaches by itself
    with pytest.raises(StackNeedsAttention, match=f"cluster c1: stack queues: {status}: .*does not repair"):
        start(cfn, clients["s3"], queue_spec())
