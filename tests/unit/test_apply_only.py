"""Apply-only runs (clm.workflow.apply_only), as CLM's --apply-only (config/config.go; provisioner/clusterpy.go
provisionNodePoolGroup skips updater.Update): the deployment's setting and the cluster's item `apply_only` (which wins;
any other value than "true"/"false" is a problem on the cluster before any AWS call); the run's plan says so; a run
that leaves outdated nodes keeps `current_version` and records a problem naming them (CLM records the version, so a
later run without apply-only would find the cluster up to date and never roll them: the difference on purpose); the
same version in apply-only mode is not run again; the follow view says what was not rolled; the CDK context."""

from __future__ import annotations

import dataclasses

import pytest

from clm.cli.run_history import STEP_LINES
from clm.errors import ValidationError
from clm.registry.dynamodb import DynamoRegistry
from clm.workflow.apply_only import APPLY_ONLY_ENV, PROBLEM_TYPE, is_apply_only
from clm.workflow.run import PROVISION, SKIP, RunPlan, begin, succeed
from infra.context import ClmContext

EXECUTION = "arn:aws:states:eu-central-1:123456789012:execution:provision:run-1"
LATER = "arn:aws:states:eu-central-1:123456789012:execution:provision:run-2"


def never_running(_: str) -> bool:
    return False


def with_item(cluster, value: str | None):  # type: ignore[no-untyped-def]
    items = {k: v for k, v in cluster.config_items.items() if k != "apply_only"}
    return dataclasses.replace(cluster, config_items={**items, **({"apply_only": value} if value else {})})


@pytest.mark.parametrize(
    ("deployment", "item", "expected"),
    [("", None, False), ("true", None, True), ("true", "false", False), ("", "true", True), ("false", "true", True)],
)
def test_the_clusters_item_overrides_the_deployments_setting(example_clusters, deployment, item, expected) -> None:
    assert is_apply_only(with_item(example_clusters[0], item), {APPLY_ONLY_ENV: deployment}) is expected


def test_another_value_is_a_problem_on_the_cluster_before_any_work(example_registry, example_clusters) -> None:
    cluster = with_item(example_clusters[0], "yes")
    with pytest.raises(ValidationError, match=f"cluster {cluster.id}.*apply_only is 'yes'"):
        is_apply_only(cluster, {})
    example_registry.put(cluster)
    plan = begin(example_registry, "cfg-1", cluster.id, EXECUTION, never_running, apply_only=is_apply_only)
    assert plan.action == SKIP and "apply_only is 'yes'" in plan.reason
    assert "apply_only is 'yes'" in example_registry.get(cluster.id).status.problems[-1].title
    assert example_registry.lock_holder(cluster.id) is None


def test_a_run_that_leaves_outdated_nodes_keeps_the_version_behind_and_says_why(
    example_registry: DynamoRegistry, example_clusters
) -> None:
    cluster_id = example_clusters[0].id
    example_registry.record_success(cluster_id, "cfg-0#old")
    plan = begin(example_registry, "cfg-1", cluster_id, EXECUTION, never_running, apply_only=lambda _: True)
    assert (plan.action, plan.apply_only) == (PROVISION, True)
    assert plan.reason.endswith("(apply-only: stacks and manifests, no node pool rolled)")
    ran = dataclasses.replace(plan, left_outdated={"default-worker": 3, "batch": 0})
    succeed(example_registry, RunPlan(**ran.to_dict()), EXECUTION, plan.desired_version)  # through the payload
    status = example_registry.get(cluster_id).status
    assert (status.current_version, status.next_version) == ("cfg-0#old", plan.desired_version)
    assert status.problems[-1].type == PROBLEM_TYPE
    assert status.problems[-1].title == (
        f"apply-only: 3 outdated node(s) not rolled at version {plan.desired_version}: batch (0), default-worker (3)"
    )
    assert example_registry.lock_holder(cluster_id) is None

    again = begin(example_registry, "cfg-1", cluster_id, LATER, never_running, apply_only=lambda _: True)
    assert again.action == SKIP and "in apply-only mode" in again.reason  # nothing more to apply
    rolling = begin(example_registry, "cfg-1", cluster_id, LATER, never_running, apply_only=lambda _: False)
    assert (rolling.action, rolling.apply_only) == (PROVISION, False)  # apply-only off: the nodes are rolled


def test_a_run_that_leaves_no_outdated_node_records_the_version(example_registry, example_clusters) -> None:
    cluster_id = example_clusters[0].id
    plan = begin(example_registry, "cfg-1", cluster_id, EXECUTION, never_running, apply_only=lambda _: True)
    succeed(example_registry, dataclasses.replace(plan, left_outdated={}), EXECUTION, plan.desired_version)
    status = example_registry.get(cluster_id).status
    assert (status.current_version, status.problems) == (plan.desired_version, [])


def test_a_decommission_is_never_apply_only(example_registry, example_clusters) -> None:
    cluster = dataclasses.replace(with_item(example_clusters[0], "yes"), lifecycle_status="decommission-requested")
    example_registry.put(cluster)
    plan = begin(example_registry, "cfg-1", cluster.id, EXECUTION, never_running, apply_only=is_apply_only)
    assert (plan.action, plan.apply_only) == ("decommission", False)


def test_the_follow_view_says_what_was_not_rolled() -> None:
    assert STEP_LINES["LeftOutdated"]({}, {"default-worker": 2}) == (
        "Apply-only: no node pool rolled; outdated nodes left: default-worker (2)",
        "yellow",
    )
    assert (
        STEP_LINES["ProvisionPools"]({}, {"pools": [], "apply_only": True})[0] == "Node pools: none rolled (apply-only)"
    )
    done = {"action": "provision", "version": "v2", "left_outdated": {"default-worker": 2}}
    assert STEP_LINES["Succeed"]({}, done) == (
        "Succeed: version v2 applied (apply-only), 2 outdated node(s) left",
        "yellow",
    )


def test_the_cdk_context_sets_the_deployments_default(tmp_path) -> None:
    from aws_cdk import App, Stack

    for context, expected in (({}, False), ({"clm:applyOnly": True}, True), ({"clm:applyOnly": "true"}, True)):
        stack = Stack(App(context=context, outdir=str(tmp_path)), "S")
        assert ClmContext.of(stack).apply_only is expected
