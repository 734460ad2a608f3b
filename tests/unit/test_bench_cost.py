"""The benchmarks' cost arithmetic: list prices applied to measured units, and functions sized as deployed."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

import cost
import prices

from infra.functions import RECONCILE, REGISTRY_EVENTS, STEP_FUNCTIONS


def test_function_memory_is_as_deployed():
    assert {s.folder: s.memory_mb / 1024 for s in (*STEP_FUNCTIONS, RECONCILE, REGISTRY_EVENTS)} == cost.FUNCTION_GB


def test_lambda_calls_are_billed_by_their_function_memory():
    usage = cost.lambda_usage([("plan", 1.0), ("begin", 2.0), ("reconcile", 0.5)])
    assert usage.lambda_requests == 3
    assert usage.lambda_gb_seconds == pytest.approx(0.5 + 0.25 * 2 + 0.25 * 0.5)
    with pytest.raises(KeyError, match="no_such_step"):
        cost.lambda_usage([("no_such_step", 1.0)])


def test_recorded_requests_by_service_and_the_price_of_units():
    actions = Counter(
        {
            "dynamodb:GetItem": 4,
            "dynamodb:UpdateItem": 2,
            "s3:GetObject": 10,
            "s3:PutObject": 3,
            "s3:ListBucketVersions": 1,
            "autoscaling:DescribeTags": 7,
        }
    )
    usage = cost.request_usage(actions, read_units=1, write_units=3)
    assert (usage.dynamodb_read_units, usage.dynamodb_write_units, usage.s3_get_other, usage.s3_put_list) == (
        4,
        6,
        10,
        4,
    )
    usage.transitions = 1000
    dollars = usage.dollars()
    assert dollars["Step Functions"] == pytest.approx(0.025)
    assert dollars["S3"] == pytest.approx(4 * prices.S3_PUT_LIST + 10 * prices.S3_GET_OTHER)
    assert dollars["total"] == pytest.approx(sum(v for k, v in dollars.items() if k != "total"))
    assert usage.scaled(2).transitions == 2000
    assert cost.add(usage, usage).dynamodb_write_units == 12
