"""The nodes a roll marks for replacement before it drains: every outdated one, as CLM does at each step of a
rolling update (rolling_update.go markOldNodes), so that the pods its drains evict prefer up-to-date nodes (the
taint is PreferNoSchedule) and move once."""

from __future__ import annotations

from clm.rolling.pool import PoolState


def to_mark(state: PoolState, *, removing: bool = False) -> list[str]:
    """The Nodes of the pool's outdated in-service members (every member when `removing`) not marked yet; none in
    a Karpenter pool (Karpenter chooses where pods go)."""
    if state.karpenter:
        return []
    return [
        m.node.name
        for m in state.members
        if m.in_service and (removing or m.outdated) and m.node is not None and not m.node.marked
    ]
