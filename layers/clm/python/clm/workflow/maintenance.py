"""The checks before disruptive work: a roll's at each node boundary (the plan step), a stack update's when it would
replace instances (clm.stacks.replacing). Such work runs only inside the cluster's maintenance window (its registry
item as it is now) and outside the fleet's freezes (its rollout policy); why in docs/rollouts.md, "Maintenance
windows and freezes"."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from clm.errors import RolloutPolicyError
from clm.model import Cluster
from clm.rolling.disruption import Closed, MaintenanceWindowClosed, closed
from clm.rolling.pool import PoolState
from clm.rolling.window import WINDOW_ITEM, parse_window
from clm.rollout.policy import Freeze
from clm.stacks.replacing import instance_replacers
from clm.stacks.spec import StackSpec


def disruptive(decision: dict[str, Any], state: PoolState) -> bool:
    """Whether a plan's decision starts disruptive work: replacing nodes, handing them to the
    cluster-lifecycle-controller (which then replaces them), or growing the group to replace them (a surge; a node
    in the AZ of a node with volumes). Waiting, taking hand-overs back, and shrinking back after a roll, are not."""
    if decision["action"] == "replace" or decision.get("mark"):
        return True
    return decision["action"] == "scale" and int(decision.get("desired") or 0) > state.desired


def hold_disruption(
    decision: dict[str, Any],
    state: PoolState,
    cluster: Cluster,
    freezes: Callable[[], Sequence[Freeze]],
    now: datetime,
) -> None:
    """Raise MaintenanceWindowClosed when `decision` is disruptive and `cluster`'s window is closed or a freeze
    holds at `now`; MaintenanceWindowInvalid when its window cannot be read. `freezes` is read only then (a policy
    that cannot be read leaves the freezes unknown: the work waits)."""
    if not disruptive(decision, state):
        return
    outdated = [member.outdated for member in state.members]
    _hold(cluster, f"node pool {state.name}", freezes, now, rolling=any(outdated) and not all(outdated))


def hold_stack_update(
    spec: StackSpec, cluster: Callable[[], Cluster], freezes: Callable[[], Sequence[Freeze]], now: datetime
) -> None:
    """Before `spec`'s stack is updated: raise MaintenanceWindowClosed (MaintenanceWindowInvalid) as
    `hold_disruption` does when its template has resources whose update may replace instances; `cluster` (as it is
    now) and `freezes` are read only then."""
    replacing = instance_replacers(spec.template)
    if replacing:
        what = f"stack {spec.name} (its update may replace instances: {', '.join(replacing[:5])})"
        _hold(cluster(), what, freezes, now, rolling=False)


def _hold(
    cluster: Cluster, what: str, freezes: Callable[[], Sequence[Freeze]], now: datetime, *, rolling: bool
) -> None:
    """Raise MaintenanceWindowClosed naming `what` when `cluster`'s window is closed or a freeze holds at `now`."""
    item = cluster.config_items.get(WINDOW_ITEM)
    window = None if item is None else parse_window(item, cluster.id)
    try:
        shut = closed(window, freezes(), now)
    except RolloutPolicyError as exc:
        shut = Closed(f"the rollout policy cannot be read, so the fleet's freezes are unknown: {exc}", None, None)
    if shut is not None:
        raise MaintenanceWindowClosed(cluster.id, what, shut, rolling)


def fleet_freezes() -> tuple[Freeze, ...]:
    """The freezes of the fleet's rollout policy (clm.rollout.source: read once per configuration version)."""
    from clm.aws import client
    from clm.rollout.source import fleet_policy
    from clm.workflow.settings import Settings

    return fleet_policy(Settings.from_env().config_source, client).freezes
