"""IAM enforcement on moto (clm_sandbox.iam): a role session's calls are judged with the resource ARN AWS would
use, and a refusal is each service's own AccessDenied error, which botocore parses like AWS's."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox.iam import principals, record
from clm_sandbox.iam.calls import Call, requests_for
from clm_sandbox.iam.policy import CannotJudge

ACCOUNT, REGION = "123456789012", "eu-central-1"
TRUST = {
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]
}


@pytest.fixture
def role_session(sandbox_aws: boto3.Session) -> Iterator[tuple[boto3.Session, str]]:
    """A session of a role allowed only dynamodb:GetItem on table `allowed` and s3:GetObject under bucket b/ok/."""
    iam = sandbox_aws.client("iam")
    role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    statements = [
        {
            "Effect": "Allow",
            "Action": "dynamodb:GetItem",
            "Resource": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/allowed",
        },
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/ok/*"},
    ]
    document = {"Version": "2012-10-17", "Statement": statements}
    iam.put_role_policy(RoleName="fn", PolicyName="p", PolicyDocument=json.dumps(document))
    credentials = principals.role_session(role, "fn-session", REGION)
    record.clear()
    yield (
        boto3.Session(
            aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=credentials["AWS_SESSION_TOKEN"],
            region_name=REGION,
        ),
        role,
    )


def denied(call: object) -> ClientError:
    with pytest.raises(ClientError) as caught:
        call()  # type: ignore[operator]
    return caught.value


def test_allowed_calls_pass_and_are_recorded(
    role_session: tuple[boto3.Session, str], sandbox_aws: boto3.Session
) -> None:
    session, role = role_session
    sandbox_aws.client("dynamodb").create_table(
        TableName="allowed",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    session.client("dynamodb").get_item(TableName="allowed", Key={"id": {"S": "x"}})
    assert session.client("sts").get_caller_identity()["Arn"].endswith(":assumed-role/fn/fn-session")
    [judged] = record.judged()
    assert (judged.session, judged.role_arn, judged.action, judged.outcome) == (
        "fn-session",
        role,
        "dynamodb:GetItem",
        "allowed",
    )
    assert judged.resource == f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/allowed"


@pytest.mark.parametrize(
    ("service", "call", "code", "action", "resource"),
    [
        (
            "dynamodb",
            lambda c: c.get_item(TableName="other", Key={"id": {"S": "x"}}),
            "AccessDeniedException",
            "dynamodb:GetItem",
            f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/other",
        ),
        ("cloudformation", lambda c: c.describe_stacks(), "AccessDenied", "cloudformation:ListStacks", "*"),
        (
            "cloudformation",
            lambda c: c.describe_stacks(StackName="kube-1"),
            "AccessDenied",
            "cloudformation:DescribeStacks",
            f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/kube-1/*",
        ),
        ("ec2", lambda c: c.describe_instances(), "UnauthorizedOperation", "ec2:DescribeInstances", "*"),
        (
            "s3",
            lambda c: c.get_object(Bucket="b", Key="secret/x"),
            "AccessDenied",
            "s3:GetObject",
            "arn:aws:s3:::b/secret/x",
        ),
        (
            "eks",
            lambda c: c.describe_cluster(name="prod"),
            "AccessDeniedException",
            "eks:DescribeCluster",
            f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/prod",
        ),
        (
            "stepfunctions",
            lambda c: c.send_task_success(taskToken="t", output="{}"),
            "AccessDeniedException",
            "states:SendTaskSuccess",
            "*",
        ),
    ],
)
def test_a_refusal_is_the_services_access_denied_naming_action_and_resource(
    role_session: tuple[boto3.Session, str], service: str, call: object, code: str, action: str, resource: str
) -> None:
    session, _ = role_session
    error = denied(lambda: call(session.client(service)))  # type: ignore[operator]
    assert error.response["Error"]["Code"] == code
    message = error.response["Error"]["Message"]
    assert (
        f":assumed-role/fn/fn-session is not authorized to perform: {action} on resource: {resource} because" in message
    )
    assert [(j.action, j.outcome) for j in record.judged()] == [(action, "denied")]


def test_the_harness_and_other_callers_are_not_judged(
    role_session: tuple[boto3.Session, str], sandbox_aws: boto3.Session
) -> None:
    sandbox_aws.client("cloudformation").describe_stacks()
    assert record.judged() == []


def test_calls_name_the_resource_as_aws_does() -> None:
    def resource(prefix: str, operation: str, **params: object) -> list[tuple[str, str]]:
        return [(r.action, r.resource) for r in requests_for(Call(prefix, operation, params, ACCOUNT, REGION))]

    arn = f"arn:aws:states:{REGION}:{ACCOUNT}"
    assert resource("states", "DescribeExecution", executionArn=f"{arn}:execution:clm-provision:run-1") == [
        ("states:DescribeExecution", f"{arn}:execution:clm-provision:run-1")
    ]
    assert resource("dynamodb", "Query", TableName="t", IndexName="i") == [
        ("dynamodb:Query", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/t/index/i")
    ]
    assert resource("dynamodb", "BatchGetItem", RequestItems={"a": {}, "b": {}}) == [
        ("dynamodb:BatchGetItem", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/a"),
        ("dynamodb:BatchGetItem", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/b"),
    ]
    assert resource("cloudformation", "CreateStack", StackName="s", RoleARN="arn:aws:iam::1:role/cfn") == [
        ("cloudformation:CreateStack", f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/s/*"),
        ("iam:PassRole", "arn:aws:iam::1:role/cfn"),
    ]
    instances = f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance"
    assert resource("ec2", "TerminateInstances", InstanceIds=["i-1", "i-2"]) == [  # one question per instance
        ("ec2:TerminateInstances", f"{instances}/i-1"),
        ("ec2:TerminateInstances", f"{instances}/i-2"),
    ]
    assert resource("ec2", "DescribeInstanceAttribute", InstanceId="i-1", Attribute="userData") == [
        ("ec2:DescribeInstanceAttribute", f"{instances}/i-1")
    ]
    with pytest.raises(CannotJudge, match="AWS documents no IAM action"):
        resource("dynamodb", "NoSuchOperation", TableName="t")
