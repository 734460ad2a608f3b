"""IAM on KMS keys by their tags, as AWS judges it: a key a stack made carries the stack's tags (CloudFormation copies
them), and `aws:ResourceTag/<key>` conditions see them (CLM's run function may Encrypt only with its stacks' keys)."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.unit.test_sandbox_iam_kms import session_allowed

TEMPLATE = {
    "Resources": {"Key": {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": {"Statement": []}}}},
    "Outputs": {"WorkerFilesEncryptionKey": {"Value": {"Ref": "Key"}}},
}
OWNED = {"StringEquals": {"aws:ResourceTag/clm:managed-by": "clm"}}


def test_encrypt_is_allowed_on_keys_tagged_by_the_stack_only(sandbox_aws: boto3.Session) -> None:
    cfn = sandbox_aws.client("cloudformation")
    tags = [{"Key": "clm:managed-by", "Value": "clm"}]
    cfn.create_stack(StackName="kube-1", TemplateBody=json.dumps(TEMPLATE), Tags=tags)
    [output] = cfn.describe_stacks(StackName="kube-1")["Stacks"][0]["Outputs"]
    kms = sandbox_aws.client("kms")
    stacks_key = output["OutputValue"]
    assert kms.list_resource_tags(KeyId=stacks_key)["Tags"] == [{"TagKey": "clm:managed-by", "TagValue": "clm"}]
    other = kms.create_key()["KeyMetadata"]["Arn"]
    session = session_allowed(sandbox_aws, [{"Action": "kms:Encrypt", "Resource": "*", "Condition": OWNED}])
    assert session.client("kms").encrypt(KeyId=stacks_key, Plaintext=b"x")["CiphertextBlob"]
    with pytest.raises(ClientError) as refused:
        session.client("kms").encrypt(KeyId=other, Plaintext=b"x")
    assert f"kms:Encrypt on resource: {other}" in str(refused.value)
