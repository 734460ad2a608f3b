"""What the ClusterStackRole needs on top of its rights for a configuration (clm.cli.stack_policy,
`clm render --stack-policy`): held against the synthesized role and CloudFormation's resource schemas (cfn-lint's),
for the examples and for Zalando's configuration (the corpus, `clm migrate`d, both samples with the etcd stack):
the role and the written policy together allow every handler permission of every resource, but what the role
leaves out on purpose for properties not set and the IAM types a generated policy never grants."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from clm.cli.policy_actions import NOT_IAM, is_iam_action, refusal
from clm.cli.stack_policy import (
    COVERED_TYPES,
    NOT_GENERATED,
    PROPERTY_PERMISSIONS,
    handler_permissions,
    needed_permissions,
    policy_template,
    resource_needs,
)
from clm.render.cfn_yaml import load_template
from clm.render.renderer import RenderedCluster
from infra.cluster_stack_role import OMITTED
from tests.corpus_samples import REGION
from tests.unit.iam_actions import allowing
from tests.unit.test_cli import EXAMPLES, run  # noqa: F401 (the fixture: the CLI on in-process moto)
from tests.unit.test_cluster_stack_role import EXAMPLE_SETS, resource_types, role_statements  # noqa: F401
from tests.unit.test_render_corpus_etcd import rendered  # noqa: F401 (the fixture: the corpus samples with etcd)


def statements_of(template_text: str) -> list[dict[str, Any]]:
    """The statements of a written policy template."""
    resources = load_template(template_text)["Resources"].values()
    return [statement for policy in resources for statement in policy["Properties"]["PolicyDocument"]["Statement"]]


def not_allowed(result: RenderedCluster, statements: list[dict[str, Any]]) -> list[str]:
    """`<file> <logical id> <type>: <action>` for every handler permission of the rendering's resources that the
    statements do not allow and that is not left out on purpose: by the role (OMITTED) for a property the resource
    does not set, or by the generator (IAM types beyond roles and instance profiles, the actions it refuses:
    clm.cli.policy_actions)."""
    missing = []
    for stack in result.stacks:
        for logical_id, resource in stack.template["Resources"].items():
            kind, properties = resource["Type"], resource.get("Properties") or {}
            gated = PROPERTY_PERMISSIONS.get(kind, {})
            needed_for_set = {a for name, actions in gated.items() if name in properties for a in actions}
            for action in sorted(handler_permissions(REGION, kind)):
                omitted = kind in COVERED_TYPES and action in OMITTED.get(kind, {}) and action not in needed_for_set
                never = kind.startswith("AWS::IAM::") and kind not in COVERED_TYPES
                if not (allowing(statements, action) or omitted or never or refusal(action)):
                    missing.append(f"{stack.file} {logical_id} {kind}: {action}")
    return missing


def test_the_covered_types_are_the_reference_configurations_and_the_role_omits_the_property_permissions(
    role_statements,  # noqa: F811
):
    config, registry, _ = EXAMPLE_SETS["examples/config"]
    assert {kind for _, kind in resource_types(config, registry)} == COVERED_TYPES
    for kind, properties in PROPERTY_PERMISSIONS.items():
        assert kind in COVERED_TYPES
        for name, actions in properties.items():
            for action in actions:
                assert action in OMITTED.get(kind, {}), f"{kind} {name}: {action} is not among the role's omissions"
                assert not allowing(role_statements, action), f"{kind} {name}: the role grants {action}"


@pytest.mark.parametrize("provider", ["zalando-aws", "zalando-eks"])
def test_the_role_and_the_written_policy_allow_what_zalandos_stacks_need(rendered, role_statements, provider):  # noqa: F811
    result = rendered[0][provider]
    stacks = [(REGION, stack.file, stack.template) for stack in result.stacks]
    needed = needed_permissions(stacks)
    assert not_allowed(result, role_statements) != []  # the role alone does not do
    written = policy_template(needed, f"the {provider} sample")
    assert not_allowed(result, role_statements + statements_of(written)) == []
    for _, _, template in stacks:  # what the generator refuses is named with its type
        for resource in template["Resources"].values():
            kind = resource["Type"]
            for action in resource_needs(REGION, resource):
                if refusal(action) and kind not in needed.left_out:
                    assert kind in needed.dropped[refusal(action)][action], f"{kind}: {action}"
    if provider == "zalando-aws":
        assert "autoscaling:AttachLoadBalancerTargetGroups" in needed.actions["AWS::AutoScaling::AutoScalingGroup"]
        assert {"AWS::KMS::Key", "AWS::S3::Bucket", "AWS::AutoScaling::LifecycleHook"} <= set(needed.actions)
        assert needed.used_in["AWS::AutoScaling::ScalingPolicy"] == {"cluster/etcd/stack.yaml"}
        assert needed.left_out == {"AWS::IAM::OIDCProvider": NOT_GENERATED}
    assert "AWS::IAM::Role" not in needed.actions  # covered, and the role keeps it under its path and boundary


def test_the_written_policy_is_a_template_cfn_lint_accepts(rendered, tmp_path):  # noqa: F811
    from cfnlint.api import lint_all

    result = rendered[0]["zalando-aws"]
    written = policy_template(needed_permissions([(REGION, s.file, s.template) for s in result.stacks]), "zalando")
    assert "# Left out (not in this policy):\n#   AWS::IAM::OIDCProvider: IAM beyond roles" in written
    assert [str(match) for match in lint_all(written) if match.rule.id[0] in "EW"] == []  # errors, warnings


def test_render_writes_the_policy_the_eks_example_needs_and_none_for_the_reference(run, tmp_path, role_statements):  # noqa: F811
    config, registry, hand_written = EXAMPLE_SETS["examples/eks"]
    policy = tmp_path / "eks-policy.yaml"
    result = run(
        "-o", "json", "render", "all", "--config", str(config), "--registry-file", str(registry),
        "--no-manage-etcd", "--stack-policy", str(policy),
    )  # fmt: skip
    assert json.loads(result.stdout)[0]["cluster"].endswith(":eks-dev-1")  # the table's JSON, the note on stderr
    assert f"{policy}: " in result.stderr and "resource types beyond the ClusterStackRole's rights" in result.stderr
    written = statements_of(policy.read_text())
    hand = statements_of(hand_written.read_text())
    for _, kind in resource_types(config, registry):
        for action in handler_permissions(REGION, kind):
            if allowing(role_statements + hand, action):  # what the hand-written policy grants, the written one too
                assert allowing(role_statements + written, action), f"{kind}: {action}"
    reference = tmp_path / "reference-policy.yaml"
    config, registry, _ = EXAMPLE_SETS["examples/config"]
    result = run("render", "all", "--config", str(config), "--registry-file", str(registry), "--no-manage-etcd",
                 "--stack-policy", str(reference))  # fmt: skip
    assert "cover every resource of these stacks: no policy written" in result.stderr
    assert not reference.exists()


def test_an_iam_user_is_named_never_granted(tmp_path: Path):
    template = {"Resources": {"Deployer": {"Type": "AWS::IAM::User"}, "Queue": {"Type": "AWS::SQS::Queue"}}}
    needed = needed_permissions([(REGION, "cluster/stack.yaml", template)])
    assert needed.left_out == {"AWS::IAM::User": NOT_GENERATED}
    assert set(needed.actions) == {"AWS::SQS::Queue"}
    assert not any("iam:CreateUser" in s["Action"] for s in statements_of(policy_template(needed, "x")))
    assert needed.used_in["AWS::IAM::User"] == {"cluster/stack.yaml"}


def test_only_actions_iam_knows_are_written_the_others_are_named():
    assert is_iam_action("s3:GetObject") and is_iam_action("ec2:Describe*")
    assert not is_iam_action("s3:DeleteBucketAnalyticsConfiguration") and not is_iam_action("managed-fleets:Get*")
    needed = needed_permissions([(REGION, "cluster/stack.yaml", {"Resources": {"B": {"Type": "AWS::S3::Bucket"}}})])
    assert needed.dropped[NOT_IAM]["s3:DeleteBucketAnalyticsConfiguration"] == {"AWS::S3::Bucket"}
    assert "s3:PutAnalyticsConfiguration" in needed.actions["AWS::S3::Bucket"]
    assert "#     s3:DeleteBucketAnalyticsConfiguration (AWS::S3::Bucket)\n" in policy_template(needed, "x")


def test_a_policy_past_iams_size_quota_is_split_and_the_output_names_every_part():
    """IAM refuses a managed policy over 6,144 characters (whitespace not counted): the written template has as many
    as needed, each within it, and PolicyArn joins their ARNs as clm:clusterStackPolicyArns takes them."""
    kinds = [
        "AWS::S3::Bucket", "AWS::RDS::DBInstance", "AWS::EKS::Cluster", "AWS::Lambda::Function", "AWS::ECS::Service",
        "AWS::DynamoDB::Table", "AWS::ElasticLoadBalancingV2::LoadBalancer", "AWS::KMS::Key", "AWS::SQS::Queue",
    ]  # fmt: skip
    template = {"Resources": {f"R{index}": {"Type": kind} for index, kind in enumerate(kinds)}}
    needed = needed_permissions([(REGION, "cluster/stack.yaml", template)])
    written = load_template(policy_template(needed, "many"))
    policies = written["Resources"]
    assert len(policies) > 1
    for policy in policies.values():
        document = policy["Properties"]["PolicyDocument"]
        assert len(re.sub(r"\s", "", json.dumps(document))) <= 6_144
    granted = {a for policy in policies.values() for s in policy["Properties"]["PolicyDocument"]["Statement"]
               for a in s["Action"]}  # fmt: skip
    assert granted == {action for actions in needed.actions.values() for action in actions}
    assert written["Outputs"]["PolicyArn"]["Value"] == {"Fn::Join": [",", [{"Ref": name} for name in policies]]}


# Types whose handlers list IAM identity changes or service wildcards, with what they would have brought.
IDENTITY_AND_WILDCARD_TYPES = {
    "AWS::MWAA::Environment": ("iam:CreatePolicy", "iam:ListRoles"),
    "AWS::Logs::Integration": ("iam:AttachUserPolicy",),
    "AWS::SSO::Assignment": ("iam:CreateSAMLProvider", "iam:UpdateSAMLProvider", "sso:CreateAccountAssignment"),
    "AWS::SecurityLake::DataLake": ("lambda:*", "s3:*", "organizations:*", "events:*", "sqs:*", "securitylake:List*"),
}


def test_identity_changes_and_wildcards_are_dropped_and_named_with_the_type():
    """A configuration writer's AWS::MWAA::Environment would bring iam:CreatePolicy, AWS::Logs::Integration
    iam:AttachUserPolicy (a policy of theirs on their own user), AWS::SSO::Assignment a SAML provider,
    AWS::SecurityLake::DataLake lambda:*, s3:*, organizations:* and events:* on "*" (AddPermission on CLM's
    functions...): none is written, each is named in the note with the type that lists it."""
    template = {"Resources": {kind.split("::")[1]: {"Type": kind} for kind in IDENTITY_AND_WILDCARD_TYPES}}
    needed = needed_permissions([(REGION, "cluster/stack.yaml", template)])
    written = policy_template(needed, "x")
    granted = {action for s in statements_of(written) for action in s["Action"]}
    for kind, actions in IDENTITY_AND_WILDCARD_TYPES.items():
        for action in actions:
            assert action not in granted, f"{kind}: {action}"
            assert re.search(rf"^#     {re.escape(action)} \([^)]*{kind}[^)]*\)$", written, re.M), f"{kind}: {action}"
    assert not [a for a in granted if "*" in a or "?" in a]
    assert not [a for a in granted if a.split(":")[0] in ("sts", "organizations", "sso", "identitystore")]
    iam = [a for a in granted if a.startswith("iam:")]
    assert iam and all(re.fullmatch(r"iam:\w*(Role|InstanceProfile)\w*", a) for a in iam), iam
    assert {"iam:PassRole", "iam:CreateRole", "iam:AttachRolePolicy"} <= granted  # held by the role's own rules
    assert "airflow:CreateEnvironment" in granted and "logs:PutIntegration" in granted  # the rest stays


def test_a_region_cfn_lint_does_not_know_fails_naming_it_before_anything_is_written(run, tmp_path):  # noqa: F811
    """cfn-lint has no schemas for eu-west-9: the policy cannot be made, and saying the built-in rights cover every
    resource would be wrong."""
    config, registry, _ = EXAMPLE_SETS["examples/eks"]
    moved = tmp_path / "clusters.yaml"
    moved.write_text(registry.read_text().replace("eu-central-1", "eu-west-9"))
    policy = tmp_path / "policy.yaml"
    result = run(
        "render", "all", "--config", str(config), "--registry-file", str(moved), "--no-manage-etcd",
        "--stack-policy", str(policy), ok=False,
    )  # fmt: skip
    assert result.exit_code != 0
    message = str(result.exception)
    assert ":eu-west-9:eks-dev-1: region 'eu-west-9' is not one cfn-lint knows" in message, message
    assert "known: af-south-1, " in message and "eu-central-1" in message
    assert "cover every resource" not in result.stderr and not policy.exists()
