"""The definition of a CloudFormation state machine: the three ways to give it, and its substitutions."""

from __future__ import annotations

import json
import re

import boto3
import pytest

from clm_sandbox.patches.cfn_stepfunctions import DefinitionError, definition, substitute

ACCOUNT, REGION = "123456789012", "eu-central-1"


def test_substitute_replaces_defined_placeholders_only() -> None:
    text = '{"Resource": "${Fn}", "Seconds": ${Wait}, "Flag": ${On}, "Other": "${Undefined}"}'
    assert json.loads(substitute(text, {"Fn": "arn:fn", "Wait": 5, "On": True})) == {
        "Resource": "arn:fn",
        "Seconds": 5,
        "Flag": True,
        "Other": "${Undefined}",
    }


def test_definition_object_keeps_its_nulls_and_is_substituted() -> None:
    marker = "\x00clm-sandbox-null\x00"  # how a null looks after moto's template cleaning under the patch
    properties = {"Definition": {"StartAt": "T", "States": {"T": {"Resource": "${Fn}", "ResultPath": marker}}}}
    properties["DefinitionSubstitutions"] = {"Fn": "arn:fn"}
    assert json.loads(definition(properties, ACCOUNT, REGION, "wf")) == {
        "StartAt": "T",
        "States": {"T": {"Resource": "arn:fn", "ResultPath": None}},
    }


def test_definition_string_wins(sandbox_aws: boto3.Session) -> None:
    properties = {"DefinitionString": '{"a": "${X}"}', "DefinitionSubstitutions": {"X": "y"}}
    assert definition(properties, ACCOUNT, REGION, "wf") == '{"a": "y"}'


def test_definition_from_s3_may_be_yaml(sandbox_aws: boto3.Session) -> None:
    s3 = sandbox_aws.client("s3")
    s3.create_bucket(Bucket="defs", CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket="defs", VersioningConfiguration={"Status": "Enabled"})
    first = s3.put_object(
        Bucket="defs", Key="wf.yaml", Body=b"StartAt: P\nStates:\n  P: {Type: Pass, Result: '${V}', End: true}\n"
    )
    s3.put_object(Bucket="defs", Key="wf.yaml", Body=b"{}")
    location = {"Bucket": "defs", "Key": "wf.yaml", "Version": first["VersionId"]}
    properties = {"DefinitionS3Location": location, "DefinitionSubstitutions": {"V": "v1"}}
    assert json.loads(definition(properties, ACCOUNT, REGION, "wf")) == {
        "StartAt": "P",
        "States": {"P": {"Type": "Pass", "Result": "v1", "End": True}},
    }


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        (
            {"DefinitionS3Location": {"Bucket": "nowhere", "Key": "wf.json"}},
            "state machine wf: DefinitionS3Location s3://nowhere/wf.json does not exist",
        ),
        ({"RoleArn": "arn:role"}, "state machine wf: needs DefinitionString, Definition or DefinitionS3Location"),
    ],
)
def test_errors_name_the_state_machine(sandbox_aws: boto3.Session, properties: dict, message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        definition(properties, ACCOUNT, REGION, "wf")


def test_a_broken_definition_fails_the_stack(sandbox_aws: boto3.Session) -> None:
    template = {
        "Resources": {
            "Workflow": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "RoleArn": "arn:aws:iam::123456789012:role/r",
                    "DefinitionString": '{"StartAt": "Missing", "States": {}}',
                },
            }
        }
    }
    cfn = sandbox_aws.client("cloudformation")
    cfn.create_stack(StackName="broken", TemplateBody=json.dumps(template))
    assert cfn.describe_stacks(StackName="broken")["Stacks"][0]["StackStatus"] == "ROLLBACK_COMPLETE"
    failed = [
        e
        for e in cfn.describe_stack_events(StackName="broken")["StackEvents"]
        if e["LogicalResourceId"] == "Workflow" and e["ResourceStatus"] == "CREATE_FAILED"
    ]
    assert len(failed) == 1
    assert re.search(
        r"state machine broken-Workflow-\w+: invalid definition: ASLParser", failed[0]["ResourceStatusReason"]
    )
