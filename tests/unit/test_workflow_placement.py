"""A cluster in an account the deployment may not reach (clm:targetAccounts, default: its own), or whose target the
hub cannot reach, is refused before any other AWS call for it: its run records a problem naming the cluster, its
account and region and the fix, and skips (no lock, no configuration read, no stack), and reconcile starts no run for
a cluster of an account not allowed, schedule after schedule. Every plan carries the cluster's target, where the run's
steps act (in-process moto: the deployment in 123456789012, eu-central-1)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import boto3
import pytest

from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry
from clm.targets import Target
from clm.workflow.run import SKIP, begin
from tests.unit.test_lambda_run import call
from tests.unit.test_lambda_run import deployment as run_deployment

__all__ = ["run_deployment"]  # fixture

EXECUTION = "arn:aws:states:eu-central-1:123456789012:execution:provision:run-1"
DEPLOYMENT = "this deployment's (account 123456789012, region eu-central-1)"


def elsewhere(base: Cluster, account: str = "123456789012", region: str = "eu-central-1", **changes: Any) -> Cluster:
    """`base` as another cluster in `account` and `region`, named after them."""
    name = f"kube-{account[-1]}-{region}"
    return dataclasses.replace(
        base,
        id=f"aws:{account}:{region}:{name}",
        local_id=name,
        infrastructure_account=f"aws:{account}",
        region=region,
        **changes,
    )


FOREIGN = {  # where each cluster is, and how its refusal names what differs
    "account": ({"account": "999999999999"}, "infrastructure_account aws:999999999999 is"),
    "region": ({"region": "us-east-1"}, "region us-east-1 is"),
    "both": (
        {"account": "999999999999", "region": "us-east-1"},
        "infrastructure_account aws:999999999999 and region us-east-1 are",
    ),
}


def expected_refusal(cluster: Cluster, differs: str) -> str:
    return f"cluster {cluster.id}: {differs} not {DEPLOYMENT}"


def registry_items(aws: boto3.Session, table: str) -> dict[str, Any]:
    items = aws.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]
    return {item["id"]["S"]: item for item in items}


def never_read(cluster: Cluster) -> str:
    raise AssertionError(f"the configuration was read for {cluster.id}")


@pytest.mark.parametrize("where", FOREIGN)
def test_refusal_names_the_cluster_its_fields_that_differ_and_the_deployment(example_clusters, where) -> None:
    from clm.targets import Target
    from clm.workflow.placement import refusal

    home = Target("123456789012", "eu-central-1")
    placed, differs = FOREIGN[where]
    cluster = elsewhere(example_clusters[0], **placed)
    assert refusal(cluster, home) == expected_refusal(cluster, differs)
    assert refusal(example_clusters[0], home) == ""


NOT_ALLOWED = "account 999999999999 is not one this deployment may reach (clm:targetAccounts: 123456789012)"


def target_refusal(cluster: Cluster, why: str = NOT_ALLOWED) -> str:
    return f"target: cluster {cluster.id}: account {cluster.account_id}, region {cluster.region}: {why}"


@pytest.mark.parametrize("lifecycle", ["requested", "ready", "decommission-requested"])
@pytest.mark.parametrize("where", ["account", "both"])
def test_a_run_of_a_cluster_in_an_account_not_allowed_records_a_problem_and_skips_before_any_call_for_it(
    aws, example_registry: DynamoRegistry, example_clusters, where, lifecycle
) -> None:
    cluster = elsewhere(example_clusters[0], **FOREIGN[where][0], lifecycle_status=lifecycle)
    example_registry.put(cluster)
    before = registry_items(aws, "clm-registry")
    assumed = []
    aws.client("sts").meta.events.register("before-call.sts.AssumeRole", lambda **_: assumed.append(1))
    plan = begin(example_registry, never_read, cluster.id, EXECUTION, lambda _: False)
    title = target_refusal(cluster)
    assert (plan.action, plan.reason) == (SKIP, title)
    assert plan.target == {"account": "999999999999", "region": cluster.region}
    after = registry_items(aws, "clm-registry")
    assert {key: after[key] for key in after if key != cluster.id} == {
        key: before[key] for key in before if key != cluster.id
    }  # the example clusters are as they were
    refused = example_registry.get(cluster.id)
    assert [(p.title, p.instance) for p in refused.status.problems] == [(title, EXECUTION)]
    assert example_registry.lock_holder(cluster.id) is None
    assert (refused.status.next_version, refused.lifecycle_status) == ("", lifecycle)
    assert aws.client("cloudformation").describe_stacks()["Stacks"] == []


def test_a_target_the_hub_cannot_reach_is_a_problem_and_a_reachable_ones_plan_carries_it(
    aws, example_registry: DynamoRegistry, example_clusters
) -> None:
    """`reach` (the target role assumed once: clm.workflow.target_aws.refusal) decides; its reason is the title."""
    asked: list[tuple[str, Target]] = []

    def unreachable(cluster_id: str, target: Target) -> str:
        asked.append((cluster_id, target))
        return f"cluster {cluster_id}: {target}: the hub cannot assume its role"

    cluster = elsewhere(example_clusters[0], region="us-east-1")
    example_registry.put(cluster)
    plan = begin(example_registry, never_read, cluster.id, EXECUTION, lambda _: False, reach=unreachable)
    assert asked == [(cluster.id, Target("123456789012", "us-east-1"))]
    why = "the hub cannot assume its role"
    assert plan.reason == f"target: cluster {cluster.id}: account 123456789012, region us-east-1: {why}"
    assert example_registry.lock_holder(cluster.id) is None
    plan = begin(example_registry, lambda _: "v1", cluster.id, EXECUTION, lambda _: False, reach=lambda *_: "")
    assert (plan.action, plan.target) == ("provision", {"account": "123456789012", "region": "us-east-1"})


def test_the_deployments_placement_is_asked_of_sts_once_per_container(aws) -> None:
    from clm.aws import client, forget_clients
    from clm.targets import Target
    from clm.workflow.placement import deployment

    forget_clients()
    asked = []
    client("sts").meta.events.register("before-call.sts.GetCallerIdentity", lambda **_: asked.append(1))
    assert deployment() == deployment() == Target("123456789012", "eu-central-1")
    assert len(asked) == 1


def test_the_run_functions_begin_refuses_a_cluster_of_another_account(run_deployment: DynamoRegistry) -> None:
    cluster = elsewhere(run_deployment.list_clusters()[0], account="999999999999")
    run_deployment.put(cluster)
    plan = call("begin", cluster_id=cluster.id)
    assert (plan["action"], plan["reason"]) == (SKIP, target_refusal(cluster))
    assert [p.title for p in run_deployment.get(cluster.id).status.problems] == [plan["reason"]]
    assert run_deployment.lock_holder(cluster.id) is None


def test_reconcile_starts_no_run_for_clusters_of_accounts_not_allowed_schedule_after_schedule(
    aws, reconciling, example_registry: DynamoRegistry, example_clusters
) -> None:
    from clm.workflow.reconcile_steps import reconcile

    sfn, machine = reconciling
    base = example_clusters[0]
    account = elsewhere(base, account="999999999999")
    both = elsewhere(base, account="999999999999", region="us-east-1", lifecycle_status="decommission-requested")
    region = elsewhere(base, region="us-east-1")  # the hub's own account: allowed (its run assumes the target role)
    for cluster in (account, both, region):
        example_registry.put(cluster)
    before = registry_items(aws, "clm-registry")
    for _ in range(2):  # two schedules
        result = reconcile({})
        assert result["foreign"] == [
            {"cluster_id": both.id, "reason": NOT_ALLOWED},
            {"cluster_id": account.id, "reason": NOT_ALLOWED},
        ]  # in reconcile's order: the decommission first
        runs = sorted(result["started"]["ids"] + result["already_started"]["ids"])
        assert runs == sorted([region.id, *(c.id for c in example_clusters)])
    started = [json.loads(e["input"])["cluster_id"] for e in _executions(sfn, machine)]
    assert sorted(started) == sorted([region.id, *(c.id for c in example_clusters)])
    assert registry_items(aws, "clm-registry") == before  # no problem recorded over and over


def _executions(sfn: Any, machine: str) -> list[dict[str, Any]]:
    listed = sfn.list_executions(stateMachineArn=machine)["executions"]
    return [sfn.describe_execution(executionArn=e["executionArn"]) for e in listed]


def test_a_provisioned_cluster_is_not_moved_by_a_registry_edit_and_is_decommissioned_where_it_is(
    aws, example_registry: DynamoRegistry, example_clusters
) -> None:
    """A registry writer changes a provisioned cluster's account (CLM would provision a copy there and orphan the
    original): its provision is refused naming both places; its decommission acts where it was provisioned; once
    decommissioned, the record is gone."""
    cluster = elsewhere(example_clusters[0], region="eu-west-1")
    example_registry.put(cluster)
    plan = begin(example_registry, lambda _: "v1", cluster.id, EXECUTION, lambda _: False, reach=lambda *_: "")
    assert plan.action == "provision"
    here = Target("123456789012", "eu-west-1")
    assert example_registry.placement(cluster.id) == here
    example_registry.release_lock(cluster.id, EXECUTION)

    moved = dataclasses.replace(cluster, infrastructure_account="aws:222222222222")
    example_registry.put(moved)
    plan = begin(example_registry, lambda _: "v2", cluster.id, EXECUTION, lambda _: False, reach=lambda *_: "")
    assert plan.action == SKIP and plan.target == {"account": "123456789012", "region": "eu-west-1"}
    assert plan.reason == (
        f"target: cluster {cluster.id}: its registry item names account 222222222222, region eu-west-1, but CLM "
        "provisioned it in account 123456789012, region eu-west-1: CLM does not move a cluster; restore "
        "infrastructure_account and region, or decommission it (it is decommissioned where it was provisioned) and "
        "register it anew"
    )
    assert example_registry.get(cluster.id).status.problems[-1].title == plan.reason
    assert example_registry.lock_holder(cluster.id) is None

    example_registry.put(dataclasses.replace(moved, lifecycle_status="decommission-requested"))
    reached: list[Target] = []
    plan = begin(
        example_registry,
        lambda _: "v2",
        cluster.id,
        EXECUTION,
        lambda _: False,
        reach=lambda _, target: reached.append(target) or "",
    )
    assert (plan.action, plan.target, reached) == (
        "decommission",
        {"account": "123456789012", "region": "eu-west-1"},
        [here],
    )
    example_registry.record_decommissioned(cluster.id)
    assert example_registry.placement(cluster.id) is None
