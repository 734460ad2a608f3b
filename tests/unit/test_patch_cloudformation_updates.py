"""Stack updates on patched moto through boto3: changes propagate through Ref/GetAtt in dependency order, launch
templates get a new default version, auto scaling groups are updated in place, removed resources are deleted
last (dependents first), and a failing update of an existing resource is rolled back."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from clm_sandbox.patches import autoscaling_launch, cloudformation_api, cloudformation_inplace_updates
from tests.conftest import REGION

SESSION = boto3.Session(region_name=REGION)  # shared by the tests, so that service models load once
NETWORK = """\
  Vpc:
    Type: AWS::EC2::VPC
    Properties: {CidrBlock: 10.1.0.0/16}
  SubnetA:
    Type: AWS::EC2::Subnet
    Properties: {VpcId: !Ref Vpc, CidrBlock: 10.1.0.0/24, AvailabilityZone: eu-central-1a}
  SubnetB:
    Type: AWS::EC2::Subnet
    Properties: {VpcId: !Ref Vpc, CidrBlock: 10.1.1.0/24, AvailabilityZone: eu-central-1b}
"""
LAUNCH_TEMPLATE = """\
  LaunchTemplate:
    Type: AWS::EC2::LaunchTemplate
    Properties:
      LaunchTemplateName: {name}
      LaunchTemplateData: {{ImageId: {ami}, InstanceType: m5.large}}
"""
GROUP = """\
  Group:
    Type: AWS::AutoScaling::AutoScalingGroup
    Properties:
      MinSize: "{min}"
      MaxSize: "{max}"
      VPCZoneIdentifier: {subnets}
      LaunchTemplate: {{LaunchTemplateId: !Ref LaunchTemplate, Version: !GetAtt LaunchTemplate.LatestVersionNumber}}
      Tags: [{{Key: team, Value: {team}, PropagateAtLaunch: true}}]
"""
OUTPUTS = "Outputs:\n  Group: {Value: !Ref Group}\n"


def pool(
    ami: str = "ami-00000001",
    name: str = "pool",
    size: tuple[int, int] = (2, 4),
    team: str = "a",
    subnets: str = "[!Ref SubnetA]",
    extra: str = "",
) -> str:
    group = GROUP.format(min=size[0], max=size[1], subnets=subnets, team=team)
    return f"Resources:\n{NETWORK}{LAUNCH_TEMPLATE.format(name=name, ami=ami)}{group}{extra}{OUTPUTS}"


@pytest.fixture
def clients(aws: boto3.Session) -> dict[str, Any]:
    for patch in (cloudformation_api, cloudformation_inplace_updates, autoscaling_launch):
        patch.install()
    return {name: SESSION.client(name) for name in ("cloudformation", "autoscaling", "ec2")}


def deploy(clients: dict[str, Any], body: str, name: str = "pool") -> dict[str, Any]:
    """Create or update the stack; the group it outputs, as DescribeAutoScalingGroups gives it."""
    cfn = clients["cloudformation"]
    if cfn.describe_stacks()["Stacks"]:
        cfn.update_stack(StackName=name, TemplateBody=body)
    else:
        cfn.create_stack(StackName=name, TemplateBody=body)
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    assert stack["StackStatus"] in ("CREATE_COMPLETE", "UPDATE_COMPLETE"), stack["StackStatus"]
    group_name = stack["Outputs"][0]["OutputValue"]
    return clients["autoscaling"].describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])["AutoScalingGroups"][
        0
    ]


def update_events(clients: dict[str, Any], name: str = "pool") -> list[tuple[str, str]]:
    """(resource, status) of the latest update's events, oldest first."""
    found = clients["cloudformation"].describe_stack_events(StackName=name)["StackEvents"]
    latest = next(
        i for i, e in enumerate(found) if e["ResourceStatus"] == "UPDATE_IN_PROGRESS" and e["LogicalResourceId"] == name
    )
    return [(e["LogicalResourceId"], e["ResourceStatus"]) for e in found[:latest][::-1]]


def instances(group: dict[str, Any]) -> dict[str, str]:
    """Instance id -> launch template version, as the group reports them."""
    return {i["InstanceId"]: i["LaunchTemplate"]["Version"] for i in group["Instances"]}


def test_new_ami_gives_a_new_default_version_that_the_group_launches_while_it_keeps_its_instances(clients) -> None:
    before = deploy(clients, pool())
    assert set(instances(before).values()) == {"1"}

    after = deploy(clients, pool(ami="ami-00000002"))
    template = clients["ec2"].describe_launch_templates(LaunchTemplateNames=["pool"])["LaunchTemplates"][0]
    assert (template["DefaultVersionNumber"], template["LatestVersionNumber"]) == (2, 2)
    assert after["AutoScalingGroupName"] == before["AutoScalingGroupName"]
    assert after["LaunchTemplate"]["Version"] == "2"
    assert instances(after) == instances(before)  # same instances, launched with version 1
    assert update_events(clients) == [
        ("LaunchTemplate", "UPDATE_IN_PROGRESS"),
        ("LaunchTemplate", "UPDATE_COMPLETE"),
        ("Group", "UPDATE_IN_PROGRESS"),
        ("Group", "UPDATE_COMPLETE"),
        ("pool", "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"),
        ("pool", "UPDATE_COMPLETE"),
    ]  # the network did not change, so it was not touched

    clients["autoscaling"].set_desired_capacity(AutoScalingGroupName=after["AutoScalingGroupName"], DesiredCapacity=3)
    scaled = clients["autoscaling"].describe_auto_scaling_groups(AutoScalingGroupNames=[after["AutoScalingGroupName"]])
    new = set(instances(scaled["AutoScalingGroups"][0])) - set(instances(before))
    described = clients["ec2"].describe_instances(InstanceIds=list(new))["Reservations"][0]["Instances"][0]
    assert described["ImageId"] == "ami-00000002"
    assert {t["Key"]: t["Value"] for t in described["Tags"]}["aws:ec2launchtemplate:version"] == "2"


def test_sizes_subnets_and_tags_change_in_place(clients) -> None:
    before = deploy(clients, pool())
    after = deploy(clients, pool(size=(3, 5), team="b", subnets="[!Ref SubnetA, !Ref SubnetB]"))
    assert after["AutoScalingGroupName"] == before["AutoScalingGroupName"]
    assert (after["MinSize"], after["MaxSize"], after["DesiredCapacity"]) == (3, 5, 3)
    assert set(instances(before)) < set(instances(after))
    assert sorted(after["AvailabilityZones"]) == ["eu-central-1a", "eu-central-1b"]
    assert {t["Key"]: t["Value"] for t in after["Tags"]} == {"team": "b"}
    new = (set(instances(after)) - set(instances(before))).pop()
    zone = next(i["AvailabilityZone"] for i in after["Instances"] if i["InstanceId"] == new)
    assert zone == "eu-central-1b"  # the zone without instances


def test_renamed_launch_template_is_replaced_and_the_group_follows_its_new_id(clients) -> None:
    before = deploy(clients, pool())
    old_id = before["LaunchTemplate"]["LaunchTemplateId"]
    after = deploy(clients, pool(name="pool-v2"))
    templates = clients["ec2"].describe_launch_templates()["LaunchTemplates"]
    assert [t["LaunchTemplateName"] for t in templates] == ["pool-v2"]
    assert after["LaunchTemplate"]["LaunchTemplateId"] == templates[0]["LaunchTemplateId"] != old_id
    assert after["AutoScalingGroupName"] == before["AutoScalingGroupName"]
    assert {i["LaunchTemplate"]["LaunchTemplateId"] for i in after["Instances"]} == {old_id}


def test_removed_resources_are_deleted_in_the_cleanup_dependents_first(clients) -> None:
    deploy(clients, pool())
    clients["cloudformation"].update_stack(StackName="pool", TemplateBody=f"Resources:\n{NETWORK}")
    assert update_events(clients) == [
        ("pool", "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"),
        ("Group", "DELETE_IN_PROGRESS"),
        ("Group", "DELETE_COMPLETE"),
        ("LaunchTemplate", "DELETE_IN_PROGRESS"),
        ("LaunchTemplate", "DELETE_COMPLETE"),
        ("pool", "UPDATE_COMPLETE"),
    ]
    assert clients["autoscaling"].describe_auto_scaling_groups()["AutoScalingGroups"] == []
    assert clients["ec2"].describe_launch_templates()["LaunchTemplates"] == []


def test_a_group_that_fails_to_update_is_rolled_back_in_place(clients) -> None:
    before = deploy(clients, pool())
    broken = pool().replace("LaunchTemplateId: !Ref LaunchTemplate", "LaunchTemplateName: missing")
    clients["cloudformation"].update_stack(StackName="pool", TemplateBody=broken)
    stack = clients["cloudformation"].describe_stacks(StackName="pool")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    failed = [
        e
        for e in clients["cloudformation"].describe_stack_events(StackName="pool")["StackEvents"]
        if e["ResourceStatus"] == "UPDATE_FAILED"
    ]
    assert [(e["LogicalResourceId"], "missing" in e["ResourceStatusReason"]) for e in failed] == [("Group", True)]
    after = clients["autoscaling"].describe_auto_scaling_groups()["AutoScalingGroups"][0]
    assert after["LaunchTemplate"] == before["LaunchTemplate"]
    assert instances(after) == instances(before)


def test_a_condition_that_turns_false_removes_its_resource(clients) -> None:
    body = """\
Parameters:
  WithQueue: {Type: String}
Conditions:
  Queue: !Equals [!Ref WithQueue, "yes"]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Condition: Queue
    Properties: {QueueName: conditional}
  Other:
    Type: AWS::SQS::Queue
"""
    cfn, sqs = clients["cloudformation"], SESSION.client("sqs")
    cfn.create_stack(
        StackName="q", TemplateBody=body, Parameters=[{"ParameterKey": "WithQueue", "ParameterValue": "yes"}]
    )
    assert len(sqs.list_queues()["QueueUrls"]) == 2
    cfn.update_stack(
        StackName="q", TemplateBody=body, Parameters=[{"ParameterKey": "WithQueue", "ParameterValue": "no"}]
    )
    [remaining] = sqs.list_queues()["QueueUrls"]
    assert "-Other-" in remaining


def test_a_change_set_still_creates_a_stack(clients) -> None:
    cfn = clients["cloudformation"]
    cfn.create_change_set(StackName="pool", ChangeSetName="create", ChangeSetType="CREATE", TemplateBody=pool())
    cfn.execute_change_set(StackName="pool", ChangeSetName="create")
    group = clients["autoscaling"].describe_auto_scaling_groups()["AutoScalingGroups"][0]
    assert (len(group["Instances"]), group["LaunchTemplate"]["Version"]) == (2, "1")
    assert ("Group", "CREATE_COMPLETE") in [
        (e["LogicalResourceId"], e["ResourceStatus"])
        for e in cfn.describe_stack_events(StackName="pool")["StackEvents"]
    ]
