"""Reconcile: selection in CLM's priority order, execution names that collapse duplicates, bounded starts."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from clm.model import Cluster, ClusterStatus, Problem
from clm.registry.problems import configuration_problem
from clm.version import desired_version
from clm.workflow.follow_up import FOLLOW_SECONDS, LOOP_SECONDS, follow_up, loop_state, state_machine_of
from clm.workflow.reconcile import (
    DECOMMISSION,
    INTERRUPTED,
    OUTDATED,
    UNRESOLVABLE,
    WINDOW_SECONDS,
    execution_name,
    select,
    select_unresolvable,
    start_runs,
)

NOW = 1_790_000_000.0
ROLE = "arn:aws:iam::123456789012:role/clm"


def variant(base: Cluster, name: str, **changes: object) -> Cluster:
    return dataclasses.replace(base, id=f"aws:123456789012:eu-central-1:{name}", local_id=name, **changes)


def test_selection_order_and_exclusions(example_clusters) -> None:
    base = example_clusters[0]
    up_to_date = variant(base, "e-current")
    up_to_date = dataclasses.replace(
        up_to_date, status=ClusterStatus(current_version=str(desired_version(up_to_date, "v2")))
    )
    clusters = [
        variant(base, "a-outdated", status=ClusterStatus(current_version="v1#x")),
        variant(base, "b-decommission", lifecycle_status="decommission-requested"),
        variant(base, "c-interrupted", status=ClusterStatus(current_version="v1#x", next_version="v2#y")),
        variant(base, "d-gone", lifecycle_status="decommissioned"),
        up_to_date,
        variant(base, "f-blocked", config_items={"cluster_update_block": "maintenance"}),
    ]
    selected = select(clusters, "v2", NOW)
    assert [(s.cluster_id.rsplit(":", 1)[1], s.reason) for s in selected] == [
        ("c-interrupted", INTERRUPTED),
        ("b-decommission", DECOMMISSION),
        ("a-outdated", OUTDATED),
    ]


def test_priority_within_a_reason_is_criticality_then_id_and_decommission_beats_an_interrupted_update(
    example_clusters,
) -> None:
    """CLM's controller/cluster_list.go: priority, then (as CLM's pull request #670) the higher criticality_level; a
    decommission-requested cluster counts as a decommission even when its update was interrupted (CLM checks
    decommission-requested first)."""
    base = example_clusters[0]
    outdated = ClusterStatus(current_version="v1#x")
    clusters = [
        variant(base, "a-low", status=outdated, criticality_level=1),
        variant(base, "b-high", status=outdated, criticality_level=3),
        variant(base, "c-high", status=outdated, criticality_level=3),
        variant(
            base,
            "d-decommission-interrupted",
            lifecycle_status="decommission-requested",
            status=ClusterStatus(current_version="v1#x", next_version="v2#y"),
        ),
    ]
    assert [(s.cluster_id.rsplit(":", 1)[1], s.reason) for s in select(clusters, "v2", NOW)] == [
        ("d-decommission-interrupted", DECOMMISSION),
        ("b-high", OUTDATED),
        ("c-high", OUTDATED),
        ("a-low", OUTDATED),
    ]


def test_a_cluster_whose_configuration_cannot_be_resolved_gets_a_run_until_its_problem_says_so(
    example_clusters,
) -> None:
    """CLM's controller takes a cluster whose channel cannot be resolved at every pass and records the error on it
    (controller/cluster_list.go updatePriority: NextError is updatePriorityNormal; controller.go processCluster): here
    its run records it (clm.workflow.run.begin), and a cluster whose last problem already says so needs no new run.
    A decommission goes on without configuration; decommissioned and blocked clusters get nothing, as in CLM."""
    base = example_clusters[0]
    why = "cluster x (channel 'gamma'): s3://config/gamma/: no such prefix"
    recorded = ClusterStatus(problems=[Problem(title="other"), Problem(title=configuration_problem(why), instance="e")])
    clusters = [
        variant(base, "a-bad", criticality_level=1),
        variant(base, "b-recorded", status=recorded),
        variant(base, "c-decommission", lifecycle_status="decommission-requested", status=recorded),
        variant(base, "d-gone", lifecycle_status="decommissioned"),
        variant(base, "e-blocked", config_items={"cluster_update_block": "freeze"}),
        variant(base, "f-fine"),
        variant(base, "g-older-problem", status=ClusterStatus(problems=[Problem(title=configuration_problem("old"))])),
    ]
    errors = {cluster.id: why for cluster in clusters if not cluster.id.endswith("f-fine")}
    chosen = select_unresolvable(clusters, errors, NOW)
    assert [(s.cluster_id.rsplit(":", 1)[1], s.reason) for s in chosen] == [
        ("c-decommission", DECOMMISSION),
        ("a-bad", UNRESOLVABLE),
        ("g-older-problem", UNRESOLVABLE),
    ]
    assert len({s.execution_name for s in chosen}) == 3 and all(s.desired_version == "" for s in chosen)


def test_execution_names_collapse_within_a_window_and_are_valid(example_clusters) -> None:
    cluster = variant(example_clusters[0], "kube.1:" + "x" * 100)
    name = execution_name(cluster, "v2#h", NOW)
    assert len(name) <= 80 and all(c.isalnum() or c in "-_" for c in name)
    assert execution_name(cluster, "v2#h", NOW + 1) == name
    assert execution_name(cluster, "v3#h", NOW) != name
    assert execution_name(cluster, "v2#h", NOW + 900) != name


@pytest.fixture
def sfn(aws: boto3.Session):
    client = aws.client("stepfunctions")
    arn = client.create_state_machine(
        name="provision", definition='{"StartAt":"x","States":{"x":{"Type":"Pass","End":true}}}', roleArn=ROLE
    )["stateMachineArn"]
    return client, arn


def test_runs_are_started_once_and_bounded(sfn, example_clusters) -> None:
    client, arn = sfn
    clusters = [variant(example_clusters[0], f"k{n}") for n in range(4)]
    selections = select(clusters, "v1", NOW)
    first = start_runs(client, arn, selections, max_running=3)
    assert first == {
        "started": [s.cluster_id for s in selections[:3]],
        "already_started": [],
        "deferred": [selections[3].cluster_id],
        "waiting_for_run": [],
    }
    inputs = [
        json.loads(client.describe_execution(executionArn=e["executionArn"])["input"])
        for e in client.list_executions(stateMachineArn=arn)["executions"]
    ]
    assert {i["cluster_id"] for i in inputs} == set(first["started"])
    again = start_runs(client, arn, selections, max_running=10)
    assert again["already_started"] == first["started"]
    assert again["started"] == [selections[3].cluster_id]


def test_a_finished_run_of_the_same_window_is_not_started_again(sfn, example_clusters) -> None:
    client, arn = sfn
    selections = select([variant(example_clusters[0], "k0")], "v1", NOW)
    start_runs(client, arn, selections, max_running=10)
    execution = client.list_executions(stateMachineArn=arn)["executions"][0]["executionArn"]
    client.stop_execution(executionArn=execution)
    assert start_runs(client, arn, selections, max_running=10)["already_started"] == [selections[0].cluster_id]


def test_a_run_to_the_same_version_started_in_an_earlier_window_is_going_before_it_takes_the_lock(
    sfn, example_clusters
) -> None:
    """A look just after a time window turned, while the run the last look started has not taken the lock yet,
    starts no second run (it would skip: a fresh clone's test_cf_manifests saw one); another version does start."""
    client, _ = sfn
    waiting = '{"StartAt":"w","States":{"w":{"Type":"Wait","Seconds":600,"End":true}}}'
    arn = client.create_state_machine(name="slow", definition=waiting, roleArn=ROLE)["stateMachineArn"]
    cluster = variant(example_clusters[0], "k0")
    start_runs(client, arn, select([cluster], "v1", NOW), max_running=10)
    later = NOW + WINDOW_SECONDS
    assert start_runs(client, arn, select([cluster], "v1", later), max_running=10)["already_started"] == [cluster.id]
    assert start_runs(client, arn, select([cluster], "v2", later), max_running=10)["started"] == [cluster.id]


def test_reconcile_looks_again_while_runs_are_deferred_until_the_loop_is_old() -> None:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    assert follow_up(3, started, started + timedelta(minutes=5)) == {"again": True, "wait_seconds": FOLLOW_SECONDS}
    assert follow_up(0, started, started + timedelta(minutes=5))["again"] is False
    assert follow_up(3, started, started + timedelta(seconds=LOOP_SECONDS))["again"] is False
    assert follow_up(3, None)["again"] is True


def test_reconcile_looks_again_when_a_rollouts_bake_ends_within_the_loop() -> None:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    now = started + timedelta(minutes=5)
    assert follow_up(0, started, now, wake_at=now + timedelta(minutes=30)) == {"again": True, "wait_seconds": 1800}
    assert follow_up(0, started, now, wake_at=now + timedelta(seconds=0.2)) == {"again": True, "wait_seconds": 1}
    assert follow_up(True, started, now, wake_at=now + timedelta(minutes=30))["wait_seconds"] == FOLLOW_SECONDS
    beyond = now + timedelta(seconds=LOOP_SECONDS)  # the schedule's next reconcile looks then
    assert follow_up(0, started, now, wake_at=beyond)["again"] is False


def test_a_newer_reconcile_leaves_the_following_to_the_older_one(aws: boto3.Session) -> None:
    client = aws.client("stepfunctions")
    machine = client.create_state_machine(
        name="clm-reconcile",
        definition='{"StartAt":"x","States":{"x":{"Type":"Pass","End":true}}}',
        roleArn="arn:aws:iam::123456789012:role/clm",
    )["stateMachineArn"]
    first = client.start_execution(stateMachineArn=machine, name="a-first")["executionArn"]
    second = client.start_execution(stateMachineArn=machine, name="b-second")["executionArn"]
    assert state_machine_of(second) == machine
    assert loop_state(client, first)[0] is None
    assert loop_state(client, second)[0] == first
    client.stop_execution(executionArn=first)
    older, started = loop_state(client, second)
    assert older is None and started is not None
