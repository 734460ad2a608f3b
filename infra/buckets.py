"""CLM's buckets share one shape: versioned, private, encrypted (S3's key, or a KMS key given), TLS only,
owner-enforced, kept on delete."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.nag import acknowledge

OLD_VERSIONS_EXPIRE_DAYS = 30


def private_bucket(
    scope: Construct, construct_id: str, encryption_key: kms.IKey | None = None, **extra: Any
) -> s3.Bucket:
    """A bucket with CLM's defaults, encrypted with `encryption_key` if given (S3 bucket keys: few KMS calls);
    `extra` adds bucket properties (e.g. lifecycle rules)."""
    encryption: dict[str, Any] = (
        {"encryption": s3.BucketEncryption.KMS, "encryption_key": encryption_key, "bucket_key_enabled": True}
        if encryption_key
        else {"encryption": s3.BucketEncryption.S3_MANAGED}
    )
    return s3.Bucket(
        scope,
        construct_id,
        versioned=True,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        **encryption,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=RemovalPolicy.RETAIN,
        **extra,
    )


def content_addressed_bucket(scope: Construct, construct_id: str, bucket_name: str, writers: str) -> s3.Bucket:
    """A private bucket named `bucket_name` (S3's encryption) for content-addressed objects, never overwritten: old
    versions expire; server access logs are left to CloudTrail (cdk-nag's S1, acknowledged naming `writers`)."""
    bucket = private_bucket(
        scope,
        construct_id,
        bucket_name=bucket_name,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="expire-old-versions",
                noncurrent_version_expiration=Duration.days(OLD_VERSIONS_EXPIRE_DAYS),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            )
        ],
    )
    acknowledge(bucket, "S1", f"written by {writers} only; CloudTrail data events audit access if needed")
    return bucket
