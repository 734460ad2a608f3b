"""A Karpenter pool's instances on moto's EC2 (clm.stacks.karpenter_pool): found by Karpenter's tags, judged as CLM's
InstanceConfigUpToDate judges them (pkg/updatestrategy/aws_ec2.go) plus NodeClaim drift, terminated only when they
carry the cluster's and the pool's tags."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from clm.render.manifests import Manifest
from clm.stacks import karpenter_pool
from clm.stacks.karpenter_pool import (
    InstanceConfig,
    KarpenterInstanceRefused,
    desired_config,
    disruption_budget,
    karpenter_pool_inventory,
    terminate_cluster_instances,
    terminate_pool_instance,
)

CLUSTER = "aws:123456789012:eu-central-1:kube-1"
OWNED = f"kubernetes.io/cluster/{CLUSTER}"
USER_DATA = "#cloud-config\nwrite_files: []\n"


def _manifest(body: dict[str, Any]) -> Manifest:
    return Manifest("cluster/node-pools/worker-karpenter/provisioners.yaml", 1, 1, body)


def _objects(pool: str = "kp", *, family: str = "Custom", terms: list[dict[str, str]] | None = None) -> list[Manifest]:
    node_class = {
        "kind": "EC2NodeClass",
        "metadata": {"name": f"{pool}-class"},
        "spec": {
            "amiFamily": family,
            "amiSelectorTerms": terms or [{"id": "ami-new-amd64"}, {"id": "ami-new-arm64"}],
            "tags": {"node.kubernetes.io/node-pool": pool, "team": "x"},
            "userData": USER_DATA,
        },
    }
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": f"{pool}-class"}
    nodepool = {"kind": "NodePool", "metadata": {"name": pool}, "spec": {"template": {"spec": {"nodeClassRef": ref}}}}
    return [_manifest(node_class), _manifest(nodepool)]


def _launch(ec2: Any, *, image: str = "ami-new-amd64", pool: str = "kp", cluster: str = CLUSTER, **extra: str) -> str:
    tags = {
        f"kubernetes.io/cluster/{cluster}": "owned",
        "karpenter.sh/nodepool": pool,
        "node.kubernetes.io/node-pool": pool,
        "team": "x",
        **extra,
    }
    return ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        UserData=USER_DATA,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
    )["Instances"][0]["InstanceId"]


@pytest.fixture
def ec2(aws: boto3.Session) -> Any:
    karpenter_pool._user_data.clear()  # a warm container's cache must not leak between tests
    return aws.client("ec2")


def test_the_class_the_nodepool_refers_to_is_what_instances_are_judged_against() -> None:
    config = desired_config(_objects(), "kp")
    assert config == InstanceConfig(
        "kp-class", USER_DATA, ("ami-new-amd64", "ami-new-arm64"), {"node.kubernetes.io/node-pool": "kp", "team": "x"}
    )
    assert desired_config(_objects(), "other") is None  # no NodePool of that name among the pool's objects
    assert desired_config(_objects()[1:], "kp") is None  # its class is not among them
    not_custom = desired_config(_objects(family="AL2023"), "kp")
    assert not_custom is not None and not_custom.user_data is None  # Karpenter merges its bootstrap in: not compared
    by_tags = desired_config(_objects(terms=[{"id": "ami-1"}, {"tags": {"team": "x"}}]), "kp")
    assert by_tags is not None and by_tags.image_ids == ()  # Karpenter resolves those itself (and reports drift)


def test_instances_are_outdated_by_image_tags_user_data_or_drift(ec2: Any) -> None:
    current = _launch(ec2)
    arm = _launch(ec2, image="ami-new-arm64")
    old_image = _launch(ec2, image="ami-old")
    other_team = _launch(ec2, team="y")
    drifted = _launch(ec2)
    _launch(ec2, pool="other")  # another pool's
    _launch(ec2, cluster="aws:123456789012:eu-central-1:kube-2")  # another cluster's
    desired = desired_config(_objects(), "kp")
    verdicts = {drifted: "NodeClaim kp-abcde drifted (NodePoolDrifted)"}

    inventory = karpenter_pool_inventory(ec2, CLUSTER, "kp", desired, verdicts)

    reasons = {i.id: i.outdated_reasons for i in inventory.instances}
    assert reasons == {
        current: [],
        arm: [],
        old_image: ["image ami-old, EC2NodeClass kp-class selects ami-new-amd64, ami-new-arm64"],
        other_team: ["tag team 'y', EC2NodeClass kp-class sets 'x'"],
        drifted: ["NodeClaim kp-abcde drifted (NodePoolDrifted)"],
    }
    assert (inventory.asg_name, inventory.desired, inventory.min, inventory.max) == ("", 5, 0, 5)
    assert {i.lifecycle_state for i in inventory.instances} == {"InService"}

    changed = InstanceConfig("kp-class", "#cloud-config\nnew\n", (), {})
    assert [i.outdated_reasons for i in karpenter_pool_inventory(ec2, CLUSTER, "kp", changed, {}).instances] == [
        ["user data differs from EC2NodeClass kp-class's"]
    ] * 5
    assert not any(i.outdated for i in karpenter_pool_inventory(ec2, CLUSTER, "kp", None, {}).instances)


def test_termination_checks_the_cluster_and_pool_tags_and_is_idempotent(ec2: Any) -> None:
    ours, foreign = _launch(ec2), _launch(ec2, pool="other")
    with pytest.raises(KarpenterInstanceRefused, match=f"instance {foreign} is not tagged .*karpenter.sh/nodepool=kp"):
        terminate_pool_instance(ec2, CLUSTER, "kp", foreign)
    assert terminate_pool_instance(ec2, CLUSTER, "kp", ours) in ("shutting-down", "terminated")
    assert terminate_pool_instance(ec2, CLUSTER, "kp", ours) == "already"
    assert terminate_pool_instance(ec2, CLUSTER, "kp", "i-0123456789abcdef0") == "already"  # unknown to EC2
    state = ec2.describe_instances(InstanceIds=[foreign])["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state == "running"


def test_decommission_terminates_every_karpenter_instance_of_the_cluster_and_nothing_else(ec2: Any) -> None:
    ours = {_launch(ec2), _launch(ec2, pool="other")}
    other_cluster = _launch(ec2, cluster="aws:123456789012:eu-central-1:kube-2")
    not_karpenter = ec2.run_instances(
        ImageId="ami-1",
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": OWNED, "Value": "owned"}]}],
    )["Instances"][0]["InstanceId"]
    assert set(terminate_cluster_instances(ec2, CLUSTER)) == ours
    assert terminate_cluster_instances(ec2, CLUSTER) == []  # none left running: done
    running = {
        i["InstanceId"]
        for r in ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["running"]}])[
            "Reservations"
        ]
        for i in r["Instances"]
    }
    assert running == {other_cluster, not_karpenter}


def test_an_eks_clusters_karpenter_instances_are_those_tagged_with_its_alias(ec2: Any) -> None:
    """CLM (pkg/updatestrategy/aws_ec2.go) filters `kubernetes.io/cluster/<Name()>`: a zalando-eks cluster's alias
    (api/cluster.go Name()), which callers pass as Cluster.name; instances tagged with its id are not its."""
    ours = _launch(ec2, cluster="team-a")
    by_id = _launch(ec2)
    assert terminate_cluster_instances(ec2, "team-a") == [ours]
    with pytest.raises(KarpenterInstanceRefused, match=r"kubernetes\.io/cluster/team-a=owned"):
        terminate_pool_instance(ec2, "team-a", "kp", by_id)


def test_the_nodepools_disruption_budgets_cap_how_many_nodes_go_at_once() -> None:
    def budget(budgets: list[dict[str, str]] | None, nodes: int) -> int | None:
        objects = _objects()
        if budgets is not None:
            objects[1].body["spec"]["disruption"] = {"budgets": budgets}
        return disruption_budget(objects, "kp", nodes)

    zalando = [{"nodes": "5%"}, {"nodes": "10"}]  # worker-karpenter/provisioners.yaml
    assert (budget(zalando, 300), budget(zalando, 100), budget(zalando, 30)) == (10, 5, 2)  # percentages round up
    assert budget([{"nodes": "0", "schedule": "@daily", "duration": "10m"}, {"nodes": "3"}], 50) == 3  # cron: left out
    assert budget([{}], 25) == 3  # Karpenter's default: 10%
    assert budget(None, 10) is None and budget([], 10) is None
    assert budget([{"nodes": "0"}], 10) == 0
