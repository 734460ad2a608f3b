"""The sandbox's AWS accounts, as an organization: the management account (moto's default, 123456789012, the hub's,
where the sandbox's admin key acts) and member accounts, each with the role AWS Organizations creates in a member
account, `OrganizationAccountAccessRole` (AdministratorAccess, trusting the management account).

moto serves any account, but the admin key acts in the management account only: the admin role is made in moto's
IAM of the member account directly (in the process that holds moto's backends). A session of it, assumed with the
admin key, acts in that account (moto maps the session's key to the role's account) and the sandbox's IAM judges its
calls against AdministratorAccess. Every account is in the organization clm_sandbox.iam.principals.ORGANIZATION_ID.
"""

from __future__ import annotations

import json
from typing import Any

from clm_sandbox.patches.cfn_iam_role import load_aws_policy

MANAGEMENT_ACCOUNT = "123456789012"  # moto's default account: the one the sandbox's admin key acts in
ADMIN_ROLE = "OrganizationAccountAccessRole"
ADMINISTRATOR_ACCESS = "arn:aws:iam::aws:policy/AdministratorAccess"
SESSION_NAME = "clm-sandbox"
IAM_REGION = "us-east-1"  # IAM is global: moto takes a region only for the partition
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{MANAGEMENT_ACCOUNT}:root"}, "Action": "sts:AssumeRole"}
    ],
}


def admin_role_arn(account: str) -> str:
    """The ARN of `account`'s admin role."""
    return f"arn:aws:iam::{account}:role/{ADMIN_ROLE}"


def add_account(account: str) -> str:
    """Make `account` a member of the sandbox's organization: its admin role, in moto's IAM of that account
    (idempotent); returns the role's ARN."""
    from moto.iam.models import iam_backends

    backend = iam_backends[account]["aws"]
    if all(role.name != ADMIN_ROLE for role in backend.roles.values()):
        backend.create_role(
            role_name=ADMIN_ROLE,
            assume_role_policy_document=json.dumps(TRUST),
            path="/",
            permissions_boundary=None,
            description="the sandbox organization's admin role (as AWS Organizations creates it)",
            tags=[],
            max_session_duration=None,
        )
        load_aws_policy(backend, ADMINISTRATOR_ACCESS, account, IAM_REGION)
        backend.attach_role_policy(ADMINISTRATOR_ACCESS, ADMIN_ROLE)
    return admin_role_arn(account)


def admin_credentials(sts: Any, account: str) -> dict[str, str]:
    """`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` of a session of `account`'s admin role,
    assumed with `sts` (an STS client of the sandbox's admin key, which the sandbox does not judge)."""
    found = sts.assume_role(RoleArn=admin_role_arn(account), RoleSessionName=SESSION_NAME)["Credentials"]
    return {
        "AWS_ACCESS_KEY_ID": found["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": found["SecretAccessKey"],
        "AWS_SESSION_TOKEN": found["SessionToken"],
    }


def admin_session(sts: Any, account: str, region: str) -> Any:
    """A boto3 session of `account`'s admin in `region` (the account made a member first); in the management
    account, the sandbox's own admin key. `sts`: an STS client of that key."""
    import boto3

    if account == MANAGEMENT_ACCOUNT:
        return boto3.Session(region_name=region)
    add_account(account)
    credentials = admin_credentials(sts, account)
    return boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials["AWS_SESSION_TOKEN"],
        region_name=region,
    )


def hub_role_trust(hub_account: str, role_pattern: str) -> dict[str, Any]:
    """A target role's trust as `ClmTarget` writes it: the hub account's root, only for principals whose ARN matches
    `arn:aws:iam::<hub_account>:role/<role_pattern>` (infra.target_roles)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{hub_account}:root"},
                "Action": "sts:AssumeRole",
                "Condition": {"ArnLike": {"aws:PrincipalArn": f"arn:aws:iam::{hub_account}:role/{role_pattern}"}},
            }
        ],
    }
