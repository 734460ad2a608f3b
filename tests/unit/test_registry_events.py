"""clm.workflow.registry_events: which stream records become `Cluster Changed` events, and their publication.

The records are DynamoDB's own: items written through DynamoRegistry into moto's table, read back from its stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.workflow.registry_events import DETAIL_TYPE, SOURCE, PublishError, publish, spec_changes
from tests.lambdas import FakeContext, load_handler_module

TABLE = "clm-registry"
BUS = "clm"


def cluster(cluster_id: str = "aws:123456789012:eu-central-1:kube-1", **changes: Any) -> Cluster:
    data = {
        "id": cluster_id,
        "alias": "kube-1",
        "local_id": cluster_id.rsplit(":", 1)[-1],
        "api_server_url": "https://kube-1.example.org",
        "config_items": {"app_replicas": "3"},
        "criticality_level": 1,
        "environment": "test",
        "infrastructure_account": "aws:123456789012",
        "region": "eu-central-1",
        "provider": "zalando-aws",
        "lifecycle_status": "ready",
        "node_pools": [],
        **changes,
    }
    return Cluster.from_dict(data, "test")


def stream_records(session: boto3.Session) -> list[dict[str, Any]]:
    """Every record of the registry table's stream so far, as a Lambda event source delivers them."""
    streams = session.client("dynamodbstreams")
    arn = session.client("dynamodb").describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records += streams.get_records(ShardIterator=iterator)["Records"]
    return records


@pytest.fixture
def registry(aws: boto3.Session) -> DynamoRegistry:
    create_table(aws.client("dynamodb"), TABLE)
    return DynamoRegistry(aws.client("dynamodb"), TABLE)


def changes_of(aws: boto3.Session, write: Callable[[], object]) -> list[tuple[str, str]]:
    """The changes in the stream records that `write` adds (moto writes two INSERT records for a new item)."""
    before = len(stream_records(aws))
    write()
    return [(change.cluster_id, change.reason) for change in spec_changes(stream_records(aws)[before:])]


def test_new_cluster_and_spec_change_are_changes_status_and_lock_writes_are_not(aws, registry):
    cluster_id = cluster().id
    changed = cluster(config_items={"app_replicas": "5"}, alias="renamed")

    assert changes_of(aws, lambda: registry.put(cluster())) == [(cluster_id, "registry: cluster added")]
    assert changes_of(aws, lambda: registry.start_update(cluster_id, "v1#abc")) == []  # CLM's own status writes
    assert changes_of(aws, lambda: registry.record_success(cluster_id, "v1#abc")) == []
    assert changes_of(aws, lambda: registry.put(changed)) == [
        (cluster_id, "registry: spec changed (alias, config_items)")
    ]
    assert changes_of(aws, lambda: registry.put(changed)) == []  # the same spec again


def test_clms_own_lifecycle_transitions_are_not_changes_a_users_are(aws, registry):
    cluster_id = cluster().id
    registry.put(cluster(lifecycle_status="requested"))
    assert changes_of(aws, lambda: registry.record_success(cluster_id, "v1#abc", mark_ready=True)) == []
    assert registry.get(cluster_id).lifecycle_status == "ready"
    requested = cluster(lifecycle_status="decommission-requested")
    assert changes_of(aws, lambda: registry.put(requested)) == [
        (cluster_id, "registry: spec changed (lifecycle_status)")
    ]
    assert changes_of(aws, lambda: registry.record_decommissioned(cluster_id)) == []


def test_one_event_per_cluster_with_its_last_change_and_removals_ignored(aws, registry):
    first, second = cluster("aws:123456789012:eu-central-1:a"), cluster("aws:123456789012:eu-central-1:b")
    registry.put(first)
    registry.put(second)
    registry.put(cluster(first.id, environment="production"))
    registry.delete(second.id)

    changes = spec_changes(stream_records(aws))

    assert [(change.cluster_id, change.reason) for change in changes] == [
        (second.id, "registry: cluster added"),
        (first.id, "registry: spec changed (environment)"),
    ]


def test_publish_puts_cluster_changed_on_the_bus_in_batches_of_ten(aws, registry):
    events = aws.client("events")
    events.create_event_bus(Name=BUS)
    queue = aws.client("sqs").create_queue(QueueName="seen")["QueueUrl"]
    queue_arn = aws.client("sqs").get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
    events.put_rule(Name="all", EventBusName=BUS, EventPattern=json.dumps({"source": [SOURCE]}))
    events.put_targets(Rule="all", EventBusName=BUS, Targets=[{"Id": "q", "Arn": queue_arn["QueueArn"]}])
    for index in range(12):
        registry.put(cluster(f"aws:123456789012:eu-central-1:c{index:02}"))

    assert publish(events, BUS, spec_changes(stream_records(aws))) == 12

    received = []
    while batch := aws.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
        received += [json.loads(message["Body"]) for message in batch]
        for message in batch:
            aws.client("sqs").delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    assert {event["detail-type"] for event in received} == {DETAIL_TYPE}
    assert sorted(event["detail"]["cluster_id"] for event in received) == [
        f"aws:123456789012:eu-central-1:c{index:02}" for index in range(12)
    ]
    assert {event["detail"]["reason"] for event in received} == {"registry: cluster added"}


def test_refused_events_raise_naming_the_clusters(aws, registry):
    """moto never refuses an entry; AWS reports partial failures per entry (stubbed on a real client)."""
    registry.put(cluster("aws:123456789012:eu-central-1:a"))
    registry.put(cluster("aws:123456789012:eu-central-1:b"))
    events = aws.client("events")
    refused = {"ErrorCode": "InternalFailure", "ErrorMessage": "try again"}
    with Stubber(events) as stubber:
        stubber.add_response("put_events", {"FailedEntryCount": 1, "Entries": [{"EventId": "1"}, refused]})
        with pytest.raises(PublishError, match=r"bus clm: .* for aws:123456789012:eu-central-1:b \(InternalFailure"):
            publish(events, BUS, spec_changes(stream_records(aws)))


def test_handler_publishes_on_the_bus_from_its_environment(aws, registry, monkeypatch):
    aws.client("events").create_event_bus(Name=BUS)
    monkeypatch.setenv("CLM_EVENT_BUS", BUS)
    registry.put(cluster())
    handler = load_handler_module("registry_events").handler

    records = stream_records(aws)
    assert handler({"Records": records}, FakeContext()) == {"records": len(records), "published": 1}
    assert handler({"Records": []}, FakeContext()) == {"records": 0, "published": 0}
