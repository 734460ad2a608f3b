"""Parked drains on the DynamoDB registry (in-process moto): tokens kept, taken once, never lost to a race.

Step Functions is a recorder here; the sandbox test (tests/integration/test_drain_parking.py) runs the real
waitForTaskToken state.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry
from clm.workflow.parking import park, wake
from clm.workflow.run import SKIP, begin

ROLL = "arn:aws:states:eu-central-1:123456789012:execution:clm-provision-roll-node-pool:roll-1"
HOLDER = "arn:aws:states:eu-central-1:123456789012:execution:clm-provision:run-0"
WAKER = "arn:aws:states:eu-central-1:123456789012:execution:clm-provision:run-1"
EARLY, LATE = "2020-01-01T00:00:00Z", "2999-01-01T00:00:00Z"


class StepFunctions:
    """Records SendTaskSuccess; tokens in `gone` answer as a task that no longer waits."""

    def __init__(self, gone: frozenset[str] = frozenset()):
        self.sent: list[tuple[str, str]] = []
        self.gone = gone

    def send_task_success(self, taskToken: str, output: str) -> None:  # noqa: N803 - boto3's names
        if taskToken in self.gone:
            raise ClientError({"Error": {"Code": "TaskTimedOut", "Message": "timed out"}}, "SendTaskSuccess")
        self.sent.append((taskToken, output))


@pytest.fixture
def cluster_id(example_clusters: list[Cluster]) -> str:
    return example_clusters[0].id


def parked(example_registry: DynamoRegistry, cluster_id: str) -> dict[str, Any]:
    item = example_registry._client.get_item(TableName="clm-registry", Key={"id": {"S": cluster_id}})["Item"]
    return {node: entry["M"]["token"]["S"] for node, entry in item.get("parked", {}).get("M", {}).items()}


def test_a_parked_drain_is_woken_once_by_a_run(example_registry: DynamoRegistry, cluster_id: str) -> None:
    sfn = StepFunctions()
    result = park(example_registry, sfn, cluster_id, "node-a", "token-a", ROLL, {"seconds": 3600, "since": EARLY})
    park(
        example_registry,
        sfn,
        cluster_id,
        "node-b.eu-central-1.compute.internal",
        "token-b",
        ROLL,
        {"seconds": 60, "since": EARLY},
    )
    assert result["parked"] is True and "token-a" not in str(result)
    assert parked(example_registry, cluster_id) == {
        "node-a": "token-a",
        "node-b.eu-central-1.compute.internal": "token-b",
    }
    assert sfn.sent == []
    assert wake(example_registry, sfn, cluster_id, WAKER) == ["node-a", "node-b.eu-central-1.compute.internal"]
    assert [token for token, _ in sfn.sent] == ["token-a", "token-b"]
    assert WAKER in sfn.sent[0][1]
    assert parked(example_registry, cluster_id) == {}
    assert wake(example_registry, sfn, cluster_id, WAKER) == []  # taken: a second run wakes nothing
    assert len(sfn.sent) == 2


def test_a_drain_parked_again_replaces_its_old_token(example_registry: DynamoRegistry, cluster_id: str) -> None:
    sfn = StepFunctions()
    park(example_registry, sfn, cluster_id, "node-a", "old", ROLL, {"seconds": 60, "since": EARLY})
    park(example_registry, sfn, cluster_id, "node-a", "new", ROLL, {"seconds": 60, "since": EARLY})
    assert parked(example_registry, cluster_id) == {"node-a": "new"}


def test_a_wake_up_between_the_pass_and_the_parking_is_not_lost(
    example_registry: DynamoRegistry, cluster_id: str
) -> None:
    sfn = StepFunctions()
    assert wake(example_registry, sfn, cluster_id, WAKER) == []  # nothing parked yet: only the moment is kept
    result = park(example_registry, sfn, cluster_id, "node-a", "token-a", ROLL, {"seconds": 3600, "since": EARLY})
    assert result["parked"] is False  # the pass saw the pods before the wake-up: look again at once
    assert [token for token, _ in sfn.sent] == ["token-a"]
    assert parked(example_registry, cluster_id) == {}


def test_a_wake_up_before_the_pass_does_not_stop_the_parking(example_registry: DynamoRegistry, cluster_id: str) -> None:
    sfn = StepFunctions()
    wake(example_registry, sfn, cluster_id, WAKER)
    result = park(example_registry, sfn, cluster_id, "node-a", "token-a", ROLL, {"seconds": 3600, "since": LATE})
    assert result["parked"] is True and sfn.sent == []


def test_tokens_of_drains_no_longer_parked_are_skipped(example_registry: DynamoRegistry, cluster_id: str) -> None:
    sfn = StepFunctions(gone=frozenset({"token-a"}))
    park(example_registry, sfn, cluster_id, "node-a", "token-a", ROLL, {"seconds": 60, "since": EARLY})
    park(example_registry, sfn, cluster_id, "node-b", "token-b", ROLL, {"seconds": 60, "since": EARLY})
    assert wake(example_registry, sfn, cluster_id, WAKER) == ["node-b"]


def test_parking_outlives_spec_writes_and_ends_with_the_lock(
    example_registry: DynamoRegistry, cluster_id: str, example_clusters: list[Cluster]
) -> None:
    begin(example_registry, "cfg-1", cluster_id, HOLDER, lambda _: False)
    park(example_registry, StepFunctions(), cluster_id, "node-a", "token-a", ROLL, {"seconds": 60, "since": EARLY})
    example_registry.put(example_clusters[0])
    assert parked(example_registry, cluster_id) == {"node-a": "token-a"}
    assert example_registry.release_lock(cluster_id, HOLDER)
    assert parked(example_registry, cluster_id) == {}


def test_a_run_finding_the_lock_held_wakes_the_holders_parked_drains(
    example_registry: DynamoRegistry, cluster_id: str
) -> None:
    sfn = StepFunctions()
    begin(example_registry, "cfg-1", cluster_id, HOLDER, lambda _: False)
    park(example_registry, sfn, cluster_id, "node-a", "token-a", ROLL, {"seconds": 3600, "since": LATE})
    plan = begin(
        example_registry,
        "cfg-1",
        cluster_id,
        WAKER,
        lambda holder: holder == HOLDER,
        lambda: wake(example_registry, sfn, cluster_id, WAKER),
    )
    assert plan.action == SKIP
    assert plan.reason == f"execution {HOLDER} is already running for this cluster; woke its parked drains of node-a"
    assert [token for token, _ in sfn.sent] == ["token-a"]
