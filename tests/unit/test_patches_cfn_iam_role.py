"""A CloudFormation role carries the managed policies its ManagedPolicyArns name, AWS's own among them (as the CDK
bootstrap's deploy role carries AWSCloudFormationReadOnlyAccess), and an update attaches and detaches as AWS does;
the sandbox's IAM judges the role's sessions by them."""

from __future__ import annotations

import copy
import json

import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox.iam import principals
from clm_sandbox.patches import cfn_iam_role

READ_ONLY = "arn:aws:iam::aws:policy/AWSCloudFormationReadOnlyAccess"
TRUST = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": "123456789012"}, "Action": "sts:AssumeRole"}]}
TEMPLATE = {
    "Resources": {
        "Tables": {
            "Type": "AWS::IAM::ManagedPolicy",
            "Properties": {
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": "dynamodb:ListTables", "Resource": "*"}],
                }
            },
        },
        "Deploy": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "RoleName": "deploy",
                "AssumeRolePolicyDocument": TRUST,
                "ManagedPolicyArns": [READ_ONLY, {"Ref": "Tables"}],
            },
        },
    }
}


def _attached(iam) -> set[str]:
    return {p["PolicyName"] for p in iam.list_attached_role_policies(RoleName="deploy")["AttachedPolicies"]}


def _session(arn: str) -> boto3.Session:
    credentials = principals.role_session(arn, "deployer", "eu-central-1")
    return boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials["AWS_SESSION_TOKEN"],
        region_name="eu-central-1",
    )


def test_managed_policies_are_attached_on_create_and_follow_updates(sandbox_aws: boto3.Session) -> None:
    cfn_iam_role.install()
    cfn_iam_role.install()
    cfn, iam = sandbox_aws.client("cloudformation"), sandbox_aws.client("iam")
    cfn.create_stack(StackName="roles", TemplateBody=json.dumps(TEMPLATE), Capabilities=["CAPABILITY_NAMED_IAM"])
    assert "AWSCloudFormationReadOnlyAccess" in _attached(iam) and len(_attached(iam)) == 2
    role = _session(iam.get_role(RoleName="deploy")["Role"]["Arn"])
    assert role.client("cloudformation").describe_stacks(StackName="roles")["Stacks"]
    assert "TableNames" in role.client("dynamodb").list_tables()

    only_tables = copy.deepcopy(TEMPLATE)
    only_tables["Resources"]["Deploy"]["Properties"]["ManagedPolicyArns"] = [{"Ref": "Tables"}]
    cfn.update_stack(StackName="roles", TemplateBody=json.dumps(only_tables), Capabilities=["CAPABILITY_NAMED_IAM"])
    assert "AWSCloudFormationReadOnlyAccess" not in _attached(iam) and len(_attached(iam)) == 1
    with pytest.raises(ClientError) as refused:
        role.client("cloudformation").describe_stacks(StackName="roles")
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
