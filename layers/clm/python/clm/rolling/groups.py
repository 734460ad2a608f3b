"""A pool's roll over its auto scaling groups: which group a surge, a shrink or a decrement goes to.

A pool of one group per zone (Zalando's worker-splitaz) is counted as one pool, as CLM counts it (surge and
max_unavailable against the sum of the groups: pkg/updatestrategy/aws_asg.go Get), while each change goes to the
group of the nodes it is for: a surge to the groups of the outdated nodes (so their successors come up in those
zones), within each group's max_size; a node is terminated with decrement only while its own group is above its
capacity, so that otherwise its group launches the successor in the node's zone.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from clm.rolling.pool import GroupState, Member, PoolState


@dataclass(frozen=True)
class GroupSize:
    """A group's new sizes in a `scale` decision (None: unchanged); `baseline`: the group's desired capacity before
    the surge, kept on the group until the roll ends."""

    group: str
    desired: int | None = None
    min_size: int | None = None
    baseline: int | None = None


def surge_sizes(state: PoolState, outdated: list[Member], surge: int) -> list[GroupSize]:
    """The groups to scale out so that the pool has `surge` extra nodes (at most one per outdated node, the extra
    nodes it has counted): one group at a time in turn among the groups with outdated nodes, each within its
    max_size and with no more extra nodes than it has outdated ones; [] when the pool has its surge."""
    outdated_in = {group.name: 0 for group in state.group_states}
    for member in outdated:
        outdated_in[state.group_of(member).name] += 1
    wanted = {group.name: max(group.desired - group.capacity, 0) for group in state.group_states}
    groups = [group for group in state.group_states if outdated_in[group.name]]
    left = min(surge, len(outdated)) - sum(wanted.values())
    for group in itertools.cycle(groups) if groups else []:
        if left <= 0 or not any(_may_surge(g, wanted, outdated_in) for g in groups):
            break
        if _may_surge(group, wanted, outdated_in):
            wanted[group.name] += 1
            left -= 1
    return [
        GroupSize(group.name, desired=group.capacity + wanted[group.name], baseline=group.capacity)
        for group in groups
        if group.desired < group.capacity + wanted[group.name]
    ]


def _may_surge(group: GroupState, wanted: dict[str, int], outdated_in: dict[str, int]) -> bool:
    extra = wanted[group.name]
    return extra < outdated_in[group.name] and group.capacity + extra < group.max_size


def surplus(state: PoolState, removing: bool) -> dict[str, int]:
    """How many nodes each group has above what it returns to (0 for every node when the pool is removed)."""
    return {group.name: group.desired - (0 if removing else group.capacity) for group in state.group_states}


def surplus_first(state: PoolState, members: list[Member]) -> list[Member]:
    """`members` with those a group's surplus covers first (their termination shrinks the group back), the rest
    after, each part in its order."""
    left = surplus(state, removing=False)
    first, rest = [], []
    for member in members:
        name = state.group_of(member).name
        if left[name] > 0:
            left[name] -= 1
            first.append(member)
        else:
            rest.append(member)
    return first + rest


def back_to_capacity(state: PoolState) -> list[GroupSize]:
    """The surged groups, each back to its capacity before the surge."""
    return [GroupSize(g.name, desired=g.capacity) for g in state.group_states if g.desired > g.capacity]


def shrinkable(state: PoolState) -> list[GroupSize]:
    """The groups whose min_size keeps them from shrinking to zero, each with min_size 0."""
    return [GroupSize(g.name, desired=g.desired, min_size=0) for g in state.group_states if g.min_size > 0]


def pool_desired(state: PoolState, sizes: list[GroupSize]) -> int:
    """The pool's desired capacity once `sizes` are set."""
    desired = {group.name: group.desired for group in state.group_states}
    desired.update({size.group: size.desired for size in sizes if size.desired is not None})
    return sum(desired.values())
