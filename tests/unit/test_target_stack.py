"""The target stack `ClmTarget` synthesized for a hub (context clm:hub), against the hub's `Clm` stack: its roles
carry exactly the cluster-side statements of the hub's functions and trust only them (docs/fleet.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from infra.cluster_permissions import CLUSTER_FUNCTIONS
from infra.context import ContextError, Hub
from infra.functions import function_id
from infra.target_stack import ClmTargetStack
from tests.unit.test_infra import (
    CFN_LINT_IGNORED,
    DEFAULTS,
    actions_of,
    function_named,
    policy_statements,
    resources,
    synthesized,
)

HUB = {"clm:hub": "123456789012:eu-central-1"}
ETCD = {"clm:manageEtcdStack": True}  # the etcd grants are cluster-side too
ACCOUNTS = {"clm:targetAccounts": "222222222222,333333333333", "clm:targetInclude": "[23]{12}"}
# What only the hub does: its registry, configuration, renderings, state machines, event bus (rollouts' events),
# secrets, logs and traces.
HUB_SERVICES = {"dynamodb", "s3", "kms", "states", "events", "secretsmanager", "logs", "xray", "sts"}
TEMPLATES = ["s3:PutObject", "s3:GetObject"]  # the target's own templates bucket (the hub's: its artefact bucket)


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> dict[str, Any]:
    return synthesized({**DEFAULTS, **ETCD, **ACCOUNTS}, tmp_path_factory.mktemp("cdk-hub"))[1]


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    return synthesized({**HUB, **ETCD}, tmp_path_factory.mktemp("cdk-target"), ClmTargetStack, "ClmTarget")


def target_role(raw: dict[str, Any], folder: str) -> tuple[str, dict[str, Any]]:
    [(name, body)] = [
        (name, body)
        for name, body in resources(raw, "AWS::IAM::Role").items()
        if name.startswith(function_id(folder) + "TargetRole")
    ]
    return name, body


def text(value: Any) -> str:
    """A resolved ARN or name with its pseudo parameters as `<AWS::Region>`."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(text(part) for part in value["Fn::Join"][1])
    return f"<{value['Ref']}>" if isinstance(value, dict) else value


@pytest.mark.parametrize("folder", CLUSTER_FUNCTIONS)
def test_a_target_role_per_function_named_for_the_region_trusting_only_that_function_of_the_hub(hub, target, folder):
    _, raw, _ = target
    _, role = target_role(raw, folder)
    assert text(role["Properties"]["RoleName"]) == f"clm-target-<AWS::Region>-{folder}"
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert set(trust) == {"Action", "Condition", "Effect", "Principal"}
    assert (trust["Action"], trust["Effect"]) == ("sts:AssumeRole", "Allow")
    assert text(trust["Principal"]["AWS"]) == "arn:<AWS::Partition>:iam::123456789012:root"
    [(operator, keys)] = trust["Condition"].items()
    [(key, pattern)] = keys.items()
    assert (operator, key) == ("ArnLike", "aws:PrincipalArn")
    # CloudFormation names the hub's roles `Clm-<logical id>-<suffix>`: the pattern matches this function's only.
    named = {
        logical: f"arn:<AWS::Partition>:iam::123456789012:role/Clm-{logical}-AbCdEf123456"
        for logical in resources(hub, "AWS::IAM::Role")
    }
    assert [logical for logical, arn in named.items() if fnmatchcase(arn, text(pattern))] == [
        next(logical for logical in named if logical.startswith(function_id(folder) + "Role"))
    ]


@pytest.mark.parametrize("folder", CLUSTER_FUNCTIONS)
def test_a_target_role_carries_exactly_the_cluster_side_statements_of_its_function_in_the_hub(hub, target, folder):
    """Every statement of the target role is one the hub's function holds for its own account and region (the same
    ARNs: both stacks scope by AWS::AccountId and AWS::Region, and name the node-files bucket and ClusterStackRole
    alike); the function's others are hub-side only."""
    _, raw, _ = target
    name, _ = target_role(raw, folder)
    in_target = [json.dumps(s, sort_keys=True) for s in policy_statements(raw, name)]
    in_hub = [json.dumps(s, sort_keys=True) for s in policy_statements(hub, function_id(folder) + "Role")]
    own = [
        s
        for s in in_target
        if folder == "stacks" and "Templates" in s and sorted(json.loads(s)["Action"]) == sorted(TEMPLATES)
    ]
    assert len(own) == (folder == "stacks")
    assert in_target and not [s for s in in_target if s not in in_hub and s not in own]
    hub_side = [json.loads(s) for s in in_hub if s not in in_target]
    assert {action.split(":")[0] for action in actions_of(hub_side)} <= HUB_SERVICES
    assert not [s for s in hub_side if "NodeFiles" in json.dumps(s) or "ClusterStackRole" in json.dumps(s)]
    assert actions_of(hub_side) & {"kms:Encrypt", "kms:DescribeKey", "sts:GetCallerIdentity"} == set()
    [assume] = [s for s in hub_side if s["Action"] == "sts:AssumeRole"]
    assert sorted(text(arn) for arn in assume["Resource"]) == [
        f"arn:<AWS::Partition>:iam::{account}:role/clm-target-*-{folder}"
        for account in ("222222222222", "333333333333", "<AWS::AccountId>")  # the hub's own: its other regions
    ]


def test_the_hub_tells_its_functions_the_accounts_and_the_role(hub):
    for folder in CLUSTER_FUNCTIONS:
        variables = function_named(hub, folder)[1]["Properties"]["Environment"]["Variables"]
        assert {name: value for name, value in variables.items() if name.startswith("CLM_TARGET_")} == {
            "CLM_TARGET_ACCOUNTS": "222222222222,333333333333",
            "CLM_TARGET_INCLUDE": "[23]{12}",
            "CLM_TARGET_ROLE": f"clm-target-{{region}}-{folder}",
        }


def test_the_buckets_are_named_private_encrypted_and_tls_only(target):
    _, raw, _ = target
    buckets = {text(body["Properties"]["BucketName"]): body for body in resources(raw, "AWS::S3::Bucket").values()}
    assert set(buckets) == {
        "cluster-lifecycle-manager-<AWS::AccountId>-<AWS::Region>",
        "clm-templates-<AWS::AccountId>-<AWS::Region>",
    }
    for body in buckets.values():
        properties = body["Properties"]
        assert body["DeletionPolicy"] == "Retain"
        [encryption] = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert encryption["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
        assert set(properties["PublicAccessBlockConfiguration"].values()) == {True}
        assert properties["VersioningConfiguration"] == {"Status": "Enabled"}
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"] for p in resources(raw, "AWS::S3::BucketPolicy").values()
    ]
    assert len(policies) == 2
    for statements in policies:
        [tls] = [s for s in statements if s["Effect"] == "Deny"]
        assert tls["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_the_cluster_stack_role_keeps_its_boundary_and_leaves_the_targets_buckets_alone(target):
    _, raw, _ = target
    [(name, role)] = [(n, b) for n, b in resources(raw, "AWS::IAM::Role").items() if n.startswith("ClusterStackRole")]
    assert text(role["Properties"]["RoleName"]) == "clm-target-<AWS::Region>-cloudformation"  # the hub passes it
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "cloudformation.amazonaws.com"
    }
    statements = policy_statements(raw, name)
    [boundary] = [s for s in statements if s.get("Sid") == "NoRoleWithoutBoundary"]
    assert boundary["Condition"]["StringNotEquals"]["iam:PermissionsBoundary"]["Ref"].startswith(
        "ClusterStackRoleBoundary"
    )
    [buckets] = [s for s in statements if s.get("Sid") == "NotClmsBuckets"]
    assert len(buckets["Resource"]) == 4  # both buckets and their objects
    assert {s.get("Sid") for s in statements} >= {"NoIamIdentityChanges", "NotClmsBuckets", "KeepBoundaries"}


def test_cdk_nag_and_cfn_lint_are_clean(target):
    _, _, path = target
    report = path.parent / "validation-report.json"
    assert not report.exists() or all(
        plugin["conclusion"] == "success" for plugin in json.loads(report.read_text())["pluginReports"]
    )
    cfn_lint = [str(Path(sys.executable).with_name("cfn-lint")), "--ignore-checks", *CFN_LINT_IGNORED]
    result = subprocess.run([*cfn_lint, "--", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("hub", [None, "123456789012", "1234:eu-central-1", "123456789012:Frankfurt", 123456789012])
def test_a_missing_or_malformed_hub_fails_naming_the_key(hub):
    context = {} if hub is None else {"clm:hub": hub}
    with pytest.raises(ContextError, match=r"^clm:hub: "):
        Hub.of(cdk.App(context=context))
    with pytest.raises(ContextError, match=r"^clm:hub: "):
        ClmTargetStack(cdk.App(context=context), "ClmTarget")


def test_the_hub_is_read_from_context():
    assert Hub.of(cdk.App(context=HUB)) == Hub("123456789012", "eu-central-1")


@pytest.mark.parametrize("path", ["/clm-cluster/", "/"])
def test_a_role_a_cluster_stack_creates_cannot_pass_for_the_hubs_function(target, sandbox_aws, monkeypatch, path):
    """Attack: a config writer's cluster stack (the one role creator CLM runs in the hub's account) makes a role named
    like the hub's stacks function role. It may create roles only under clm:clusterRolePath, so the sandbox's IAM
    refuses it the target role; the same name at the root path (only the hub's own deployment makes those) passes."""
    import boto3
    from botocore.exceptions import ClientError

    from clm_sandbox.iam import principals

    _, raw, _ = target
    _, role = target_role(raw, "stacks")
    trust = resolved(role["Properties"]["AssumeRolePolicyDocument"])
    monkeypatch.setenv("MOTO_ACCOUNT_ID", "222222222222")
    iam = sandbox_aws.client("iam")
    iam.create_role(RoleName="clm-target-eu-west-1-stacks", AssumeRolePolicyDocument=json.dumps(trust))
    monkeypatch.delenv("MOTO_ACCOUNT_ID")
    allow = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}]}
    anyone = {
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    }
    made = iam.create_role(
        RoleName="Clm-StacksFunctionRoleAbCd-X1", Path=path, AssumeRolePolicyDocument=json.dumps(anyone)
    )
    iam.put_role_policy(RoleName=made["Role"]["RoleName"], PolicyName="p", PolicyDocument=json.dumps(allow))
    credentials = principals.role_session(made["Role"]["Arn"], "attacker", "eu-central-1")
    sts = boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials["AWS_SESSION_TOKEN"],
        region_name="eu-central-1",
    ).client("sts")
    target_arn = "arn:aws:iam::222222222222:role/clm-target-eu-west-1-stacks"
    try:
        sts.assume_role(RoleArn=target_arn, RoleSessionName="attack")
        assumed = True
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "AccessDenied", exc
        assumed = False
    assert assumed == (path == "/")


def resolved(value: Any) -> Any:
    """A synthesized document with its joins and pseudo parameters resolved for the sandbox's partition."""
    if isinstance(value, dict) and ("Fn::Join" in value or "Ref" in value):
        return text(value).replace("<AWS::Partition>", "aws")
    if isinstance(value, dict):
        return {key: resolved(item) for key, item in value.items()}
    return [resolved(item) for item in value] if isinstance(value, list) else value
