"""`aws:ResourceAccount` and `s3:ResourceAccount` are judged as AWS judges them: the account that owns the resource
(a bucket's owner, since its ARN names no account). The CDK bootstrap's roles rest on them: the file publishing role
may touch the assets bucket only in its own account, the deploy role any bucket but those of its own account
(cdk's lib/api/bootstrap/bootstrap-template.yaml, FilePublishingRoleDefaultPolicy and DeployPermissions)."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.unit.test_sandbox_iam_kms import session_allowed

OWN, OTHER = "123456789012", "210987654321"


def _buckets(admin: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A bucket of the caller's account and one of another account."""
    s3 = admin.client("s3")
    location = {"CreateBucketConfiguration": {"LocationConstraint": "eu-central-1"}}
    s3.create_bucket(Bucket="assets-own", **location)
    monkeypatch.setenv("MOTO_ACCOUNT_ID", OTHER)  # moto's account of the admin key, for this call only
    s3.create_bucket(Bucket="assets-other", **location)
    monkeypatch.delenv("MOTO_ACCOUNT_ID")
    return "assets-own", "assets-other"


def _allowed(s3: object, bucket: str) -> bool:
    try:
        s3.get_bucket_location(Bucket=bucket)  # type: ignore[attr-defined]
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "AccessDenied", exc
        return False
    return True


def test_a_statement_for_the_own_account_reaches_its_buckets_only(sandbox_aws, monkeypatch) -> None:
    own, other = _buckets(sandbox_aws, monkeypatch)
    condition = {"StringEquals": {"aws:ResourceAccount": [OWN]}}
    statements = [{"Action": "s3:GetBucket*", "Resource": "arn:aws:s3:::*", "Condition": condition}]
    s3 = session_allowed(sandbox_aws, statements).client("s3")
    assert _allowed(s3, own)
    assert not _allowed(s3, other)


def test_a_statement_for_other_accounts_reaches_no_bucket_of_the_own(sandbox_aws, monkeypatch) -> None:
    own, other = _buckets(sandbox_aws, monkeypatch)
    condition = {"StringNotEquals": {"s3:ResourceAccount": OWN}}
    statements = [{"Action": "s3:GetBucket*", "Resource": "*", "Condition": condition}]
    s3 = session_allowed(sandbox_aws, statements).client("s3")
    assert not _allowed(s3, own)
    assert _allowed(s3, other)


def test_the_resource_account_of_an_arn_is_its_account_field(sandbox_aws) -> None:
    sandbox_aws.client("ssm").put_parameter(Name="/p", Value="v", Type="String")
    for account, allowed in ((OWN, True), (OTHER, False)):
        condition = {"StringEquals": {"aws:ResourceAccount": account}}
        statements = [{"Action": "ssm:GetParameter", "Resource": "*", "Condition": condition}]
        ssm = session_allowed(sandbox_aws, statements).client("ssm")
        try:
            assert ssm.get_parameter(Name="/p")["Parameter"]["Value"] == "v" and allowed
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "AccessDeniedException" and not allowed
        sandbox_aws.client("iam").delete_role_policy(RoleName="fn", PolicyName="p")
        sandbox_aws.client("iam").delete_role(RoleName="fn")
