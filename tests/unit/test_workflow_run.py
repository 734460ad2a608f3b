"""The start and end of a cluster run on the DynamoDB registry (in-process moto)."""

from __future__ import annotations

import dataclasses
import json

import boto3
import pytest

from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.version import desired_version
from clm.workflow.run import DECOMMISSION, PROVISION, SKIP, begin, fail, succeed

EXECUTION = "arn:aws:states:eu-central-1:123456789012:execution:provision:run-1"
OTHER = "arn:aws:states:eu-central-1:123456789012:execution:provision:run-0"


@pytest.fixture
def registry(aws: boto3.Session, example_clusters: list[Cluster]) -> DynamoRegistry:
    client = aws.client("dynamodb")
    create_table(client, "clm-registry")
    registry = DynamoRegistry(client, "clm-registry")
    for cluster in example_clusters:
        registry.put(cluster)
    return registry


def never_running(_: str) -> bool:
    return False


def test_outdated_cluster_is_provisioned_under_the_lock(registry: DynamoRegistry, example_clusters) -> None:
    cluster = example_clusters[0]
    plan = begin(registry, "cfg-1", cluster.id, EXECUTION, never_running)
    desired = str(desired_version(cluster, "cfg-1"))
    assert (plan.action, plan.desired_version) == (PROVISION, desired)
    assert plan.reason == f"never provisioned -> {desired}"
    assert registry.lock_holder(cluster.id) == EXECUTION
    assert registry.get(cluster.id).status.next_version == desired
    again = begin(registry, "cfg-1", cluster.id, EXECUTION, never_running)
    assert again.action == PROVISION  # reentrant: the same execution continues


def test_up_to_date_cluster_is_skipped_without_a_lock(registry: DynamoRegistry, example_clusters) -> None:
    cluster = example_clusters[0]
    registry.record_success(cluster.id, str(desired_version(cluster, "cfg-1")))
    plan = begin(registry, "cfg-1", cluster.id, EXECUTION, never_running)
    assert plan.action == SKIP
    assert plan.reason.startswith("up to date at cfg-1#")
    assert registry.lock_holder(cluster.id) is None


def test_duplicate_trigger_is_skipped_while_the_holder_runs(registry: DynamoRegistry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    begin(registry, "cfg-1", cluster_id, OTHER, never_running)
    plan = begin(registry, "cfg-1", cluster_id, EXECUTION, lambda holder: holder == OTHER)
    assert (plan.action, plan.reason) == (SKIP, f"execution {OTHER} is already running for this cluster")
    assert registry.lock_holder(cluster_id) == OTHER
    taken = begin(registry, "cfg-1", cluster_id, EXECUTION, never_running)
    assert taken.action == PROVISION
    assert registry.lock_holder(cluster_id) == EXECUTION


@pytest.mark.parametrize(
    ("lifecycle", "items", "action", "reason"),
    [
        ("decommissioned", {}, SKIP, "cluster is decommissioned"),
        ("ready", {"cluster_update_block": "true"}, SKIP, "updates blocked by config item cluster_update_block"),
        ("decommission-requested", {}, DECOMMISSION, "decommission requested"),
    ],
)
def test_lifecycle_and_update_block(registry, example_clusters, lifecycle, items, action, reason) -> None:
    cluster = dataclasses.replace(
        example_clusters[0], lifecycle_status=lifecycle, config_items={**example_clusters[0].config_items, **items}
    )
    registry.put(cluster)
    plan = begin(registry, "cfg-1", cluster.id, EXECUTION, never_running)
    assert (plan.action, plan.reason) == (action, reason)
    assert (registry.lock_holder(cluster.id) == EXECUTION) == (action != SKIP)


def test_success_records_the_version_and_releases_the_lock(registry: DynamoRegistry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    plan = begin(registry, "cfg-1", cluster_id, EXECUTION, never_running)
    fail(registry, cluster_id, EXECUTION, "States.Timeout", "")
    begin(registry, "cfg-1", cluster_id, EXECUTION, never_running)
    succeed(registry, plan, EXECUTION, plan.desired_version)
    succeed(registry, plan, EXECUTION, plan.desired_version)  # a retried step changes nothing more
    status = registry.get(cluster_id).status
    assert (status.current_version, status.next_version, status.problems) == (plan.desired_version, "", [])
    assert registry.lock_holder(cluster_id) is None


def test_decommission_success_marks_the_cluster_decommissioned(registry, example_clusters) -> None:
    cluster = dataclasses.replace(example_clusters[0], lifecycle_status="decommission-requested")
    registry.put(cluster)
    plan = begin(registry, "cfg-1", cluster.id, EXECUTION, never_running)
    succeed(registry, plan, EXECUTION, "")
    assert registry.get(cluster.id).lifecycle_status == "decommissioned"


def test_failure_records_the_lambda_error_message_and_keeps_next_version(registry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    plan = begin(registry, "cfg-1", cluster_id, EXECUTION, never_running)
    cause = json.dumps(
        {"errorType": "NodeStartupTimeout", "errorMessage": "node pool default-worker: i-1 late", "stackTrace": ["..."]}
    )
    problem = fail(registry, cluster_id, EXECUTION, "NodeStartupTimeout", cause)
    assert problem.title == "NodeStartupTimeout: node pool default-worker: i-1 late"
    status = registry.get(cluster_id).status
    assert status.problems[-1].type == "https://clm/problems/NodeStartupTimeout"
    assert status.problems[-1].instance == EXECUTION
    assert status.next_version == plan.desired_version
    assert registry.lock_holder(cluster_id) is None
    assert fail(registry, cluster_id, EXECUTION, "States.Timeout", "").title == "States.Timeout"


def test_failure_of_a_child_workflow_records_the_childs_error(registry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    begin(registry, "cfg-1", cluster_id, EXECUTION, never_running)
    lambda_error = {"errorType": "NodeStartupTimeout", "errorMessage": "node pool default-worker: i-1 late"}
    child = {  # what states:startExecution.sync:2 gives as the cause of States.TaskFailed
        "ExecutionArn": "arn:aws:states:eu-central-1:123456789012:execution:clm-roll-node-pool:r1",
        "Status": "FAILED",
        "Error": "NodeStartupTimeout",
        "Cause": json.dumps(lambda_error),
    }
    problem = fail(registry, cluster_id, EXECUTION, "States.TaskFailed", json.dumps(child))
    assert problem.title == "NodeStartupTimeout: node pool default-worker: i-1 late"
    assert problem.type == "https://clm/problems/NodeStartupTimeout"


def test_first_success_makes_a_requested_cluster_ready(registry, example_clusters) -> None:
    requested = dataclasses.replace(example_clusters[0], lifecycle_status="requested")
    registry.put(requested)
    plan = begin(registry, "cfg-1", requested.id, EXECUTION, never_running)
    succeed(registry, plan, EXECUTION, plan.desired_version)
    cluster = registry.get(requested.id)
    assert (cluster.lifecycle_status, cluster.status.current_version) == ("ready", plan.desired_version)
    registry.put(dataclasses.replace(cluster, lifecycle_status="decommission-requested"))
    plan = begin(registry, "cfg-1", requested.id, EXECUTION, never_running)
    succeed(registry, plan, EXECUTION, "")
    assert registry.get(requested.id).lifecycle_status == "decommissioned"
