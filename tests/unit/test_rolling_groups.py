"""The planner on a pool of one auto scaling group per zone (Zalando's worker-splitaz): surge and max_unavailable
counted for the pool as CLM counts it (pkg/updatestrategy/aws_asg.go Get sums the groups), each change made to the
group of the nodes it is for, so that every successor comes up in its predecessor's zone."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clm.rolling.planner import Decision, PoolBlocked, plan
from clm.rolling.pool import GroupState, Member, NodeState, PoolState, RollSettings
from tests.unit.test_rolling_planner import Node, drive, simulated_members

ZONES = ("a", "b", "c")


def member(n: int, zone: str, *, outdated: bool = True, volumes: bool = False) -> Member:
    node = NodeState(f"node-{n}", ready=True, volumes_attached=volumes)
    return Member(f"i-{n}", zone, "InService", outdated, 1000.0, node, group=f"asg-{zone}")


def split_pool(members: list[Member], sizes: dict[str, tuple[int, int]], baselines: dict[str, int]) -> PoolState:
    """`sizes`: zone -> (desired, max_size) of its group; `baselines`: zone -> the surged group's capacity."""
    groups = tuple(
        GroupState(f"asg-{zone}", desired, 0, max_size, baselines.get(zone))
        for zone, (desired, max_size) in sizes.items()
    )
    surged = any(group.baseline_desired is not None for group in groups)
    return PoolState(
        "split",
        "asg-a, asg-b, asg-c",
        sum(g.desired for g in groups),
        0,
        sum(g.max_size for g in groups),
        members,
        sum(g.capacity for g in groups) if surged else None,
        groups=groups,
    )


def test_surge_goes_to_the_groups_of_the_outdated_nodes_within_their_max_size() -> None:
    members = [member(1, "a"), member(2, "b", outdated=False), member(3, "c")]
    sizes = {"a": (1, 1), "b": (1, 2), "c": (1, 2)}  # a is at its max_size, b has nothing outdated
    decision = plan(split_pool(members, sizes, {}), RollSettings(surge=2, max_unavailable=0))
    assert (decision.action, decision.desired, decision.baseline) == ("scale", 4, 3)
    assert [(s.group, s.desired, s.baseline) for s in decision.sizes] == [("asg-c", 2, 1)]


def test_a_surged_groups_node_is_decremented_the_others_replaced_in_their_zone() -> None:
    members = [member(1, "a"), member(2, "b"), member(3, "c"), member(4, "c", outdated=False)]
    state = split_pool(members, {"a": (1, 2), "b": (1, 2), "c": (2, 2)}, {"c": 1})
    decision = plan(state, RollSettings(surge=1, max_unavailable=1))
    assert decision.action == "replace"
    # the surplus of c first (it shrinks back), then one more (max_unavailable 1) whose group launches its successor
    assert [(r.instance_id, r.decrement) for r in decision.replace] == [("i-3", True), ("i-1", False)]


def test_a_node_with_volumes_gets_a_new_node_from_the_group_of_its_zone() -> None:
    members = [member(1, "a", outdated=False), member(2, "b", volumes=True), member(3, "c", outdated=False)]
    state = split_pool(members, {"a": (1, 2), "b": (1, 2), "c": (1, 2)}, {})
    decision = plan(state, RollSettings(surge=0, max_unavailable=1))
    assert (decision.action, decision.desired) == ("scale", 4)
    assert [(s.group, s.desired, s.baseline) for s in decision.sizes] == [("asg-b", 2, 1)]
    full = split_pool(members, {"a": (1, 2), "b": (1, 1), "c": (1, 2)}, {})
    with pytest.raises(PoolBlocked, match="its group is at max_size 1"):
        plan(full, RollSettings(surge=0, max_unavailable=1))


def test_removing_lets_every_group_with_a_min_size_shrink() -> None:
    members = [member(1, "a"), member(2, "b")]
    groups = (GroupState("asg-a", 1, 1, 2), GroupState("asg-b", 1, 0, 2), GroupState("asg-c", 0, 1, 2))
    state = PoolState("split", "asg-a, asg-b, asg-c", 2, 2, 6, members, groups=groups)
    decision = plan(state, RollSettings(), removing=True)
    assert decision.action == "scale"
    assert [(s.group, s.desired, s.min_size) for s in decision.sizes] == [("asg-a", 1, 0), ("asg-c", 0, 0)]
    assert decision.to_dict()["sizes"][0] == {"group": "asg-a", "desired": 1, "min_size": 0, "baseline": None}


class SimulatedSplitPool:
    """Toy per-zone groups applying the planner's decisions: each launches in its own zone only."""

    BOOT = 30.0

    def __init__(self, per_zone: list[int], volumes: list[bool], headroom: int):
        self.ids = itertools.count()
        self.nodes = [
            Node(next(self.ids), zone, True, 0.0, volumes[i % len(volumes)])
            for zone, count in zip(ZONES, per_zone, strict=False)
            for i in range(count)
        ]
        self.desired = {zone: count for zone, count in zip(ZONES, per_zone, strict=False)}
        self.max_size = {zone: count + headroom for zone, count in self.desired.items()}
        self.baseline: dict[str, int] = {}
        self.now, self.replaced, self.most_extra = 0.0, 0, 0

    def state(self) -> PoolState:
        members = [replace(m, group=f"asg-{m.az}") for m in simulated_members(self.nodes, self.now, self.BOOT)]
        sizes = {zone: (desired, self.max_size[zone]) for zone, desired in self.desired.items()}
        return split_pool(members, sizes, self.baseline)

    def serving(self) -> int:
        return len([n for n in self.nodes if n.ready_at <= self.now and not n.draining])

    def apply(self, decision: Decision) -> None:
        if decision.action == "wait":
            self.now += decision.wait_seconds
        elif decision.action == "scale":
            for size in decision.sizes:
                zone = size.group.removeprefix("asg-")
                assert size.desired is None or size.desired <= self.max_size[zone]
                self.desired[zone] = size.desired if size.desired is not None else self.desired[zone]
                if size.baseline is not None:
                    self.baseline[zone] = size.baseline
        elif decision.action == "replace":
            for item in decision.replace:
                node = next(n for n in self.nodes if f"i-{n.id}" == item.instance_id)
                self.now += 1.0  # the drain
                self.nodes.remove(node)
                self.replaced += 1
                self.desired[node.az] -= int(item.decrement)
        for zone, desired in self.desired.items():
            while len([n for n in self.nodes if n.az == zone]) < desired:
                self.nodes.append(Node(next(self.ids), zone, False, self.now + self.BOOT))
        capacity = sum(self.baseline.get(zone, desired) for zone, desired in self.desired.items())
        self.most_extra = max(self.most_extra, len(self.nodes) - capacity)


@settings(max_examples=60, deadline=None)
@given(
    per_zone=st.lists(st.integers(0, 3), min_size=2, max_size=3).filter(lambda sizes: sum(sizes) > 0),
    surge=st.integers(0, 3),
    max_unavailable=st.integers(0, 3),
    volumes=st.lists(st.booleans(), min_size=1, max_size=2),
    headroom=st.integers(0, 2),
)
def test_simulated_split_rolls_keep_each_zones_size_and_the_pools_budget(
    per_zone: list[int], surge: int, max_unavailable: int, volumes: list[bool], headroom: int
) -> None:
    if surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    size = sum(per_zone)
    roll = RollSettings(surge=surge, max_unavailable=max_unavailable, node_startup_timeout=1e9)
    sim = SimulatedSplitPool(per_zone, volumes, headroom)
    before = {zone: count for zone, count in zip(ZONES, per_zone, strict=False)}
    blocked = drive(sim, roll, size)
    if blocked:
        assert ("volumes attached" in blocked and any(volumes)) or ("cannot surge" in blocked and max_unavailable == 0)
        return
    assert sim.replaced == size
    assert sim.desired == before  # every group back to its size: each successor came up in its zone
    assert {z: len([n for n in sim.nodes if n.az == z]) for z in before} == before
    assert all(not n.outdated and n.ready_at <= sim.now for n in sim.nodes)
    assert sim.most_extra <= max(surge, 1 if any(volumes) else 0)  # the pool's surge (or one node for volumes)


def test_the_scale_step_line_names_each_group_of_a_split_pool() -> None:
    """`clm provision --follow`: one group's scale as before, several groups each with its size."""
    from clm.cli.run_history import STEP_LINES

    one = {"groups": [{"asg": "asg-a", "DesiredCapacity": 4}]}
    several = {"groups": [{"asg": "asg-a", "DesiredCapacity": 2}, {"asg": "asg-c", "DesiredCapacity": 1}]}
    assert STEP_LINES["Scale"]({}, one) == ("Scale: desired capacity 4", "")
    assert STEP_LINES["Scale"]({}, several) == ("Scale: desired capacity 2 of asg-a, 1 of asg-c", "")
    assert STEP_LINES["Scale"]({}, {"asg": "asg-a", "DesiredCapacity": 3}) == ("Scale: desired capacity 3", "")
