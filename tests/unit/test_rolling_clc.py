"""`update_strategy` (CLM's provisioner/clusterpy.go updater): `clc` hands the outdated nodes to the in-cluster
cluster-lifecycle-controller and waits (pkg/updatestrategy/clc_update.go), `rolling` drains them itself; the two
never act on the same node, whichever strategy the cluster switches to mid-roll."""

from __future__ import annotations

import dataclasses

import pytest

from clm.errors import ValidationError
from clm.rolling.clc import plan_clc
from clm.rolling.planner import CONTROLLER_POLL_SECONDS, NodeStartupTimeout, plan
from clm.rolling.pool import (
    DRAINED_BY_CLM,
    DRAINED_BY_CONTROLLER,
    LIFECYCLE_DECOMMISSION_PENDING,
    LIFECYCLE_DRAINING,
    Member,
    RollSettings,
)
from clm.rolling.strategy import strategy_now, update_strategy
from clm.workflow.maintenance import disruptive
from tests.unit.test_rolling_planner import member, pool

CLUSTER = "aws:123456789012:eu-central-1:kube-1"


def marked(n: int, status: str = LIFECYCLE_DECOMMISSION_PENDING, by: str = DRAINED_BY_CONTROLLER, **kw) -> Member:
    """Member `n` whose Node is labelled `status` and drained by `by`."""
    plain = member(n, **kw)
    assert plain.node is not None
    node = dataclasses.replace(plain.node, lifecycle_status=status, drained_by=by)
    return dataclasses.replace(plain, node=node)


@pytest.mark.parametrize(("items", "expected"), [({}, "rolling"), ({"update_strategy": "clc"}, "clc")])
def test_the_strategy_is_rolling_unless_the_cluster_says_clc(items, expected) -> None:
    """CLM's default is clc; here rolling: a cluster has the controller only if its configuration deploys it."""
    assert update_strategy(items, CLUSTER) == expected


@pytest.mark.parametrize("value", ["CLC", " clc", "clc\n", "drain", "", "rolling,clc"])
def test_any_other_strategy_is_refused_naming_the_item_and_the_cluster(value) -> None:
    with pytest.raises(ValidationError, match=f"cluster {CLUSTER}.*config_items.update_strategy: .* is not one of"):
        update_strategy({"update_strategy": value}, CLUSTER)


def test_clc_marks_every_outdated_node_at_once_and_replaces_none() -> None:
    """As clc_update.go doUpdate: every node of an older generation marked in one pass; CLM evicts nothing."""
    decision = plan_clc(pool(member(1), member(2), member(3, outdated=False)), RollSettings())
    assert decision.action == "mark" and decision.mark == ["node-1", "node-2"] and decision.replace == []
    assert disruptive(decision.to_dict(), pool(member(1)))  # held outside the maintenance window, as a roll's nodes


def test_clc_waits_in_wait_states_while_the_controller_works() -> None:
    state = pool(marked(1), marked(2, LIFECYCLE_DRAINING), member(3, outdated=False))
    decision = plan_clc(state, RollSettings())
    assert decision.action == "wait" and decision.wait_seconds == CONTROLLER_POLL_SECONDS
    assert decision.reason == "waiting for the cluster-lifecycle-controller: 2 outdated node(s) left, 1 draining"


def test_clc_is_done_when_no_outdated_node_is_left() -> None:
    assert plan_clc(pool(member(1, outdated=False), member(2, outdated=False)), RollSettings()).action == "done"


def test_a_replacement_the_controller_launched_has_the_node_startup_timeout() -> None:
    late = member(4, outdated=False, ready=False, age=601)
    with pytest.raises(NodeStartupTimeout, match="i-4"):
        plan_clc(pool(marked(1), member(2, outdated=False), late), RollSettings(node_startup_timeout=600))


def test_clc_finishes_the_drains_clm_started_and_never_hands_them_over() -> None:
    """Switched from rolling mid-roll: the node CLM is draining stays CLM's (the controller is never handed a
    half-drained node); the other outdated nodes go to the controller after it."""
    state = pool(marked(1, LIFECYCLE_DRAINING, DRAINED_BY_CLM), member(2))
    decision = plan_clc(state, RollSettings())
    assert decision.action == "replace" and [r.node for r in decision.replace] == ["node-1"]
    assert decision.mark == []


def test_clc_leaves_a_drain_it_cannot_attribute_alone() -> None:
    """A node draining that no one says is CLM's (another actor's, or a CLM from before clm/drained-by) is neither
    drained nor handed over: the roll waits for it to go."""
    decision = plan_clc(pool(marked(1, LIFECYCLE_DRAINING, ""), member(2, outdated=False)), RollSettings())
    assert decision.action == "wait" and decision.mark == []


def test_removing_a_pool_under_clc_tells_the_controller_to_launch_no_successor() -> None:
    """As clc_update.go PrepareForRemoval: the group may shrink to zero, then every node is marked with
    replacement-strategy none."""
    shrink = plan_clc(pool(member(1), min_size=1), RollSettings(), removing=True)
    assert shrink.action == "scale" and [(s.min_size, s.desired) for s in shrink.sizes] == [(0, 1)]  # each group
    decision = plan_clc(pool(member(1, outdated=False), min_size=0), RollSettings(), removing=True)
    assert decision.action == "mark" and decision.mark == ["node-1"] and decision.no_replacement


def test_rolling_takes_back_hand_overs_the_controller_has_not_started() -> None:
    """Switched from clc: nodes still waiting for the controller are taken back (CLM's AbortNodeDecommissioning),
    not drained as they are: they are CLM's to drain only once the label says so."""
    decision = plan(pool(marked(1), marked(2), member(3)), RollSettings())
    assert decision.action == "mark" and decision.take_back == ["node-1", "node-2"] and decision.replace == []
    assert not disruptive(decision.to_dict(), pool(member(1)))


def test_rolling_never_drains_a_node_the_controller_is_draining() -> None:
    decision = plan(pool(marked(1, LIFECYCLE_DRAINING), member(2), member(3)), RollSettings(max_unavailable=2))
    assert decision.action == "wait" and decision.replace == []
    assert "the cluster-lifecycle-controller is draining node-1" in decision.reason


def test_rolling_goes_on_once_the_controller_is_done() -> None:
    decision = plan(pool(member(2), member(3), member(4, outdated=False)), RollSettings())
    assert decision.action == "replace" and [r.node for r in decision.replace] == ["node-2"]


@pytest.mark.parametrize(
    ("rendered", "registry", "expected"),
    [
        ({"update_strategy": "clc"}, {"update_strategy": "rolling"}, "rolling"),  # switched since the run rendered
        ({"update_strategy": "clc"}, {}, "clc"),  # from config-defaults.yaml
        ({}, {}, "rolling"),
    ],
)
def test_a_roll_follows_the_registry_item_as_it_is_now(rendered, registry, expected) -> None:
    assert strategy_now(rendered, registry, CLUSTER) == expected


def test_a_switch_to_an_unknown_strategy_mid_roll_stops_the_roll_naming_it() -> None:
    with pytest.raises(ValidationError, match="update_strategy: 'clc2'"):
        strategy_now({"update_strategy": "clc"}, {"update_strategy": "clc2"}, CLUSTER)
