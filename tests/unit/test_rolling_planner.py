"""The rolling-update planner: decisions from observed pool state, and whole rolls driven by it."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Protocol

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clm.rolling.marks import to_taint
from clm.rolling.planner import Decision, NodeStartupTimeout, PoolBlocked, plan
from clm.rolling.pool import (
    LIFECYCLE_DECOMMISSION_PENDING,
    LIFECYCLE_DRAINING,
    Member,
    NodeState,
    PoolState,
    RollSettings,
)


def member(
    n: int,
    *,
    outdated: bool = True,
    ready: bool = True,
    az: str = "a",
    volumes: bool = False,
    draining: bool = False,
    age: float = 1000.0,
    state: str = "InService",
    node: bool = True,
) -> Member:
    status = LIFECYCLE_DRAINING if draining else "ready"
    node_state = (
        NodeState(f"node-{n}", ready=ready, unschedulable=draining, lifecycle_status=status, volumes_attached=volumes)
        if node
        else None
    )
    return Member(f"i-{n}", az, state, outdated, age, node_state)


def pool(
    *members: Member,
    desired: int | None = None,
    max_size: int = 10,
    min_size: int = 1,
    baseline: int | None = None,
    boot: float | None = None,
) -> PoolState:
    count = len([m for m in members if m.in_service]) if desired is None else desired
    return PoolState("workers", "asg-workers", count, min_size, max_size, list(members), baseline, boot)


def test_pool_with_no_outdated_node_is_done() -> None:
    decision = plan(pool(member(1, outdated=False), member(2, outdated=False)), RollSettings())
    assert decision.action == "done"
    assert decision.to_dict() == {"action": "done", "reason": "every node is up to date and Ready", "wait_seconds": 0}


def test_default_replaces_one_node_without_decrement() -> None:
    decision = plan(pool(member(1), member(2), member(3)), RollSettings())
    assert decision.action == "replace"
    assert [(r.instance_id, r.node, r.decrement) for r in decision.replace] == [("i-1", "node-1", False)]


def test_max_unavailable_takes_several_nodes_at_once() -> None:
    decision = plan(pool(*(member(n) for n in range(5))), RollSettings(max_unavailable=2))
    assert [r.instance_id for r in decision.replace] == ["i-0", "i-1"]


def test_a_batch_takes_from_every_az_in_turn() -> None:
    members = [member(1, az="a"), member(2, az="a"), member(3, az="a"), member(4, az="b"), member(5, az="b")]
    decision = plan(pool(*members, member(6, az="c")), RollSettings(max_unavailable=4))
    assert [r.instance_id for r in decision.replace] == ["i-1", "i-4", "i-6", "i-2"]


def test_surge_scales_out_first_and_records_the_baseline() -> None:
    decision = plan(pool(member(1), member(2), member(3)), RollSettings(surge=2, max_unavailable=0))
    assert (decision.action, decision.desired, decision.baseline) == ("scale", 5, 3)


def test_surge_never_exceeds_max_size_or_the_outdated_count() -> None:
    at_max = plan(pool(member(1), member(2), max_size=3), RollSettings(surge=5))
    assert (at_max.desired, at_max.baseline) == (3, 2)
    one_outdated = plan(pool(member(1), member(2, outdated=False)), RollSettings(surge=3))
    assert one_outdated.desired == 3


def test_surplus_nodes_are_terminated_with_decrement() -> None:
    state = pool(member(1), member(2), member(3), member(4, outdated=False), desired=4, baseline=3)
    decision = plan(state, RollSettings(surge=1, max_unavailable=0))
    assert [(r.instance_id, r.decrement) for r in decision.replace] == [("i-1", True)]


def test_no_surge_room_and_no_unavailability_is_blocked() -> None:
    with pytest.raises(PoolBlocked, match="workers: cannot surge at max_size 2"):
        plan(pool(member(1), member(2), max_size=2), RollSettings(surge=1, max_unavailable=0))


def test_booting_instance_is_waited_for_with_a_wait_from_boot_times() -> None:
    state = pool(member(1), member(2, outdated=False, ready=False, age=12.0), boot=20.0)
    decision = plan(state, RollSettings())
    assert decision.action == "wait"
    assert decision.wait_seconds == 8
    assert "i-2" in decision.reason


def test_instance_without_a_node_past_the_startup_timeout_fails_naming_it() -> None:
    state = pool(member(1), member(2, outdated=False, node=False, age=601.0))
    with pytest.raises(NodeStartupTimeout, match=r"workers: instance i-2 \(a\) not Ready after 601 s"):
        plan(state, RollSettings(node_startup_timeout=600))


def test_group_still_launching_is_waited_for() -> None:
    decision = plan(pool(member(1), desired=2), RollSettings())
    assert (decision.action, decision.wait_seconds) == ("wait", 10)


def test_a_batch_starts_beside_booting_successors_within_max_unavailable() -> None:
    """A window sliding over the pool: the next batch takes max_unavailable less the successors still booting (and
    the instances not launched yet), instead of waiting for all of them; a full window still waits."""
    outdated = [member(n) for n in range(1, 6)]
    booting = member(6, outdated=False, ready=False, age=1.0)
    decision = plan(pool(*outdated, booting, boot=20.0), RollSettings(max_unavailable=3))
    assert (decision.action, len(decision.replace), decision.wait_seconds) == ("replace", 2, 0)
    launching = plan(pool(*outdated, booting, desired=7, boot=20.0), RollSettings(max_unavailable=3))
    assert len(launching.replace) == 1
    full = pool(*outdated, *(member(n, outdated=False, ready=False, age=1.0) for n in (6, 7, 8)), boot=20.0)
    assert plan(full, RollSettings(max_unavailable=3)).action == "wait"


@pytest.mark.parametrize(
    ("state", "roll"),
    [
        (pool(member(1), member(2), member(3, outdated=False, ready=False, age=1.0)), RollSettings()),  # one at a time
        (
            pool(member(3, outdated=False, ready=False, age=1.0), member(4, outdated=False)),
            RollSettings(max_unavailable=3),
        ),
        (
            pool(member(1), member(2), member(3, outdated=False, ready=False, age=1.0), baseline=2),
            RollSettings(max_unavailable=3, surge=1),
        ),
    ],
    ids=["one-at-a-time", "nothing-left-to-replace", "surge-booting"],
)
def test_booting_nodes_are_waited_for_where_the_window_does_not_slide(state: PoolState, roll: RollSettings) -> None:
    """One node at a time (nothing starts beside the booting one); no outdated node left (the roll is done only
    once they are Ready); a surge in effect (its extra nodes are Ready before any drain)."""
    assert plan(state, roll).action == "wait"


def test_nodes_already_being_replaced_are_continued_first() -> None:
    state = pool(member(1), member(2, draining=True), member(3, outdated=False, ready=False, age=5))
    decision = plan(state, RollSettings())
    assert [r.instance_id for r in decision.replace] == ["i-2"]


def marked(n: int, *, cordoned: bool = False, outdated: bool = True) -> Member:
    """A node as CLM's rolling update leaves it marked (rolling_update.go markOldNodes): decommission-pending."""
    node = NodeState(f"node-{n}", ready=True, unschedulable=cordoned, lifecycle_status=LIFECYCLE_DECOMMISSION_PENDING)
    return Member(f"i-{n}", "a", "InService", outdated, 1000.0, node)


def test_nodes_marked_for_replacement_still_serve_and_only_the_cordoned_ones_are_continued() -> None:
    """A pool Zalando's CLM left mid-roll has every outdated node marked and only its batch cordoned: the batch is
    continued, and the marked rest are taken within max_unavailable, not all at once."""
    assert [r.instance_id for r in plan(pool(*(marked(n) for n in range(5))), RollSettings()).replace] == ["i-0"]
    left = pool(marked(0), marked(1, cordoned=True), marked(2), member(3, outdated=False))
    assert [r.instance_id for r in plan(left, RollSettings(max_unavailable=2)).replace] == ["i-1"]


def test_a_workload_that_labels_every_node_draining_gets_one_batch_continued_not_the_pool() -> None:
    """Attack: whoever may patch Nodes (a cluster workload with that right) labels every node draining, up-to-date
    ones too; the roll continues at most max_unavailable of them at a time (beside a surge's extra nodes)."""
    forged = pool(*(member(n, draining=True) for n in range(4)), member(4, outdated=False, draining=True))
    assert [r.instance_id for r in plan(forged, RollSettings()).replace] == ["i-0"]
    assert [r.instance_id for r in plan(forged, RollSettings(max_unavailable=2)).replace] == ["i-0", "i-1"]
    surged = pool(*(member(n, draining=True) for n in range(4)), member(4, outdated=False), desired=5, baseline=4)
    assert len(plan(surged, RollSettings(surge=1, max_unavailable=1)).replace) == 2


def test_a_roll_taints_every_outdated_node_not_tainted_yet_but_none_of_a_karpenter_pool() -> None:
    """PreferNoSchedule, and a NoSchedule taint a hand-over taken back left is made PreferNoSchedule: with NoSchedule
    on every node ahead, a pool that does not surge would leave its first drain's pods nowhere to go."""
    tainted = replace(member(2), node=replace(member(2).node, taint_effect="PreferNoSchedule"))
    taken_back = replace(member(7), node=replace(member(7).node, taint_effect="NoSchedule"))
    cordoned = replace(marked(8), node=replace(marked(8).node, unschedulable=True))  # its cordon taints it
    state = pool(
        member(1),
        tainted,
        member(3, draining=True),
        marked(4),
        member(5, outdated=False),
        member(6, node=False),
        taken_back,
        cordoned,
    )
    assert to_taint(state) == ["node-1", "node-4", "node-7"]
    assert to_taint(state, removing=True) == ["node-1", "node-4", "node-5", "node-7"]
    assert to_taint(replace(state, karpenter=True)) == []
    assert to_taint(state, limit=1) == ["node-1"]  # the next plan taints the rest


def test_node_with_volumes_waits_for_a_new_node_in_its_az() -> None:
    state = pool(member(1, volumes=True, az="b"), member(2, outdated=False, az="a"))
    decision = plan(state, RollSettings())
    assert (decision.action, decision.desired, decision.baseline) == ("scale", 3, 2)
    matched = pool(member(1, volumes=True, az="b"), member(2, outdated=False, az="b"))
    assert [r.instance_id for r in plan(matched, RollSettings()).replace] == ["i-1"]


def test_node_with_volumes_at_max_size_is_blocked_naming_it() -> None:
    state = pool(member(1, volumes=True, az="b"), member(2, outdated=False, az="a"), max_size=2)
    with pytest.raises(PoolBlocked, match="i-1 has volumes attached and there is no new node in b"):
        plan(state, RollSettings())


def test_nodes_without_volumes_go_first() -> None:
    state = pool(member(1, volumes=True), member(2), member(3, outdated=False))
    assert [r.instance_id for r in plan(state, RollSettings()).replace] == ["i-2"]


def test_finished_surge_scales_back_to_the_baseline() -> None:
    state = pool(member(1, outdated=False), member(2, outdated=False), desired=2, baseline=1)
    assert (plan(state, RollSettings()).action, plan(state, RollSettings()).desired) == ("scale", 1)


def test_removed_pool_first_allows_zero_then_drains_every_node_with_decrement() -> None:
    state = pool(member(1, outdated=False), member(2, outdated=False), min_size=1)
    first = plan(state, RollSettings(), removing=True)
    assert (first.action, first.min_size) == ("scale", 0)
    then = plan(replace(state, min_size=0), RollSettings(), removing=True)
    assert [(r.instance_id, r.decrement) for r in then.replace] == [("i-1", True)]
    assert plan(pool(min_size=0), RollSettings(), removing=True).action == "done"


def test_a_karpenter_pool_is_never_scaled_and_its_nodes_are_terminated_through_ec2() -> None:
    """Karpenter launches for the drained pods: no surge, no new node first for volumes, at least one at a time."""
    members = (member(1, volumes=True, az="b"), member(2, outdated=False, az="a"), member(3))
    state = replace(pool(*members, min_size=0, max_size=3), asg_name="", karpenter=True)
    for roll in (RollSettings(), RollSettings(surge=2), RollSettings(surge=1, max_unavailable=0)):
        decision = plan(state, roll)
        assert decision.action == "replace"
        assert [(r.instance_id, r.decrement, r.karpenter_pool) for r in decision.replace] == [("i-1", False, "workers")]
    assert [r.instance_id for r in plan(state, RollSettings(max_unavailable=5)).replace] == ["i-1", "i-3"]
    assert plan(pool(member(1)), RollSettings()).to_dict()["replace"][0]["karpenter_pool"] is None  # a group's


def test_nodes_karpenter_takes_out_itself_count_as_unavailable_and_are_left_to_it() -> None:
    """No fight with Karpenter's disruptions (consolidation, drift, expiry: its taint on the node)."""
    disrupted = replace(member(1), node=replace(member(1).node, disrupted_by_karpenter=True))
    state = replace(pool(disrupted, member(2), member(3), min_size=0), asg_name="", karpenter=True)
    waiting = plan(state, RollSettings())
    assert waiting.action == "wait" and "Karpenter is taking out 1 node(s)" in waiting.reason
    assert [r.instance_id for r in plan(state, RollSettings(max_unavailable=2)).replace] == ["i-2"]
    assert [r.instance_id for r in plan(state, RollSettings(max_unavailable=3)).replace] == ["i-2", "i-3"]
    only_disrupted = replace(pool(disrupted, member(2, outdated=False), min_size=0), asg_name="", karpenter=True)
    assert plan(only_disrupted, RollSettings(max_unavailable=2)).action == "done"  # Karpenter replaces that one


def test_settings_refuse_a_roll_that_could_never_progress() -> None:
    with pytest.raises(ValueError, match="cannot both be 0"):
        RollSettings(surge=0, max_unavailable=0)


# --------------------------------------------------------------------------- whole rolls, simulated
@dataclass
class Node:
    """A simulated instance: outdated or not, booting until `ready_at`, possibly being replaced."""

    id: int
    az: str
    outdated: bool
    ready_at: float
    volumes: bool = False
    draining: bool = False


def simulated_members(nodes: list[Node], now: float, boot: float) -> list[Member]:
    """The planner's view of simulated instances at `now` (each launched `boot` seconds before it is Ready)."""
    return [
        Member(
            f"i-{n.id}",
            n.az,
            "InService",
            n.outdated,
            now - n.ready_at + boot,
            NodeState(
                f"node-{n.id}", n.ready_at <= now, n.draining, LIFECYCLE_DRAINING if n.draining else "ready", n.volumes
            ),
        )
        for n in nodes
    ]


class SimulatedPool:
    """A toy auto scaling group that applies decisions, to check the planner's invariants over a roll."""

    BOOT = 30.0

    def __init__(self, size: int, azs: list[str], volumes: list[bool], max_size: int):
        self.ids = itertools.count()
        self.nodes = [
            Node(next(self.ids), azs[i % len(azs)], True, 0.0, volumes[i % len(volumes)]) for i in range(size)
        ]
        self.azs, self.desired, self.max_size, self.baseline = azs, size, max_size, None
        self.min_size, self.now, self.replaced = 1, 0.0, 0

    def state(self) -> PoolState:
        members = simulated_members(self.nodes, self.now, self.BOOT)
        return PoolState(
            "workers", "asg", self.desired, self.min_size, self.max_size, members, self.baseline, self.BOOT
        )

    def serving(self) -> int:
        return len([n for n in self.nodes if n.ready_at <= self.now and not n.draining])

    def apply(self, decision: Decision) -> None:
        if decision.action == "wait":
            self.now += decision.wait_seconds
        elif decision.action == "scale":
            self.desired = decision.desired if decision.desired is not None else self.desired
            self.min_size = decision.min_size if decision.min_size is not None else self.min_size
            self.baseline = decision.baseline if decision.baseline is not None else self.baseline
            self._launch()
        elif decision.action == "replace":
            for item in decision.replace:
                self._terminate(int(item.instance_id.removeprefix("i-")), item.decrement)
            self._launch()

    def _terminate(self, node_id: int, decrement: bool) -> None:
        node = next(n for n in self.nodes if n.id == node_id)
        node.draining = True
        self.now += 1.0  # the drain
        self.nodes.remove(node)
        self.replaced += 1
        self.desired -= int(decrement)

    def _launch(self) -> None:
        while len(self.nodes) < self.desired:
            az = min(self.azs, key=lambda a: len([n for n in self.nodes if n.az == a]))
            self.nodes.append(Node(next(self.ids), az, False, self.now + self.BOOT))


class Simulated(Protocol):
    """A toy pool the planner's decisions are applied to."""

    def state(self) -> PoolState: ...
    def serving(self) -> int: ...
    def apply(self, decision: Decision) -> None: ...


def drive(sim: Simulated, roll: RollSettings, size: int) -> str:
    """Plan and apply until done, the pool never below `size - max_unavailable` serving nodes; "" when the roll
    finished, or why the planner blocked."""
    try:
        for _ in range(500):
            decision = plan(sim.state(), roll)
            if decision.action == "done":
                return ""
            assert sim.serving() >= size - roll.max_unavailable, decision
            sim.apply(decision)
    except PoolBlocked as blocked:
        return str(blocked)
    pytest.fail("the roll did not converge in 500 decisions")


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 8),
    surge=st.integers(0, 3),
    max_unavailable=st.integers(0, 3),
    azs=st.sampled_from([["a"], ["a", "b"], ["a", "b", "c"]]),
    volumes=st.lists(st.booleans(), min_size=1, max_size=3),
    headroom=st.integers(0, 4),
)
def test_simulated_rolls_converge_and_keep_capacity(
    size: int, surge: int, max_unavailable: int, azs: list[str], volumes: list[bool], headroom: int
) -> None:
    if surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    roll = RollSettings(surge=surge, max_unavailable=max_unavailable, node_startup_timeout=1e9)
    sim = SimulatedPool(size, azs, volumes, max_size=size + headroom)
    blocked = drive(sim, roll, size)
    if blocked:  # only for the two reasons a human must decide: no room to surge, or no AZ match for volumes
        assert ("volumes attached" in blocked and any(volumes)) or (
            "cannot surge" in blocked and max_unavailable == 0 and headroom < size
        )
        return
    assert sim.replaced == size
    assert sim.desired == size
    assert all(not n.outdated and n.ready_at <= sim.now for n in sim.nodes)
