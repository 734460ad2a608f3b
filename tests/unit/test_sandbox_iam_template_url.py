"""CloudFormation reads a TemplateURL with the caller's rights, as on AWS ("S3 error: Access Denied"): a session
that may create stacks but not read the template's object cannot create a stack from it. CLM's stacks function
passes large templates this way (clm.stacks.template)."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.unit.test_sandbox_iam_kms import session_allowed

TEMPLATE = b'{"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}'
URL = "https://templates.s3.eu-central-1.amazonaws.com/big/cluster.json"


def _bucket(admin: boto3.Session) -> None:
    s3 = admin.client("s3")
    s3.create_bucket(Bucket="templates", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    s3.put_object(Bucket="templates", Key="big/cluster.json", Body=TEMPLATE)


def test_a_caller_who_may_not_read_the_template_cannot_create_a_stack_from_it(sandbox_aws) -> None:
    _bucket(sandbox_aws)
    statements = [
        {"Action": "cloudformation:CreateStack", "Resource": "*"},
        {"Action": "s3:GetObject", "Resource": "arn:aws:s3:::templates/other/*"},
    ]
    cfn = session_allowed(sandbox_aws, statements).client("cloudformation")
    with pytest.raises(ClientError) as refused:
        cfn.create_stack(StackName="from-url", TemplateURL=URL)
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    assert "s3:GetObject on resource: arn:aws:s3:::templates/big/cluster.json" in str(refused.value)
    assert sandbox_aws.client("cloudformation").describe_stacks()["Stacks"] == []


def test_a_caller_who_may_read_it_creates_the_stack(sandbox_aws) -> None:
    _bucket(sandbox_aws)
    statements = [
        {"Action": "cloudformation:CreateStack", "Resource": "*"},
        {"Action": "s3:GetObject", "Resource": "arn:aws:s3:::templates/big/*"},
    ]
    cfn = session_allowed(sandbox_aws, statements).client("cloudformation")
    cfn.create_stack(StackName="from-url", TemplateURL=URL)
    assert sandbox_aws.client("cloudformation").describe_stacks()["Stacks"][0]["StackName"] == "from-url"
