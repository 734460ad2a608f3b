"""start/check on moto's real CloudFormation, EC2 and Auto Scaling state (with the sandbox's patches): create,
update, no-op, rejection, failure reasons, templates through S3, and stacks found busy."""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import timedelta

import pytest

from clm.registry.clusters_yaml import load_clusters
from clm.stacks.deploy import check, start
from clm.stacks.errors import StackFailed, StackRejected
from clm.stacks.names import cluster_stack_tags
from clm.stacks.spec import StackSpec, cluster_stack_spec, node_pool_stack_spec
from clm.stacks.template import INLINE_LIMIT, KEY_PREFIX
from tests.unit.test_stacks_support import EXAMPLES, Clients, clients, example_cluster, moto_stack, render, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

TAGS = {**cluster_stack_tags("c1"), "team": "platform"}  # as CLM tags every stack, plus one
KUBE1_POOL = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"
QUEUE_TEMPLATE = """\
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: {name}
"""


def queue_spec(name: str = "queues", queue: str = "q1", body: str | None = None) -> StackSpec:
    body = body or QUEUE_TEMPLATE.format(name=queue)
    return StackSpec(cluster_id="c1", name=name, body=body, template={}, tags=TAGS, parameters={})


def deploy(clients, spec: StackSpec, **kwargs) -> str:
    """start, then check once (moto completes synchronously) that the stack is complete; the start action."""
    result = start(clients["cloudformation"], clients["s3"], spec, **kwargs)
    assert check(clients["cloudformation"], spec.name).state == "complete"
    return result.action


def test_create_gives_complete_stacks_and_running_instances(clients):
    cfn = clients["cloudformation"]
    rendered = render(example_cluster("kube-1"))
    first = start(cfn, clients["s3"], cluster_stack_spec(rendered))
    assert first.to_dict() == {
        "stack_name": "kube-1",
        "action": "created",
        "status": "",
        "stack_id": first.stack_id,
        "next_step": "check",
    }
    assert check(cfn, "kube-1").to_dict() == {
        "stack_name": "kube-1",
        "state": "complete",
        "status": "CREATE_COMPLETE",
        "reason": "",
        "wait_seconds": 0,
        "failed_resource": "",
        "failed_resource_type": "",
        "failed_reason": "",
    }
    assert start(cfn, clients["s3"], node_pool_stack_spec(rendered, "default-worker")).action == "created"
    assert check(cfn, KUBE1_POOL).state == "complete"

    stack = cfn.describe_stacks(StackName=KUBE1_POOL)["Stacks"][0]
    assert stack["EnableTerminationProtection"] is True
    assert {t["Key"]: t["Value"] for t in stack["Tags"]}["kubernetes.io/node-pool/profile"] == "worker-default"
    group_name = stack["Outputs"][0]["OutputValue"]
    group = clients["autoscaling"].describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])
    ids = [i["InstanceId"] for i in group["AutoScalingGroups"][0]["Instances"]]
    reservations = clients["ec2"].describe_instances(InstanceIds=ids)["Reservations"]
    assert len(ids) == 3
    assert {i["State"]["Name"] for r in reservations for i in r["Instances"]} == {"running"}


def test_every_stack_of_the_example_clusters_is_created_complete(stacks_aws):
    for cluster in load_clusters((EXAMPLES / "clusters.yaml").read_text()):
        clients = Clients(stacks_aws, cluster.region)
        rendered = render(cluster)
        specs = [cluster_stack_spec(rendered), *(node_pool_stack_spec(rendered, p.name) for p in cluster.node_pools)]
        for spec in specs:
            assert start(clients["cloudformation"], clients["s3"], spec).action == "created"
            assert check(clients["cloudformation"], spec.name).status == "CREATE_COMPLETE", spec.name


def test_same_template_again_is_unchanged_and_touches_nothing(clients):
    cfn = clients["cloudformation"]
    spec = cluster_stack_spec(render(example_cluster("kube-1")))
    deploy(clients, spec)
    events = len(cfn.describe_stack_events(StackName="kube-1")["StackEvents"])
    result = start(cfn, clients["s3"], spec)
    assert (result.action, result.status, result.next_step) == ("unchanged", "CREATE_COMPLETE", "done")
    assert len(cfn.describe_stack_events(StackName="kube-1")["StackEvents"]) == events


def test_cloudformations_no_updates_answer_is_unchanged(clients):
    # Only the template's formatting differs, so the pre-check (which compares the text) submits the update;
    # CloudFormation compares the parsed template and answers "No updates are to be performed".
    body = "Parameters:\n  Name: {Type: String, Default: q1}\n" + QUEUE_TEMPLATE.format(name="!Ref Name")
    spec = dataclasses.replace(queue_spec(body=body), parameters={"Name": "q1"})
    deploy(clients, spec)
    result = start(clients["cloudformation"], clients["s3"], dataclasses.replace(spec, body=f"# comment\n{body}"))
    assert (result.action, result.next_step) == ("unchanged", "done")


def test_changed_tags_alone_start_an_update(clients):
    deploy(clients, queue_spec())
    assert deploy(clients, dataclasses.replace(queue_spec(), tags={**TAGS, "team": "other"})) == "update_started"
    stack = clients["cloudformation"].describe_stacks(StackName="queues")["Stacks"][0]
    assert {t["Key"]: t["Value"] for t in stack["Tags"]} == {**TAGS, "team": "other"}


def test_changed_template_starts_an_update_that_completes(clients):
    cfn = clients["cloudformation"]
    rendered = render(example_cluster("kube-1"))
    deploy(clients, cluster_stack_spec(rendered))
    deploy(clients, node_pool_stack_spec(rendered, "default-worker"))
    changed = node_pool_stack_spec(
        render(example_cluster("kube-1"), worker_ami="ami-0123456789abcdef0"), "default-worker"
    )
    result = start(cfn, clients["s3"], changed)
    assert (result.action, result.status, result.next_step) == ("update_started", "CREATE_COMPLETE", "check")
    assert check(cfn, KUBE1_POOL).status == "UPDATE_COMPLETE"
    template = clients["ec2"].describe_launch_templates(LaunchTemplateNames=["kube-1-default-worker"])
    assert template["LaunchTemplates"][0]["LatestVersionNumber"] == 2


def test_template_cloudformation_rejects_is_an_error_naming_the_resource(clients):
    body = QUEUE_TEMPLATE.format(name="!GetAtt Missing.Arn")
    with pytest.raises(StackRejected) as info:
        start(clients["cloudformation"], clients["s3"], queue_spec(body=body))
    assert str(info.value) == (
        "cluster c1: stack queues: CloudFormation rejected create: "
        "Template error: instance of Fn::GetAtt references undefined resource Missing"
    )
    assert info.value.asl_name == "StackRejected"


def test_failed_update_is_reported_with_the_first_failed_resource_of_the_latest_update(clients):
    cfn = clients["cloudformation"]
    deploy(clients, queue_spec())
    clients["sqs"].create_queue(QueueName="q3", Attributes={"VisibilityTimeout": "10"})  # created outside the stack
    with_other = QUEUE_TEMPLATE.format(name="q1") + "  Other:\n    Type: AWS::SQS::Queue\n    Properties:\n{}"
    start(cfn, clients["s3"], queue_spec(body=with_other.format("      QueueName: bad name!\n")))
    assert check(cfn, "queues").failure.reason.startswith('Resource handler returned message: "Can only include')
    start(cfn, clients["s3"], queue_spec(body=with_other.format("      QueueName: q3\n      VisibilityTimeout: 20\n")))
    state = check(cfn, "queues")
    assert state.to_dict() == {
        "stack_name": "queues",
        "state": "failed",
        "status": "UPDATE_ROLLBACK_COMPLETE",
        "reason": "The following resource(s) failed to create: [Other]. Rollback requested by user.",
        "wait_seconds": 0,
        "failed_resource": "Other",
        "failed_resource_type": "AWS::SQS::Queue",
        "failed_reason": 'Resource handler returned message: "The specified queue already exists." '
        "(ErrorCode: QueueAlreadyExists)",
    }
    with pytest.raises(
        StackFailed,
        match=r"^cluster c1: stack queues: UPDATE_ROLLBACK_COMPLETE: resource Other "
        r"\(AWS::SQS::Queue\) CREATE_FAILED: .*The specified queue already exists.*$",
    ):
        state.raise_if_failed("c1")
    deploy(clients, queue_spec(queue="q4"))  # the next update succeeds
    check(cfn, "queues").raise_if_failed("c1")


def test_failure_of_the_stack_itself_is_reported_when_no_resource_failed(clients):
    # A node pool before its cluster stack: the exports it imports do not exist yet.
    spec = node_pool_stack_spec(render(example_cluster("kube-1")), "default-worker")
    assert start(clients["cloudformation"], clients["s3"], spec).action == "created"
    state = check(clients["cloudformation"], KUBE1_POOL)
    assert (state.state, state.status) == ("failed", "ROLLBACK_COMPLETE")
    assert state.failure.describe() == (
        f"resource {KUBE1_POOL} (AWS::CloudFormation::Stack) ROLLBACK_IN_PROGRESS: "
        "No export named kube-1-node-instance-profile found. Rollback requested by user."
    )


def test_template_over_51200_bytes_goes_through_s3(clients):
    clients["s3"].create_bucket(Bucket="templates", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    body = QUEUE_TEMPLATE.format(name="big") + f"Metadata:\n  Padding: {'x' * INLINE_LIMIT}\n"
    spec = queue_spec(body=body)
    assert deploy(clients, spec, template_bucket="templates") == "created"
    key = f"{KEY_PREFIX}{hashlib.sha256(body.encode()).hexdigest()}.yaml"
    assert clients["s3"].get_object(Bucket="templates", Key=key)["Body"].read() == body.encode()
    assert clients["cloudformation"].get_template(StackName="queues")["TemplateBody"] == body
    assert start(clients["cloudformation"], clients["s3"], spec, template_bucket="templates").action == "unchanged"


def test_stack_in_progress_at_start_is_waited_on(clients):
    cfn = clients["cloudformation"]
    deploy(clients, queue_spec())
    # moto completes every operation before the API call returns; its backend is the only way to show a stack
    # that another execution (or a human) is still updating.
    moto_stack("queues").status = "UPDATE_IN_PROGRESS"
    result = start(cfn, clients["s3"], queue_spec(queue="q2"))
    assert (result.action, result.status, result.next_step) == ("waiting", "UPDATE_IN_PROGRESS", "start")
    assert check(cfn, "queues").state == "in_progress"
    described = cfn.describe_stacks(StackName="queues")["Stacks"][0]
    updated = described.get("LastUpdatedTime") or described["CreationTime"]
    looks = [check(cfn, "queues", updated + timedelta(seconds=s)).wait_seconds for s in (0, 8, 20, 40, 60, 600)]
    assert looks == [2, 2, 5, 10, 15, 15]  # a quarter of the time the update has taken, 2 to 15 s
    assert "q1" in cfn.get_template(StackName="queues")["TemplateBody"]  # nothing was submitted
    moto_stack("queues").status = "UPDATE_COMPLETE"  # the other operation ends
    assert start(cfn, clients["s3"], queue_spec(queue="q2")).action == "update_started"
    assert "q2" in cfn.get_template(StackName="queues")["TemplateBody"]


def test_termination_protection_is_turned_on_for_a_stack_created_without_it(clients):
    cfn = clients["cloudformation"]
    spec = queue_spec()
    cfn.create_stack(StackName="queues", TemplateBody=spec.body, Tags=spec.api_tags())  # as a migration finds it
    assert start(cfn, clients["s3"], spec).action == "unchanged"
    assert cfn.describe_stacks(StackName="queues")["Stacks"][0]["EnableTerminationProtection"] is True


def test_check_of_a_stack_that_does_not_exist_is_deleted(clients):
    assert check(clients["cloudformation"], "nothing").to_dict()["state"] == "deleted"


def test_a_stack_created_without_the_role_gets_it_with_its_next_update(clients):
    cfn = clients["cloudformation"]
    role = "arn:aws:iam::123456789012:role/clm-cluster-stacks"
    spec = queue_spec()
    cfn.create_stack(StackName="queues", TemplateBody=spec.body, Tags=spec.api_tags())  # as Zalando's CLM left it
    assert deploy(clients, queue_spec(queue="q2"), role_arn=role) == "update_started"
    assert cfn.describe_stacks(StackName="queues")["Stacks"][0]["RoleARN"] == role
