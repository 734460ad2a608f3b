"""events_input_template: InputTransformer templates filled as AWS fills them, also through moto's put_events."""

from __future__ import annotations

import json

import boto3
import pytest

from clm_sandbox.patches import events_input_template
from clm_sandbox.patches.events_input_template import fill, parse

EVENT = {
    "source": "clm.registry",
    "detail-type": "Cluster Changed",
    "detail": {"cluster_id": 'kube-"1"', "reason": "spec", "count": 3, "tags": {"a": "b"}},
    "ingestion-time": 1.5,
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        # CDK's RuleTargetInput.from_object: unquoted placeholders; strings get their quotes
        ('{"cluster_id":<id>,"reason":<reason>}', {"cluster_id": 'kube-"1"', "reason": "spec"}),
        ('{"n": <count>, "tags": <tags>, "missing": <missing>}', {"n": 3, "tags": {"a": "b"}, "missing": None}),
        ('{"text": "cluster <id> (<count>): <missing>"}', {"text": 'cluster kube-"1" (3): '}),
        ('{"literal": "a \\"<b>\\" stays", "x": "<reason>"}', {"literal": 'a "<b>" stays', "x": "spec"}),
        ('"plain <reason>"', "plain spec"),
    ],
)
def test_parse(template, expected):
    paths = {
        "id": "$.detail.cluster_id",
        "reason": "$.detail.reason",
        "count": "$.detail.count",
        "tags": "$.detail.tags",
        "missing": "$.detail.nothing",
    }
    assert parse(template, paths, EVENT) == expected


def test_whole_event_and_ingestion_time():
    filled = fill(
        '{"e": <aws.events.event.json>, "t": <aws.events.event.ingestion-time>}',
        {
            "aws.events.event.json": {"a": 1},
            "aws.events.event.ingestion-time": 1.5,
        },
    )
    assert json.loads(filled) == {"e": {"a": 1}, "t": 1.5}


def test_rule_on_a_bus_delivers_the_transformed_input(aws: boto3.Session):
    events_input_template.install()
    events, sqs = aws.client("events"), aws.client("sqs")
    queue = sqs.create_queue(QueueName="inputs")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.create_event_bus(Name="clm")
    events.put_rule(Name="changed", EventBusName="clm", EventPattern=json.dumps({"source": ["clm.registry"]}))
    transformer = {
        "InputPathsMap": {"id": "$.detail.cluster_id", "reason": "$.detail.reason"},
        "InputTemplate": '{"cluster_id":<id>,"reason":<reason>}',
    }
    events.put_targets(
        Rule="changed", EventBusName="clm", Targets=[{"Id": "q", "Arn": arn, "InputTransformer": transformer}]
    )
    detail = {"cluster_id": "kube-1", "reason": "registry: cluster added"}
    events.put_events(
        Entries=[
            {
                "Source": "clm.registry",
                "DetailType": "Cluster Changed",
                "Detail": json.dumps(detail),
                "EventBusName": "clm",
            }
        ]
    )
    [message] = sqs.receive_message(QueueUrl=queue)["Messages"]
    assert json.loads(message["Body"]) == detail
