"""An EventBridge rule's SNS topic target in the sandbox (clm_sandbox.patches._events_sns, cfn_sns_topic_policy): a
topic policy from a CloudFormation template lets exactly the rule it names publish; the event reaches an SQS
subscription; another rule, a topic with moto's default policy, a policy over plain HTTP only, deliver nothing and
never fail PutEvents."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from clm_sandbox.patches import _events_sns, cfn_sns_topic_policy

ACCOUNT, REGION = "123456789012", "eu-central-1"
RULE = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/clm/notify"
PUBLISH = {
    "Sid": "ClmEventsPublish",
    "Effect": "Allow",
    "Principal": {"Service": "events.amazonaws.com"},
    "Action": "sns:Publish",
    "Resource": {"Ref": "Topic"},
    "Condition": {"ArnEquals": {"aws:SourceArn": RULE}},
}
TEMPLATE = {
    "Resources": {
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "clm-notify"}},
        "TopicPolicy": {
            "Type": "AWS::SNS::TopicPolicy",
            "Properties": {"Topics": [{"Ref": "Topic"}], "PolicyDocument": {"Statement": [PUBLISH]}},
        },
    },
    "Outputs": {"Topic": {"Value": {"Ref": "Topic"}}},
}


@pytest.fixture
def topic(sandbox_aws: boto3.Session) -> tuple[str, str]:
    """The template's topic (its ARN) with an SQS queue subscribed (its URL), and bus `clm`."""
    cfn_sns_topic_policy.install()
    cfn = sandbox_aws.client("cloudformation")
    cfn.create_stack(StackName="notify", TemplateBody=json.dumps(TEMPLATE))
    [output] = cfn.describe_stacks(StackName="notify")["Stacks"][0]["Outputs"]
    sqs = sandbox_aws.client("sqs")
    url = sqs.create_queue(QueueName="team")["QueueUrl"]
    queue = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sandbox_aws.client("sns").subscribe(TopicArn=output["OutputValue"], Protocol="sqs", Endpoint=queue)
    sandbox_aws.client("events").create_event_bus(Name="clm")
    return output["OutputValue"], url


def route(session: boto3.Session, rule: str, topic_arn: str) -> None:
    events = session.client("events")
    events.put_rule(Name=rule, EventBusName="clm", EventPattern=json.dumps({"source": ["clm.cluster"]}))
    events.put_targets(Rule=rule, EventBusName="clm", Targets=[{"Id": "topic", "Arn": topic_arn}])


def put(session: boto3.Session) -> None:
    entry = {"Source": "clm.cluster", "DetailType": "Cluster Update Failed", "Detail": '{"cluster_id": "kube-1"}'}
    response = session.client("events").put_events(Entries=[{**entry, "EventBusName": "clm"}])
    assert response["FailedEntryCount"] == 0


def messages(session: boto3.Session, url: str) -> list[dict[str, Any]]:
    sqs, found = session.client("sqs"), []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            found.append(json.loads(json.loads(message["Body"])["Message"]))  # SNS's envelope, then the event
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


def test_the_rule_the_policy_names_publishes_the_event(sandbox_aws: boto3.Session, topic: tuple[str, str]) -> None:
    arn, url = topic
    route(sandbox_aws, "notify", arn)
    put(sandbox_aws)
    [event] = messages(sandbox_aws, url)
    assert (event["source"], event["detail-type"], event["detail"]) == (
        "clm.cluster", "Cluster Update Failed", {"cluster_id": "kube-1"},
    )  # fmt: skip


def test_another_rule_or_the_default_policy_publishes_nothing(sandbox_aws: boto3.Session, topic: tuple[str, str]):
    arn, url = topic
    route(sandbox_aws, "someone-elses", arn)
    put(sandbox_aws)
    assert messages(sandbox_aws, url) == []
    sandbox_aws.client("cloudformation").delete_stack(StackName="notify")  # the topic goes too
    fresh = sandbox_aws.client("sns").create_topic(Name="fresh")["TopicArn"]
    assert not _events_sns.allows(json.loads(sandbox_aws.client("sns").get_topic_attributes(
        TopicArn=fresh)["Attributes"]["Policy"]), fresh, RULE, ACCOUNT)  # fmt: skip


@pytest.mark.parametrize(
    ("statement", "allowed"),
    [
        ({}, True),
        ({"Principal": "*"}, True),
        ({"Principal": {"AWS": "*"}}, False),  # accounts' principals, not a service
        ({"Principal": {"Service": "sns.amazonaws.com"}}, False),
        ({"Condition": {"ArnEquals": {"aws:SourceArn": RULE + "-2"}}}, False),
        ({"Condition": {"StringEquals": {"aws:SourceAccount": "999999999999"}}}, False),
        ({"Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-1"}}}, False),  # not judged: allows nothing
    ],
)
def test_the_policys_judgement(statement: dict[str, Any], allowed: bool) -> None:
    document = {"Statement": [{**PUBLISH, "Resource": "arn:aws:sns:eu-central-1:123456789012:t", **statement}]}
    assert _events_sns.allows(document, "arn:aws:sns:eu-central-1:123456789012:t", RULE, ACCOUNT) is allowed
    tls_only = {"Effect": "Deny", "Principal": "*", "Action": "sns:Publish", "Resource": "*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}}  # fmt: skip
    assert _events_sns.allows({"Statement": [*document["Statement"], tls_only]}, document["Statement"][0][
        "Resource"], RULE, ACCOUNT) is allowed  # EventBridge calls over TLS  # fmt: skip
