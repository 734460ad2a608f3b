"""Clients in a cluster's target account and region, from a session of the target role there (moto's STS gives a
session of a role in 222222222222 that account's own resources): kept, renewed before expiry, and refused with a
message naming the account, the role and the fix when the deployment may not reach the account, the role cannot be
assumed, or the session lands in another account (CLM's VerifyAccount, aws.go)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from clm.target_sessions import RENEW_BEFORE, TargetSessions
from clm.targets import Target, TargetPolicy, TargetRefused
from tests.unit.test_sandbox_iam_kms import session_allowed

CLUSTER = "aws:222222222222:eu-west-1:kube-2"
TARGET = Target("222222222222", "eu-west-1")
ANY = TargetPolicy(None)
ASSUME = [{"Action": "sts:AssumeRole", "Resource": "arn:aws:iam::*:role/clm-target-*"}]


@pytest.fixture
def hub(sandbox_aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> boto3.Session:
    """The hub's session (IAM enforced for role sessions), and the target role in 222222222222 trusting the hub's
    account and allowing S3."""
    monkeypatch.setenv("MOTO_ACCOUNT_ID", TARGET.account)  # the admin calls below act in the target's account
    iam = sandbox_aws.client("iam")
    trust = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": "123456789012"}, "Action": "sts:AssumeRole"}]}
    iam.create_role(RoleName="clm-target-eu-west-1", AssumeRolePolicyDocument=json.dumps(trust))
    allow = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    iam.put_role_policy(RoleName="clm-target-eu-west-1", PolicyName="s3", PolicyDocument=json.dumps(allow))
    monkeypatch.delenv("MOTO_ACCOUNT_ID")
    return sandbox_aws


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class CountingSts:
    """The hub's STS client, counting AssumeRole calls (and failing them with `error`, if set)."""

    def __init__(self, sts: Any, error: str | None = None, land_in: str | None = None) -> None:
        self.sts, self.error, self.land_in, self.calls = sts, error, land_in, []
        self.meta = sts.meta

    def assume_role(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if self.error:
            raise ClientError({"Error": {"Code": self.error, "Message": "not authorized"}}, "AssumeRole")
        if self.land_in:
            kwargs["RoleArn"] = kwargs["RoleArn"].replace(TARGET.account, self.land_in)
        return self.sts.assume_role(**kwargs)


def test_a_targets_client_acts_in_that_account_and_region_and_is_kept(hub: boto3.Session) -> None:
    """The hub's function (its role allows sts:AssumeRole on target roles; the target's trust policy names the
    hub's account) acts in 222222222222 with the target role's rights, both judged by the sandbox's IAM."""
    sts = CountingSts(session_allowed(hub, ASSUME).client("sts"))
    sessions = TargetSessions(ANY, sts)
    s3 = sessions.client("s3", CLUSTER, TARGET)
    s3.create_bucket(Bucket="in-222", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert s3.meta.region_name == "eu-west-1"
    assert [b["Name"] for b in hub.client("s3").list_buckets()["Buckets"]] == []  # not the hub's account
    assert sessions.client("s3", CLUSTER, TARGET) is s3
    assert sessions.client("ec2", CLUSTER, TARGET).meta.region_name == "eu-west-1"
    assert [call["RoleArn"] for call in sts.calls] == ["arn:aws:iam::222222222222:role/clm-target-eu-west-1"]
    assert sts.calls[0]["RoleSessionName"] == "clm-cli"


def test_a_session_is_renewed_before_it_expires(hub: boto3.Session) -> None:
    clock, sts = Clock(), CountingSts(hub.client("sts"))
    sessions = TargetSessions(ANY, sts, clock)
    first = sessions.client("s3", CLUSTER, TARGET)
    expires = sessions._kept[TARGET].expires
    clock.now = expires - RENEW_BEFORE - 1
    assert sessions.client("s3", CLUSTER, TARGET) is first and len(sts.calls) == 1
    clock.now = expires - RENEW_BEFORE + 1
    assert sessions.client("s3", CLUSTER, TARGET) is not first and len(sts.calls) == 2


def test_an_account_the_deployment_may_not_reach_is_refused_before_any_call(hub: boto3.Session) -> None:
    sts = CountingSts(hub.client("sts"))
    sessions = TargetSessions(TargetPolicy(frozenset({"123456789012"})), sts)
    with pytest.raises(TargetRefused) as refused:
        sessions.client("cloudformation", CLUSTER, TARGET)
    assert str(refused.value) == (
        f"cluster {CLUSTER}: account 222222222222, region eu-west-1: account 222222222222 is not one this "
        "deployment may reach (clm:targetAccounts: 123456789012)"
    )
    assert sts.calls == []


def test_a_role_the_hub_cannot_assume_names_the_role_and_the_fix(hub: boto3.Session) -> None:
    with pytest.raises(TargetRefused) as refused:
        TargetSessions(ANY, CountingSts(hub.client("sts"), error="AccessDenied")).client("ec2", CLUSTER, TARGET)
    message = str(refused.value)
    assert "the hub cannot assume arn:aws:iam::222222222222:role/clm-target-eu-west-1 (AccessDenied)" in message
    assert "cdk deploy ClmTarget" in message


def test_a_session_that_lands_in_another_account_is_refused(hub: boto3.Session) -> None:
    sessions = TargetSessions(ANY, CountingSts(hub.client("sts"), land_in="333333333333"))
    with pytest.raises(TargetRefused, match="lands in account 333333333333, not the cluster's"):
        sessions.client("ec2", CLUSTER, TARGET)
    assert sessions._kept == {}


def test_a_target_role_that_does_not_trust_the_hubs_role_is_refused_by_the_sandboxs_iam(
    hub: boto3.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hub's function role may assume any target role, but this one trusts only another role of the hub's
    account: STS refuses (the sandbox judges the trust policy as AWS does)."""
    monkeypatch.setenv("MOTO_ACCOUNT_ID", TARGET.account)
    other = {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:role/other"},
        "Action": "sts:AssumeRole",
    }
    hub.client("iam").update_assume_role_policy(
        RoleName="clm-target-eu-west-1", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [other]})
    )
    monkeypatch.delenv("MOTO_ACCOUNT_ID")
    function = session_allowed(hub, ASSUME)
    with pytest.raises(TargetRefused, match="cannot assume arn:aws:iam::222222222222:role/clm-target-eu-west-1"):
        TargetSessions(ANY, function.client("sts")).client("s3", CLUSTER, TARGET)
