"""Two conditional writes of one item at once: one wins, the other's condition fails, as DynamoDB's atomic
writes make it (moto checked both conditions before either wrote: both runs of a cluster took its lock, ci15)."""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox.patches import dynamodb_atomic


def test_of_two_racing_conditional_writes_one_fails(aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.dynamodb import models

    dynamodb_atomic.install()
    dynamodb_atomic.install()
    ddb = aws.client("dynamodb")
    ddb.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.put_item(TableName="t", Item={"id": {"S": "kube-1"}})
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
