"""The nodes a roll taints before it drains: every outdated one, as CLM marks them at each step of a rolling update
(rolling_update.go markOldNodes), so that the pods its drains evict prefer up-to-date nodes and move once. Always
PreferNoSchedule, whatever `decommission_node_no_schedule_taint` says: CLM surges before it drains, a pool here
need not, and NoSchedule on every node ahead would leave a drain's pods nowhere to go (docs/workflows.md). CLM also
labels them decommission-pending; here that label stays the cluster-lifecycle-controller's hand-over signal
(`update_strategy: clc`), so that a controller a cluster's configuration deploys never takes the nodes of a
`rolling` roll."""

from __future__ import annotations

from clm.rolling.pool import PoolState

AHEAD_EFFECT = "PreferNoSchedule"
TAINTS_PER_PLAN = 100  # a plan's writes stay within seconds however large the pool; the next plans taint the rest


def to_taint(state: PoolState, *, removing: bool = False, limit: int = TAINTS_PER_PLAN) -> list[str]:
    """Up to `limit` Nodes of the pool's outdated in-service members (every member when `removing`) without the
    decommission taint of AHEAD_EFFECT (a hand-over taken back may have left NoSchedule), the ones taken out aside
    (their cordon taints them); none in a Karpenter pool (Karpenter chooses where pods go)."""
    if state.karpenter:
        return []
    return [
        m.node.name
        for m in state.members
        if m.in_service
        and (removing or m.outdated)
        and m.node is not None
        and m.node.taint_effect != AHEAD_EFFECT
        and not m.node.being_replaced
    ][:limit]
