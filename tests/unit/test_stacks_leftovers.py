"""What a decommission cleans after the stacks, on moto: the VPC CNI's leaked interfaces (CLM provisioner/aws.go
DeleteLeakedAWSVPCCNIENIs) and, when asked, the cluster's volumes (provisioner/clusterpy.go removeEBSVolumes)."""

from __future__ import annotations

import dataclasses
from typing import Any

import boto3
import pytest

from clm.errors import ValidationError
from clm.model import Cluster
from clm.stacks.leftovers import VolumesInUse, delete_leaked_interfaces, delete_volumes

CLUSTER = Cluster(
    id="aws:123456789012:eu-central-1:kube-1",
    local_id="kube-1",
    infrastructure_account="aws:123456789012",
    region="eu-central-1",
    provider="zalando-aws",
    alias="sandbox-dev",
)


def interface(ec2: Any, subnet: str, tags: dict[str, str]) -> str:
    spec = [{"ResourceType": "network-interface", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    return ec2.create_network_interface(SubnetId=subnet, TagSpecifications=spec if tags else [])["NetworkInterface"][
        "NetworkInterfaceId"
    ]


def volume(ec2: Any, tags: dict[str, str]) -> str:
    spec = [{"ResourceType": "volume", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    return ec2.create_volume(AvailabilityZone="eu-central-1a", Size=1, TagSpecifications=spec)["VolumeId"]


def test_only_the_clusters_available_cni_interfaces_are_deleted(aws: boto3.Session) -> None:
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    leaked = interface(ec2, subnet, {"cluster.k8s.amazonaws.com/name": CLUSTER.id})
    others = {
        interface(ec2, subnet, {"cluster.k8s.amazonaws.com/name": "another"}),
        interface(ec2, subnet, {}),
    }
    assert delete_leaked_interfaces(ec2, CLUSTER) == [leaked]
    left = {eni["NetworkInterfaceId"] for eni in ec2.describe_network_interfaces()["NetworkInterfaces"]}
    assert left == others


def test_an_eks_clusters_name_is_its_alias() -> None:
    """CLM's api/cluster.go Name(): the alias of a zalando-eks cluster, else the id."""
    assert CLUSTER.name == CLUSTER.id
    assert dataclasses.replace(CLUSTER, provider="zalando-eks").name == "sandbox-dev"


@pytest.mark.parametrize("alias", ["*", "team-?", "a,b", ""])
def test_an_eks_alias_that_is_a_filter_wildcard_deletes_no_interface(aws: boto3.Session, alias: str) -> None:
    """The attack: `alias: "*"` on a zalando-eks cluster matched every available VPC CNI interface of the account."""
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    victims = {interface(ec2, subnet, {"cluster.k8s.amazonaws.com/name": name}) for name in ("team-a", "b")}
    with pytest.raises(ValidationError, match=r"cannot select resources"):
        delete_leaked_interfaces(ec2, dataclasses.replace(CLUSTER, provider="zalando-eks", alias=alias))
    assert {eni["NetworkInterfaceId"] for eni in ec2.describe_network_interfaces()["NetworkInterfaces"]} == victims


def test_the_clusters_available_volumes_are_deleted_and_an_attached_one_stops_it(aws: boto3.Session) -> None:
    """As the EBS CSI driver tags with --k8s-tag-cluster-id (Zalando's cluster/manifests/03-ebs-csi): both
    `kubernetes.io/cluster/<id>=owned` and `KubernetesCluster=<id>`; a volume with the first alone is named, kept."""
    ec2 = aws.client("ec2")
    owned = {f"kubernetes.io/cluster/{CLUSTER.id}": "owned", "KubernetesCluster": CLUSTER.id}
    mine = volume(ec2, owned)
    other = volume(ec2, {"kubernetes.io/cluster/another": "owned", "KubernetesCluster": "another"})
    shared = volume(ec2, {f"kubernetes.io/cluster/{CLUSTER.id}": "shared", "KubernetesCluster": CLUSTER.id})
    half = volume(ec2, {f"kubernetes.io/cluster/{CLUSTER.id}": "owned"})
    assert delete_volumes(ec2, CLUSTER) == ([mine], [f"{half} (no KubernetesCluster={CLUSTER.id} tag)"])
    assert {v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]} == {other, shared, half}

    attached = volume(ec2, owned)
    image = ec2.describe_images()["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, Placement={"AvailabilityZone": "eu-central-1a"})
    ec2.attach_volume(VolumeId=attached, InstanceId=instance["Instances"][0]["InstanceId"], Device="/dev/sdf")
    with pytest.raises(VolumesInUse, match=rf"{attached} \(in-use\)"):
        delete_volumes(ec2, CLUSTER)
    assert attached in {v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]}


def test_an_eks_clusters_volumes_are_those_tagged_with_its_alias(aws: boto3.Session) -> None:
    """CLM removeEBSVolumes filters on `kubernetes.io/cluster/<Name()>`: a zalando-eks cluster's alias. Volumes
    tagged with its id (or another alias) are not its."""
    ec2 = aws.client("ec2")
    eks = dataclasses.replace(CLUSTER, provider="zalando-eks")
    mine = volume(ec2, {"kubernetes.io/cluster/sandbox-dev": "owned", "KubernetesCluster": "sandbox-dev"})
    by_id = volume(ec2, {f"kubernetes.io/cluster/{CLUSTER.id}": "owned", "KubernetesCluster": CLUSTER.id})
    other = volume(ec2, {"kubernetes.io/cluster/sandbox-prod": "owned", "KubernetesCluster": "sandbox-prod"})
    assert delete_volumes(ec2, eks) == ([mine], [])
    assert {v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]} == {by_id, other}
