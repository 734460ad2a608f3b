"""Disruptive work held outside a cluster's maintenance window and during fleet freezes (clm.rolling.disruption,
clm.workflow.maintenance), and the freezes of the rollout policy (clm.rollout.parse)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from clm.errors import RolloutPolicyError
from clm.model import Cluster
from clm.rolling.disruption import Closed, MaintenanceWindowClosed, closed, next_allowed
from clm.rolling.pool import Member, PoolState
from clm.rolling.window import MaintenanceWindowInvalid, parse_window
from clm.rollout.parse import parse
from clm.rollout.policy import Freeze
from clm.stacks.deploy import start
from clm.stacks.replacing import instance_replacers
from clm.stacks.spec import StackSpec
from clm.workflow.maintenance import hold_disruption, hold_stack_update
from clm.workflow.rollout_gate import NOT_THE_VERSIONS
from tests.unit.test_stacks_deploy import queue_spec
from tests.unit.test_stacks_support import clients, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)  # a Saturday
CLUSTER_ID = "aws:123456789012:eu-central-1:kube-1"
REPLACE = {"action": "replace", "reason": "1 outdated", "replace": [{"instance_id": "i-1"}]}


def cluster(**config_items: str) -> Cluster:
    return Cluster(
        id=CLUSTER_ID,
        local_id="kube-1",
        infrastructure_account="aws:123456789012",
        region="eu-central-1",
        provider="zalando-aws",
        config_items=dict(config_items),
    )


def pool(*outdated: bool) -> PoolState:
    members = [Member(f"i-{n}", "eu-central-1a", "InService", old, 600.0) for n, old in enumerate(outdated)]
    return PoolState("workers", "asg-workers", len(members), 0, 10, members)


def no_freezes() -> tuple[Freeze, ...]:
    return ()


def hold(decision: dict, state: PoolState, target: Cluster, freezes=no_freezes) -> None:  # type: ignore[no-untyped-def]
    hold_disruption(decision, state, target, freezes, NOW)


def test_no_window_is_always_open() -> None:
    hold(REPLACE, pool(True, True), cluster())


def test_a_roll_outside_its_window_waits_before_its_first_node() -> None:
    with pytest.raises(MaintenanceWindowClosed) as held:
        hold(REPLACE, pool(True, True, True), cluster(maintenance_window="Mon-Fri 22:00-04:00 UTC"))
    assert str(held.value).startswith("waiting for maintenance window (opens 2026-11-30T22:00:00Z); ")
    assert f"cluster {CLUSTER_ID}, node pool workers: maintenance window 'Mon-Fri 22:00-04:00 UTC'" in str(held.value)
    assert held.value.asl_name in NOT_THE_VERSIONS  # a wait halts no rollout


def test_a_roll_under_way_stops_at_its_node_boundary() -> None:
    with pytest.raises(MaintenanceWindowClosed) as held:
        hold(REPLACE, pool(False, True, True), cluster(maintenance_window="Mon-Fri 22:00-04:00 UTC"))
    assert str(held.value).startswith(
        "stopped at node boundary: window closed at 2026-11-28T04:00:00Z (opens 2026-11-30T22:00:00Z); "
    )


def test_a_surge_is_disruptive_and_shrinking_back_is_not() -> None:
    target = cluster(maintenance_window="Mon 01:00-02:00 UTC")
    with pytest.raises(MaintenanceWindowClosed):
        hold({"action": "scale", "reason": "surge", "desired": 3, "baseline": 2}, pool(True, True), target)
    hold({"action": "scale", "reason": "roll finished", "desired": 2}, pool(False, False, False), target)
    hold({"action": "wait", "reason": "booting", "wait_seconds": 5}, pool(False, True), target)
    hold({"action": "done", "reason": "up to date"}, pool(False, False), target)


def test_non_disruptive_decisions_read_neither_window_nor_policy() -> None:
    def unreadable() -> tuple[Freeze, ...]:
        raise AssertionError("read")

    hold({"action": "done", "reason": "up to date"}, pool(False), cluster(maintenance_window="bad"), unreadable)


def test_a_bad_window_holds_the_roll_and_names_the_cluster() -> None:
    with pytest.raises(MaintenanceWindowInvalid, match=f"cluster {CLUSTER_ID}: config item maintenance_window: "):
        hold(REPLACE, pool(True), cluster(maintenance_window="always"))
    assert MaintenanceWindowInvalid.asl_name in NOT_THE_VERSIONS


def test_an_unreadable_policy_leaves_freezes_unknown_and_the_roll_waits() -> None:
    def broken() -> tuple[Freeze, ...]:
        raise RolloutPolicyError("waves: a non-empty list", "s3://config/cluster/rollout.yaml", 1)

    with pytest.raises(MaintenanceWindowClosed, match=r"opens no opening found.*freezes are unknown"):
        hold(REPLACE, pool(True), cluster(), broken)


def freeze(start: datetime, hours: float, reason: str = "holidays") -> Freeze:
    return Freeze(start, start + timedelta(hours=hours), reason)


def test_a_freeze_holds_every_cluster_whatever_its_window() -> None:
    freezes = (freeze(NOW - timedelta(hours=1), 3),)
    with pytest.raises(MaintenanceWindowClosed) as held:
        hold(REPLACE, pool(False, True), cluster(maintenance_window="Sat 00:00-24:00 UTC"), lambda: freezes)
    assert str(held.value).startswith(
        "stopped at node boundary: window closed at 2026-11-28T11:00:00Z (opens 2026-11-28T14:00:00Z)"
    )
    assert "fleet freeze until 2026-11-28T14:00:00Z: holidays" in str(held.value)


def test_next_allowed_steps_over_freezes_and_closings() -> None:
    window = parse_window("Sat 10:00-13:00 UTC; Sat 15:00-16:00 UTC", "c1")
    freezes = [freeze(NOW - timedelta(hours=1), 1.5), freeze(NOW + timedelta(hours=3), 0.5)]
    # 12:00 frozen until 12:30 (window open), then free.
    assert next_allowed(window, freezes, NOW) == NOW + timedelta(minutes=30)
    # From 13:00 (closed): 15:00 opens, frozen until 15:30.
    assert next_allowed(window, freezes, NOW + timedelta(hours=1)) == NOW + timedelta(hours=3, minutes=30)
    assert closed(None, freezes, NOW + timedelta(hours=1)) is None


def test_back_to_back_freezes_find_no_opening_rather_than_loop() -> None:
    freezes = [freeze(NOW + timedelta(hours=n), 1) for n in range(300)]
    assert next_allowed(None, freezes, NOW) is None


def policy(freezes: str) -> str:
    return f"waves:\n- name: all\nfreeze:\n{freezes}"


def test_freezes_are_read_from_the_policy() -> None:
    read = parse(
        policy(
            "- {from: 2026-12-20T00:00:00Z, to: '2027-01-06T00:00:00+01:00', reason: year end}\n"
            "- {from: '2026-11-30T08:00:00.5-05:00', to: 2026-11-30T20:00:00-05:00, reason: ' launch '}\n"
        ),
        "rollout.yaml",
    )
    assert read.freezes[0] == Freeze(
        datetime(2026, 12, 20, tzinfo=UTC), datetime(2027, 1, 5, 23, tzinfo=UTC), "year end"
    )
    assert read.freezes[1].reason == "launch"
    assert read.freezes[1].holds(datetime(2026, 11, 30, 14, tzinfo=UTC))
    assert parse("waves:\n- name: all\n", "rollout.yaml").freezes == ()


@pytest.mark.parametrize(
    ("freezes", "said"),
    [
        ("- {from: 2026-12-20, to: 2026-12-21T00:00:00Z, reason: a}", "from: an RFC 3339 time"),
        ("- {from: '2026-12-20T00:00:00', to: 2026-12-21T00:00:00Z, reason: a}", "from: an RFC 3339 time"),
        ("- {from: 2026-12-20T00:00:00, to: 2026-12-21T00:00:00Z, reason: a}", "from: an RFC 3339 time"),
        ("- {from: 'next monday', to: 2026-12-21T00:00:00Z, reason: a}", "from: an RFC 3339 time"),
        ("- {from: 2026-12-20T00:00:00Z, to: 2026-12-20T00:00:00Z, reason: a}", "`to` must be after `from`"),
        ("- {from: 2026-12-20T00:00:00Z, to: 9999-12-31T00:00:00Z, reason: a}", "by at most 31 days"),
        ("- {from: 2026-12-20T00:00:00Z, to: 2026-12-21T00:00:00Z}", "reason: text of 1 to 200"),
        ("- {from: 2026-12-20T00:00:00Z, to: 2026-12-21T00:00:00Z, reason: ''}", "reason: text of 1 to 200"),
        ("- {from: 2026-12-20T00:00:00Z, to: 2026-12-21T00:00:00Z, reason: a, scope: all}", "unknown key 'scope'"),
        ("  from: 2026-12-20T00:00:00Z", "freeze: a list of at most 50"),
        ("- 2026-12-20T00:00:00Z", "freeze: each is a mapping"),
    ],
)
def test_bad_freezes_are_refused_with_their_line(freezes: str, said: str) -> None:
    with pytest.raises(RolloutPolicyError) as refused:
        parse(policy(freezes), "cluster/rollout.yaml")
    assert said in str(refused.value)
    assert str(refused.value).startswith("cluster/rollout.yaml:")


def test_too_many_freezes_are_refused() -> None:
    many = "".join(f"- {{from: 2026-12-01T00:00:{n:02d}Z, to: 2026-12-02T00:00:00Z, reason: r}}\n" for n in range(51))
    with pytest.raises(RolloutPolicyError, match="at most 50"):
        parse(policy(many), "rollout.yaml")


ETCD_LIKE = {
    "Resources": {
        "Etcd": {"Type": "AWS::EC2::Instance", "Properties": {"ImageId": "ami-1"}},
        "Rolling": {
            "Type": "AWS::AutoScaling::AutoScalingGroup",
            "UpdatePolicy": {"AutoScalingRollingUpdate": {"MaxBatchSize": 1}},
        },
        "Replacing": {
            "Type": "AWS::AutoScaling::AutoScalingGroup",
            "UpdatePolicy": {"AutoScalingReplacingUpdate": {"WillReplace": True}},
        },
        "Plain": {"Type": "AWS::AutoScaling::AutoScalingGroup", "UpdatePolicy": {"AutoScalingScheduledAction": {}}},
        "Template": {"Type": "AWS::EC2::LaunchTemplate"},
        "Odd": "not a resource",
    }
}


def test_resources_whose_update_replaces_instances() -> None:
    assert instance_replacers(ETCD_LIKE) == ["Etcd", "Replacing", "Rolling"]
    assert instance_replacers({"Resources": {"Group": {"Type": "AWS::AutoScaling::AutoScalingGroup"}}}) == []
    assert instance_replacers({"Resources": ["not", "a", "mapping"]}) == []
    assert instance_replacers({}) == []


def stack_spec(template: dict) -> StackSpec:
    return StackSpec(cluster_id=CLUSTER_ID, name="kube-1-etcd", body="", template=template, tags={}, parameters={})


def test_a_stack_update_that_replaces_instances_waits_for_the_window() -> None:
    closed_window = cluster(maintenance_window="Mon 01:00-02:00 UTC")
    with pytest.raises(MaintenanceWindowClosed) as held:
        hold_stack_update(stack_spec(ETCD_LIKE), lambda: closed_window, no_freezes, NOW)
    assert str(held.value) == (
        "waiting for maintenance window (opens 2026-11-30T01:00:00Z); cluster "
        f"{CLUSTER_ID}, stack kube-1-etcd (its update may replace instances: Etcd, Replacing, Rolling): "
        "maintenance window 'Mon 01:00-02:00 UTC'"
    )
    hold_stack_update(stack_spec(ETCD_LIKE), cluster, no_freezes, NOW)  # no window: always open


def test_a_stack_update_replacing_nothing_reads_neither_cluster_nor_policy() -> None:
    def unread() -> Cluster:
        raise AssertionError("read")

    hold_stack_update(
        stack_spec({"Resources": {"Template": {"Type": "AWS::EC2::LaunchTemplate"}}}), unread, unread, NOW
    )


def test_the_hold_before_an_update_is_asked_only_when_an_update_starts(clients) -> None:  # type: ignore[no-untyped-def]
    """On moto's CloudFormation: a create and an unchanged stack are not held; a held update changes nothing."""
    cfn, s3 = clients["cloudformation"], clients["s3"]
    asked: list[str] = []

    def refuse(spec: StackSpec) -> None:
        asked.append(spec.name)
        raise MaintenanceWindowClosed(CLUSTER_ID, f"stack {spec.name}", Closed("frozen", None, None), rolling=False)

    spec = queue_spec()
    assert start(cfn, s3, spec, before_update=refuse).action == "created"
    assert start(cfn, s3, spec, before_update=refuse).action == "unchanged"
    assert asked == []
    with pytest.raises(MaintenanceWindowClosed):
        start(cfn, s3, queue_spec(queue="q2"), before_update=refuse)
    assert asked == ["queues"]
    stack = cfn.describe_stacks(StackName="queues")["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
