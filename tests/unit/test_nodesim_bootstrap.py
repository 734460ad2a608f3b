"""A simulated node bootstraps as its instance's role, judged as AWS judges it: it fetches the archive its user data
names and decrypts its `.enc` files; without an instance profile, an archive, s3:GetObject or kms:Decrypt (in its
policies and under its boundary) it never joins, and the reason names what failed. User data naming no archive
needs nothing."""

from __future__ import annotations

import base64
import json

import boto3
import pytest

from clm.render.node_files import NodeFile, encode_user_data, make_archive
from clm_sandbox.iam import record
from clm_sandbox.nodesim.bootstrap import NodeBootstrap, archives, user_data_text
from tests.unit.test_sandbox_iam_enforcement import REGION

BUCKET = "cluster-lifecycle-manager-123456789012-eu-central-1"
KEY = "kube-1/worker/" + "a" * 128 + ".userdata"
EC2_TRUST = {
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]
}
USER_DATA = f"#cloud-config\nwrite_files:\n- content: S3_CERTS_BUCKET=s3://{BUCKET}/{KEY}\n"
BOTH = [{"Action": "s3:GetObject", "Resource": "arn:aws:s3:::*"}, {"Action": "kms:Decrypt", "Resource": "*"}]


def node(aws: boto3.Session, statements: list[dict], *, boundary: list[dict] | None = None, user_data: str = USER_DATA,
         profile: bool = True, archive: bool = True) -> str:  # fmt: skip
    """An instance whose role allows `statements` (under `boundary`), with the archive (a private key encrypted
    with a KMS key) in the bucket; returns its id."""
    iam, s3, kms = (aws.client(service) for service in ("iam", "s3", "kms"))
    options: dict = {}
    if boundary is not None:
        document = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **s} for s in boundary]})
        options["PermissionsBoundary"] = iam.create_policy(PolicyName="b", PolicyDocument=document)["Policy"]["Arn"]
    iam.create_role(RoleName="worker", AssumeRolePolicyDocument=json.dumps(EC2_TRUST), **options)
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **s} for s in statements]}
    iam.put_role_policy(RoleName="worker", PolicyName="p", PolicyDocument=json.dumps(document))
    iam.create_instance_profile(InstanceProfileName="worker")
    iam.add_role_to_instance_profile(InstanceProfileName="worker", RoleName="worker")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    if archive:
        key_id = kms.create_key()["KeyMetadata"]["KeyId"]
        sealed = make_archive(
            [NodeFile("/etc/ssl/worker-key.pem", b"secret", encrypted=True)],
            lambda data: kms.encrypt(KeyId=key_id, Plaintext=data)["CiphertextBlob"],
        )
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=sealed)
    image = aws.client("ec2").describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    launch = {"IamInstanceProfile": {"Name": "worker"}} if profile else {}
    [instance] = aws.client("ec2").run_instances(ImageId=image, MinCount=1, MaxCount=1, UserData=user_data, **launch)[
        "Instances"
    ]
    return instance["InstanceId"]


def test_a_node_whose_role_may_read_and_decrypt_bootstraps(sandbox_aws: boto3.Session) -> None:
    record.clear()
    instance = node(sandbox_aws, BOTH)
    assert NodeBootstrap(sandbox_aws).failure(instance) is None
    judged = {(j.session, j.action, j.outcome) for j in record.judged()}
    assert {(instance, "s3:GetObject", "allowed"), (instance, "kms:Decrypt", "allowed")} <= judged  # as its role


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"statements": BOTH[1:]}, "AccessDenied: User: arn:aws:sts::123456789012:assumed-role/worker/i-"),
        ({"statements": BOTH[:1]}, "decrypting /etc/ssl/worker-key.pem.enc of s3://"),
        ({"statements": BOTH, "boundary": BOTH[:1]}, "no permissions boundary allows the kms:Decrypt action"),
        ({"statements": BOTH, "archive": False}, f"fetching s3://{BUCKET}/{KEY}"),
        ({"statements": BOTH, "profile": False}, "no instance profile with a role"),
    ],
    ids=["no-s3", "no-kms", "boundary-without-kms", "no-archive", "no-profile"],
)
def test_a_node_that_cannot_fetch_or_decrypt_never_joins_and_says_why(
    sandbox_aws: boto3.Session, options: dict, expected: str
) -> None:
    instance = node(sandbox_aws, **options)
    failure = NodeBootstrap(sandbox_aws).failure(instance)
    assert failure is not None and expected in failure


def test_user_data_without_an_archive_needs_nothing_and_gzipped_user_data_is_read(sandbox_aws: boto3.Session) -> None:
    assert NodeBootstrap(sandbox_aws).failure(node(sandbox_aws, BOTH[:1], user_data="#cloud-config\n")) is None
    assert user_data_text(encode_user_data(USER_DATA)) == USER_DATA  # CLM's gzip + base64
    assert user_data_text(base64.b64encode(USER_DATA.encode()).decode()) == USER_DATA
    assert archives(USER_DATA + USER_DATA) == [(BUCKET, KEY)]
