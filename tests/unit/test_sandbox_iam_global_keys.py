"""Global condition keys carry the values AWS gives an assumed-role session's requests: aws:PrincipalArn (the role's
ARN, not the session's), aws:PrincipalAccount, aws:PrincipalType, aws:PrincipalOrgID (the sandbox's one
organization), aws:RequestedRegion and aws:SecureTransport; a request whose builder did not fill them cannot judge
them."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox.iam.policy import CannotJudge, Policy, Request, evaluate
from clm_sandbox.iam.principals import ORGANIZATION_ID
from tests.unit.test_sandbox_iam_enforcement import ACCOUNT, REGION
from tests.unit.test_sandbox_iam_kms import session_allowed

ROLE = f"arn:aws:iam::{ACCOUNT}:role/fn"
SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/fn/fn-session"


def _lists_buckets(session: boto3.Session, region: str = REGION) -> bool:
    try:
        session.client("s3", region_name=region).list_buckets()
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "AccessDenied", exc
        return False
    return True


@pytest.mark.parametrize(
    ("condition", "allowed"),
    [
        ({"StringEquals": {"aws:PrincipalArn": ROLE}}, True),
        ({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/f*"}}, True),
        ({"StringEquals": {"aws:PrincipalArn": SESSION}}, False),  # AWS gives the role's ARN, not the session's
        ({"StringEquals": {"aws:PrincipalArn": f"arn:aws:iam::{ACCOUNT}:role/other"}}, False),
        ({"StringEquals": {"aws:PrincipalAccount": ACCOUNT}}, True),
        ({"StringEquals": {"aws:PrincipalAccount": "210987654321"}}, False),
        ({"StringEquals": {"aws:PrincipalType": "AssumedRole"}}, True),
        ({"StringEquals": {"aws:PrincipalType": "User"}}, False),
        ({"StringEquals": {"aws:PrincipalOrgID": ORGANIZATION_ID}}, True),
        ({"StringEquals": {"aws:PrincipalOrgID": "o-other"}}, False),
        ({"StringEquals": {"aws:RequestedRegion": REGION}}, True),
        ({"StringEquals": {"aws:RequestedRegion": "us-east-1"}}, False),
        ({"Bool": {"aws:SecureTransport": "true"}}, True),
        ({"Bool": {"aws:SecureTransport": "false"}}, False),
        ({"Null": {"aws:PrincipalArn": "true"}}, False),
    ],
)
def test_a_condition_on_a_global_key_is_judged_on_its_value(
    sandbox_aws: boto3.Session, condition: dict, allowed: bool
) -> None:
    statements = [{"Action": "s3:ListAllMyBuckets", "Resource": "*", "Condition": condition}]
    assert _lists_buckets(session_allowed(sandbox_aws, statements)) is allowed


def test_the_requested_region_is_the_calls(sandbox_aws: boto3.Session) -> None:
    condition = {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}
    session = session_allowed(sandbox_aws, [{"Action": "s3:ListAllMyBuckets", "Resource": "*", "Condition": condition}])
    assert not _lists_buckets(session)
    assert _lists_buckets(session, "us-west-2")


def test_a_deny_of_plain_http_does_not_refuse_the_sdks_calls(sandbox_aws: boto3.Session) -> None:
    """The house's TLS-only statement (a Deny when aws:SecureTransport is false) lets the sandbox's calls through."""
    deny = {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    session = session_allowed(
        sandbox_aws, [{"Action": "s3:ListAllMyBuckets", "Resource": "*"}, {"Action": "s3:*", "Resource": "*", **deny}]
    )
    assert _lists_buckets(session)


def test_a_request_without_the_principals_keys_cannot_judge_them() -> None:
    """A key is known only where its builder filled it: a bare request does not pretend a global key is absent."""
    policy = Policy("p", {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*",
                                        "Condition": {"StringEquals": {"aws:PrincipalArn": ROLE}}}]})  # fmt: skip
    with pytest.raises(CannotJudge, match="aws:principalarn"):
        evaluate(Request("s3:ListAllMyBuckets", "*"), [policy])
    filled = Request("s3:ListAllMyBuckets", "*").with_keys({"aws:principalarn": ROLE})
    assert evaluate(filled, [policy]).allowed
