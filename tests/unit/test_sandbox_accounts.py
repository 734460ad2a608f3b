"""The sandbox's accounts: a member account has the admin role AWS Organizations creates (AdministratorAccess,
trusting the management account), and the CDK CLI's credentials for it are a session of that role, assumed with the
sandbox's admin key, that acts in that account and region and is judged against AdministratorAccess."""

from __future__ import annotations

import boto3
from moto.s3.models import s3_backends

from clm_sandbox import accounts
from clm_sandbox.deploy import cli
from clm_sandbox.iam import principals, record
from clm_sandbox.moto_server import SANDBOX_ENV, moto_server

MEMBER = "222222222222"
ADMIN_ROLE = f"arn:aws:iam::{MEMBER}:role/OrganizationAccountAccessRole"


def test_a_member_account_has_the_admin_role_trusting_the_management_account(sandbox_aws: boto3.Session) -> None:
    assert accounts.add_account(MEMBER) == ADMIN_ROLE
    assert accounts.add_account(MEMBER) == ADMIN_ROLE  # once
    identity, boundary = principals.role_policies(ADMIN_ROLE)
    assert [policy.name for policy in identity] == ["AdministratorAccess"]
    assert identity[0].statements() == [{"Effect": "Allow", "Action": "*", "Resource": "*"}]
    assert boundary is None
    trust = principals.trust_policy(ADMIN_ROLE)
    assert trust is not None
    assert trust.statements() == [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "sts:AssumeRole"}
    ]
    assert sandbox_aws.client("iam").list_roles()["Roles"] == []  # nothing in the management account


def test_the_clis_credentials_for_a_member_account_act_there_judged_against_administrator_access(
    sandbox_aws: boto3.Session,
) -> None:
    accounts.add_account(MEMBER)
    record.clear()
    with moto_server() as endpoint:
        hub = cli.credentials_for(endpoint)
        acting = cli.credentials_for(endpoint, MEMBER, "eu-west-1")
        client = cli.sandbox_client(endpoint, acting)
        assert (
            client("sts")
            .get_caller_identity()["Arn"]
            .startswith(f"arn:aws:sts::{MEMBER}:assumed-role/OrganizationAccountAccessRole/")
        )
        client("s3").create_bucket(Bucket="member", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        environment = cli.environment(endpoint, acting)

    assert hub == {
        "AWS_ACCESS_KEY_ID": SANDBOX_ENV["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY": SANDBOX_ENV["AWS_SECRET_ACCESS_KEY"],
        "AWS_DEFAULT_REGION": "eu-central-1",
        "AWS_REGION": "eu-central-1",
    }
    assert {name: environment[name] for name in acting} == acting
    assert acting["AWS_ACCESS_KEY_ID"].startswith("ASIA")
    assert acting["AWS_DEFAULT_REGION"] == acting["AWS_REGION"] == "eu-west-1"
    assert list(s3_backends[MEMBER]["aws"].buckets) == ["member"]
    assert sandbox_aws.client("s3").list_buckets()["Buckets"] == []  # not in the management account
    assert [(j.role_arn, j.action, j.resource, j.outcome) for j in record.judged()] == [
        (ADMIN_ROLE, "s3:CreateBucket", "arn:aws:s3:::member", "allowed")
    ]
