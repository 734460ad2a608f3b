"""Node-pool inventory on moto's real Auto Scaling and EC2 state: sizes, launch template, outdated instances.

With the sandbox's patches, as in AWS: a stack update gives the launch template a new default version and
updates the group in place (its instances stay); a group launches the version it names (the EC2 tag
aws:ec2launchtemplate:version and the group's instance record say which), spot instances for a spot launch
template or a mixed instances policy's spot share, and a mixed instances policy's first override.
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
from tests.unit.test_stacks_support import Clients, clients, example_cluster, render, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

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
      LaunchTemplate: {LaunchTemplateId: !Ref LaunchTemplate, Version: !GetAtt LaunchTemplate.LatestVersionNumber}"""
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


KUBE2_BATCH = "nodepool-batch-aws-123456789012-eu-central-1-kube-2"
# The cluster and pool each stack is for (the example's groups are tagged with them); any other stack is c1's "pool".
OWNERS = {
    KUBE1_POOL: ("aws:123456789012:eu-central-1:kube-1", "default-worker"),
    KUBE2_BATCH: ("aws:123456789012:eu-central-1:kube-2", "batch"),
}


def inventory(clients, stack_name: str = "pool"):
    cluster_id, pool = OWNERS.get(stack_name, ("c1", "pool"))
    return node_pool_inventory(
        clients["cloudformation"],
        clients["autoscaling"],
        clients["ec2"],
        stack_name,
        cluster_id=cluster_id,
        name=cluster_id,
        pool=pool,
    )


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
    cfn, s3 = clients["cloudformation"], clients["s3"]
    cluster = example_cluster("kube-1")
    deploy(clients, cluster_stack_spec(render(cluster)))
    deploy(clients, node_pool_stack_spec(render(cluster), "default-worker"))
    before = inventory(clients, KUBE1_POOL)
    assert (before.launch_template_version, len(before.instances), before.outdated) == ("1", 3, [])

    new_ami = node_pool_stack_spec(render(cluster, worker_ami="ami-0123456789abcdef0"), "default-worker")
    assert start(cfn, s3, new_ami).action == "update_started"
    after = inventory(clients, KUBE1_POOL)
    assert (after.asg_name, after.launch_template_version) == (before.asg_name, "2")
    assert [i.id for i in after.outdated] == [i.id for i in before.instances]  # the same instances, all outdated
    assert {tuple(i.outdated_reasons) for i in after.instances} == {("launch template version 1, the group uses 2",)}

    old = after.instances[0].id
    clients["autoscaling"].terminate_instance_in_auto_scaling_group(
        InstanceId=old, ShouldDecrementDesiredCapacity=False
    )
    replaced = inventory(clients, KUBE1_POOL)
    [replacement] = [i for i in replaced.instances if i.id not in {j.id for j in before.instances}]
    assert (replacement.launch_template_version, replacement.outdated) == ("2", False)
    assert len(replaced.outdated) == 2
    described = clients["ec2"].describe_instances(InstanceIds=[replacement.id])["Reservations"][0]["Instances"][0]
    assert described["ImageId"] == "ami-0123456789abcdef0"

    pool = dataclasses.replace(cluster.node_pool("default-worker"), instance_types=["m5.xlarge"])
    bigger = render(dataclasses.replace(cluster, node_pools=[pool]), worker_ami="ami-0123456789abcdef0")
    start(cfn, s3, node_pool_stack_spec(bigger, "default-worker"))
    assert {tuple(i.outdated_reasons) for i in inventory(clients, KUBE1_POOL).instances} == {
        ("launch template version 1, the group uses 3", "instance type m5.large, the group uses m5.xlarge"),
        ("launch template version 2, the group uses 3", "instance type m5.large, the group uses m5.xlarge"),
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


def test_spot_pool_launches_spot_instances_that_are_up_to_date(stacks_aws):
    clients = Clients(stacks_aws, "eu-central-1")
    cluster = example_cluster("kube-2")
    batch = dataclasses.replace(cluster.node_pool("batch"), min_size=2)
    rendered = render(dataclasses.replace(cluster, node_pools=[batch]))
    deploy(clients, cluster_stack_spec(rendered))
    deploy(clients, node_pool_stack_spec(rendered, "batch"))
    found = inventory(clients, KUBE2_BATCH)
    assert (found.spot, found.instance_types) == (True, ["c5.xlarge"])
    reservations = clients["ec2"].describe_instances(InstanceIds=[i.id for i in found.instances])["Reservations"]
    assert [i["InstanceLifecycle"] for r in reservations for i in r["Instances"]] == ["spot", "spot"]
    assert [(i.spot, i.outdated) for i in found.instances] == [(True, False)] * 2


@pytest.mark.parametrize(("on_demand_percent", "spot"), [(100, False), (50, None), (0, True)])
def test_mixed_instances_policy_types_and_spot(clients, on_demand_percent, spot):
    deploy(clients, pool_spec(MIXED % on_demand_percent, ImageId="ami-00000001"))
    found = inventory(clients)
    assert (found.instance_types, found.spot, found.launch_template_version) == (["m5.large", "m5a.large"], spot, "1")
    assert (
        sorted(i.spot for i in found.instances)
        == {False: [False, False], None: [False, True], True: [True, True]}[spot]
    )
    assert [i.outdated_reasons for i in found.instances] == [[], []]


def test_stack_without_a_group_is_an_error_naming_it(clients):
    body = "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n"
    deploy(clients, StackSpec(cluster_id="c1", name="queues", body=body, template={}, tags={}, parameters={}))
    with pytest.raises(
        NodePoolInventoryError,
        match="cluster c1: stack queues: a node-pool stack needs an AWS::AutoScaling::AutoScalingGroup, it has none",
    ):
        inventory(clients, "queues")
    with pytest.raises(NodePoolInventoryError, match="stack missing: Stack with id missing does not exist"):
        inventory(clients, "missing")
