"""Cordon and continue (`drain_blocked: continue`): the planner's choice of the next node beside a node set aside
with a blocked drain, and whole rolls where workloads block some or every node's drain."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clm.errors import ValidationError
from clm.rolling.planner import Decision, plan
from clm.rolling.pool import LIFECYCLE_DRAINING, Member, NodeState, PoolState, RollSettings
from clm.rolling.settings import roll_settings
from tests.unit.test_rolling_planner import member, pool

CONTINUE = RollSettings(continue_blocked=True)


def aside(n: int, seconds: float = 100.0, *, outdated: bool = True) -> Member:
    """An outdated member whose drain was set aside, due in `seconds` (<= 0: due now)."""
    state = NodeState(f"node-{n}", True, True, LIFECYCLE_DRAINING, set_aside_seconds=seconds)
    return Member(f"i-{n}", "a", "InService", outdated, 1000.0, state)


def replaced(decision: Decision) -> list[tuple[str, bool]]:
    return [(r.instance_id, r.set_aside) for r in decision.replace]


def test_the_item_is_wait_by_default_and_continue_when_set():
    assert not roll_settings({}, {}).continue_blocked
    assert roll_settings({"drain_blocked": "continue"}, {"drain_blocked": "wait"}).continue_blocked
    assert not roll_settings({"drain_blocked": "wait"}, {"drain_blocked": "continue"}).continue_blocked
    with pytest.raises(ValidationError, match="drain_blocked: 'Continue' is not one of wait, continue"):
        roll_settings({"drain_blocked": "Continue"}, {})


def test_without_the_option_no_drain_may_be_set_aside():
    assert replaced(plan(pool(member(1), member(2), member(3)), RollSettings())) == [("i-1", False)]


def test_with_the_option_the_batch_may_be_set_aside_up_to_max_unavailable():
    decision = plan(pool(*(member(n) for n in range(1, 5))), RollSettings(max_unavailable=3, continue_blocked=True))
    assert replaced(decision) == [("i-1", True), ("i-2", True), ("i-3", True)]
    two_aside = pool(aside(1), aside(2), member(3), member(4), member(5))
    decision = plan(two_aside, RollSettings(max_unavailable=3, continue_blocked=True))
    assert replaced(decision) == [("i-3", True), ("i-4", False), ("i-5", False)]  # one more may be set aside


def test_the_roll_goes_on_beside_the_blocked_middle_node():
    decision = plan(pool(member(1, outdated=False), aside(2), member(3)), CONTINUE)
    assert replaced(decision) == [("i-3", False)]  # max_unavailable 1 is taken by node-2: node-3 cannot go aside
    assert decision.reason == "replace 1 of 1 outdated node(s); 1 set aside with blocked drains: node-2"


def test_a_set_aside_node_is_not_continued_as_one_being_replaced_until_it_is_due():
    # node-1 takes the one place aside that max_unavailable 1 gives: node-2's drain may not go aside too
    assert replaced(plan(pool(aside(1), member(2, draining=True), member(3)), CONTINUE)) == [("i-2", False)]
    due = plan(pool(aside(1, seconds=0.0), member(2), member(3)), CONTINUE)
    assert due.reason == "continue the nodes already being replaced"
    assert replaced(due) == [("i-1", True)]  # may be set aside again: the force rules may allow one pod at a time


def test_when_nothing_else_is_left_the_roll_comes_back_and_its_drains_wait_for_the_force_rules():
    decision = plan(pool(member(1, outdated=False), aside(2, seconds=3600.0), member(3, outdated=False)), CONTINUE)
    assert replaced(decision) == [("i-2", False)]  # parks in the drain: a run started by a change wakes it
    assert decision.reason == "back to 1 node(s) set aside with blocked drains: nothing else left to replace"


def test_booting_successors_are_waited_for_before_anything_else():
    decision = plan(pool(member(1, outdated=False, ready=False, age=5.0), aside(2), member(3)), CONTINUE)
    assert decision.action == "wait"


# --------------------------------------------------------------------------- whole rolls where drains block
@dataclass
class Node:
    id: int
    outdated: bool
    ready_at: float
    blocks: bool  # a budget that never lets go: only the force rules end its drain
    drain_start: float | None = None
    aside_until: float | None = None


class BlockingPool:
    """A toy group whose blocking nodes' drains end GRACE seconds after they started (the force rules), as the
    roll workflow runs them: a drain that may be set aside ends at once, set aside; one that may not parks."""

    BOOT, GRACE = 30.0, 500.0

    def __init__(self, size: int, blocking: list[bool], surge: int):
        self.ids = itertools.count()
        self.nodes = [Node(next(self.ids), True, 0.0, blocking[i % len(blocking)]) for i in range(size)]
        self.size, self.desired, self.baseline, self.now, self.replaced = size, size, None, 0.0, 0
        self.max_set_aside = self.max_cordoned = 0

    def state(self) -> PoolState:
        members = [
            Member(
                f"i-{n.id}",
                "a",
                "InService",
                n.outdated,
                self.now - n.ready_at + self.BOOT,
                NodeState(
                    f"node-{n.id}",
                    n.ready_at <= self.now,
                    n.drain_start is not None,
                    LIFECYCLE_DRAINING if n.drain_start is not None else "ready",
                    set_aside_seconds=None if n.aside_until is None else n.aside_until - self.now,
                ),
            )
            for n in self.nodes
        ]
        return PoolState("workers", "asg", self.desired, 1, self.size + 3, members, self.baseline, self.BOOT)

    def apply(self, decision: Decision) -> None:
        if decision.action == "wait":
            self.now += decision.wait_seconds
        elif decision.action == "scale":
            self.desired = decision.desired if decision.desired is not None else self.desired
            self.baseline = decision.baseline if decision.baseline is not None else self.baseline
        elif decision.action == "replace":
            ends = [self._drain(item.instance_id, item.set_aside, item.decrement) for item in decision.replace]
            self.now = max([self.now + 1.0, *ends])  # the Map ends with its last drain
            cordoned = [n for n in self.nodes if n.drain_start is not None]  # while the batch drained
            self.max_cordoned = max(self.max_cordoned, len(cordoned))
            self.max_set_aside = max(self.max_set_aside, len([n for n in cordoned if n.aside_until is not None]))
            self.nodes = [n for n in self.nodes if not (n.drain_start is not None and n.aside_until is None)]
        while len(self.nodes) < self.desired:
            self.nodes.append(Node(next(self.ids), False, self.now + self.BOOT, False))

    def _drain(self, instance_id: str, may_set_aside: bool, decrement: bool) -> float:
        node = next(n for n in self.nodes if f"i-{n.id}" == instance_id)
        node.drain_start = self.now if node.drain_start is None else node.drain_start
        forced_at = node.drain_start + self.GRACE
        if node.blocks and self.now < forced_at and may_set_aside:
            node.aside_until = forced_at
            return self.now
        node.aside_until = None  # drained now, or parked until the force rules allow: terminated
        self.replaced += 1
        self.desired -= int(decrement)
        return forced_at if node.blocks else self.now


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(1, 7),
    surge=st.integers(0, 2),
    max_unavailable=st.integers(0, 3),
    blocking=st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_blocked_drains_never_cordon_more_than_the_limits_and_the_roll_ends_by_the_force_rules(
    size: int, surge: int, max_unavailable: int, blocking: list[bool]
) -> None:
    if surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    roll = RollSettings(surge=surge, max_unavailable=max_unavailable, node_startup_timeout=1e9, continue_blocked=True)
    sim = BlockingPool(size, blocking, surge)
    allowed = max(max_unavailable, 1)
    for _ in range(500):
        decision = plan(sim.state(), roll)
        if decision.action == "done":
            break
        assert len(decision.replace) <= surge + allowed  # a batch never exceeds the roll's limits
        sim.apply(decision)
    else:
        pytest.fail("the roll did not end in 500 decisions")
    assert sim.replaced == size and all(not n.outdated for n in sim.nodes)
    assert sim.max_set_aside <= allowed  # never more than max_unavailable set aside
    assert sim.max_cordoned <= 2 * allowed + surge  # set aside beside a batch: never the whole pool
    blocking_nodes = len([i for i in range(size) if blocking[i % len(blocking)]])
    assert sim.now <= (blocking_nodes + 1) * (sim.GRACE + 2 * sim.BOOT) + 100 * size  # forced node after node


def test_every_node_blocking_a_pool_of_three_ends_with_one_set_aside_at_a_time():
    sim = BlockingPool(3, [True], surge=0)
    order = []
    for _ in range(100):
        decision = plan(sim.state(), CONTINUE)
        if decision.action == "done":
            break
        order.append(replaced(decision))
        sim.apply(decision)
    assert order[:2] == [[("i-0", True)], [("i-1", False)]]  # node-0 aside; node-1 parks until forced
    assert sim.replaced == 3 and sim.max_set_aside == 1 and sim.max_cordoned == 2


def test_with_the_option_every_blocked_drain_is_announced_set_aside_or_not():
    decision = plan(pool(aside(1), member(2), member(3)), CONTINUE)
    assert [(r.instance_id, r.set_aside, r.announce_blocked) for r in decision.replace] == [("i-2", False, True)]
    assert not any(r.announce_blocked for r in plan(pool(member(1), member(2)), RollSettings()).replace)


def test_records_beyond_max_unavailable_are_continued_and_without_the_option_none_sets_a_node_aside():
    # two recorded (one by a drain that parked when its execution died): only max_unavailable 1 stays aside
    decision = plan(pool(aside(1), aside(2), member(3)), CONTINUE)
    assert decision.reason == "continue the nodes already being replaced" and replaced(decision) == [("i-2", True)]
    # a record left by a roll with the option changes nothing for one without: the node is continued as before
    assert replaced(plan(pool(aside(1), member(2)), RollSettings())) == [("i-1", False)]
