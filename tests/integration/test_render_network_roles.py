"""The network values of current CLM in the deployed workflow, IAM enforced (provisioner/clusterpy.go Provision,
selectSubnetIDs, aws_az.go; the role tags since CLM 8fa036f, 2024-10): in the cluster's VPC (the default one), one
subnet per zone chosen by the `kubernetes.io/role/node` tag for `values.subnets` and `subnet_ipv6_cidrs`, by the
`elb`, `internal-node` and `pod` tags for `lb_subnets`, `internal_node_subnets` and `pod_subnets`, and the VPC's
`vpc_ipv6_cidrs`: what EC2 answers the run function (DescribeVpcs, DescribeSubnets, with the grants infra/ gives it)
is what the cluster gets; and CLM's cluster methods that read the account's other clusters from the registry
(api/cluster.go IAMRoleTrustRelationshipTemplate, SiblingCluster), read by the run function under its grants."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from clm_sandbox.iam import record
from tests.integration.deployment import Deployment, first_run_config_map

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

COMPONENT_KEY = "config/cluster/manifests/network-test/configmap.yaml"
CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: network-test
  namespace: default
data:
{%- for name in ["subnets", "lb_subnets", "internal_node_subnets", "pod_subnets", "vpc_ipv6_cidrs"] %}
  {{ name }}: {{ values[name] | tojson | yaml }}
{%- endfor %}
  subnet_ipv6_cidrs: {{ values.subnet_ipv6_cidrs | yaml }}
  trust: {{ cluster.iam_role_trust_relationship_template | yaml }}
  sibling: {{ (cluster.sibling_cluster is none) | string | yaml }}
"""


def _by_zone(chosen: dict[str, str]) -> dict[str, str]:
    return {**chosen, "*": ",".join(chosen[zone] for zone in sorted(chosen))}


def test_each_role_tag_chooses_its_subnets(deployment: Deployment, nodes: object, kube_api: k8s.ApiClient) -> None:
    ec2 = deployment.session.client("ec2")
    [vpc] = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]  # no vpc_id item
    vpc_id = vpc["VpcId"]
    default = {s["AvailabilityZone"]: s["SubnetId"] for s in ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]}  # fmt: skip
    zone = sorted(default)[0]
    ipv6 = ec2.associate_vpc_cidr_block(VpcId=vpc_id, AmazonProvidedIpv6CidrBlock=True)
    vpc_ipv6 = ipv6["Ipv6CidrBlockAssociation"]["Ipv6CidrBlock"]
    tagged = {}
    for n, role in enumerate(["node", "elb", "internal-node", "pod"]):
        subnet = ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"172.31.{200 + n}.0/24", AvailabilityZone=zone)["Subnet"]
        ec2.create_tags(Resources=[subnet["SubnetId"]], Tags=[{"Key": f"kubernetes.io/role/{role}", "Value": "1"}])
        tagged[role] = subnet["SubnetId"]
    node_ipv6 = vpc_ipv6.replace("::/56", "::/64")
    ec2.associate_subnet_cidr_block(SubnetId=tagged["node"], Ipv6CidrBlock=node_ipv6)
    with first_run_config_map(deployment, kube_api, COMPONENT_KEY, CONFIGMAP, "network-test") as rendered:
        trust, sibling = json.loads(rendered.pop("trust")), rendered.pop("sibling")
        data = {name: value if name == "subnet_ipv6_cidrs" else json.loads(value) for name, value in rendered.items()}
        # In the other zones each role falls back to the zone's one subnet (none is tagged there).
        assert data == {
            "subnets": _by_zone({**default, zone: tagged["node"]}),
            "lb_subnets": _by_zone({**default, zone: tagged["elb"]}),
            "internal_node_subnets": _by_zone({**default, zone: tagged["internal-node"]}),
            "pod_subnets": _by_zone({**default, zone: tagged["pod"]}),
            "vpc_ipv6_cidrs": [vpc_ipv6],
            "subnet_ipv6_cidrs": node_ipv6,
        }
        # api/cluster.go from the registry (DynamoDB Scan): kube-1 alone in the account, not ready before its first run
        assert [s["Principal"] for s in trust["Statement"]] == [
            {"Service": "ec2.amazonaws.com"},
            {"Service": "pods.eks.amazonaws.com"},
        ]
        assert sibling == "True"
        looked_up = {j.action for j in record.judged() if not j.refused}
        assert {"ec2:DescribeVpcs", "ec2:DescribeSubnets", "dynamodb:Scan"} <= looked_up
