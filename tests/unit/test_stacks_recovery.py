"""start on stacks left broken by an earlier run, on moto's state with the sandbox's patches: creates that really
fail and roll back; the states nothing in moto fails into are recorded (test_stacks_support.record_rollback_failure)."""

from __future__ import annotations

import pytest

from clm.stacks.deploy import check, start
from clm.stacks.errors import ClusterStackRolledBack, StackNeedsAttention
from clm.stacks.inventory import node_pool_inventory
from clm.stacks.names import cluster_stack_tags
from clm.stacks.spec import StackSpec, cluster_stack_spec, node_pool_stack_spec
from tests.unit.test_stacks_support import (
    clients,
    example_cluster,
    moto_stack,
    record_rollback_failure,
    render,
    stacks_aws,
)

__all__ = ["clients", "stacks_aws"]  # fixtures

POOL_STACK = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"


def queue_spec() -> StackSpec:
    body = "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n"
    tags = cluster_stack_tags("c1")
    return StackSpec(cluster_id="c1", name="queues", body=body, template={}, tags=tags, parameters={}, node_pool="q")


def test_node_pool_stack_rolled_back_after_a_failed_create_is_deleted_then_created_again(clients):
    cfn, s3, ec2 = clients["cloudformation"], clients["s3"], clients["ec2"]
    rendered = render(example_cluster("kube-1"))
    spec = node_pool_stack_spec(rendered, "default-worker")
    start(cfn, s3, cluster_stack_spec(rendered))
    stray = ec2.create_launch_template(LaunchTemplateName="kube-1-default-worker", LaunchTemplateData={})
    assert start(cfn, s3, spec).action == "created"
    failure = check(cfn, POOL_STACK).failure
    assert (failure.resource, failure.status) == ("LaunchTemplate", "CREATE_FAILED")
    assert "InvalidLaunchTemplateName.AlreadyExistsException" in failure.reason

    ec2.delete_launch_template(LaunchTemplateId=stray["LaunchTemplate"]["LaunchTemplateId"])  # the cause is fixed
    result = start(cfn, s3, spec)
    assert (result.action, result.status, result.next_step) == ("recreating", "ROLLBACK_COMPLETE", "start")
    assert check(cfn, POOL_STACK).state == "deleted"  # termination protection was turned off first
    assert start(cfn, s3, spec).action == "created"
    assert check(cfn, POOL_STACK).status == "CREATE_COMPLETE"
    owner = {"cluster_id": rendered.cluster.id, "name": rendered.cluster.name, "pool": "default-worker"}
    instances = node_pool_inventory(cfn, clients["autoscaling"], ec2, POOL_STACK, **owner).instances
    assert [i.lifecycle_state for i in instances] == ["InService"] * 3


def test_cluster_stack_rolled_back_is_an_error_for_a_human_and_is_kept(clients):
    cfn = clients["cloudformation"]
    clients["iam"].create_role(RoleName="kube-1-worker", AssumeRolePolicyDocument="{}")  # a name already taken
    spec = cluster_stack_spec(render(example_cluster("kube-1")))
    start(cfn, clients["s3"], spec)
    with pytest.raises(ClusterStackRolledBack) as info:
        start(cfn, clients["s3"], spec)
    assert str(info.value) == (
        "cluster aws:123456789012:eu-central-1:kube-1: stack kube-1: ROLLBACK_COMPLETE: resource NodeRole "
        '(AWS::IAM::Role) CREATE_FAILED: Resource handler returned message: "Role with name kube-1-worker already '
        'exists." (ErrorCode: EntityAlreadyExists) (CLM never deletes a cluster stack: fix the cause and delete the '
        "stack by hand; the next run creates it)"
    )
    assert info.value.asl_name == "ClusterStackRolledBack"
    assert cfn.describe_stacks(StackName="kube-1")["Stacks"][0]["StackStatus"] == "ROLLBACK_COMPLETE"


def test_update_rollback_failed_gets_continue_update_rollback(clients):
    cfn = clients["cloudformation"]
    start(cfn, clients["s3"], queue_spec())
    record_rollback_failure("queues", "Queue", "AWS::SQS::Queue", "queue is being deleted")
    result = start(cfn, clients["s3"], queue_spec())
    assert (result.action, result.status, result.next_step) == ("rollback_continued", "UPDATE_ROLLBACK_FAILED", "start")
    assert check(cfn, "queues").status == "UPDATE_ROLLBACK_COMPLETE"


def test_a_continued_rollback_that_fails_again_needs_a_human(clients):
    cfn = clients["cloudformation"]
    start(cfn, clients["s3"], queue_spec())
    record_rollback_failure("queues", "Queue", "AWS::SQS::Queue", "queue is being deleted")
    assert start(cfn, clients["s3"], queue_spec()).action == "rollback_continued"
    record_rollback_failure("queues", "Queue", "AWS::SQS::Queue", "queue is still being deleted")
    with pytest.raises(StackNeedsAttention, match=r"UPDATE_ROLLBACK_FAILED: resource Queue .*queue is being deleted"):
        start(cfn, clients["s3"], queue_spec())


@pytest.mark.parametrize("status", ["ROLLBACK_FAILED", "DELETE_FAILED"])
def test_states_clm_does_not_repair_need_a_human(clients, status):
    cfn = clients["cloudformation"]
    start(cfn, clients["s3"], queue_spec())
    moto_stack("queues").status = status  # a state nothing in moto fails into
    with pytest.raises(StackNeedsAttention, match=f"cluster c1: stack queues: {status}: .*does not repair"):
        start(cfn, clients["s3"], queue_spec())


def test_a_change_set_nobody_executed_needs_a_human(clients):
    cfn = clients["cloudformation"]
    spec = queue_spec()
    cfn.create_change_set(
        StackName=spec.name,
        ChangeSetName="review",
        ChangeSetType="CREATE",
        TemplateBody=spec.body,
        Tags=spec.api_tags(),  # the cluster's stack, as a reviewed create would be tagged
    )
    with pytest.raises(StackNeedsAttention, match=r"cluster c1: stack queues: REVIEW_IN_PROGRESS: .*does not repair"):
        start(cfn, clients["s3"], spec)
