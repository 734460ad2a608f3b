"""A node pool of one auto scaling group per zone (a test profile modelled on Zalando's worker-splitaz) on moto with
the sandbox's patches: the inventory reads every group of the pool's stack, as CLM gets every group of a pool
(pkg/updatestrategy/aws_asg.go getNodePoolASGs), and judges each instance against its own group; a group its tags
give to another cluster or pool is refused, a group outside the stack is not the pool's; `clm plan` lists each group;
the roll steps suspend, scale and resume each group."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from clm.cli.main import cli
from clm.config.local import LocalSource
from clm.model import Cluster
from clm.registry.clusters_yaml import dump_clusters
from clm.render.renderer import RenderedCluster, Renderer
from clm.stacks.deploy import check, start
from clm.stacks.errors import NodePoolInventoryError
from clm.stacks.inventory import node_pool_inventory
from clm.stacks.spec import StackSpec, cluster_stack_spec, node_pool_stack_spec
from tests.unit.test_stacks_inventory import LATEST_VERSION, pool_spec
from tests.unit.test_stacks_support import EXAMPLES, Clients, clients, example_cluster, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

SPLIT_PROFILE = Path(__file__).parents[1] / "fixtures" / "splitaz" / "node-pools" / "worker-splitaz"
KUBE1 = "aws:123456789012:eu-central-1:kube-1"
SPLIT_STACK = "nodepool-split-aws-123456789012-eu-central-1-kube-1"


def split_config(root: Path) -> Path:
    """examples/config with the split test profile added as cluster/node-pools/worker-splitaz."""
    shutil.copytree(EXAMPLES / "config", root / "config")
    shutil.copytree(SPLIT_PROFILE, root / "config" / "cluster" / "node-pools" / "worker-splitaz")
    return root / "config"


def split_cluster() -> Cluster:
    """kube-1 with one pool `split` of the split profile: 3 nodes, one per zone of the cluster's three."""
    cluster = example_cluster("kube-1")
    pool = dataclasses.replace(cluster.node_pools[0], name="split", profile="worker-splitaz", min_size=3, max_size=6)
    return dataclasses.replace(cluster, node_pools=[pool])


def render(config: Path, cluster: Cluster, **items: str) -> RenderedCluster:
    cluster = dataclasses.replace(cluster, config_items={**cluster.config_items, **items})
    return Renderer(LocalSource(config).fetch()).render(cluster)


def deploy(clients: Clients, spec: StackSpec) -> None:
    start(clients["cloudformation"], clients["s3"], spec)
    assert check(clients["cloudformation"], spec.name).state == "complete"


def inventory(clients: Clients, stack: str = SPLIT_STACK, cluster_id: str = KUBE1, pool: str = "split"):
    return node_pool_inventory(
        clients["cloudformation"],
        clients["autoscaling"],
        clients["ec2"],
        stack,
        cluster_id=cluster_id,
        name=cluster_id,
        pool=pool,
    )


@pytest.fixture
def split(clients: Clients, tmp_path: Path) -> Path:
    """The split pool of kube-1 deployed (its cluster stack first); the config it was rendered from."""
    config = split_config(tmp_path)
    rendered = render(config, split_cluster())
    deploy(clients, cluster_stack_spec(rendered))
    deploy(clients, node_pool_stack_spec(rendered, "split"))
    return config


def test_every_group_of_the_split_pool_with_its_zone_sizes_and_instances(clients: Clients, split: Path) -> None:
    found = inventory(clients)
    assert [group.zones for group in found.groups] == [["eu-central-1a"], ["eu-central-1b"], ["eu-central-1c"]]
    assert [(g.desired, g.min, g.max) for g in found.groups] == [(1, 1, 2)] * 3
    assert (found.desired, found.min, found.max) == (3, 3, 6)  # the pool's, as CLM sums them
    assert found.asg_name == ", ".join(found.group_names)
    by_group = {i.group: i.az for i in found.instances}
    assert by_group == {g.name: g.zones[0] for g in found.groups}  # one instance per group, in the group's zone
    assert found.outdated == []


def test_a_new_ami_makes_every_instance_of_every_group_outdated(clients: Clients, split: Path) -> None:
    before = inventory(clients)
    update = node_pool_stack_spec(render(split, split_cluster(), worker_ami="ami-0123456789abcdef0"), "split")
    assert start(clients["cloudformation"], clients["s3"], update).action == "update_started"
    after = inventory(clients)
    assert after.group_names == before.group_names
    assert sorted(i.id for i in after.outdated) == sorted(i.id for i in before.instances)
    assert [g.launch_template_version for g in after.groups] == ["2"] * 3


# A second group beside the pool's own (tests.unit.test_stacks_inventory's pool stack), tagged `{key}={value}`.
THEIRS = """
      Tags: [{{Key: kubernetes.io/cluster/c1, Value: owned, PropagateAtLaunch: true}}]
  Theirs:
    Type: AWS::AutoScaling::AutoScalingGroup
    Properties:
      MinSize: "1"
      MaxSize: "2"
      VPCZoneIdentifier: [!Ref Subnet]
{version}
      Tags: [{{Key: {key}, Value: {value}, PropagateAtLaunch: true}}]"""


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("NodePool", "other", "tag NodePool=other (node pool pool expected)"),
        ("kubernetes.io/node-pool", "other", "tag kubernetes.io/node-pool=other (node pool pool expected)"),
        ("kubernetes.io/cluster/c2", "owned", "tag kubernetes.io/cluster/c2 (another cluster's)"),
        ("kubernetes.io/cluster/c1", "shared", "tag kubernetes.io/cluster/c1=shared (not owned)"),
    ],
)
def test_a_pool_stack_declaring_a_group_tagged_for_another_pool_or_cluster_is_refused(
    clients: Clients, key: str, value: str, why: str
) -> None:
    """The attack of a config writer: the pool's stack creates a group that names another pool or cluster. Refused
    with the cluster, stack, group and tag named, before any change to any group."""
    theirs = THEIRS.format(version=LATEST_VERSION, key=key, value=value)
    deploy(clients, pool_spec(LATEST_VERSION + theirs, ImageId="ami-00000001"))
    with pytest.raises(NodePoolInventoryError) as refused:
        inventory(clients, "pool", "c1", "pool")
    message = str(refused.value)
    assert message.startswith("cluster c1: stack pool: auto scaling group pool-Theirs-") and why in message
    assert "tagged for another owner" in message and "CLM does not touch it" in message


def test_a_group_tagged_for_the_pool_outside_its_stack_is_not_the_pools(clients: Clients, split: Path) -> None:
    """CLM finds a pool's groups by tag; here by its stack: a group anyone tagged for the pool is not rolled."""
    found = inventory(clients)
    subnet = clients["ec2"].describe_subnets()["Subnets"][0]["SubnetId"]
    clients["autoscaling"].create_auto_scaling_group(
        AutoScalingGroupName="intruder",
        MinSize=1,
        MaxSize=1,
        LaunchTemplate={"LaunchTemplateName": "kube-1-split", "Version": "1"},
        VPCZoneIdentifier=subnet,
        Tags=[
            {"Key": f"kubernetes.io/cluster/{KUBE1}", "Value": "owned", "PropagateAtLaunch": True},
            {"Key": "NodePool", "Value": "split", "PropagateAtLaunch": True},
            {"Key": "kubernetes.io/node-pool", "Value": "split", "PropagateAtLaunch": True},
        ],
    )
    again = inventory(clients)
    assert again.group_names == found.group_names and "intruder" not in again.asg_name
    assert sorted(i.id for i in again.instances) == sorted(i.id for i in found.instances)


def test_clm_plan_lists_each_group_of_the_split_pool_and_every_instance_to_replace(
    clients: Clients, split: Path, tmp_path: Path
) -> None:
    defaults = split / "cluster" / "config-defaults.yaml"
    defaults.write_text(defaults.read_text().replace("ami-0c1a7f89451184c8b", "ami-0123456789abcdef0"))
    registry = tmp_path / "clusters.yaml"
    registry.write_text(dump_clusters([split_cluster()], with_status=False))
    args = ["plan", KUBE1, "--config", str(split), "--registry-file", str(registry)]
    data = json.loads(_clm("-o", "json", *args).stdout)
    [pool] = data["node_pools"]
    assert [(g["zones"], g["desired"], g["launch_template_version"]) for g in pool["groups"]] == [
        (["eu-central-1a"], 1, "1"),
        (["eu-central-1b"], 1, "1"),
        (["eu-central-1c"], 1, "1"),
    ]
    assert (pool["desired"], pool["outdated"]) == (3, 3)
    assert sorted((i["az"], i["group"]) for i in pool["instances"]) == [
        (g["zones"][0], g["name"]) for g in pool["groups"]
    ]
    text = _clm(*args).stdout
    assert "node pool split, 3 groups: 3 instances, 3 to replace" in text
    for group in pool["groups"]:
        assert f"group {group['name']} in {group['zones'][0]}: desired 1 (min 1, max 2)" in text


def _clm(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    assert result.exit_code == 0, (result.output, result.stderr, result.exception)
    return result


def test_the_roll_steps_act_on_every_group_of_the_pool_and_refuse_a_group_that_is_not_its(
    clients: Clients, split: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Suspend, scale and resume over the pool's groups, one call per group (as CLM, aws_asg.go), each surged group
    with its own baseline; a scale naming any other group changes nothing."""
    from clm.rolling.planner import PoolBlocked
    from clm.workflow import roll_steps

    autoscaling = clients["autoscaling"]
    event = {"cluster_id": KUBE1, "rendering": "r", "node_pool": "split", "pool": {"node_pool": "split"}}
    monkeypatch.setattr(roll_steps, "rendering", lambda key: SimpleNamespace(cluster=SimpleNamespace(name=KUBE1)))
    names = inventory(clients).group_names

    def baselines() -> dict[str, str]:
        tags = autoscaling.describe_tags(Filters=[{"Name": "key", "Values": [roll_steps.BASELINE_TAG]}])["Tags"]
        return {tag["ResourceId"]: tag["Value"] for tag in tags}

    def groups() -> list[dict[str, Any]]:
        described = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=names)["AutoScalingGroups"]
        return sorted(described, key=lambda g: names.index(g["AutoScalingGroupName"]))

    assert roll_steps.suspend(event) == {"asgs": names, "suspended": roll_steps.ROLL_SUSPENDED}
    assert [sorted(p["ProcessName"] for p in g["SuspendedProcesses"]) for g in groups()] == [
        ["AZRebalance", "ReplaceUnhealthy"]
    ] * 3
    surge = {"action": "scale", "sizes": [{"group": names[1], "desired": 2, "baseline": 1}]}
    assert roll_steps.scale({**event, "decision": surge}) == {"groups": [{"asg": names[1], "DesiredCapacity": 2}]}
    assert [g["DesiredCapacity"] for g in groups()] == [1, 2, 1]
    assert baselines() == {names[1]: "1"}
    stranger = {"action": "scale", "sizes": [{"group": names[0], "desired": 2}, {"group": "intruder", "desired": 9}]}
    with pytest.raises(PoolBlocked, match="intruder is not a group of the pool"):
        roll_steps.scale({**event, "decision": stranger})
    assert [g["DesiredCapacity"] for g in groups()] == [1, 2, 1]  # nothing changed, not even the pool's own group
    assert roll_steps.resume(event) == {"asgs": names}
    assert [g["SuspendedProcesses"] for g in groups()] == [[]] * 3
    assert baselines() == {}
