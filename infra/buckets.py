"""CLM's buckets share one shape: versioned, private, S3-encrypted, TLS only, owner-enforced, kept on delete."""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct


def private_bucket(scope: Construct, construct_id: str, **extra: Any) -> s3.Bucket:
    """A bucket with CLM's defaults; `extra` adds bucket properties (e.g. lifecycle rules)."""
    return s3.Bucket(
        scope,
        construct_id,
        versioned=True,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=RemovalPolicy.RETAIN,
        **extra,
    )
