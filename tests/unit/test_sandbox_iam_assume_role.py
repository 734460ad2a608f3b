"""sts:AssumeRole by an enforced session is judged on both sides, as AWS judges it: the caller's identity policy
(on the target role's ARN, in whichever account) and the target role's trust policy (its principal, action,
conditions, explicit denies). In the role's own account a trust policy naming the caller's role is enough; across
accounts, or when it trusts a whole account, both must allow. The new session is judged as the target role."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox.iam import record
from clm_sandbox.iam.principals import ORGANIZATION_ID
from tests.unit.test_sandbox_iam_enforcement import ACCOUNT, REGION
from tests.unit.test_sandbox_iam_kms import session_allowed

OTHER = "222222222222"
CALLER = f"arn:aws:iam::{ACCOUNT}:role/fn"  # the role session_allowed makes
CALLER_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/fn/fn-session"
HUB, FOREIGN = f"arn:aws:iam::{ACCOUNT}:role/hub", f"arn:aws:iam::{OTHER}:role/hub"
LISTS = {"Action": "s3:ListAllMyBuckets", "Resource": "*"}


def trusting(principal: object, **extra: object) -> dict:
    """A trust policy with one statement allowing sts:AssumeRole to ``principal`` (``extra``: Condition, ...)."""
    statement = {"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole", **extra}
    return {"Version": "2012-10-17", "Statement": [statement]}


@pytest.fixture
def make_role(sandbox_aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Makes role `hub` in an account (with the admin key) with a trust policy and optional inline statements."""

    def make(account: str, trust: dict, statements: list[dict] | None = None) -> str:
        if account != ACCOUNT:
            monkeypatch.setenv("MOTO_ACCOUNT_ID", account)  # moto's account of the admin key, for these calls only
        iam = sandbox_aws.client("iam")
        arn = iam.create_role(RoleName="hub", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        if statements:
            document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **s} for s in statements]}
            iam.put_role_policy(RoleName="hub", PolicyName="hub-policy", PolicyDocument=json.dumps(document))
        monkeypatch.delenv("MOTO_ACCOUNT_ID", raising=False)
        return arn

    yield make


def assume(caller: boto3.Session, role_arn: str, **params: str) -> boto3.Session:
    credentials = caller.client("sts").assume_role(RoleArn=role_arn, RoleSessionName="hub-session", **params)
    return boto3.Session(
        aws_access_key_id=credentials["Credentials"]["AccessKeyId"],
        aws_secret_access_key=credentials["Credentials"]["SecretAccessKey"],
        aws_session_token=credentials["Credentials"]["SessionToken"],
        region_name=REGION,
    )


def refused(caller: boto3.Session, role_arn: str, **params: str) -> str:
    """The reason STS gives for refusing ``caller`` the role, after checking it is AWS's message."""
    with pytest.raises(ClientError) as caught:
        assume(caller, role_arn, **params)
    error = caught.value.response["Error"]
    assert error["Code"] == "AccessDenied"
    prefix = f"User: {CALLER_SESSION} is not authorized to perform: sts:AssumeRole on resource: {role_arn} because "
    assert error["Message"].startswith(prefix), error["Message"]
    judged = [j for j in record.judged() if j.action == "sts:AssumeRole"]
    assert (judged[-1].role_arn, judged[-1].resource, judged[-1].outcome) == (CALLER, role_arn, "denied")
    return error["Message"].removeprefix(prefix)


def test_a_role_of_the_same_account_naming_the_callers_role_needs_no_identity_grant(sandbox_aws, make_role) -> None:
    role = make_role(ACCOUNT, trusting({"AWS": CALLER}))
    caller = session_allowed(sandbox_aws, [LISTS])
    record.clear()
    hub = assume(caller, role)
    assert hub.client("sts").get_caller_identity()["Arn"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/hub/hub-session"
    [judged] = [j for j in record.judged() if j.action == "sts:AssumeRole"]
    assert (judged.role_arn, judged.resource, judged.outcome) == (CALLER, role, "allowed")


def test_the_callers_permissions_boundary_still_limits_a_trust_naming_its_role(sandbox_aws, make_role) -> None:
    """AWS: a resource-based policy granting a role's ARN is limited by an implicit deny in its permissions boundary."""
    role = make_role(ACCOUNT, trusting({"AWS": CALLER}))
    caller = session_allowed(sandbox_aws, [LISTS])
    iam = sandbox_aws.client("iam")
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **LISTS}]}
    boundary = iam.create_policy(PolicyName="boundary", PolicyDocument=json.dumps(document))["Policy"]["Arn"]
    iam.put_role_permissions_boundary(RoleName="fn", PermissionsBoundary=boundary)
    assert refused(caller, role) == "no permissions boundary allows the sts:AssumeRole action"


def test_a_role_of_the_same_account_trusting_the_account_needs_the_identity_grant(sandbox_aws, make_role) -> None:
    role = make_role(ACCOUNT, trusting({"AWS": f"arn:aws:iam::{ACCOUNT}:root"}))
    assert "no identity-based policy allows" in refused(session_allowed(sandbox_aws, [LISTS]), role)
    sandbox_aws.client("iam").delete_role_policy(RoleName="fn", PolicyName="p")
    sandbox_aws.client("iam").delete_role(RoleName="fn")
    assume(session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": role}]), role)


@pytest.mark.parametrize(
    "principal",
    [{"AWS": CALLER}, {"AWS": CALLER_SESSION}, {"AWS": ACCOUNT}, {"AWS": [f"arn:aws:iam::{ACCOUNT}:root", CALLER]}],
)
def test_a_role_of_another_account_needs_both_sides(sandbox_aws, make_role, principal: dict) -> None:
    role = make_role(OTHER, trusting(principal))
    assert role == FOREIGN
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": FOREIGN}])
    assert assume(caller, role).client("sts").get_caller_identity()["Account"] == OTHER


def test_a_role_of_another_account_is_refused_without_the_identity_grant(sandbox_aws, make_role) -> None:
    role = make_role(OTHER, trusting({"AWS": CALLER}))
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": HUB}])  # the own account's hub
    assert refused(caller, role) == "no identity-based policy allows the sts:AssumeRole action"


def test_a_trust_policy_naming_another_role_refuses(sandbox_aws, make_role) -> None:
    role = make_role(OTHER, trusting({"AWS": f"arn:aws:iam::{ACCOUNT}:role/other"}))
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": "*"}])
    assert "no resource-based policy allows the sts:AssumeRole action" in refused(caller, role)


def test_a_trust_policy_requiring_an_external_id_refuses_without_it(sandbox_aws, make_role) -> None:
    condition = {"StringEquals": {"sts:ExternalId": "cluster-1"}}
    role = make_role(OTHER, trusting({"AWS": ACCOUNT}, Condition=condition))
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": "*"}])
    assert "no resource-based policy allows" in refused(caller, role)
    assert "no resource-based policy allows" in refused(caller, role, ExternalId="cluster-2")
    assume(caller, role, ExternalId="cluster-1")


def test_a_trust_policy_judges_the_request_keys(sandbox_aws, make_role) -> None:
    """The caller's role ARN, account and organization and the session's name, as the trust policy's conditions
    see them; Principal "*" trusts anyone those conditions let in."""
    condition = {
        "StringEquals": {"aws:PrincipalOrgID": ORGANIZATION_ID, "aws:PrincipalAccount": ACCOUNT},
        "ArnEquals": {"aws:PrincipalArn": CALLER},
        "StringLike": {"sts:RoleSessionName": "hub-*"},
    }
    role = make_role(OTHER, trusting("*", Condition=condition))
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": "*"}])
    assume(caller, role)
    with pytest.raises(ClientError, match="no resource-based policy allows"):
        caller.client("sts").assume_role(RoleArn=role, RoleSessionName="other")


def test_an_explicit_deny_in_the_trust_policy_refuses(sandbox_aws, make_role) -> None:
    trust = trusting({"AWS": CALLER})
    trust["Statement"].append({"Effect": "Deny", "Principal": {"AWS": ACCOUNT}, "Action": "sts:*"})
    role = make_role(ACCOUNT, trust)
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": "*"}])
    assert "an explicit deny in the resource-based policy" in refused(caller, role)


def test_a_service_principal_is_no_role_session(sandbox_aws, make_role) -> None:
    role = make_role(ACCOUNT, trusting({"Service": ["lambda.amazonaws.com", "ec2.amazonaws.com"]}))
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": "*"}])
    assert "no resource-based policy allows" in refused(caller, role)


def test_a_role_that_does_not_exist_refuses(sandbox_aws) -> None:
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": "*"}])
    assert "does not exist" in refused(caller, FOREIGN)


def test_the_admin_key_is_not_judged(sandbox_aws, make_role) -> None:
    role = make_role(ACCOUNT, trusting({"Service": "ec2.amazonaws.com"}))
    record.clear()
    sandbox_aws.client("sts").assume_role(RoleArn=role, RoleSessionName="admin")
    assert record.judged() == []


def test_the_new_session_acts_in_the_roles_account_with_its_policies(sandbox_aws, make_role, monkeypatch) -> None:
    role = make_role(OTHER, trusting({"AWS": CALLER}), [LISTS])
    location = {"CreateBucketConfiguration": {"LocationConstraint": REGION}}
    sandbox_aws.client("s3").create_bucket(Bucket="bucket-own", **location)
    monkeypatch.setenv("MOTO_ACCOUNT_ID", OTHER)
    sandbox_aws.client("s3").create_bucket(Bucket="bucket-other", **location)
    monkeypatch.delenv("MOTO_ACCOUNT_ID")
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": role}])
    hub = assume(caller, role)
    record.clear()
    assert [b["Name"] for b in hub.client("s3").list_buckets()["Buckets"]] == ["bucket-other"]
    with pytest.raises(ClientError) as caught:
        hub.client("s3").create_bucket(Bucket="new", **location)
    assert f"User: arn:aws:sts::{OTHER}:assumed-role/hub/hub-session is not authorized" in str(caught.value)
    assert [(j.role_arn, j.action, j.outcome) for j in record.judged()] == [
        (role, "s3:ListAllMyBuckets", "allowed"),
        (role, "s3:CreateBucket", "denied"),
    ]


def test_a_trust_policy_the_sandbox_cannot_read_is_refused_as_unjudged_not_a_server_error(sandbox_aws, make_role):
    """A statement that is not an object (moto kept CloudFormation's AWS::NoValue as null in the CDK bootstrap roles'
    trust, and the judge failed with a TypeError, a 500 the CDK CLI silently fell back from) is refused."""
    from moto.iam.models import iam_backends

    role = make_role(ACCOUNT, trusting({"AWS": CALLER}))
    stored = iam_backends[ACCOUNT]["aws"].get_role_by_arn(role)
    stored.assume_role_policy_document = json.dumps({"Version": "2012-10-17", "Statement": [None]})
    caller = session_allowed(sandbox_aws, [{"Action": "sts:AssumeRole", "Resource": "*"}])
    with pytest.raises(ClientError) as caught:
        assume(caller, role)
    assert caught.value.response["Error"]["Code"] == "AccessDenied"
    assert "the sandbox cannot judge it: a statement of" in caught.value.response["Error"]["Message"]
    assert [j.outcome for j in record.judged() if j.action == "sts:AssumeRole"][-1] == "unjudged"
