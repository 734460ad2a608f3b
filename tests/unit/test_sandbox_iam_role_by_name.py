"""IAM calls that name a role by `RoleName` (GetRole, UpdateAssumeRolePolicy, ...) are judged on the role's ARN with
its path, as IAM does (the resource `arn:aws:iam::<account>:role/<path><name>`), not refused as unjudgeable."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.unit.test_sandbox_iam_kms import TRUST, session_allowed

PATHED = "arn:aws:iam::123456789012:role/team/*"
VERSIONED = json.dumps({"Version": "2012-10-17", **TRUST})


def test_a_role_named_by_name_is_judged_on_its_arn_with_its_path(sandbox_aws: boto3.Session) -> None:
    iam = sandbox_aws.client("iam")
    iam.create_role(RoleName="mine", Path="/team/", AssumeRolePolicyDocument=json.dumps(TRUST))
    iam.create_role(RoleName="theirs", AssumeRolePolicyDocument=json.dumps(TRUST))
    actions = ["iam:GetRole", "iam:UpdateAssumeRolePolicy"]
    session = session_allowed(sandbox_aws, [{"Action": actions, "Resource": PATHED}]).client("iam")
    assert session.get_role(RoleName="mine")["Role"]["Arn"].endswith(":role/team/mine")
    session.update_assume_role_policy(RoleName="mine", PolicyDocument=VERSIONED)
    with pytest.raises(ClientError) as refused:
        session.update_assume_role_policy(RoleName="theirs", PolicyDocument=VERSIONED)
    assert "iam:UpdateAssumeRolePolicy on resource: arn:aws:iam::123456789012:role/theirs" in str(refused.value)
