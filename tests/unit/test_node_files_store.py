"""Node-files archives in S3 follow their KMS key: an archive already stored under the same object key is rewritten
when its encrypted files would be under another key (a recreated cluster stack's, a rotated one, the etcd alias
moved), so that nodes never get ciphertext of a key that is gone; the same key, or a plain archive, uploads nothing.
Nodes decrypt each `.enc` file with KMS directly (Zalando's CLM encrypts each file with KMS Encrypt,
provisioner/remote_files.go makeArchive; its nodes decrypt them so): the format is unchanged, and the node's
bootstrap (clm_sandbox.nodesim.bootstrap, judged as the instance's role) reads the rewritten archive."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto.kms.models import kms_backends

from clm.render.node_files import KEY_METADATA, NodeFile, UploadedFiles
from clm_sandbox.nodesim.bootstrap import NodeBootstrap, encrypted_members
from tests.unit.test_nodesim_bootstrap import BOTH, BUCKET, KEY, node
from tests.unit.test_sandbox_iam_enforcement import REGION

ACCOUNT = "123456789012"
FILES = [NodeFile("/etc/kubernetes/ssl/worker-key.pem", b"-----BEGIN PRIVATE KEY-----", encrypted=True)]


def versions(s3: Any) -> int:
    """How many times the archive was uploaded (the bucket keeps every version)."""
    return len(s3.list_object_versions(Bucket=BUCKET, Prefix=KEY).get("Versions", []))


def sealed_with(s3: Any, kms: Any) -> set[str]:
    """The keys KMS names for the archive's encrypted files."""
    archive = s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()
    return {kms.decrypt(CiphertextBlob=sealed)["KeyId"] for _, sealed in encrypted_members(archive)}


@pytest.fixture
def clients(aws: boto3.Session) -> tuple[Any, Any, UploadedFiles]:
    """S3 with the node-files bucket (versioned), KMS, and the store uploading to it."""
    s3, kms = aws.client("s3"), aws.client("kms")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    return s3, kms, UploadedFiles(BUCKET, s3, lambda: kms)


def test_a_recreated_cluster_stacks_key_rewrites_the_archive_which_nodes_decrypt(sandbox_aws: boto3.Session) -> None:
    instance = node(sandbox_aws, BOTH, archive=False)  # its user data names the archive at KEY
    s3, kms = sandbox_aws.client("s3"), sandbox_aws.client("kms")
    store = UploadedFiles(BUCKET, s3, lambda: kms)
    old = kms.create_key()["KeyMetadata"]
    assert store(KEY, FILES, lambda: old["Arn"]) == f"s3://{BUCKET}/{KEY}"
    assert NodeBootstrap(sandbox_aws).failure(instance) is None
    kms_backends[ACCOUNT][REGION].delete_key(old["KeyId"])  # the old stack's key, gone with it (as moto's CFN does)
    new = kms.create_key()["KeyMetadata"]["Arn"]
    store(KEY, FILES, lambda: new)
    assert NodeBootstrap(sandbox_aws).failure(instance) is None
    assert sealed_with(s3, kms) == {new}
    assert s3.head_object(Bucket=BUCKET, Key=KEY)["Metadata"] == {KEY_METADATA: new}


def test_the_same_key_uploads_nothing_another_rewrites(clients: tuple[Any, Any, UploadedFiles]) -> None:
    s3, kms, store = clients
    first, second = (kms.create_key()["KeyMetadata"]["Arn"] for _ in range(2))
    store(KEY, FILES, lambda: first)
    store(KEY, FILES, lambda: first)
    assert versions(s3) == 1 and sealed_with(s3, kms) == {first}
    store(KEY, FILES, lambda: second)
    assert versions(s3) == 2 and sealed_with(s3, kms) == {second}


def test_a_key_named_by_alias_is_the_key_kms_encrypts_with(clients: tuple[Any, Any, UploadedFiles]) -> None:
    s3, kms, store = clients
    first, second = (kms.create_key()["KeyMetadata"]["Arn"] for _ in range(2))
    kms.create_alias(AliasName="alias/etcd-cluster", TargetKeyId=first)
    store(KEY, FILES, lambda: "alias/etcd-cluster")
    store(KEY, FILES, lambda: "alias/etcd-cluster")
    assert versions(s3) == 1 and sealed_with(s3, kms) == {first}
    kms.update_alias(AliasName="alias/etcd-cluster", TargetKeyId=second)  # the etcd pre-stack made again
    store(KEY, FILES, lambda: "alias/etcd-cluster")
    assert versions(s3) == 2 and sealed_with(s3, kms) == {second}


def test_an_archive_naming_no_key_is_rewritten_once_a_plain_one_never(clients: tuple[Any, Any, UploadedFiles]) -> None:
    s3, kms, store = clients
    key = kms.create_key()["KeyMetadata"]["Arn"]
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"as Zalando's CLM stored it")  # no metadata
    store(KEY, FILES, lambda: key)
    store(KEY, FILES, lambda: key)
    assert versions(s3) == 2 and sealed_with(s3, kms) == {key}

    def no_key() -> str:
        raise AssertionError("a plain archive needs no key")

    plain = [NodeFile("/etc/plain", b"x")]
    store("plain.userdata", plain, no_key)
    store("plain.userdata", plain, no_key)
    assert len(s3.list_object_versions(Bucket=BUCKET, Prefix="plain")["Versions"]) == 1
