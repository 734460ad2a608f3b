"""Least privilege in the CDK app's IAM: no wildcard actions, Resource "*" only where AWS offers no resource-level
permissions, and no administrator or power-user managed policy on a Lambda function's role.

Checks every identity policy (AWS::IAM::Policy, AWS::IAM::ManagedPolicy, inline policies of AWS::IAM::Role) of the
two templates tests/unit/test_infra.py synthesizes: cdk.json's defaults and its variant (CodeCommit, Lambdas in a
VPC, extra cluster-stack policies). Resource-based policies (bucket policies) are not identity grants, nor is the
permissions boundary of the cluster stacks' roles (it caps them; tests/unit/test_cluster_role_boundary.py).
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any

import pytest

from infra.cluster_role_boundary import BOUNDARY_EXPORT
from tests.unit.test_infra import DEFAULTS, VARIANT, resources, synthesized

# Actions that AWS authorizes on "*" only (no resource types in the Service Authorization Reference), with the doc.
UNSCOPABLE_ACTIONS = {
    "ec2:Describe*": "EC2 API reference, resource-level permissions: Describe actions support no resource types",
    "autoscaling:Describe*": "Service Authorization Reference, Amazon EC2 Auto Scaling: Describe* list no resource "
    "types",
    "elasticloadbalancing:Describe*": "Service Authorization Reference, Elastic Load Balancing V2: Describe* list "
    "no resource types (the delete handlers of the ingress controller's stacks read back with them)",
    "sts:GetCallerIdentity": "STS API reference: GetCallerIdentity needs no permission and names no resource",
    "cloudformation:ListStacks": "Service Authorization Reference, CloudFormation: ListStacks lists no resource types",
    "acm:ListCertificates": "Service Authorization Reference, ACM: ListCertificates lists no resource types",
    "states:SendTaskSuccess": "Service Authorization Reference, Step Functions: SendTaskSuccess lists no resource "
    "types (the sandbox refused the grant scoped to the roll state machine)",
    "dynamodb:ListStreams": "Service Authorization Reference, DynamoDB: ListStreams lists no resource types (CDK's "
    "grantStreamRead grants it on * for that reason)",
    "xray:PutTraceSegments": "X-Ray developer guide, IAM: trace and telemetry writes support no resource-level "
    "permissions (Lambda active tracing, Step Functions tracing)",
    "xray:PutTelemetryRecords": "as xray:PutTraceSegments",
    "xray:GetSamplingRules": "Service Authorization Reference, X-Ray: no resource types (Step Functions tracing)",
    "xray:GetSamplingTargets": "as xray:GetSamplingRules",
    # Step Functions developer guide, "Logging using CloudWatch Logs": the role of a state machine that logs needs
    # these vended-log delivery actions on Resource "*"; CloudWatch Logs offers no resource types for them.
    "logs:CreateLogDelivery": "Step Functions logging to CloudWatch Logs (vended log delivery)",
    "logs:GetLogDelivery": "Step Functions logging to CloudWatch Logs (vended log delivery)",
    "logs:UpdateLogDelivery": "Step Functions logging to CloudWatch Logs (vended log delivery)",
    "logs:DeleteLogDelivery": "Step Functions logging to CloudWatch Logs (vended log delivery)",
    "logs:ListLogDeliveries": "Step Functions logging to CloudWatch Logs (vended log delivery)",
    "logs:PutResourcePolicy": "Step Functions logging to CloudWatch Logs (vended log delivery)",
    "logs:DescribeResourcePolicies": "Step Functions logging to CloudWatch Logs (vended log delivery)",
    "logs:DescribeLogGroups": "Step Functions logging to CloudWatch Logs (vended log delivery)",
}
ADMIN_POLICIES = ("AdministratorAccess", "PowerUserAccess")
CLOUDFORMATION = "cloudformation.amazonaws.com"


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """The raw templates of both apps, by name."""
    return {
        name: synthesized(context, tmp_path_factory.mktemp(f"cdk-iam-{name}"))[1]
        for name, context in (("default", DEFAULTS), ("variant", {**DEFAULTS, **VARIANT}))
    }


def identity_statements(raw: dict[str, Any]) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(policy, the roles' logical ids, statement) for every statement of every identity policy."""
    found = []
    boundaries = {
        output["Value"]["Ref"]
        for output in raw.get("Outputs", {}).values()
        if output.get("Export", {}).get("Name") == BOUNDARY_EXPORT and "Ref" in output["Value"]
    }
    for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for name, body in resources(raw, kind).items():
            if name in boundaries:
                continue
            roles = [role["Ref"] for role in body["Properties"].get("Roles", [])]
            found += [(name, roles, s) for s in body["Properties"]["PolicyDocument"]["Statement"]]
    for name, body in resources(raw, "AWS::IAM::Role").items():
        for policy in body["Properties"].get("Policies", []):
            found += [(f"{name}/{policy['PolicyName']}", [name], s) for s in policy["PolicyDocument"]["Statement"]]
    return found


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def unscopable(action: str) -> bool:
    return any(fnmatchcase(action, pattern) for pattern in UNSCOPABLE_ACTIONS)


def assumed_by(raw: dict[str, Any], role: str) -> set[str]:
    """The service principals that may assume the role."""
    statements = raw["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    return {service for s in statements for service in as_list(s.get("Principal", {}).get("Service", []))}


def wildcard_action_grants(raw: dict[str, Any]) -> list[str]:
    """Allow statements with a wildcard in an action, or with NotAction / NotResource (wildcards in effect)."""
    return [
        f"{policy}: {json.dumps(statement)}"
        for policy, _, statement in identity_statements(raw)
        if statement["Effect"] == "Allow"
        and ("NotAction" in statement or "NotResource" in statement or "*" in "".join(as_list(statement["Action"])))
    ]


def wildcard_resource_grants(raw: dict[str, Any], *, cloudformation_role: bool) -> list[str]:
    """Allow statements on Resource "*" with an action that supports resource-level permissions, for the roles
    CloudFormation assumes (`cloudformation_role`) or for all the others."""
    violations = []
    for policy, roles, statement in identity_statements(raw):
        if statement["Effect"] != "Allow" or "*" not in as_list(statement.get("Resource", [])):
            continue
        if any(CLOUDFORMATION in assumed_by(raw, role) for role in roles) != cloudformation_role:
            continue
        scopable = [action for action in as_list(statement["Action"]) if not unscopable(action)]
        if scopable:
            violations.append(f"{policy} (roles {', '.join(roles)}): {', '.join(scopable)} on Resource *")
    return violations


# --- the checks work --------------------------------------------------------------------------------------------


def test_checks_flag_wildcards_and_spare_unscopable_actions():
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
                ]
            }
        },
    }
    statements = [
        {"Effect": "Allow", "Action": ["s3:GetObject", "ec2:DescribeInstances"], "Resource": "*"},
        {"Effect": "Allow", "Action": "xray:PutTraceSegments", "Resource": "*"},
        {"Effect": "Allow", "Action": "s3:Get*", "Resource": "arn:aws:s3:::bucket/*"},
        {"Effect": "Allow", "NotAction": "iam:*", "Resource": "arn:aws:s3:::bucket"},
        {"Effect": "Deny", "Action": "*", "Resource": "*"},
    ]
    policy = {
        "Type": "AWS::IAM::Policy",
        "Properties": {"Roles": [{"Ref": "Role"}], "PolicyDocument": {"Statement": statements}},
    }
    raw = {"Resources": {"Role": role, "Policy": policy}}
    assert wildcard_resource_grants(raw, cloudformation_role=False) == [
        "Policy (roles Role): s3:GetObject on Resource *"
    ]
    assert wildcard_resource_grants(raw, cloudformation_role=True) == []
    assert [v.split(":")[0] for v in wildcard_action_grants(raw)] == ["Policy", "Policy"]
    assert "s3:Get*" in wildcard_action_grants(raw)[0] and "NotAction" in wildcard_action_grants(raw)[1]


# --- the app ----------------------------------------------------------------------------------------------------


def test_no_statement_grants_a_wildcard_action(templates):
    for name, raw in templates.items():
        assert identity_statements(raw), f"{name}: no identity policy found"
        assert wildcard_action_grants(raw) == [], f"{name}: wildcard actions granted"


def test_resource_wildcards_only_for_actions_without_resource_level_permissions(templates):
    for name, raw in templates.items():
        assert wildcard_resource_grants(raw, cloudformation_role=False) == [], f"{name}: scopable actions on *"


def test_cloudformation_role_resource_wildcards_only_for_actions_without_resource_level_permissions(templates):
    for name, raw in templates.items():
        assert wildcard_resource_grants(raw, cloudformation_role=True) == [], f"{name}: scopable actions on *"


def test_every_unscopable_action_listed_is_granted_somewhere(templates):
    granted = {
        action
        for raw in templates.values()
        for _, _, statement in identity_statements(raw)
        if "*" in as_list(statement.get("Resource", []))
        for action in as_list(statement.get("Action", []))
    }
    unused = [pattern for pattern in UNSCOPABLE_ACTIONS if not any(fnmatchcase(a, pattern) for a in granted)]
    assert unused == [], "allowlisted actions no statement needs: drop them from UNSCOPABLE_ACTIONS"


def test_lambda_roles_have_no_administrator_or_power_user_policy(templates):
    for name, raw in templates.items():
        functions = resources(raw, "AWS::Lambda::Function")
        assert len(functions) >= 6, f"{name}: CLM's functions not found"
        for function, body in functions.items():
            role = body["Properties"]["Role"]["Fn::GetAtt"][0]
            attached = [json.dumps(arn) for arn in raw["Resources"][role]["Properties"].get("ManagedPolicyArns", [])]
            admin = [arn for arn in attached if any(policy in arn for policy in ADMIN_POLICIES)]
            assert admin == [], f"{name}: function {function} (role {role}) has {admin}"
