"""A node pool's update under `update_strategy: clc`, decided from observed state only (CLM's
pkg/updatestrategy/clc_update.go): mark the outdated nodes for the in-cluster cluster-lifecycle-controller
(taint, label `decommission-pending`) and wait while it drains and replaces them; done when no outdated node is left.

CLM drains none of them. A node CLM itself started to drain (the strategy was `rolling` until then) is finished by
CLM and never handed over, so the two never act on the same node; clm.rolling.planner takes back hand-overs the
controller has not started when the strategy goes back to `rolling`. The waits are the roll's: a replacement
that does not turn Ready within the node startup timeout fails the roll, and marking nodes is disruptive work,
held outside the maintenance window (clm.workflow.maintenance).
"""

from __future__ import annotations

from clm.rolling.groups import back_to_capacity, shrinkable
from clm.rolling.planner import CONTROLLER_POLL_SECONDS, Decision, replace_decision, wait_for_boot
from clm.rolling.pool import DRAINED_BY_CLM, DRAINED_BY_CONTROLLER, LIFECYCLE_DRAINING, PoolState, RollSettings


def plan_clc(state: PoolState, settings: RollSettings, *, removing: bool = False) -> Decision:
    """The next step of updating `state` through the cluster-lifecycle-controller (of emptying it when `removing`,
    as CLM's PrepareForRemoval: every node marked, the controller told to launch no successor)."""
    in_service = [m for m in state.members if m.in_service]
    if removing and state.min_size > 0:
        sizes = shrinkable(state)
        return Decision("scale", "let the group(s) shrink to zero", desired=state.desired, min_size=0, sizes=sizes)
    own = [m for m in in_service if m.node and m.node.being_replaced and m.node.drained_by == DRAINED_BY_CLM]
    if own:
        reason = "finish the drains CLM started before update_strategy became clc"
        return replace_decision(own, state, removing, reason, settings, may_aside=False)
    targets = in_service if removing else [m for m in in_service if m.outdated]
    what = "node(s) of the removed pool" if removing else "outdated node(s)"
    unmarked = [
        m.node.name
        for m in targets
        if m.node and m.node.drained_by != DRAINED_BY_CONTROLLER and m.node.lifecycle_status != LIFECYCLE_DRAINING
    ]
    if unmarked:
        reason = f"hand {len(unmarked)} of {len(targets)} {what} to the cluster-lifecycle-controller"
        return Decision("mark", reason, mark=unmarked, no_replacement=removing or None)
    booting = wait_for_boot(state, [m for m in in_service if not (m.node and m.node.ready)], settings)
    if targets:
        draining = sum(1 for m in targets if m.node and m.node.lifecycle_status == LIFECYCLE_DRAINING)
        reason = f"waiting for the cluster-lifecycle-controller: {len(targets)} {what} left, {draining} draining"
        return Decision("wait", reason, wait_seconds=CONTROLLER_POLL_SECONDS)
    if booting:
        return booting
    sizes = back_to_capacity(state)  # a surge left by a `rolling` roll before the switch
    if sizes:
        reason = "roll finished: back to the capacity before the surge"
        return Decision("scale", reason, desired=state.capacity, sizes=sizes)
    return Decision("done", "every node is up to date and Ready")
