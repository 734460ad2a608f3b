"""examples/eks: the example EKS cluster renders with the real renderer, every stack passes cfn-lint, and the
stacks give CLM what it needs (access entries for its roles, node pools it can roll)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint
from cfnlint.core import get_rules
from cfnlint.rules import RulesCollection

from clm.config.local import LocalSource
from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.render.cfn_yaml import load_template
from clm.render.renderer import RenderedCluster, Renderer
from clm.stacks.spec import cluster_stack_spec, node_pool_stack_spec

EKS = Path(__file__).resolve().parents[2] / "examples" / "eks"
CLUSTER_ADMIN = "cluster-access-policy/AmazonEKSClusterAdminPolicy"
# cfn-lint rules the examples break on purpose, each with the reason.
CFN_LINT_IGNORED = {
    "W3010": "availability zones are the config item availability_zones on purpose: EKS does not support every "
    "zone of every region, so the operator picks them",
}
# Existing network and a pinned image: the template branches the example cluster does not take.
VARIANT_ITEMS = {
    "subnet_ids": "subnet-0123456789abcdef0, subnet-0fedcba9876543210",
    "node_ami": "ami-0123456789abcdef0",
    "admin_role_arns": "",
}


@pytest.fixture(scope="module")
def cfn_lint_rules() -> RulesCollection:
    """cfn-lint's rules, informational ones included, without the ignored ones (loaded once: ~1 s)."""
    return get_rules([], sorted(CFN_LINT_IGNORED), ["I"])


@pytest.fixture(scope="module")
def tree() -> ConfigTree:
    return LocalSource(str(EKS / "config")).fetch()


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    clusters = load_clusters((EKS / "clusters.yaml").read_text(), source="examples/eks/clusters.yaml")
    assert len(clusters) == 1
    return clusters[0]


@pytest.fixture(scope="module")
def rendered(tree, cluster) -> RenderedCluster:
    return Renderer(tree).render(cluster)


def variant_of(cluster: Cluster) -> Cluster:
    return dataclasses.replace(cluster, config_items={**cluster.config_items, **VARIANT_ITEMS})


def stacks_of(rendered: RenderedCluster) -> dict[str, str]:
    """Every stack body of a rendering, by a readable name."""
    bodies = {"cluster stack": rendered.cluster_stack.body}
    bodies.update({f"node pool {name}": stack.body for name, stack in sorted(rendered.node_pool_stacks.items())})
    return bodies


def cfn_lint_findings(body: str, rules: RulesCollection, region: str) -> list[str]:
    """Every cfn-lint match of `rules` (errors, warnings and informational), as readable lines."""
    matches = lint(body, rules=rules, regions=[region])
    return [f"line {match.linenumber}: {match.rule.id} {match.message}" for match in matches]


def resources_of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in template["Resources"].items() if r["Type"] == kind}


@pytest.mark.parametrize("variant", [False, True], ids=["example", "existing-subnets-pinned-ami"])
def test_every_stack_passes_cfn_lint(tree, cluster, cfn_lint_rules, variant):
    subject = variant_of(cluster) if variant else cluster
    rendered = Renderer(tree).render(subject)
    findings = {
        name: cfn_lint_findings(body, cfn_lint_rules, subject.region) for name, body in stacks_of(rendered).items()
    }
    assert findings == {name: [] for name in findings}
    assert len(findings) == 1 + len(subject.node_pools)


def test_cluster_stack_policy_passes_cfn_lint(cluster, cfn_lint_rules):
    body = (EKS / "cluster-stack-policy.yaml").read_text()
    assert cfn_lint_findings(body, cfn_lint_rules, cluster.region) == []


def test_clm_roles_get_cluster_admin_access_entries(rendered):
    template = rendered.cluster_stack.template
    eks = resources_of_type(template, "AWS::EKS::Cluster")["Cluster"]
    assert eks["AccessConfig"]["AuthenticationMode"] == "API_AND_CONFIG_MAP"
    entries = resources_of_type(template, "AWS::EKS::AccessEntry")
    clm_roles = [arn.strip() for arn in rendered.cluster.config_items["clm_role_arns"].split(",")]
    assert len(clm_roles) == 2
    for role in clm_roles:
        (entry,) = [e for e in entries.values() if e["PrincipalArn"] == role]
        assert entry["ClusterName"] == {"Ref": "Cluster"}
        assert entry["Type"] == "STANDARD"
        (policy,) = entry["AccessPolicies"]
        assert policy["PolicyArn"]["Fn::Sub"].endswith(CLUSTER_ADMIN)
        assert policy["AccessScope"] == {"Type": "cluster"}
    (node_entry,) = [e for e in entries.values() if e["Type"] == "EC2_LINUX"]
    assert node_entry["PrincipalArn"] == {"Fn::GetAtt": ["NodeRole", "Arn"]}


def test_clm_reaches_the_cluster_it_creates(rendered):
    """clm.kube.connect asks EKS for the endpoint of the EKS cluster named by a zalando-eks cluster's alias (CLM's
    api/cluster.go Name()), which the stack creates."""
    eks = resources_of_type(rendered.cluster_stack.template, "AWS::EKS::Cluster")["Cluster"]
    assert rendered.cluster.api_server_url == ""
    assert rendered.cluster.provider == "zalando-eks"
    assert eks["Name"] == rendered.cluster.config_items["eks_cluster_name"] == rendered.cluster.name == "eks-dev"


def test_node_pools_join_the_cluster_with_nodeadm(rendered):
    name = rendered.cluster.config_items["eks_cluster_name"]
    for pool in rendered.cluster.node_pools:
        template = rendered.node_pool_stacks[pool.name].template
        launch = resources_of_type(template, "AWS::EC2::LaunchTemplate")["LaunchTemplate"]["LaunchTemplateData"]
        user_data, imports = launch["UserData"]["Fn::Base64"]["Fn::Sub"]
        node_config = load_template(
            user_data.split("Content-Type: application/node.eks.aws\n")[1].split("\n--BOUNDARY")[0]
        )
        assert node_config["kind"] == "NodeConfig"
        assert node_config["spec"]["cluster"]["name"] == name
        assert f"node-pool={pool.name}" in node_config["spec"]["kubelet"]["flags"][0]
        assert imports["Endpoint"] == {"Fn::ImportValue": "eks-dev-1-eks-endpoint"}
        assert launch["ImageId"] == {"Ref": "NodeImage"}
        image = template["Parameters"]["NodeImage"]
        assert (
            image["Default"]
            == "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id"
        )


def test_spot_and_on_demand_profiles(rendered):
    markets = {}
    for pool in rendered.cluster.node_pools:
        group = resources_of_type(rendered.node_pool_stacks[pool.name].template, "AWS::AutoScaling::AutoScalingGroup")
        policy = group["AutoScalingGroup"]["MixedInstancesPolicy"]
        markets[pool.profile] = policy["InstancesDistribution"]["OnDemandPercentageAboveBaseCapacity"]
        overrides = [o["InstanceType"] for o in policy["LaunchTemplate"]["Overrides"]]
        assert overrides == pool.instance_types
        tags = {t["Key"]: t["Value"] for t in group["AutoScalingGroup"]["Tags"]}
        assert tags["kubernetes.io/cluster/eks-dev"] == "owned"
        assert tags["kubernetes.io/node-pool"] == pool.name
    assert markets == {"worker-default": 100, "worker-spot": 0}


def test_stacks_deploy_without_given_parameters(rendered):
    """CLM passes no parameters: every one needs a default (the image's SSM parameter name)."""
    assert cluster_stack_spec(rendered).name == "eks-dev-1"
    for pool in rendered.cluster.node_pools:
        spec = node_pool_stack_spec(rendered, pool.name)
        assert spec.name == f"nodepool-{pool.name}-aws-123456789012-eu-central-1-eks-dev-1"
        assert set(spec.parameters) == {"NodeImage"}
        assert "CAPABILITY_NAMED_IAM" in spec.capabilities


def test_variant_uses_existing_subnets_and_the_pinned_image(tree, cluster):
    rendered = Renderer(tree).render(variant_of(cluster))
    template = rendered.cluster_stack.template
    assert not resources_of_type(template, "AWS::EC2::VPC")
    eks = resources_of_type(template, "AWS::EKS::Cluster")["Cluster"]
    assert eks["ResourcesVpcConfig"]["SubnetIds"] == ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
    assert not [e for e in resources_of_type(template, "AWS::EKS::AccessEntry") if e.startswith("Admin")]
    for stack in rendered.node_pool_stacks.values():
        launch = stack.template["Resources"]["LaunchTemplate"]["Properties"]["LaunchTemplateData"]
        assert launch["ImageId"] == "ami-0123456789abcdef0"
        assert "Parameters" not in stack.template


def test_missing_clm_role_arns_names_the_template(tree, cluster):
    items = {key: value for key, value in cluster.config_items.items() if key != "clm_role_arns"}
    with pytest.raises(RenderError) as info:
        Renderer(tree).render(dataclasses.replace(cluster, config_items=items))
    assert info.value.file == "cluster/stack.yaml"
    assert "clm_role_arns" in str(info.value)


def with_example_karpenter_pool(text: str) -> str:
    """clusters.yaml with its commented-out Karpenter pool taken in, as a user would uncomment it."""
    lines = text.splitlines()
    start = lines.index("  # - name: flex")
    taken = [line.replace("  # ", "  ", 1) for line in lines[start:]]
    return "\n".join(lines[:start] + taken) + "\n"


def test_the_karpenter_pool_example_renders_a_nodepool_and_its_class_from_the_cluster_stack(tree):
    """The worker-karpenter profile (issue 29 item 7: CLM applies Karpenter pools whatever karpenter_pools_enabled
    says, provisioner/clusterpy.go since 66f2c05): its NodePool and EC2NodeClass, named after the pool, use the
    cluster stack's instance profile, subnets and security group, which the stack outputs; CLM finds the instances
    Karpenter tags with the alias (kubernetes.io/cluster/eks-dev), the NodePool's class is the one it judges."""
    from clm.render.node_files import OUTPUTS_VALUE, PendingOutputs
    from clm.stacks.karpenter_pool import desired_config

    text = with_example_karpenter_pool((EKS / "clusters.yaml").read_text())
    [cluster] = load_clusters(text, source="examples/eks/clusters.yaml")
    pool = cluster.node_pool("flex")
    assert pool.is_karpenter and pool.is_spot
    outputs = {"Subnets": "subnet-a,subnet-b", "NodeSecurityGroup": "sg-1", "NodeInstanceProfileName": "eks-dev-1-np"}
    rendered = Renderer(tree).render(cluster, {OUTPUTS_VALUE: outputs})
    assert "flex" not in rendered.node_pool_stacks and rendered.warnings == []
    objects = {m.kind: m.body for m in rendered.node_pool_manifests["flex"]}
    node_class, node_pool = objects["EC2NodeClass"]["spec"], objects["NodePool"]["spec"]
    assert node_class["instanceProfile"] == "eks-dev-1-np"
    assert node_class["subnetSelectorTerms"] == [{"id": "subnet-a"}, {"id": "subnet-b"}]
    assert node_class["securityGroupSelectorTerms"] == [{"id": "sg-1"}]
    assert node_class["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert node_pool["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "flex",
    }
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]} in node_pool["template"]["spec"][
        "requirements"
    ]
    assert node_pool["limits"] == {"cpu": "64"}
    assert desired_config(rendered.node_pool_manifests["flex"], "flex").node_class == "flex"
    pinned = dataclasses.replace(cluster, config_items={**cluster.config_items, "node_ami": "ami-0123456789abcdef0"})
    again = Renderer(tree).render(pinned, {OUTPUTS_VALUE: outputs}).node_pool_manifests["flex"]
    assert desired_config(again, "flex").image_ids == ("ami-0123456789abcdef0",)  # CLM judges a pinned image
    stack = load_template(Renderer(tree).render(cluster, {OUTPUTS_VALUE: PendingOutputs()}).cluster_stack.body)
    assert stack["Outputs"]["NodeInstanceProfileName"] == {"Value": {"Ref": "NodeInstanceProfile"}}
