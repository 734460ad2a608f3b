"""The target stack deployed as users deploy it, into another account of the sandbox: the real CDK CLI bootstraps
and deploys the hub (`Clm`, with clm:targetAccounts) into 123456789012/eu-central-1 and `ClmTarget` into
222222222222/eu-west-1, acting as that account (a session of its admin role), with IAM enforced and no refusal.
The target's roles and buckets are in 222222222222 only; the hub's stacks function assumes its target role there
and reads stacks; the hub's kube function (the trust's aws:PrincipalArn does not match) and a role of another
account may not assume it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from clm.target_sessions import TargetSessions
from clm.targets import Target, TargetPolicy, TargetRefused
from clm_sandbox import accounts
from clm_sandbox.deploy import cli
from clm_sandbox.iam import principals, record
from clm_sandbox.moto_server import moto_server
from infra.cluster_permissions import CLUSTER_FUNCTIONS
from tests.integration.test_deploy import functions

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

HUB = Target(accounts.MANAGEMENT_ACCOUNT, "eu-central-1")
TARGET = Target("222222222222", "eu-west-1")
OTHER = "333333333333"
CLUSTER = f"aws:{TARGET.account}:{TARGET.region}:kube-1"
STACKS_ROLE = f"arn:aws:iam::{TARGET.account}:role/clm-target-{TARGET.region}-stacks"


@pytest.fixture
def endpoint(sandbox_aws: boto3.Session) -> Iterator[str]:
    """moto's server in this process, over the test's own in-process moto (fresh, patched)."""
    record.clear()
    with moto_server() as url:
        yield url


def _roles(account: str) -> set[str]:
    from moto.iam.models import iam_backends

    return {role.name for role in iam_backends[account]["aws"].roles.values()}


def _buckets(account: str) -> set[str]:
    from moto.s3.models import s3_backends

    return set(s3_backends[account]["aws"].buckets)


def _stacks(account: str, region: str) -> dict[str, str]:
    """The live stacks of the account and region, by name, with their status."""
    from moto.cloudformation.models import cloudformation_backends

    return {stack.name: stack.status for stack in cloudformation_backends[account][region].stacks.values()}


def _sts(credentials: dict[str, str]) -> Any:
    return boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials["AWS_SESSION_TOKEN"],
        region_name=HUB.region,
    ).client("sts")


def _function_sts(function: dict[str, Any]) -> Any:
    """The STS client of a session of the deployed hub function's role, as the function has it."""
    return _sts(principals.role_session(function["Role"], f"clm-{function['FunctionName']}", HUB.region))


def _cdk_role(kind: str) -> str:
    """The ARN of a CDK bootstrap role of the target's account and region (`deploy-role`, ...)."""
    return f"arn:aws:iam::{TARGET.account}:role/cdk-hnb659fds-{kind}-{TARGET.account}-{TARGET.region}"


def _refusals() -> list[record.Judgement]:
    return [judgement for judgement in record.judged() if judgement.refused]


@pytest.mark.iam_refusals  # the kube function's and another account's AssumeRole, on purpose
def test_clm_target_deploys_into_another_account_and_only_the_hubs_function_roles_assume_its_roles(
    sandbox_aws: boto3.Session, endpoint: str, tmp_path: Path
) -> None:
    cli.bootstrap(endpoint)
    cli.deploy(endpoint, tmp_path / "hub", {"clm:targetAccounts": TARGET.account})
    hub_roles, hub_buckets = _roles(HUB.account), _buckets(HUB.account)
    accounts.add_account(TARGET.account)
    assert cli.bootstrap(endpoint, TARGET.account, TARGET.region) is True
    assert cli.bootstrap(endpoint, TARGET.account, TARGET.region) is False  # once per account and region
    outputs = cli.deploy_target(endpoint, tmp_path / "target", TARGET.account, TARGET.region)

    assert _refusals() == []
    judged = {(judgement.role_arn, judgement.action) for judgement in record.judged()}
    assert {
        (accounts.admin_role_arn(TARGET.account), "cloudformation:CreateChangeSet"),  # the CLI's bootstrap
        (_cdk_role("deploy-role"), "cloudformation:CreateStack"),
        (_cdk_role("file-publishing-role"), "s3:PutObject"),
        (_cdk_role("cfn-exec-role"), "iam:CreateRole"),
    } <= judged
    assert outputs["Hub"] == f"{HUB.account}:{HUB.region}"
    assert _stacks(TARGET.account, TARGET.region) == {"CDKToolkit": "CREATE_COMPLETE", "ClmTarget": "CREATE_COMPLETE"}
    assert set(_stacks(HUB.account, HUB.region)) == {"CDKToolkit", "Clm"}
    assert _stacks(HUB.account, TARGET.region) == {}
    target_roles = {f"clm-target-{TARGET.region}-{folder}" for folder in CLUSTER_FUNCTIONS}
    assert target_roles <= _roles(TARGET.account)
    assert _roles(HUB.account) == hub_roles  # the target stack made no role in the hub's account
    buckets = {outputs["NodeFilesBucketName"], outputs["TemplatesBucketName"]}
    assert buckets == {
        f"cluster-lifecycle-manager-{TARGET.account}-{TARGET.region}",
        f"clm-templates-{TARGET.account}-{TARGET.region}",
    }
    assert buckets <= _buckets(TARGET.account)
    assert _buckets(HUB.account) == hub_buckets

    hub = functions(sandbox_aws)
    policy = TargetPolicy.from_env(hub["Stacks"]["Environment"]["Variables"], home=HUB.account)
    assert policy.role_arn(TARGET) == STACKS_ROLE
    cloudformation = TargetSessions(policy, _function_sts(hub["Stacks"])).client("cloudformation", CLUSTER, TARGET)
    listed = {summary["StackName"] for summary in cloudformation.list_stacks()["StackSummaries"]}
    assert listed == {"CDKToolkit", "ClmTarget"}
    assert cloudformation.describe_stacks(StackName="ClmTarget")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    assert _refusals() == []

    kube = _function_sts(hub["Kube"])
    own = TargetPolicy.from_env(hub["Kube"]["Environment"]["Variables"], home=HUB.account)
    TargetSessions(own, kube).client("sts", CLUSTER, TARGET)  # its own target role: allowed
    with pytest.raises(TargetRefused, match=f"the hub cannot assume {STACKS_ROLE} \\(AccessDenied\\)"):
        TargetSessions(policy, kube).client("cloudformation", CLUSTER, TARGET)
    [refused] = _refusals()
    assert (refused.role_arn, refused.action, refused.resource) == (hub["Kube"]["Role"], "sts:AssumeRole", STACKS_ROLE)
    assert refused.reason.startswith("no resource-based policy allows the sts:AssumeRole action")  # the trust's

    accounts.add_account(OTHER)
    other = _sts(accounts.admin_credentials(sandbox_aws.client("sts"), OTHER))  # AdministratorAccess in 333333333333
    with pytest.raises(TargetRefused, match=f"the hub cannot assume {STACKS_ROLE}"):
        TargetSessions(policy, other).client("cloudformation", CLUSTER, TARGET)
    assert [(j.role_arn, j.resource) for j in _refusals()][1:] == [(accounts.admin_role_arn(OTHER), STACKS_ROLE)]
