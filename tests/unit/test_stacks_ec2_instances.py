"""A pool's inventory describes each instance in full once while it runs (clm.stacks.ec2_instances), on moto's EC2
and Auto Scaling: later inventories describe only new instances, and ask which of the known ones left the running
states."""

from __future__ import annotations

from typing import Any

from clm.stacks.inventory import node_pool_inventory
from tests.unit.test_stacks_inventory import deploy, inventory, pool_spec
from tests.unit.test_stacks_support import clients, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

GROUP = "      LaunchTemplate: {LaunchTemplateId: !Ref LaunchTemplate, Version: '1'}"


def recorder(ec2: Any) -> list[set[str]]:
    """The instance ids of each DescribeInstances `ec2` sends in any state (in full, not only those that left)."""
    in_full: list[set[str]] = []

    def record(params: dict[str, Any], **_: object) -> None:
        filters = {f["Name"]: f["Values"] for f in params.get("Filters", [])}
        if "instance-state-name" not in filters:
            in_full.append(set(filters.get("instance-id", ["every instance"])))

    ec2.meta.events.register("provide-client-params.ec2.DescribeInstances", record)
    return in_full


def test_a_later_inventory_describes_only_new_instances_in_full_and_reads_the_same(clients):
    deploy(clients, pool_spec(GROUP, ImageId="ami-00000001"))
    in_full = recorder(clients["ec2"])
    first = inventory(clients)
    known = {i.id for i in first.instances}
    assert len(known) == 2 and in_full == [known]
    assert inventory(clients).instances == first.instances  # the same view from what was kept
    assert in_full == [known]

    (group,) = first.group_names
    clients["autoscaling"].set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=3)
    later = inventory(clients)
    (new,) = {i.id for i in later.instances} - known
    assert in_full == [known, {new}]
    assert [i for i in later.instances if i.id in known] == first.instances


def test_an_instance_that_stopped_running_is_described_again_until_it_runs(clients):
    """Its launch time changes when it starts again (EC2's LaunchTime is the last start): never kept across that."""
    deploy(clients, pool_spec(GROUP, ImageId="ami-00000001"))
    in_full = recorder(clients["ec2"])
    stopped, running = sorted(i.id for i in inventory(clients).instances)
    clients["ec2"].stop_instances(InstanceIds=[stopped])
    assert {i.id for i in inventory(clients).instances} == {stopped, running}  # the stopped one's description
    clients["ec2"].start_instances(InstanceIds=[stopped])
    inventory(clients)
    inventory(clients)
    assert in_full == [{stopped, running}, {stopped}]


def test_another_client_keeps_its_own_descriptions(clients, stacks_aws):
    """A client is one account, region and principal: another one (a target's session) never reads what the first
    one kept, even for a group of the same name."""
    deploy(clients, pool_spec(GROUP, ImageId="ami-00000001"))
    inventory(clients)
    other = stacks_aws.client("ec2")
    in_full = recorder(other)
    found = node_pool_inventory(
        clients["cloudformation"], clients["autoscaling"], other, "pool", cluster_id="c1", name="c1", pool="pool"
    )
    assert in_full == [{i.id for i in found.instances}]
