"""The start and end of a cluster run on the DynamoDB registry (in-process moto)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from clm.errors import ConfigSourceError
from clm.registry.dynamodb import DynamoRegistry
from clm.version import desired_version
from clm.workflow.run import DECOMMISSION, PROVISION, SKIP, begin, fail, succeed

EXECUTION = "arn:aws:states:eu-central-1:123456789012:execution:provision:run-1"
OTHER = "arn:aws:states:eu-central-1:123456789012:execution:provision:run-0"


def never_running(_: str) -> bool:
    return False


def test_outdated_cluster_is_provisioned_under_the_lock(example_registry: DynamoRegistry, example_clusters) -> None:
    cluster = example_clusters[0]
    plan = begin(example_registry, "cfg-1", cluster.id, EXECUTION, never_running)
    desired = str(desired_version(cluster, "cfg-1"))
    assert (plan.action, plan.desired_version) == (PROVISION, desired)
    assert plan.reason == f"never provisioned -> {desired}"
    assert example_registry.lock_holder(cluster.id) == EXECUTION
    assert example_registry.get(cluster.id).status.next_version == desired
    again = begin(example_registry, "cfg-1", cluster.id, EXECUTION, never_running)
    assert again.action == PROVISION  # reentrant: the same execution continues


def test_up_to_date_cluster_is_skipped_without_a_lock(example_registry: DynamoRegistry, example_clusters) -> None:
    cluster = example_clusters[0]
    example_registry.record_success(cluster.id, str(desired_version(cluster, "cfg-1")))
    plan = begin(example_registry, "cfg-1", cluster.id, EXECUTION, never_running)
    assert plan.action == SKIP
    assert plan.reason.startswith("up to date at cfg-1#")
    assert example_registry.lock_holder(cluster.id) is None


def test_duplicate_trigger_is_skipped_while_the_holder_runs(example_registry: DynamoRegistry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    begin(example_registry, "cfg-1", cluster_id, OTHER, never_running)
    plan = begin(example_registry, "cfg-1", cluster_id, EXECUTION, lambda holder: holder == OTHER)
    assert (plan.action, plan.reason) == (SKIP, f"execution {OTHER} is already running for this cluster")
    assert example_registry.lock_holder(cluster_id) == OTHER
    taken = begin(example_registry, "cfg-1", cluster_id, EXECUTION, never_running)
    assert taken.action == PROVISION
    assert example_registry.lock_holder(cluster_id) == EXECUTION


@pytest.mark.parametrize(
    ("lifecycle", "items", "action", "reason"),
    [
        ("decommissioned", {}, SKIP, "cluster is decommissioned"),
        ("ready", {"cluster_update_block": "true"}, SKIP, "updates blocked by config item cluster_update_block"),
        ("decommission-requested", {}, DECOMMISSION, "decommission requested"),
    ],
)
def test_lifecycle_and_update_block(example_registry, example_clusters, lifecycle, items, action, reason) -> None:
    cluster = dataclasses.replace(
        example_clusters[0], lifecycle_status=lifecycle, config_items={**example_clusters[0].config_items, **items}
    )
    example_registry.put(cluster)
    plan = begin(example_registry, "cfg-1", cluster.id, EXECUTION, never_running)
    assert (plan.action, plan.reason) == (action, reason)
    assert (example_registry.lock_holder(cluster.id) == EXECUTION) == (action != SKIP)


def test_success_records_the_version_and_releases_the_lock(example_registry: DynamoRegistry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    plan = begin(example_registry, "cfg-1", cluster_id, EXECUTION, never_running)
    fail(example_registry, cluster_id, EXECUTION, "States.Timeout", "")
    begin(example_registry, "cfg-1", cluster_id, EXECUTION, never_running)
    succeed(example_registry, plan, EXECUTION, plan.desired_version)
    succeed(example_registry, plan, EXECUTION, plan.desired_version)  # a retried step changes nothing more
    status = example_registry.get(cluster_id).status
    assert (status.current_version, status.next_version, status.problems) == (plan.desired_version, "", [])
    assert example_registry.lock_holder(cluster_id) is None


def test_decommission_success_marks_the_cluster_decommissioned(example_registry, example_clusters) -> None:
    cluster = dataclasses.replace(example_clusters[0], lifecycle_status="decommission-requested")
    example_registry.put(cluster)
    plan = begin(example_registry, "cfg-1", cluster.id, EXECUTION, never_running)
    succeed(example_registry, plan, EXECUTION, "")
    assert example_registry.get(cluster.id).lifecycle_status == "decommissioned"


def test_failure_records_the_lambda_error_message_and_keeps_next_version(example_registry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    plan = begin(example_registry, "cfg-1", cluster_id, EXECUTION, never_running)
    cause = json.dumps(
        {"errorType": "NodeStartupTimeout", "errorMessage": "node pool default-worker: i-1 late", "stackTrace": ["..."]}
    )
    problem = fail(example_registry, cluster_id, EXECUTION, "NodeStartupTimeout", cause)
    assert problem.title == "NodeStartupTimeout: node pool default-worker: i-1 late"
    status = example_registry.get(cluster_id).status
    assert status.problems[-1].type == "https://cluster-lifecycle-manager.zalando.org/problems/NodeStartupTimeout"
    assert status.problems[-1].instance == EXECUTION
    assert status.next_version == plan.desired_version
    assert example_registry.lock_holder(cluster_id) == EXECUTION  # the fail step releases it after the halt
    assert fail(example_registry, cluster_id, EXECUTION, "States.Timeout", "").title == "States.Timeout"


def test_a_step_that_gave_up_after_its_retries_is_named(example_registry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    begin(example_registry, "cfg-1", cluster_id, EXECUTION, never_running)
    cause = json.dumps({"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out after 60.00 seconds"})
    problem = fail(example_registry, cluster_id, EXECUTION, "Sandbox.Timedout", cause, "Render (retried)")
    assert problem.title == "step Render (retried): Sandbox.Timedout: Task timed out after 60.00 seconds"
    assert example_registry.get(cluster_id).status.problems[-1].title == problem.title


def test_failure_of_a_child_workflow_records_the_childs_error(example_registry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    begin(example_registry, "cfg-1", cluster_id, EXECUTION, never_running)
    lambda_error = {"errorType": "NodeStartupTimeout", "errorMessage": "node pool default-worker: i-1 late"}
    child = {  # what states:startExecution.sync:2 gives as the cause of States.TaskFailed
        "ExecutionArn": "arn:aws:states:eu-central-1:123456789012:execution:clm-roll-node-pool:r1",
        "Status": "FAILED",
        "Error": "NodeStartupTimeout",
        "Cause": json.dumps(lambda_error),
    }
    problem = fail(example_registry, cluster_id, EXECUTION, "States.TaskFailed", json.dumps(child))
    assert problem.title == "NodeStartupTimeout: node pool default-worker: i-1 late"
    assert problem.type == "https://cluster-lifecycle-manager.zalando.org/problems/NodeStartupTimeout"


@pytest.mark.parametrize("new", ["requested", "creating"])  # both new in CLM (provisioner/clusterpy.go)
def test_first_success_makes_a_new_cluster_ready(example_registry, example_clusters, new) -> None:
    requested = dataclasses.replace(example_clusters[0], lifecycle_status=new)
    example_registry.put(requested)
    plan = begin(example_registry, "cfg-1", requested.id, EXECUTION, never_running)
    succeed(example_registry, plan, EXECUTION, plan.desired_version)
    cluster = example_registry.get(requested.id)
    assert (cluster.lifecycle_status, cluster.status.current_version) == ("ready", plan.desired_version)
    example_registry.put(dataclasses.replace(cluster, lifecycle_status="decommission-requested"))
    plan = begin(example_registry, "cfg-1", requested.id, EXECUTION, never_running)
    succeed(example_registry, plan, EXECUTION, "")
    assert example_registry.get(requested.id).lifecycle_status == "decommissioned"


def unreadable_channel(cluster) -> str:
    raise ConfigSourceError(f"cluster {cluster.id} (channel 'beta'): codecommit://config@beta: BranchDoesNotExist")


@pytest.mark.parametrize("lifecycle", ["ready", "decommission-requested"])
def test_a_configuration_that_cannot_be_read_is_a_problem_on_the_cluster(example_registry, example_clusters, lifecycle):
    """As CLM's controller (controller/cluster_list.go): a bad channel or override is recorded on the cluster, and the
    run ends without the lock; a decommission needs no configuration and goes on."""
    cluster = dataclasses.replace(example_clusters[0], lifecycle_status=lifecycle)
    example_registry.put(cluster)
    plan = begin(example_registry, unreadable_channel, cluster.id, EXECUTION, never_running)
    problems = example_registry.get(cluster.id).status.problems
    if lifecycle == "decommission-requested":
        assert plan.action == DECOMMISSION and problems == []
        return
    assert plan.action == SKIP and plan.reason.startswith("configuration cannot be read: cluster ")
    assert example_registry.lock_holder(cluster.id) is None
    [problem] = problems
    assert problem.title.startswith("configuration: cluster ") and "BranchDoesNotExist" in problem.title
    assert problem.instance == EXECUTION


def test_an_item_the_registry_cannot_read_is_a_problem_on_that_cluster(example_registry, example_clusters):
    """A provider CLM does not provision (CLM's config/config.go `--provider`: zalando-aws, zalando-eks) written
    straight into the table: its run records why on the item and ends, no lock; the other cluster is untouched."""
    gke = example_clusters[0]  # its item rewritten as a table writer can (DynamoRegistry.put refuses it)
    example_registry._client.update_item(
        TableName="clm-registry",
        Key={"id": {"S": gke.id}},
        UpdateExpression="SET #spec.#provider = :gke",
        ExpressionAttributeNames={"#spec": "spec", "#provider": "provider"},
        ExpressionAttributeValues={":gke": {"S": "zalando-gke"}},
    )
    plan = begin(example_registry, "cfg-1", gke.id, EXECUTION, never_running)
    assert plan.action == SKIP and "'zalando-gke' is not provisioned by CLM" in plan.reason
    assert example_registry.lock_holder(gke.id) is None
    clusters, invalid = example_registry.list_clusters_report()
    [(cluster_id, error)] = invalid
    assert cluster_id == gke.id and "provider" in error and [c.id for c in clusters] == [example_clusters[1].id]
    item = example_registry._client.get_item(TableName="clm-registry", Key={"id": {"S": gke.id}})["Item"]
    [problem] = item["status"]["M"]["problems"]["L"]
    assert problem["M"]["title"]["S"].startswith(
        "registry: dynamodb:clm-registry: cluster aws:123456789012:eu-central-1:kube-1: provider"
    )


@pytest.mark.parametrize("lifecycle", ["ready", "decommission-requested"])
def test_an_unknown_update_strategy_is_a_problem_on_the_cluster_before_any_aws_call(
    example_registry, example_clusters, lifecycle
):
    """CLM's updater refuses an update strategy it does not know (provisioner/clusterpy.go); here before the run
    reaches the cluster's account (`reach` is never asked) and without the lock. A decommission drains nothing."""
    items = {**example_clusters[0].config_items, "update_strategy": "surge"}
    cluster = dataclasses.replace(example_clusters[0], lifecycle_status=lifecycle, config_items=items)
    example_registry.put(cluster)
    asked: list[str] = []
    plan = begin(
        example_registry, "cfg-1", cluster.id, EXECUTION, never_running, reach=lambda cid, _: asked.append(cid) or ""
    )
    problems = example_registry.get(cluster.id).status.problems
    if lifecycle == "decommission-requested":
        assert plan.action == DECOMMISSION and problems == []
        return
    assert plan.action == SKIP and asked == [] and example_registry.lock_holder(cluster.id) is None
    [problem] = problems
    expected = f"configuration: cluster {cluster.id}: config_items.update_strategy: 'surge' is not one of rolling, clc"
    assert problem.title == expected
