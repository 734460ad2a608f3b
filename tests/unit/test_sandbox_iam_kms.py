"""IAM enforcement of KMS as AWS does it: Decrypt is judged on the key its ciphertext names, with the request's
encryption context as condition keys (kms:EncryptionContext:<key>, kms:EncryptionContextKeys), and S3 asks KMS as
the caller (GenerateDataKey to write, Decrypt to read) for objects of a bucket encrypted with a KMS key."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from clm.render import secrets
from clm_sandbox.iam import principals
from clm_sandbox.iam.calls import Call, requests_for
from clm_sandbox.iam.policy import Policy, evaluate
from infra import permissions
from tests.unit.test_sandbox_iam_enforcement import ACCOUNT, REGION, TRUST

KUBE_1, KUBE_2 = "aws:123456789012:eu-central-1:kube-1", "aws:123456789012:eu-central-1:kube-2"

VIA_S3 = {"StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"}}


def session_allowed(admin: boto3.Session, statements: list[dict]) -> boto3.Session:
    iam = admin.client("iam")
    role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **s} for s in statements]}
    iam.put_role_policy(RoleName="fn", PolicyName="p", PolicyDocument=json.dumps(document))
    credentials = principals.role_session(role, "fn-session", REGION)
    return boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials["AWS_SESSION_TOKEN"],
        region_name=REGION,
    )


def test_decrypt_is_judged_on_the_key_the_ciphertext_names(sandbox_aws: boto3.Session) -> None:
    kms = sandbox_aws.client("kms")
    named, other = (kms.create_key()["KeyMetadata"]["Arn"] for _ in range(2))
    session = session_allowed(sandbox_aws, [{"Action": "kms:Decrypt", "Resource": named}])
    mine, theirs = (kms.encrypt(KeyId=key, Plaintext=b"x")["CiphertextBlob"] for key in (named, other))
    assert session.client("kms").decrypt(CiphertextBlob=mine)["Plaintext"] == b"x"
    with pytest.raises(ClientError) as refused:
        session.client("kms").decrypt(CiphertextBlob=theirs)
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert f"kms:Decrypt on resource: {other}" in str(refused.value)


def test_s3_objects_of_a_kms_bucket_need_the_key_through_s3(sandbox_aws: boto3.Session) -> None:
    key = sandbox_aws.client("kms").create_key()["KeyMetadata"]["Arn"]
    s3 = sandbox_aws.client("s3")
    s3.create_bucket(Bucket="bkt", CreateBucketConfiguration={"LocationConstraint": REGION})
    rule = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}}
    s3.put_bucket_encryption(Bucket="bkt", ServerSideEncryptionConfiguration={"Rules": [rule]})
    objects = {"Action": ["s3:PutObject", "s3:GetObject"], "Resource": "arn:aws:s3:::bkt/*"}
    reader = session_allowed(sandbox_aws, [objects, {"Action": "kms:Decrypt", "Resource": key, "Condition": VIA_S3}])
    with pytest.raises(ClientError) as refused:
        reader.client("s3").put_object(Bucket="bkt", Key="k", Body=b"x")
    assert f"kms:GenerateDataKey on resource: {key}" in str(refused.value)
    s3.put_object(Bucket="bkt", Key="k", Body=b"x")
    assert reader.client("s3").get_object(Bucket="bkt", Key="k")["Body"].read() == b"x"
    other_region = {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}
    sandbox_aws.client("iam").put_role_policy(
        RoleName="fn",
        PolicyName="p",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", **objects},
                    {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": key, "Condition": other_region},
                ],
            }
        ),
    )
    with pytest.raises(ClientError, match=f"kms:Decrypt on resource: {key}"):
        reader.client("s3").get_object(Bucket="bkt", Key="k")
    assert ACCOUNT in key


def test_the_run_functions_decrypt_needs_a_config_items_encryption_context(sandbox_aws: boto3.Session) -> None:
    """infra.permissions' condition on the run function's kms:Decrypt, judged by the sandbox as IAM does: a config
    item's context (its cluster and name, no other key) is allowed; no context, another use's context, CLM's keys
    with more, or one key alone is refused by IAM. A context of another cluster passes IAM and KMS refuses it."""
    assert permissions.CONFIG_ITEM_CONTEXT == (secrets.CLUSTER_KEY, secrets.ITEM_KEY)  # the same keys on both sides
    kms = sandbox_aws.client("kms")
    key = kms.create_key()["KeyMetadata"]["Arn"]
    condition = permissions.config_item_context()
    session = session_allowed(sandbox_aws, [{"Action": "kms:Decrypt", "Resource": key, "Condition": condition}])
    item, other_use = secrets.encryption_context(KUBE_1, "db_password"), {"app": "billing"}
    bound, plain, theirs = (
        kms.encrypt(KeyId=key, Plaintext=b"x", **({"EncryptionContext": c} if c else {}))["CiphertextBlob"]
        for c in (item, None, other_use)
    )
    decrypt = session.client("kms").decrypt
    assert decrypt(CiphertextBlob=bound, EncryptionContext=item)["Plaintext"] == b"x"
    for blob, context in (
        (plain, {}),
        (theirs, other_use),
        (bound, {**item, **other_use}),
        (bound, {secrets.ITEM_KEY: "db_password"}),
    ):
        with pytest.raises(ClientError) as refused:
            decrypt(CiphertextBlob=blob, EncryptionContext=context)
        assert refused.value.response["Error"]["Code"] == "AccessDeniedException", context
        assert f"kms:Decrypt on resource: {key}" in str(refused.value)
    with pytest.raises(ClientError) as invalid:
        decrypt(CiphertextBlob=bound, EncryptionContext=secrets.encryption_context(KUBE_2, "db_password"))
    assert invalid.value.response["Error"]["Code"] == "InvalidCiphertextException"


def test_encryption_context_condition_keys_are_computed_for_the_operations_that_take_one() -> None:
    """kms:EncryptionContext:<key> (its key case-insensitive, as every IAM condition key) and
    kms:EncryptionContextKeys (the keys as sent); known, and absent, for a request without context."""
    key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/k"
    decrypt = Call("kms", "Decrypt", {"KeyId": key, "EncryptionContext": {"Clm:Cluster-Id": "c1"}}, ACCOUNT, REGION)
    [request] = requests_for(decrypt)
    assert request.values("kms:encryptioncontext:clm:cluster-id") == ["c1"]
    assert request.values("kms:encryptioncontextkeys") == ["Clm:Cluster-Id"]
    needs = Policy(
        "p",
        {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "kms:*",
                    "Resource": "*",
                    "Condition": {"StringEquals": {"kms:EncryptionContext:clm:cluster-id": "c1"}},
                }
            ]
        },
    )
    assert evaluate(request, [needs]).allowed
    [bare] = requests_for(Call("kms", "Decrypt", {"KeyId": key}, ACCOUNT, REGION))
    assert bare.knows("kms:encryptioncontext:clm:cluster-id") and bare.values("kms:encryptioncontextkeys") is None
    assert not evaluate(bare, [needs]).allowed
    [generate] = requests_for(
        Call("kms", "GenerateDataKey", {"KeyId": key, "EncryptionContext": {"a": "b"}}, ACCOUNT, REGION)
    )
    assert generate.values("kms:encryptioncontext:a") == ["b"] and not evaluate(generate, [needs]).allowed
