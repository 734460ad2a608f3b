"""`Ref: AWS::NoValue` as a list element removes it, as CloudFormation does: a role's trust policy written as the CDK
bootstrap template writes it (a statement under `Fn::If` that is false) has no `null` statement, and a judged
session's AssumeRole of the role is judged (it failed with a TypeError in the sandbox's IAM)."""

from __future__ import annotations

import json

import boto3

from tests.unit.test_sandbox_iam_kms import session_allowed

SAME_ACCOUNT = {"Effect": "Allow", "Principal": {"AWS": {"Ref": "AWS::AccountId"}}, "Action": "sts:AssumeRole"}
TRUSTED = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::333333333333:root"}, "Action": "sts:AssumeRole"}
NO_VALUE = {"Ref": "AWS::NoValue"}
TEMPLATE = {
    "Conditions": {"HasTrustedAccounts": {"Fn::Equals": ["", "333333333333"]}},
    "Resources": {
        "Deploy": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "RoleName": "deploy",
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {**SAME_ACCOUNT, "Condition": {"Fn::If": ["HasTrustedAccounts", {}, NO_VALUE]}},
                        {"Fn::If": ["HasTrustedAccounts", TRUSTED, NO_VALUE]},
                    ],
                },
            },
        }
    },
}


def test_a_no_value_list_element_is_removed_and_the_trust_policy_judged(sandbox_aws: boto3.Session) -> None:
    sandbox_aws.client("cloudformation").create_stack(
        StackName="bootstrap", TemplateBody=json.dumps(TEMPLATE), Capabilities=["CAPABILITY_NAMED_IAM"]
    )
    role = sandbox_aws.client("iam").get_role(RoleName="deploy")["Role"]
    assert role["AssumeRolePolicyDocument"]["Statement"] == [{**SAME_ACCOUNT, "Principal": {"AWS": "123456789012"}}]
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": role["Arn"]}])
    assumed = caller.client("sts").assume_role(RoleArn=role["Arn"], RoleSessionName="cli")
    assert assumed["AssumedRoleUser"]["Arn"] == "arn:aws:sts::123456789012:assumed-role/deploy/cli"
