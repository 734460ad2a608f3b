"""Waiting for new nodes: how long the pool's instances take to boot, the Wait after a replacement, the watch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from clm.rolling.observe import node_state, pool_state
from clm.rolling.planner import plan
from clm.rolling.pool import RollSettings
from clm.stacks.inventory import InstanceInfo, NodePoolInventory
from tests.unit.test_rolling_planner import member, pool

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def instance(n: int, *, outdated: bool, launched: datetime) -> InstanceInfo:
    return InstanceInfo(
        id=f"i-{n}",
        az="a",
        lifecycle_state="InService",
        health="Healthy",
        instance_type="m5.large",
        spot=False,
        launch_template_id="lt-1",
        launch_template_version="2" if not outdated else "1",
        outdated=outdated,
        launch_time=launched.isoformat(),
    )


def node(n: int, ready_since: datetime) -> dict[str, Any]:
    stamp = ready_since.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "metadata": {"name": f"node-{n}"},
        "spec": {"providerID": f"aws:///a/i-{n}"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}]},
    }


def inventory(*instances: InstanceInfo) -> NodePoolInventory:
    return NodePoolInventory("stack", "asg", "lt-1", "pool", "2", ["m5.large"], False, 3, 1, 3, list(instances))


def test_boot_time_comes_from_new_instances_and_before_any_from_the_older_ones() -> None:
    old = NOW - timedelta(hours=1)
    outdated = [instance(n, outdated=True, launched=old) for n in (1, 2)]
    nodes = [node(1, old + timedelta(seconds=40)), node(2, old + timedelta(seconds=50))]
    assert pool_state("pool", inventory(*outdated), nodes, None, NOW).typical_boot_seconds == 45.0
    new = instance(3, outdated=False, launched=NOW - timedelta(minutes=5))
    nodes.append(node(3, NOW - timedelta(minutes=5) + timedelta(seconds=20)))
    assert pool_state("pool", inventory(*outdated, new), nodes, None, NOW).typical_boot_seconds == 20.0


def test_a_replacement_is_followed_by_a_wait_for_its_successor_to_boot() -> None:
    decision = plan(pool(member(1), member(2), boot=5.3), RollSettings())
    assert (decision.action, decision.wait_seconds) == ("replace", 4)  # half a second early, whole seconds
    slow = plan(pool(member(1), member(2), boot=5.3), RollSettings(), lead=1.2)  # observing takes 1.2 s
    assert slow.wait_seconds == 3
    unknown = plan(pool(member(1), member(2)), RollSettings())
    assert (unknown.action, unknown.wait_seconds) == ("replace", 0)


def test_a_replacement_that_shrinks_the_group_waits_for_no_boot() -> None:
    decision = plan(pool(member(1), member(2, outdated=False), baseline=1, boot=30.0), RollSettings())
    assert [(r.instance_id, r.decrement) for r in decision.replace] == [("i-1", True)]
    assert decision.wait_seconds == 0


@pytest.mark.parametrize(
    ("age", "watch"),
    [
        (3.8, 3.2),  # due in 1.2 s: watch until two seconds past it
        (1.0, None),  # due in 4 s: the Wait state waits
        (5.5, 2.0),  # half a second late: watch two seconds
        (9.0, None),  # 4 s late: something is slow, the Wait state polls
    ],
)
def test_a_plan_watches_for_nodes_due_within_seconds(age: float, watch: float | None) -> None:
    state = pool(member(1), member(2, outdated=False, ready=False, age=age), boot=5.0)
    decision = plan(state, RollSettings())
    assert decision.action == "wait"
    assert decision.watch_seconds == (pytest.approx(watch) if watch is not None else None)


def test_karpenters_disruption_taints_mark_a_node_it_is_taking_out() -> None:
    """v1's karpenter.sh/disrupted and v1beta1's karpenter.sh/disruption=disrupting (clm.rolling.observe)."""
    for key in ("karpenter.sh/disrupted", "karpenter.sh/disruption"):
        taken = node(1, NOW)
        taken["spec"]["taints"] = [{"key": key, "value": "disrupting", "effect": "NoSchedule"}]
        assert node_state(taken).disrupted_by_karpenter
    assert not node_state(node(1, NOW)).disrupted_by_karpenter
