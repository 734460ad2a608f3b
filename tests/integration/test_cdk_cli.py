"""CLM deployed as users deploy it: the real CDK CLI (tools/cdk, the version docs/deploy.md pins) bootstraps the
sandbox and deploys the app into moto's server, with IAM enforced for the bootstrap's roles (the deploy role, the
file publishing role and CloudFormation's execution role); a second `cdk deploy` after a change of one handler
and of the `clm` package updates that function's code and every function's layer in place, and no other code."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from clm_sandbox.deploy import cli
from clm_sandbox.iam import record
from clm_sandbox.moto_server import moto_server
from infra.layer_build import LAMBDA_VERSION
from tests.integration.test_deploy import FUNCTIONS, functions

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

ROOT = Path(__file__).resolve().parents[2]
APP = ("app.py", "cdk.json", "infra", "lambdas", "statemachines", "layers", "requirements.txt")
CDK_ROLES = ("deploy-role", "file-publishing-role", "cfn-exec-role")
CHANGED_HANDLER = 'def handler(event, context):\n    return {"redeployed": True}\n'


@pytest.fixture
def endpoint(sandbox_aws: boto3.Session) -> Iterator[str]:
    """moto's server in this process, over the test's own in-process moto (fresh, patched)."""
    record.clear()
    with moto_server() as url:
        yield url


@pytest.fixture
def app_copy(tmp_path: Path) -> Path:
    """The CDK app as a user's checkout holds it (its lock files too), to change without touching the repository."""
    copy = tmp_path / "app"
    for name in (*APP, "requirements-layer.lock"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            copy.mkdir(exist_ok=True)
            shutil.copy2(source, copy / name)
    return copy


def _code(session: boto3.Session) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """Per function: its ARN, its code's hash and its layers."""
    return {
        name: (f["FunctionArn"], f["CodeSha256"], tuple(layer["Arn"] for layer in f["Layers"]))
        for name, f in functions(session).items()
    }


def _calls_by_role(judgements: list[record.Judgement]) -> dict[str, set[str]]:
    """The actions each CDK bootstrap role was judged for, by the role's kind (`deploy-role`, ...)."""
    found: dict[str, set[str]] = {kind: set() for kind in CDK_ROLES}
    for judgement in judgements:
        for kind in CDK_ROLES:
            if f"cdk-hnb659fds-{kind}-" in judgement.role_arn:
                found[kind].add(judgement.action)
    return found


def test_cdk_bootstrap_and_deploy_create_clm_then_a_changed_handler_is_updated_in_place(
    sandbox_aws: boto3.Session, endpoint: str, app_copy: Path, tmp_path: Path
) -> None:
    assert cli.bootstrap(endpoint) is True
    assert cli.bootstrap(endpoint) is False  # once per sandbox
    outputs = cli.deploy(endpoint, tmp_path / "cdk.out", {"clm:logRetentionDays": 7}, app_dir=app_copy)

    assert outputs["RegistryTableName"] == "clm-registry"
    assert outputs["ProvisionStateMachineArn"].endswith(":stateMachine:clm-provision")
    stack = sandbox_aws.client("cloudformation").describe_stacks(StackName="Clm")["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    assert stack["RoleARN"].endswith(":role/cdk-hnb659fds-cfn-exec-role-123456789012-eu-central-1")
    found = functions(sandbox_aws)
    assert set(found) == set(FUNCTIONS)
    for function in found.values():
        assert function["Runtime"] == f"python{LAMBDA_VERSION}"
        assert function["Environment"]["Variables"]["CLM_ARTEFACT_BUCKET"] == outputs["ArtefactBucketName"]
    groups = sandbox_aws.client("logs").describe_log_groups()["logGroups"]
    assert {group.get("retentionInDays") for group in groups if "Function" in group["logGroupName"]} == {7}
    judged = record.judged()
    assert [j for j in judged if j.refused] == []
    by_role = _calls_by_role(judged)
    assert {"ssm:GetParameter", "cloudformation:CreateStack", "iam:PassRole"} <= by_role["deploy-role"]
    assert {"s3:GetBucketLocation", "s3:PutObject"} <= by_role["file-publishing-role"]
    assert {"lambda:CreateFunction", "states:CreateStateMachine"} <= by_role["cfn-exec-role"]

    before = _code(sandbox_aws)
    (app_copy / "lambdas" / "run" / "handler.py").write_text(CHANGED_HANDLER)
    package = app_copy / "layers" / "clm" / "python" / "clm" / "__init__.py"
    package.write_text(package.read_text() + "# changed: a new layer version\n")
    record.clear()
    cli.deploy(endpoint, tmp_path / "cdk.out", {"clm:logRetentionDays": 7}, app_dir=app_copy)

    after = _code(sandbox_aws)
    assert sandbox_aws.client("cloudformation").describe_stacks(StackName="Clm")["Stacks"][0]["StackStatus"] == (
        "UPDATE_COMPLETE"
    )
    assert {name for name in FUNCTIONS if after[name][1] != before[name][1]} == {"Run"}  # code
    assert {after[name][0] for name in FUNCTIONS} == {before[name][0] for name in FUNCTIONS}  # same functions
    [old_layer], [new_layer] = ({layer for code in codes.values() for layer in code[2]} for codes in (before, after))
    assert new_layer != old_layer  # every function on the one new layer version (moto names it anew, AWS numbers it)
    arn = after["Run"][0]
    answer = sandbox_aws.client("lambda").invoke(FunctionName=arn, Payload=b"{}")
    assert json.loads(answer["Payload"].read()) == {"redeployed": True}
    assert [j for j in record.judged() if j.refused] == []
