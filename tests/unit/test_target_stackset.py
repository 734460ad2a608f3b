"""`ClmTarget` as a StackSet template (`python -m infra.stackset_template`): self-contained (no CDK bootstrap
parameter, rule or asset), otherwise the very stack `cdk deploy ClmTarget` deploys, cfn-lint clean, inline-sized,
and deployable from its body into an account of the sandbox that was never bootstrapped."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox import accounts
from infra.cluster_permissions import CLUSTER_FUNCTIONS
from infra.functions import function_id
from infra.nag import add_checks
from infra.stackset_template import context_of, main, stackset_template
from infra.target_stack import DESCRIPTION, TARGET_STACK_NAME, ClmTargetStack
from tests.unit.test_infra import CFN_LINT_IGNORED, DEFAULTS

ROOT = Path(__file__).parents[2]
HUB = "123456789012:eu-central-1"
MEMBER, REGION = "222222222222", "eu-west-1"  # an account of the organization, never bootstrapped
CONTEXT = {**DEFAULTS, "clm:hub": HUB, "clm:manageEtcdStack": "true"}  # the etcd grants: the largest template
TEMPLATE_BODY_LIMIT = 51_200  # bytes: CloudFormation's TemplateBody (create-stack-set --template-body file://...)
OWN_POLICY = f"arn:aws:iam::{MEMBER}:policy/eks"  # a customer-managed policy: of one account
BOOTSTRAP_MARKS = ("BootstrapVersion", "hnb659fds", "cdk-bootstrap", "assets", "cdk:asset")


@pytest.fixture(scope="module")
def printed() -> str:
    """The CLI's output, run as the docs say from the repository (its cdk.json), with the etcd grants on."""
    settings = ["-c", f"clm:hub={HUB}", "-c", "clm:manageEtcdStack=true"]
    result = subprocess.run(
        [sys.executable, "-m", "infra.stackset_template", *settings],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def stackset(printed: str) -> dict[str, Any]:
    return json.loads(printed)


@pytest.fixture(scope="module")
def deployed_by_cdk(tmp_path_factory) -> dict[str, Any]:
    """The same stack as app.py holds it for `cdk deploy ClmTarget` (DefaultStackSynthesizer, the bootstrap's)."""
    app = cdk.App(context=CONTEXT, outdir=str(tmp_path_factory.mktemp("cdk-target")))
    stack = ClmTargetStack(app, TARGET_STACK_NAME, description=DESCRIPTION)
    add_checks(app)
    return json.loads(Path(app.synth().get_stack_artifact(stack.artifact_id).template_full_path).read_text())


def test_the_stackset_template_has_no_bootstrap_parameter_rule_or_asset(stackset, deployed_by_cdk):
    assert set(deployed_by_cdk) == {"Description", "Parameters", "Rules", "Resources", "Outputs"}  # the bootstrap's
    assert set(stackset) == {"Description", "Resources", "Outputs"}
    text = json.dumps(stackset)
    assert not [mark for mark in BOOTSTRAP_MARKS if mark in text]
    assert not [name for name, body in stackset["Resources"].items() if body["Type"].startswith("Custom::")]
    assert {body["Type"] for body in stackset["Resources"].values()} == {
        "AWS::IAM::ManagedPolicy",
        "AWS::IAM::Policy",
        "AWS::IAM::Role",
        "AWS::S3::Bucket",
        "AWS::S3::BucketPolicy",
    }  # nothing that needs code (a Lambda-backed custom resource would be an asset)


def test_the_synthesis_writes_no_asset_manifest(tmp_path):
    stackset_template(CONTEXT, tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    artifacts = manifest["artifacts"].values()
    assert "cdk:asset-manifest" not in {artifact["type"] for artifact in artifacts}
    [stack] = [artifact for artifact in artifacts if artifact["type"] == "aws:cloudformation:stack"]
    # the CDK CLI would upload the template (an asset) and check the bootstrap's version; a StackSet takes the body
    assert not {"requiresBootstrapStackVersion", "stackTemplateAssetObjectUrl"} & set(stack["properties"])


def test_the_stackset_template_is_the_cdk_deployed_stack_without_its_bootstrap_check(stackset, deployed_by_cdk):
    """Same roles, policies, buckets and outputs, byte for byte: one template for every member account and region,
    as each names its resources by AWS::AccountId and AWS::Region."""
    assert stackset["Resources"] == deployed_by_cdk["Resources"]
    assert stackset["Outputs"] == deployed_by_cdk["Outputs"]
    assert stackset["Description"] == deployed_by_cdk["Description"] == DESCRIPTION
    text = json.dumps(stackset["Resources"])
    assert "123456789012" in text  # the hub, in the trust policies
    assert "222222222222" not in text and "eu-west-1" not in text and '"eu-central-1' not in text


def test_the_stackset_template_passes_cfn_lint_and_fits_an_inline_body(printed, tmp_path):
    assert len(printed.encode()) < TEMPLATE_BODY_LIMIT
    path = tmp_path / "clm-target.json"
    path.write_text(printed)
    cfn_lint = [str(Path(sys.executable).with_name("cfn-lint")), "--ignore-checks", *CFN_LINT_IGNORED]
    result = subprocess.run([*cfn_lint, "--", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_context_is_cdk_json_then_each_pair(tmp_path):
    settings = tmp_path / "cdk.json"
    settings.write_text(json.dumps({"app": "python3 app.py", "context": {"clm:clusterRolePath": "/a/", "x": 1}}))
    assert context_of(settings, ["clm:clusterRolePath=/b/", "clm:hub=1:2=3"]) == {
        "clm:clusterRolePath": "/b/",
        "x": 1,
        "clm:hub": "1:2=3",
    }
    assert context_of(tmp_path / "absent.json", []) == {}
    with pytest.raises(ValueError, match="'clm:hub' is not key=value"):
        context_of(settings, ["clm:hub"])


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        ([], r"clm:hub: '' is not <12-digit account>:<region>"),
        (["-c", "clm:hub=1234"], r"clm:hub: '1234' is not"),
        (["-c", f"clm:hub={HUB}", "-c", "clm:clusterRolePath=clm"], r"clm:clusterRolePath: 'clm' is not an IAM path"),
        (["-c", "clm:hub"], r"-c 'clm:hub' is not key=value"),
        (
            ["-c", f"clm:hub={HUB}", "-c", f"clm:clusterStackPolicyArns={OWN_POLICY}"],
            r"clm:clusterStackPolicyArns: arn:aws:iam::222222222222:policy/eks is a policy of account 222222222222",
        ),
        (
            ["-c", f"clm:hub={HUB}", "-c", f"clm:clusterRoleBoundaryPolicyArn={OWN_POLICY}"],
            r"clm:clusterRoleBoundaryPolicyArn: .* of account 222222222222 only, and a StackSet template serves every",
        ),
    ],
)
def test_a_missing_or_bad_setting_exits_2_naming_it(argv, reason, capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--cdk-json", str(tmp_path / "none.json")])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert re.search(reason, err), err


@pytest.mark.filterwarnings("ignore:Tried to parse AWS")  # moto keeps no bucket policy
@pytest.mark.filterwarnings("ignore:Tried to parse AWS")  # moto keeps no bucket policy
def test_a_stack_from_the_template_body_deploys_in_an_account_never_bootstrapped(printed, deployed_by_cdk, sandbox_aws):
    """As a StackSet's stack instance does: the body alone, in a member account with no CDKToolkit, as that account's
    admin (AdministratorAccess, judged); the roles and buckets land there, named for it. The account lacks the
    bootstrap's version parameter, which the CDK-deployed form reads."""
    accounts.add_account(MEMBER)
    credentials = accounts.admin_credentials(sandbox_aws.client("sts"), MEMBER)
    session = boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials["AWS_SESSION_TOKEN"],
        region_name=REGION,
    )
    cloudformation = session.client("cloudformation")
    bootstrap = deployed_by_cdk["Parameters"]["BootstrapVersion"]["Default"]  # what the CDK-deployed form reads
    with pytest.raises(ClientError, match="ParameterNotFound"):
        session.client("ssm").get_parameter(Name=bootstrap)

    cloudformation.create_stack(StackName="clm-target", TemplateBody=printed, Capabilities=["CAPABILITY_NAMED_IAM"])
    [stack] = cloudformation.describe_stacks(StackName="clm-target")["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack["Outputs"]}
    assert outputs["Hub"] == HUB
    assert (outputs["NodeFilesBucketName"], outputs["TemplatesBucketName"]) == (
        f"cluster-lifecycle-manager-{MEMBER}-{REGION}",
        f"clm-templates-{MEMBER}-{REGION}",
    )
    for folder in CLUSTER_FUNCTIONS:
        assert outputs[f"{function_id(folder)}TargetRoleArn"] == (
            f"arn:aws:iam::{MEMBER}:role/clm-target-{REGION}-{folder}"
        )
    assert outputs["ClusterStackRoleArn"] == f"arn:aws:iam::{MEMBER}:role/clm-target-{REGION}-cloudformation"
    assert [summary["StackName"] for summary in cloudformation.list_stacks()["StackSummaries"]] == ["clm-target"]
    from moto.iam.models import iam_backends  # the sandbox's IAM cannot judge GetRole by name (RoleNameWithPath)

    [stacks] = [role for role in iam_backends[MEMBER]["aws"].roles.values() if role.name.endswith(f"{REGION}-stacks")]
    trust = json.loads(stacks.assume_role_policy_document)
    assert [statement["Principal"] for statement in trust["Statement"]] == [{"AWS": f"arn:aws:iam::{HUB[:12]}:root"}]
