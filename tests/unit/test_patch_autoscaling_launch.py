"""Auto scaling groups on patched moto through boto3: the version they name, spot instances, mixed instances
policies, balanced zones, and instance records that tell old from new instances."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from clm_sandbox.patches import autoscaling_launch
from tests.conftest import REGION

SESSION = boto3.Session(region_name=REGION)  # shared by the tests, so that service models load once
ZONES = ("eu-central-1a", "eu-central-1b", "eu-central-1c")


@pytest.fixture
def clients(aws: boto3.Session) -> dict[str, Any]:
    autoscaling_launch.install()
    return {name: SESSION.client(name) for name in ("autoscaling", "ec2")}


def subnets(ec2: Any) -> list[str]:
    vpc = ec2.create_vpc(CidrBlock="10.2.0.0/16")["Vpc"]["VpcId"]
    return [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.2.{i}.0/24", AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for i, zone in enumerate(ZONES)
    ]


def template(ec2: Any, *versions: dict[str, Any]) -> str:
    """A launch template with one version per data (the default stays 1); its id."""
    created = ec2.create_launch_template(LaunchTemplateName="lt", LaunchTemplateData=versions[0])
    template_id = created["LaunchTemplate"]["LaunchTemplateId"]
    for data in versions[1:]:
        ec2.create_launch_template_version(LaunchTemplateId=template_id, LaunchTemplateData=data)
    return template_id


def group(clients: dict[str, Any], size: int, **spec: Any) -> dict[str, Any]:
    clients["autoscaling"].create_auto_scaling_group(
        AutoScalingGroupName="g", MinSize=size, MaxSize=10, VPCZoneIdentifier=",".join(subnets(clients["ec2"])), **spec
    )
    return describe(clients)


def describe(clients: dict[str, Any]) -> dict[str, Any]:
    return clients["autoscaling"].describe_auto_scaling_groups(AutoScalingGroupNames=["g"])["AutoScalingGroups"][0]


def ec2_instances(clients: dict[str, Any], group_: dict[str, Any]) -> list[dict[str, Any]]:
    ids = [i["InstanceId"] for i in group_["Instances"]]
    reservations = clients["ec2"].describe_instances(InstanceIds=ids)["Reservations"]
    found = {i["InstanceId"]: i for r in reservations for i in r["Instances"]}
    return [found[i] for i in ids]


def version_tag(instance: dict[str, Any]) -> str:
    return {t["Key"]: t["Value"] for t in instance["Tags"]}["aws:ec2launchtemplate:version"]


V1 = {"ImageId": "ami-00000001", "InstanceType": "m5.large"}
V2 = {"ImageId": "ami-00000002", "InstanceType": "m5.xlarge"}


def test_a_group_launches_the_version_it_names_and_its_records_say_which(clients) -> None:
    template_id = template(clients["ec2"], V1, V2)  # default version 1, latest 2
    launched = group(clients, 2, LaunchTemplate={"LaunchTemplateId": template_id, "Version": "$Latest"})
    assert {i["LaunchTemplate"]["Version"] for i in launched["Instances"]} == {"2"}
    assert {(i["ImageId"], i["InstanceType"], version_tag(i)) for i in ec2_instances(clients, launched)} == {
        ("ami-00000002", "m5.xlarge", "2")
    }

    clients["autoscaling"].update_auto_scaling_group(
        AutoScalingGroupName="g", LaunchTemplate={"LaunchTemplateId": template_id, "Version": "1"}
    )
    old = launched["Instances"][0]["InstanceId"]
    clients["autoscaling"].terminate_instance_in_auto_scaling_group(
        InstanceId=old, ShouldDecrementDesiredCapacity=False
    )
    after = describe(clients)
    assert sorted(i["LaunchTemplate"]["Version"] for i in after["Instances"]) == ["1", "2"]
    replacement = next(
        i for i in after["Instances"] if i["InstanceId"] not in {j["InstanceId"] for j in launched["Instances"]}
    )
    assert replacement["LaunchTemplate"] == {
        "LaunchTemplateId": template_id,
        "LaunchTemplateName": "lt",
        "Version": "1",
    }
    records = clients["autoscaling"].describe_auto_scaling_instances()["AutoScalingInstances"]
    assert {r["InstanceId"]: r["LaunchTemplate"]["Version"] for r in records} == {
        i["InstanceId"]: i["LaunchTemplate"]["Version"] for i in after["Instances"]
    }


def test_instances_spread_over_the_zones_of_the_groups_subnets(clients) -> None:
    template_id = template(clients["ec2"], V1)
    launched = group(clients, 4, LaunchTemplate={"LaunchTemplateId": template_id})
    zones = sorted(i["AvailabilityZone"] for i in launched["Instances"])
    assert zones == ["eu-central-1a", "eu-central-1a", "eu-central-1b", "eu-central-1c"]
    for instance in ec2_instances(clients, launched):
        subnet = clients["ec2"].describe_subnets(SubnetIds=[instance["SubnetId"]])["Subnets"][0]
        assert subnet["AvailabilityZone"] == instance["Placement"]["AvailabilityZone"]


def test_a_spot_launch_template_launches_spot_instances(clients) -> None:
    spot = {**V1, "InstanceMarketOptions": {"MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time"}}}
    launched = group(clients, 2, LaunchTemplate={"LaunchTemplateId": template(clients["ec2"], spot)})
    assert [i.get("InstanceLifecycle") for i in ec2_instances(clients, launched)] == ["spot", "spot"]


@pytest.mark.parametrize(
    ("base", "percent", "on_demand"),
    [(0, 0, 0), (0, 100, 4), (2, 50, 3)],
)
def test_a_mixed_instances_policy_launches_its_share_of_spot_and_its_first_override(
    clients, base: int, percent: int, on_demand: int
) -> None:
    policy = {
        "LaunchTemplate": {
            "LaunchTemplateSpecification": {"LaunchTemplateId": template(clients["ec2"], V1), "Version": "1"},
            "Overrides": [{"InstanceType": "c5.xlarge"}, {"InstanceType": "c5a.xlarge"}],
        },
        "InstancesDistribution": {"OnDemandBaseCapacity": base, "OnDemandPercentageAboveBaseCapacity": percent},
    }
    launched = group(clients, 4, MixedInstancesPolicy=policy)
    described = ec2_instances(clients, launched)
    assert {i["InstanceType"] for i in described} == {"c5.xlarge"}
    assert sum(1 for i in described if i.get("InstanceLifecycle") != "spot") == on_demand


def test_on_demand_share_is_rounded_up_and_counts_running_instances() -> None:
    # moto's own instance count for a mixed policy drops fractions (desired 4, base 1, 34 % launches 3 instances),
    # so the rounding is shown on a group as `markets` sees it.
    policy = {"InstancesDistribution": {"OnDemandBaseCapacity": 1, "OnDemandPercentageAboveBaseCapacity": 34}}
    running = [SimpleNamespace(instance=SimpleNamespace(lifecycle=None))]  # one on-demand instance
    fake = SimpleNamespace(mixed_instances_policy=policy, active_instances=lambda: running)
    assert autoscaling_launch.markets(fake, None, 3) == [False, False, True]  # 1 + ceil(3 x 0.34) = 3 on-demand


def test_installing_again_changes_nothing() -> None:
    from moto.autoscaling.models import FakeAutoScalingGroup, InstanceState

    autoscaling_launch.install()
    before = (FakeAutoScalingGroup.replace_autoscaling_group_instances, vars(InstanceState)["launch_template"])
    autoscaling_launch.install()
    assert (FakeAutoScalingGroup.replace_autoscaling_group_instances, vars(InstanceState)["launch_template"]) == before


def test_groups_with_a_launch_configuration_launch_as_before(clients) -> None:
    clients["autoscaling"].create_launch_configuration(
        LaunchConfigurationName="lc", ImageId="ami-00000001", InstanceType="m5.large"
    )
    launched = group(clients, 2, LaunchConfigurationName="lc")
    assert [i.get("LaunchTemplate") for i in launched["Instances"]] == [None, None]
    assert [i["LaunchConfigurationName"] for i in launched["Instances"]] == ["lc", "lc"]
