"""The network values CLM gives templates: AZInfo (provisioner/aws_az_test.go), the subnet choice and filters of
clusterpy.go Provision, the hosted zone (hosted_zone.go), and the renderer computing them on moto's VPC."""

from __future__ import annotations

import boto3
import pytest

from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.model import Cluster, NodePool
from clm.render.inputs import RenderInputs
from clm.render.lookups import Ec2Lookups
from clm.render.network_values import AzInfo, az_info, hosted_zone, network_values, select_subnets
from clm.render.renderer import Renderer

INFO = AzInfo({"eu-central-1a": "subnet-1a", "eu-central-1b": "subnet-1b", "eu-central-1c": "subnet-1c"})


# TestSubnetsByAZ, TestAvailabilityZones, TestRestrictAZs
def test_az_info() -> None:
    assert INFO.subnets_by_az() == {
        "*": "subnet-1a,subnet-1b,subnet-1c",
        "eu-central-1a": "subnet-1a",
        "eu-central-1b": "subnet-1b",
        "eu-central-1c": "subnet-1c",
    }
    assert INFO.availability_zones() == ["eu-central-1a", "eu-central-1b", "eu-central-1c"]
    restricted = INFO.restrict(["eu-central-1b", "eu-central-1d"])
    assert restricted.subnets_by_az() == {"*": "subnet-1b", "eu-central-1b": "subnet-1b"}
    assert restricted.availability_zones() == ["eu-central-1b"]


def _subnet(ident: str, zone: str, *tags: str) -> dict:
    return {"SubnetId": ident, "AvailabilityZone": zone, "Tags": [{"Key": tag, "Value": "1"} for tag in tags]}


def _ids(chosen: dict) -> dict[str, str]:
    return {zone: subnet["SubnetId"] for zone, subnet in chosen.items()}


@pytest.mark.parametrize(
    "tag",
    ["kubernetes.io/role/node", "kubernetes.io/role/elb", "kubernetes.io/role/internal-node", "kubernetes.io/role/pod"],
)
def test_one_subnet_per_zone_the_role_tagged_one_else_the_first_by_id(tag: str) -> None:
    """selectSubnetIDs, for each role tag of clusterpy.go (`values.subnets`: the node tag since CLM 8fa036f,
    2024-10; the elb tag before)."""
    subnets = [
        _subnet("subnet-b", "zone-a"),
        _subnet("subnet-a", "zone-a"),
        _subnet("subnet-y", "zone-b", tag),
        _subnet("subnet-x", "zone-b"),
    ]
    assert _ids(select_subnets(subnets, tag)) == {"zone-a": "subnet-a", "zone-b": "subnet-y"}
    assert _ids(select_subnets(subnets, "other")) == {"zone-a": "subnet-a", "zone-b": "subnet-x"}


def test_custom_subnets_are_left_out_and_the_config_items_filter() -> None:
    subnets = [_subnet("subnet-1", "zone-a"), _subnet("subnet-0", "zone-a", "zalando.org/custom-subnet")]
    subnets.append(_subnet("subnet-2", "zone-b"))
    assert az_info(subnets, {}).subnets == {"zone-a": "subnet-1", "zone-b": "subnet-2"}
    assert az_info(subnets, {"subnets": "subnet-2"}).subnets == {"zone-b": "subnet-2"}
    assert az_info(subnets, {"availability_zones": "zone-a"}).subnets == {"zone-a": "subnet-1"}
    with pytest.raises(ValueError, match="invalid or unknown subnets"):
        az_info(subnets, {"subnets": "subnet-0,subnet-2"})  # a custom subnet is not the cluster's


def test_hosted_zone_is_the_api_host_less_its_first_label() -> None:
    assert hosted_zone("https://kube-1.teapot.zalan.do") == "teapot.zalan.do"
    assert hosted_zone("https://kube-1.example.org:443/") == "example.org:443"  # url.Host keeps the port
    with pytest.raises(ValueError, match="can't derive hosted zone from URL https://localhost"):
        hosted_zone("https://localhost")


TREE = ConfigTree(
    version="test",
    source="test-tree",
    files={
        "cluster/stack.yaml": b"Resources: {}\nMetadata: {cidr: '{{ values.vpc_ipv4_cidr }}', zone: "
        b"'{{ values.hosted_zone }}', azs: '{{ values.availability_zones | join(\",\") }}'}\n",
        "cluster/node-pools/worker-splitaz/stack.yaml": b"Resources: {}\nMetadata: {subnets: "
        b"'{{ values.subnets['*'] }}', count: {{ az_count(values.subnets) }}}\n",
    },
)
PLAIN = ConfigTree(version="t", source="t", files={"cluster/stack.yaml": b"Resources: {}\n"})  # reads no values


def _cluster(*pools: NodePool, **items: str) -> Cluster:
    return Cluster(
        "aws:123456789012:eu-central-1:kube-1", "kube-1", "aws:123456789012", "eu-central-1", "zalando-aws",
        api_server_url="https://kube-1.example.org", config_items=items, node_pools=list(pools),
    )  # fmt: skip


def test_the_renderer_gives_templates_the_clusters_network(aws: boto3.Session) -> None:
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.10.0.0/16")["Vpc"]["VpcId"]
    subnets = {
        zone: ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.10.{n}.0/24", AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for n, zone in enumerate(["eu-central-1a", "eu-central-1b"])
    }
    pools = [
        NodePool("all", "worker-splitaz", 2, 4, ["m5.large"]),
        NodePool("one", "worker-splitaz", 1, 1, ["m5.large"], config_items={"availability_zones": "eu-central-1b"}),
    ]
    rendered = Renderer(TREE, RenderInputs(lookups=Ec2Lookups(lambda: ec2))).render(_cluster(*pools, vpc_id=vpc))
    assert rendered.cluster_stack.template["Metadata"] == {
        "cidr": "10.10.0.0/16",
        "zone": "example.org",
        "azs": "eu-central-1a,eu-central-1b",
    }
    everywhere, one = (rendered.node_pool_stacks[name].template["Metadata"] for name in ("all", "one"))
    assert everywhere == {"subnets": f"{subnets['eu-central-1a']},{subnets['eu-central-1b']}", "count": 2}
    assert one == {"subnets": subnets["eu-central-1b"], "count": 1}


def test_the_default_vpc_and_its_subnets_fill_the_config_items_the_cluster_lacks(aws: boto3.Session) -> None:
    """CLM's Provision: without `vpc_id` the account's default VPC, written into the items with `subnets` (the
    chosen subnets, comma-separated); items the cluster has are kept."""
    ec2 = aws.client("ec2")
    [vpc] = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]
    renderer = Renderer(TREE, RenderInputs(lookups=Ec2Lookups(lambda: ec2)))
    items = renderer.render(_cluster()).cluster.config_items
    described = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])["Subnets"]
    subnets = _ids(select_subnets(described))
    assert items["vpc_id"] == vpc["VpcId"]
    assert items["subnets"] == ",".join(subnets[zone] for zone in sorted(subnets))
    first = subnets[sorted(subnets)[0]]
    kept = renderer.render(_cluster(vpc_id=vpc["VpcId"], subnets=first)).cluster.config_items
    assert (kept["vpc_id"], kept["subnets"]) == (vpc["VpcId"], first)
    assert "vpc_id" not in Renderer(PLAIN).render(_cluster()).cluster.config_items  # no lookups: nothing filled


def test_a_network_ec2_cannot_describe_fails_only_the_templates_that_read_it(aws: boto3.Session) -> None:
    renderer = Renderer(TREE, RenderInputs(lookups=Ec2Lookups(lambda: aws.client("ec2"))))
    with pytest.raises(RenderError, match=r"cluster/stack\.yaml:2: error: cannot read the cluster's network: .*vpc-0"):
        renderer.render(_cluster(vpc_id="vpc-0"))
    Renderer(PLAIN, RenderInputs(lookups=Ec2Lookups(lambda: aws.client("ec2")))).render(_cluster(vpc_id="vpc-0"))


def test_each_role_gets_its_subnets_and_pods_ignore_the_zones_item() -> None:
    """clusterpy.go Provision: `subnets`, `availability_zones` and `subnet_ipv6_cidrs` by the node tag; `lb_subnets`,
    `internal_node_subnets` by theirs, restricted to the `availability_zones` item as the nodes'; `pod_subnets`
    not restricted (CLM restricts the other three only); `vpc_ipv6_cidrs` the VPC's."""
    subnets = [
        {**_subnet("subnet-n1", "zone-a", "kubernetes.io/role/node"), "Ipv6CidrBlockAssociationSet": [
            {"Ipv6CidrBlock": "2a05:d014::/64"}, {"Ipv6CidrBlock": "2a05:d014:0:1::/64"}]},
        _subnet("subnet-e1", "zone-a", "kubernetes.io/role/elb"),
        _subnet("subnet-i1", "zone-a", "kubernetes.io/role/internal-node"),
        _subnet("subnet-p1", "zone-a", "kubernetes.io/role/pod"),
        {**_subnet("subnet-n2", "zone-b"), "Ipv6CidrBlockAssociationSet": [{"Ipv6CidrBlock": "2a05:d014:0:2::/64"}]},
        _subnet("subnet-p2", "zone-b", "kubernetes.io/role/pod"),
    ]  # fmt: skip
    vpc = {"VpcId": "vpc-1", "CidrBlock": "10.0.0.0/16"}
    vpc["Ipv6CidrBlockAssociationSet"] = [{"Ipv6CidrBlock": "2a05::/56"}]
    values = network_values(subnets, vpc, {})
    assert values == {
        "subnets": {"zone-a": "subnet-n1", "zone-b": "subnet-n2", "*": "subnet-n1,subnet-n2"},
        "availability_zones": ["zone-a", "zone-b"],
        "subnet_ipv6_cidrs": "2a05:d014::/64,2a05:d014:0:1::/64,2a05:d014:0:2::/64",
        "lb_subnets": {"zone-a": "subnet-e1", "zone-b": "subnet-n2", "*": "subnet-e1,subnet-n2"},
        "internal_node_subnets": {"zone-a": "subnet-i1", "zone-b": "subnet-n2", "*": "subnet-i1,subnet-n2"},
        "pod_subnets": {"zone-a": "subnet-p1", "zone-b": "subnet-p2", "*": "subnet-p1,subnet-p2"},
        "vpc_ipv4_cidr": "10.0.0.0/16",
        "vpc_ipv6_cidrs": ["2a05::/56"],
    }
    one_zone = network_values(subnets, {"VpcId": "vpc-1", "CidrBlock": "10.0.0.0/16"}, {"availability_zones": "zone-b"})
    assert (one_zone["subnets"], one_zone["lb_subnets"]) == ({"zone-b": "subnet-n2", "*": "subnet-n2"},) * 2
    assert (one_zone["subnet_ipv6_cidrs"], one_zone["vpc_ipv6_cidrs"]) == ("2a05:d014:0:2::/64", [])
    assert one_zone["pod_subnets"] == values["pod_subnets"]
