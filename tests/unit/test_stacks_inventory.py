"""Node-pool inventory on moto's real Auto Scaling and EC2 state: sizes, launch template, outdated instances.

moto 5.2.5 facts these tests rely on: an instance launched by a group carries the EC2 tags
aws:ec2launchtemplate:id/version with the template's *default* version at launch; the group's instance
records always show the template's current default version (so they cannot tell old from new instances);
groups never launch spot instances (not for a spot launch template, not for a mixed instances policy),
and a mixed instances policy launches the launch template's instance type, not an override.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from clm.render.cfn_yaml import load_template
from clm.stacks.deploy import check, start
from clm.stacks.errors import NodePoolInventoryError
from clm.stacks.inventory import node_pool_inventory
from clm.stacks.spec import StackSpec, cluster_stack_spec, explicit_parameters, node_pool_stack_spec
from tests.unit.test_stacks_support import Clients, clients, example_cluster, render

__all__ = ["clients"]  # fixture

KUBE1_POOL = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"
POOL_TEMPLATE = """\
Parameters:
  ImageId: {{Type: String}}
  InstanceType: {{Type: String, Default: m5.large}}
Resources:
  Vpc:
    Type: AWS::EC2::VPC
    Properties: {{CidrBlock: 10.1.0.0/16}}
  Subnet:
    Type: AWS::EC2::Subnet
    Properties: {{VpcId: !Ref Vpc, CidrBlock: 10.1.0.0/24, AvailabilityZone: eu-central-1b}}
  LaunchTemplate:
    Type: AWS::EC2::LaunchTemplate
    Properties:
      LaunchTemplateName: pool
      LaunchTemplateData: {{ImageId: !Ref ImageId, InstanceType: !Ref InstanceType}}
  AutoScalingGroup:
    Type: AWS::AutoScaling::AutoScalingGroup
    Properties:
      MinSize: "2"
      MaxSize: "4"
      VPCZoneIdentifier: [!Ref Subnet]
{group}
"""
LATEST_VERSION = """\
      LaunchTemplate: {LaunchTemplateId: !Ref LaunchTemplate, Version: $Latest}"""
MIXED = """\
      MixedInstancesPolicy:
        LaunchTemplate:
          LaunchTemplateSpecification: {LaunchTemplateId: !Ref LaunchTemplate, Version: "1"}
          Overrides: [{InstanceType: m5.large}, {InstanceType: m5a.large}]
        InstancesDistribution: {OnDemandBaseCapacity: 0, OnDemandPercentageAboveBaseCapacity: %d}"""


def pool_spec(group: str, **parameters: str) -> StackSpec:
    body = POOL_TEMPLATE.format(group=group)
    return StackSpec(
        cluster_id="c1",
        name="pool",
        body=body,
        template={},
        tags={},
        parameters=explicit_parameters(load_template(body), parameters, "c1", "pool"),
    )


def deploy(clients, spec: StackSpec) -> None:
    start(clients["cloudformation"], clients["s3"], spec)
    assert check(clients["cloudformation"], spec.name).state == "complete"


def inventory(clients, stack_name: str = "pool"):
    return node_pool_inventory(clients["cloudformation"], clients["autoscaling"], clients["ec2"], stack_name)


def test_example_node_pool_after_create(clients):
    rendered = render(example_cluster("kube-1"))
    deploy(clients, cluster_stack_spec(rendered))
    deploy(clients, node_pool_stack_spec(rendered, "default-worker"))
    found = inventory(clients, KUBE1_POOL)
    template = clients["ec2"].describe_launch_templates(LaunchTemplateNames=["kube-1-default-worker"])
    assert (found.launch_template_id, found.launch_template_name, found.launch_template_version) == (
        template["LaunchTemplates"][0]["LaunchTemplateId"],
        "kube-1-default-worker",
        "1",
    )
    assert (found.desired, found.min, found.max, found.instance_types, found.spot) == (3, 3, 6, ["m5.large"], False)
    assert found.asg_name.startswith(f"{KUBE1_POOL}-AutoScalingGroup-")
    assert len(found.instances) == 3
    for instance in found.instances:
        assert instance.az.startswith("eu-central-1")
        assert (instance.lifecycle_state, instance.health, instance.instance_type, instance.spot) == (
            "InService",
            "Healthy",
            "m5.large",
            False,
        )
        assert (instance.launch_template_version, instance.outdated, instance.outdated_reasons) == ("1", False, [])
    assert found.outdated == []
    assert json.loads(json.dumps(found.to_dict()))["instances"][0]["id"] == found.instances[0].id


def test_new_ami_gives_a_new_version_and_every_existing_instance_is_outdated(clients):
    # Not the example template: its group follows `!GetAtt LaunchTemplate.LatestVersionNumber`, and moto updates
    # only resources whose own template text or parameters changed, so its group would stay at version 1.
    # A group on `$Latest` shows the same outcome on moto as on AWS.
    deploy(clients, pool_spec(LATEST_VERSION, ImageId="ami-00000001"))
    before = inventory(clients)
    assert (before.launch_template_version, len(before.instances), before.outdated) == ("1", 2, [])

    result = start(clients["cloudformation"], clients["s3"], pool_spec(LATEST_VERSION, ImageId="ami-00000002"))
    assert result.action == "update_started"
    after = inventory(clients)
    assert after.launch_template_version == "2"  # $Latest resolved
    assert [i.id for i in after.outdated] == [i.id for i in before.instances]
    assert {tuple(i.outdated_reasons) for i in after.instances} == {("launch template version 1, the group uses 2",)}

    start(
        clients["cloudformation"],
        clients["s3"],
        pool_spec(LATEST_VERSION, ImageId="ami-00000002", InstanceType="m5.xlarge"),
    )
    assert {tuple(i.outdated_reasons) for i in inventory(clients).instances} == {
        ("launch template version 1, the group uses 3", "instance type m5.large, the group uses m5.xlarge")
    }


def test_instances_of_another_launch_template_are_outdated(clients):
    deploy(clients, pool_spec(LATEST_VERSION, ImageId="ami-00000001"))
    found = inventory(clients)
    other = clients["ec2"].create_launch_template(
        LaunchTemplateName="other", LaunchTemplateData={"ImageId": "ami-1", "InstanceType": "m5.large"}
    )
    other_id = other["LaunchTemplate"]["LaunchTemplateId"]
    launched = clients["ec2"].run_instances(
        MinCount=1,
        MaxCount=1,
        LaunchTemplate={"LaunchTemplateId": other_id},
        SubnetId=clients["ec2"].describe_subnets()["Subnets"][-1]["SubnetId"],
    )
    instance_id = launched["Instances"][0]["InstanceId"]
    clients["autoscaling"].attach_instances(InstanceIds=[instance_id], AutoScalingGroupName=found.asg_name)
    attached = next(i for i in inventory(clients).instances if i.id == instance_id)
    assert attached.outdated_reasons == [
        f"launch template {other_id}, the group uses pool ({found.launch_template_id})"
    ]


def test_spot_pool_on_moto_reports_its_on_demand_instances_outdated(aws):
    clients = Clients(aws, "eu-west-1")
    cluster = example_cluster("kube-2")
    batch = dataclasses.replace(cluster.node_pool("batch"), min_size=2)
    rendered = render(dataclasses.replace(cluster, node_pools=[batch]))
    deploy(clients, cluster_stack_spec(rendered))
    deploy(clients, node_pool_stack_spec(rendered, "batch"))
    found = inventory(clients, "nodepool-batch-aws-123456789012-eu-west-1-kube-2")
    assert (found.spot, found.instance_types) == (True, ["c5.xlarge"])
    # moto launches every group instance on demand, so the pool never converges in the sandbox without a patch.
    assert [i.outdated_reasons for i in found.instances] == [["on-demand instance, the group launches spot"]] * 2


@pytest.mark.parametrize(("on_demand_percent", "spot"), [(100, False), (50, None), (0, True)])
def test_mixed_instances_policy_types_and_spot(clients, on_demand_percent, spot):
    deploy(clients, pool_spec(MIXED % on_demand_percent, ImageId="ami-00000001"))
    found = inventory(clients)
    assert (found.instance_types, found.spot, found.launch_template_version) == (["m5.large", "m5a.large"], spot, "1")
    expected = [] if spot is not True else ["on-demand instance, the group launches spot"]
    assert [i.outdated_reasons for i in found.instances] == [expected] * 2


def test_stack_without_a_group_is_an_error_naming_it(clients):
    body = "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n"
    deploy(clients, StackSpec(cluster_id="c1", name="queues", body=body, template={}, tags={}, parameters={}))
    with pytest.raises(
        NodePoolInventoryError,
        match="stack queues: a node-pool stack needs exactly one AWS::AutoScaling::AutoScalingGroup, it has 0",
    ):
        inventory(clients, "queues")
    with pytest.raises(NodePoolInventoryError, match="stack missing: Stack with id missing does not exist"):
        inventory(clients, "missing")
