"""The roles cluster stacks make are bounded by IAM: the synthesized ClusterStackRole's policy, decided by the
sandbox's IAM evaluator, lets CloudFormation create and change roles only under CLM's path with CLM's permissions
boundary, never touch CLM's own roles or a role outside the path, and pass only roles under the path to EC2, even
with an administrator policy attached as an extra (clm:clusterStackPolicyArns). The boundary allows what the
example roles' AWS managed policies allow and no IAM, STS or S3; the example templates use the path and boundary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from moto.iam.aws_managed_policies import aws_managed_policies_data

from clm.config.local import LocalSource
from clm.registry.clusters_yaml import load_clusters
from clm.render.renderer import Renderer
from clm_sandbox.iam.policy import Policy, Request, evaluate
from infra.cluster_role_boundary import BOUNDARY_EXPORT, PATH_EXPORT, boundary_actions
from infra.context import ContextError
from tests.unit.iam_actions import as_list
from tests.unit.test_infra import DEFAULTS, policy_statements, resources, synthesized

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ACCOUNT = "123456789012"
BOUNDARY = f"arn:aws:iam::{ACCOUNT}:policy/clm-boundary"
ROLES = f"arn:aws:iam::{ACCOUNT}:role"
# The AWS managed policies the example templates attach to their node and EKS control-plane roles.
EXAMPLE_POLICIES = (
    "AmazonEKSClusterPolicy",
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)
PSEUDO = {"AWS::Partition": "aws", "AWS::AccountId": ACCOUNT, "AWS::Region": "eu-central-1"}
ADMIN = Policy("extra-admin", {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})


def resolved(value: Any, refs: dict[str, str]) -> Any:
    """A synthesized value with Fn::Join, Refs and Fn::GetAtts (pseudo parameters; `refs`: a logical id, or
    `<logical id>.<attribute>`, see clms_own_names) and the ARNs of CLM's buckets (`arn:aws:s3:::<logical id, lower
    case>`) filled in."""
    if isinstance(value, list):
        return [resolved(item, refs) for item in value]
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(resolved(part, refs) for part in parts)
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return PSEUDO.get(value["Ref"]) or refs[value["Ref"]]
    if isinstance(value, dict) and set(value) == {"Fn::GetAtt"} and ".".join(value["Fn::GetAtt"]) in refs:
        return refs[".".join(value["Fn::GetAtt"])]
    if isinstance(value, dict) and set(value) == {"Fn::GetAtt"} and value["Fn::GetAtt"][1] == "Arn":  # a bucket's
        return f"arn:aws:s3:::{value['Fn::GetAtt'][0].lower()}"
    if isinstance(value, dict):
        return {key: resolved(item, refs) for key, item in value.items()}
    return value


def clms_own_names(raw: dict[str, Any]) -> dict[str, str]:
    """`refs` for `resolved`: the ARNs and names CloudFormation gives CLM's functions (`Clm-<logical id>-EXAMPLE`),
    layer, state machines, event bus, registry table and artefact key."""
    arn = f"arn:aws:{{}}:{PSEUDO['AWS::Region']}:{ACCOUNT}:{{}}"
    names = {}
    for logical, body in raw["Resources"].items():
        kind, properties = body["Type"], body.get("Properties", {})
        if kind == "AWS::Lambda::Function":
            names[f"{logical}.Arn"] = arn.format("lambda", f"function:Clm-{logical}-EXAMPLE")
        elif kind == "AWS::Lambda::LayerVersion":
            names[logical] = arn.format("lambda", f"layer:Clm-{logical}:1")
        elif kind == "AWS::StepFunctions::StateMachine":
            names[logical] = arn.format("states", f"stateMachine:{properties['StateMachineName']}")
            names[f"{logical}.Name"] = properties["StateMachineName"]
        elif kind == "AWS::Events::EventBus":
            names[logical], names[f"{logical}.Arn"] = properties["Name"], arn.format("events", "event-bus/clm")
        elif kind == "AWS::DynamoDB::Table":
            names[f"{logical}.Arn"] = arn.format("dynamodb", f"table/{properties['TableName']}")
        elif kind == "AWS::KMS::Key":
            names[f"{logical}.Arn"] = arn.format("kms", f"key/{logical.lower()}")
    return names


@pytest.fixture(scope="module")
def default(tmp_path_factory) -> dict[str, Any]:
    return synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-boundary"))[1]


@pytest.fixture(scope="module")
def role_policy(default) -> Policy:
    """The ClusterStackRole's policy as IAM sees it (CLM's boundary policy named BOUNDARY)."""
    [boundary] = [name for name in resources(default, "AWS::IAM::ManagedPolicy") if "Boundary" in name]
    statements = resolved(
        policy_statements(default, "ClusterStackRole"), {boundary: BOUNDARY, **clms_own_names(default)}
    )
    return Policy("ClusterStackRole", {"Statement": statements})


def decide(policy: Policy, action: str, resource: str, *extra: Policy, **context: str) -> bool:
    keys = {"iam:permissionsboundary": "iam:PermissionsBoundary", "iam:passedtoservice": "iam:PassedToService"}
    values = {key: context[name] for key, name in keys.items() if name in context}
    return evaluate(Request(action, resource, values, frozenset(keys)), [policy, *extra]).allowed


@pytest.mark.parametrize("extra", [(), (ADMIN,)], ids=["alone", "with-an-admin-extra-policy"])
def test_roles_only_under_the_path_with_the_boundary(role_policy, extra):
    node = f"{ROLES}/clm-cluster/kube-1-worker"
    for action in ("iam:CreateRole", "iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:PutRolePermissionsBoundary"):
        assert decide(role_policy, action, node, *extra, **{"iam:PermissionsBoundary": BOUNDARY}), action
        assert not decide(role_policy, action, node, *extra), f"{action} without a boundary"
        other = f"arn:aws:iam::{ACCOUNT}:policy/other"
        assert not decide(role_policy, action, node, *extra, **{"iam:PermissionsBoundary": other}), action
        for outside in (f"{ROLES}/kube-1-worker", f"{ROLES}/other/kube-1-worker"):
            assert not decide(role_policy, action, outside, *extra, **{"iam:PermissionsBoundary": BOUNDARY}), outside
    assert decide(role_policy, "iam:DeleteRole", node, *extra)
    assert not decide(role_policy, "iam:DeleteRolePermissionsBoundary", node, *extra)
    profile = f"arn:aws:iam::{ACCOUNT}:instance-profile"
    assert decide(role_policy, "iam:AddRoleToInstanceProfile", f"{profile}/clm-cluster/kube-1", *extra)
    assert not decide(role_policy, "iam:CreateInstanceProfile", f"{profile}/kube-1", *extra)


@pytest.mark.parametrize("extra", [(), (ADMIN,)], ids=["alone", "with-an-admin-extra-policy"])
def test_clms_own_roles_are_never_changed_nor_passed(role_policy, extra):
    for clm_role in (f"{ROLES}/Clm-StacksFunctionRole1A2B3C4D-EXAMPLE", f"{ROLES}/Clm-ClusterStackRole-EXAMPLE"):
        for action in ("iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:UpdateAssumeRolePolicy", "iam:PassRole"):
            allowed = decide(
                role_policy,
                action,
                clm_role,
                *extra,
                **{"iam:PermissionsBoundary": BOUNDARY, "iam:PassedToService": "ec2.amazonaws.com"},
            )
            assert not allowed, (action, clm_role)


def test_only_roles_under_the_path_go_to_ec2(role_policy):
    ec2 = {"iam:PassedToService": "ec2.amazonaws.com"}
    assert decide(role_policy, "iam:PassRole", f"{ROLES}/clm-cluster/kube-1-worker", **ec2)
    assert not decide(role_policy, "iam:PassRole", f"{ROLES}/team-data", **ec2)
    assert not decide(role_policy, "iam:PassRole", f"{ROLES}/team-data", ADMIN, **ec2)
    lambdas = {"iam:PassedToService": "lambda.amazonaws.com"}
    assert not decide(role_policy, "iam:PassRole", f"{ROLES}/clm-cluster/kube-1-worker", **lambdas)


def test_the_path_and_boundary_are_exported_for_the_templates(default):
    exports = {
        output["Export"]["Name"]: output["Value"] for output in default["Outputs"].values() if "Export" in output
    }
    assert exports[PATH_EXPORT] == "/clm-cluster/"
    [boundary] = [name for name in resources(default, "AWS::IAM::ManagedPolicy") if "Boundary" in name]
    assert exports[BOUNDARY_EXPORT] == {"Ref": boundary}


def test_the_boundary_allows_the_example_roles_managed_policies_and_no_iam_sts_or_s3(default):
    [body] = [body for name, body in resources(default, "AWS::IAM::ManagedPolicy").items() if "Boundary" in name]
    statements = body["Properties"]["PolicyDocument"]["Statement"]
    bootstrap = {"NodeBootstrapArchives", "NodeBootstrapSecrets"}
    allowed = {
        action
        for s in statements
        if s["Effect"] == "Allow" and s.get("Sid") not in bootstrap
        for action in as_list(s["Action"])
    }
    managed = json.loads(aws_managed_policies_data)
    needed = {
        action
        for name in EXAMPLE_POLICIES
        for statement in managed[name]["Document"]["Statement"]
        for action in as_list(statement["Action"])
    }
    assert allowed == needed == {*boundary_actions(), "iam:CreateServiceLinkedRole"}
    [linked] = [s for s in statements if s["Action"] == "iam:CreateServiceLinkedRole"]
    assert linked["Condition"] == {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}
    assert not any(action.startswith(("sts:", "s3:", "secretsmanager:", "organizations:")) for action in allowed)


def test_the_boundary_lets_nodes_read_their_archive_and_decrypt_with_clms_keys_only(default):
    """A node fetches its bootstrap archive from CLM's node-files bucket and decrypts its `.enc` files with its
    cluster stack's key (clm.render.node_files); nothing else of S3 or KMS."""
    [name] = [name for name in resources(default, "AWS::IAM::ManagedPolicy") if "Boundary" in name]
    body = resources(default, "AWS::IAM::ManagedPolicy")[name]
    boundary = Policy("boundary", {"Statement": resolved(body["Properties"]["PolicyDocument"]["Statement"], {})})
    bucket = f"cluster-lifecycle-manager-{ACCOUNT}-eu-central-1"
    assert decide(boundary, "s3:GetObject", f"arn:aws:s3:::{bucket}/kube-1/worker/abc.userdata")
    for action, resource in [
        ("s3:GetObject", "arn:aws:s3:::clm-config-bucket/config/cluster/stack.yaml"),
        ("s3:ListBucket", f"arn:aws:s3:::{bucket}"),
        ("s3:PutObject", f"arn:aws:s3:::{bucket}/kube-1/worker/abc.userdata"),
    ]:
        assert not decide(boundary, action, resource), (action, resource)
    key = f"arn:aws:kms:eu-central-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    tagged = {"aws:resourcetag/clm:managed-by": "clm"}
    request = Request("kms:Decrypt", key, tagged, frozenset(tagged))
    assert evaluate(request, [boundary]).allowed
    assert not evaluate(Request("kms:Decrypt", key, {}, frozenset(tagged)), [boundary]).allowed  # untagged key
    assert not evaluate(Request("kms:Encrypt", key, tagged, frozenset(tagged)), [boundary]).allowed


def test_context_widens_the_path_and_names_another_boundary(tmp_path):
    other = f"arn:aws:iam::{ACCOUNT}:policy/platform-node-boundary"
    context = {**DEFAULTS, "clm:clusterRolePath": "/nodes/", "clm:clusterRoleBoundaryPolicyArn": other}
    raw = synthesized(context, tmp_path)[1]
    assert not [name for name in resources(raw, "AWS::IAM::ManagedPolicy") if "Boundary" in name]
    statements = resolved(policy_statements(raw, "ClusterStackRole"), clms_own_names(raw))
    policy = Policy("ClusterStackRole", {"Statement": statements})
    assert decide(policy, "iam:CreateRole", f"{ROLES}/nodes/n", **{"iam:PermissionsBoundary": other})
    assert not decide(policy, "iam:CreateRole", f"{ROLES}/clm-cluster/n", **{"iam:PermissionsBoundary": other})


@pytest.mark.parametrize(
    ("key", "value"),
    [("clm:clusterRolePath", "clm-cluster"), ("clm:clusterRoleBoundaryPolicyArn", "platform-node-boundary")],
)
def test_an_unusable_path_or_boundary_is_refused_naming_the_key(tmp_path, key, value):
    with pytest.raises(ContextError, match=key):
        synthesized({**DEFAULTS, key: value}, tmp_path)


@pytest.mark.parametrize(
    ("config", "registry"),
    [
        (EXAMPLES / "config", EXAMPLES / "clusters.yaml"),
        (EXAMPLES / "eks" / "config", EXAMPLES / "eks" / "clusters.yaml"),
    ],
    ids=["examples/config", "examples/eks"],
)
def test_the_example_stacks_make_roles_and_profiles_under_the_path_with_the_boundary(config, registry):
    tree = LocalSource(str(config)).fetch()
    found = 0
    for cluster in load_clusters(registry.read_text(), source=str(registry)):
        rendered = Renderer(tree).render(cluster)
        for stack in (rendered.cluster_stack, *rendered.node_pool_stacks.values()):
            for resource in stack.template["Resources"].values():
                if resource["Type"] in ("AWS::IAM::Role", "AWS::IAM::InstanceProfile"):
                    found += 1
                    assert resource["Properties"]["Path"] == {"Fn::ImportValue": PATH_EXPORT}
                if resource["Type"] == "AWS::IAM::Role":
                    assert resource["Properties"]["PermissionsBoundary"] == {"Fn::ImportValue": BOUNDARY_EXPORT}
    assert found


@pytest.mark.parametrize("extra", [(), (ADMIN,)], ids=["alone", "with-an-admin-extra-policy"])
def test_clms_own_buckets_are_never_changed_whatever_the_extra_policies_allow(default, role_policy, extra):
    """An extra policy written by `clm render --stack-policy` grants S3 on "*" (a configuration's own buckets): a
    template still cannot put a policy on, empty or delete CLM's configuration, artefact or node-files bucket."""
    buckets = [
        name for name in resources(default, "AWS::S3::Bucket") if name.startswith(("Config", "Artefacts", "Node"))
    ]
    assert len(buckets) == 3, buckets
    for bucket in buckets:
        arn = f"arn:aws:s3:::{bucket.lower()}"
        for action, resource in (
            ("s3:PutBucketPolicy", arn),
            ("s3:DeleteBucket", arn),
            ("s3:PutObject", f"{arn}/config/cluster/stack.yaml"),
            ("s3:DeleteObject", f"{arn}/kube-1/worker/0a1b.userdata"),
        ):
            assert not decide(role_policy, action, resource, *extra), (action, resource)
    assert decide(role_policy, "s3:PutBucketPolicy", "arn:aws:s3:::kube-1-etcd-backup", ADMIN)
