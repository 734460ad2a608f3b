"""DynamoDB item operations are atomic, as on AWS: two conditional writes of one item at once, one wins (moto checked
both conditions before either wrote: both runs of a cluster took its lock, ci15); a write waits for a read."""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox.patches import dynamodb_atomic


def table_with_one_item(aws: boto3.Session, name: str) -> Any:
    """A DynamoDB client, with the patch installed and table `name` holding the item `kube-1`."""
    dynamodb_atomic.install()
    ddb = aws.client("dynamodb")
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.put_item(TableName=name, Item={"id": {"S": "kube-1"}})
    return ddb


def test_of_two_racing_conditional_writes_one_fails(aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.dynamodb import models

    dynamodb_atomic.install()
    ddb = table_with_one_item(aws, "t")
    parser = models.create_condition_expression_parser

    def slow_parser(*args: Any) -> Any:
        """The condition holds for a moment longer before the write (the window the race needs)."""
        made = parser(*args)
        parse = made.parse

        def slow_parse() -> Any:
            condition = parse()
            check = condition.expr

            def slow_check(item: Any) -> bool:
                result = check(item)
                time.sleep(0.2)
                return result

            condition.expr = slow_check
            return condition

        made.parse = slow_parse
        return made

    monkeypatch.setattr(models, "create_condition_expression_parser", slow_parser)
    outcomes: list[str] = []

    def take(execution: str) -> None:
        try:
            ddb.update_item(
                TableName="t",
                Key={"id": {"S": "kube-1"}},
                UpdateExpression="SET #lock = :lock",
                ConditionExpression="attribute_not_exists(#lock)",
                ExpressionAttributeNames={"#lock": "lock"},
                ExpressionAttributeValues={":lock": {"S": execution}},
            )
            outcomes.append(f"took {execution}")
        except ClientError as exc:
            outcomes.append(exc.response["Error"]["Code"])

    racers = [threading.Thread(target=take, args=(name,)) for name in ("a", "b")]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert sorted(outcomes)[0] == "ConditionalCheckFailedException" and len(outcomes) == 2, outcomes
    holder = ddb.get_item(TableName="t", Key={"id": {"S": "kube-1"}})["Item"]["lock"]["S"]
    assert f"took {holder}" in outcomes


def test_a_write_waits_for_a_read_of_its_item(aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read renders the item moto holds: a write in between changed it under the read's iteration (stop 38's
    fresh clone, test_faults' racing executions: "dictionary changed size during iteration")."""
    from moto.dynamodb.models.dynamo_type import Item

    ddb = table_with_one_item(aws, "r")
    describe = Item.describe_attrs
    reading = threading.Event()
    seen: list[tuple[set[str], set[str]]] = []

    def slow_describe(self: Item, attributes: Any = None) -> Any:
        """Holds the item for a moment, as a read does while another thread runs (the window of the race)."""
        before = set(self.attrs)
        reading.set()
        time.sleep(0.3)
        seen.append((before, set(self.attrs)))
        return describe(self, attributes)

    monkeypatch.setattr(Item, "describe_attrs", slow_describe)
    reader = threading.Thread(target=ddb.get_item, kwargs={"TableName": "r", "Key": {"id": {"S": "kube-1"}}})
    reader.start()
    assert reading.wait(5)
    ddb.update_item(
        TableName="r",
        Key={"id": {"S": "kube-1"}},
        UpdateExpression="SET #lock = :lock",
        ExpressionAttributeNames={"#lock": "lock"},
        ExpressionAttributeValues={":lock": {"S": "a"}},
    )
    reader.join()
    assert seen == [({"id"}, {"id"})]
