"""The steps of the `roll` function: one node pool's rolling update, each step one bounded call.

suspend -> (plan -> wait | scale | mark | drain passes + terminate)* -> resume. Everything a step needs is observed
again (group, instances, Nodes, node annotations), so an execution can die at any step and the next continues.
The cluster's `update_strategy` (clm.rolling.strategy) picks the planner: CLM's drains, or the marks that hand the
outdated nodes to the cluster-lifecycle-controller (clm.rolling.clc).
"""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from typing import Any

from clm.kube.waiting import wait_for_event
from clm.rolling.clc import plan_clc
from clm.rolling.marks import AHEAD_EFFECT, to_taint
from clm.rolling.node_watch import ReadyWatch
from clm.rolling.observe import pool_state
from clm.rolling.planner import PoolBlocked
from clm.rolling.planner import plan as plan_next
from clm.rolling.pool import PoolState, RollSettings
from clm.rolling.settings import roll_settings
from clm.rolling.strategy import CLC, strategy_now
from clm.stacks.inventory import NodePoolInventory, node_pool_inventory
from clm.stacks.names import node_pool_stack_name
from clm.stacks.removed import node_pool_stacks
from clm.workflow.cluster_access import kube_client, registry_cluster, rendering
from clm.workflow.drain_steps import DRAIN_STEPS, pool_drain_settings
from clm.workflow.maintenance import fleet_freezes, hold_disruption
from clm.workflow.node_events import announce_replaced
from clm.workflow.roll_budget import steps_per_execution, within_budget
from clm.workflow.target_aws import TargetAws, of_event
from clm.workflow.terminations import terminate_replacement
from clm.workflow.update_block import stop_if_blocked

# Processes that would replace or move instances behind the roll's back.
ROLL_SUSPENDED = ["AZRebalance", "ReplaceUnhealthy"]
BASELINE_TAG = "clm:roll-baseline-desired"
SIZE_KEYS = {"desired": "DesiredCapacity", "min_size": "MinSize"}  # a scale decision's sizes, as the API names them


def _inventory(where: TargetAws, pool: str, name: str) -> NodePoolInventory:
    """The pool's groups (every one its stack has, none tagged for another cluster or pool; `name`: the cluster's,
    Cluster.name, which its tags carry) and instances."""
    stack_name = node_pool_stack_name(where.cluster_id, pool)
    clients = (where.client("cloudformation"), where.client("autoscaling"), where.client("ec2"))
    return node_pool_inventory(*clients, stack_name, cluster_id=where.cluster_id, name=name, pool=pool)


def _name(event: dict[str, Any]) -> str:
    """The cluster's name (Cluster.name: its tags' key) in the run's rendering."""
    return rendering(event["rendering"]).cluster.name


def suspend(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, node_pool, pool}` -> suspend AZRebalance and ReplaceUnhealthy on every group of the pool (a
    Karpenter pool has none)."""
    if _karpenter(event):
        return {"asgs": [], "suspended": []}
    where = of_event(event)
    groups = _inventory(where, event["node_pool"], _name(event)).group_names
    for group in groups:
        where.client("autoscaling").suspend_processes(AutoScalingGroupName=group, ScalingProcesses=ROLL_SUSPENDED)
    return {"asgs": groups, "suspended": ROLL_SUSPENDED}


def resume(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, node_pool, pool}` -> resume the suspended processes and forget the surge baselines of every
    group of the pool."""
    if _karpenter(event):
        return {"asgs": []}
    return {"asgs": _resume(of_event(event), event["node_pool"], _name(event))}


def _karpenter(event: dict[str, Any]) -> bool:
    """Whether the step's pool item (clm.workflow.stack_steps.pools) is a Karpenter pool."""
    return bool((event.get("pool") or {}).get("karpenter"))


def resume_all(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> resume every node pool of the cluster (after a failure; errors are reported, not raised)."""
    resumed, failed = [], []
    where = of_event(event)
    cluster = registry_cluster(event["cluster_id"])
    for stack in node_pool_stacks(where.client("cloudformation"), cluster.id, cluster.name):
        try:
            resumed.extend(_resume(where, stack.node_pool, cluster.name))
        except Exception as exc:  # one pool's trouble must not keep the others suspended
            failed.append(f"{stack.node_pool}: {type(exc).__name__}: {exc}"[:300])
    return {"resumed": resumed, "failed": failed}


def _resume(where: TargetAws, pool: str, name: str) -> list[str]:
    """Resume every group of the pool and delete its baseline tag; the groups' names."""
    autoscaling = where.client("autoscaling")
    groups = _inventory(where, pool, name).group_names
    for group in groups:  # one call per group, as CLM deletes tags (aws_asg.go deleteTags): IAM judges each group
        autoscaling.resume_processes(AutoScalingGroupName=group, ScalingProcesses=ROLL_SUSPENDED)
        autoscaling.delete_tags(Tags=[_tag(group, "")])
    return groups


def plan(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool, removing, previous, pool}` -> the next decision (done, wait, scale,
    replace), or `continue` once this execution has spent its budget (clm.workflow.roll_budget; `previous` is the
    execution's last decision). A Karpenter pool (`pool.karpenter`) is observed through EC2 and its NodeClaims
    (clm.stacks.karpenter_pool), its max_unavailable capped by its NodePool's disruption budgets; a removed one
    whose NodePool CLM did not apply is left alone.

    Publishes `Node Replaced` for terminated nodes whose successor is Ready (clm.workflow.node_events); the others
    travel in the decision's `awaiting`.

    The cluster's `update_strategy` (its registry item as it is now: a switch acts at the next plan) decides who
    drains: CLM (`rolling`, clm.rolling.planner), or the cluster-lifecycle-controller, CLM marking the nodes and
    waiting (`clc`, clm.rolling.clc). Under `rolling`, a `replace` decision first taints every other outdated node
    of the pool (clm.rolling.marks), so that the pods its drains evict prefer up-to-date nodes.

    A safe point: raises UpdateBlocked when `cluster_update_block` was set since the run began, and
    MaintenanceWindowClosed when the decision is disruptive outside the cluster's window or in a fleet freeze
    (clm.workflow.maintenance; MaintenanceWindowInvalid when its window cannot be read).

    When the decision is to wait for nodes about to turn Ready (`watch_seconds`), watch for that first and
    decide again at once, from the Nodes as the watch's events left the list (clm.rolling.node_watch; listed
    again when the watch ended otherwise; the group's side is seconds old): the Wait state that would follow has
    whole seconds and a plan call of its own.
    """
    cluster = rendering(event["rendering"]).cluster
    where = of_event(event)
    pool = event["node_pool"]
    removing = bool(event.get("removing"))
    current = stop_if_blocked(cluster.id, f"before the next node of node pool {pool}")
    registered = None if removing else cluster.node_pool(pool)
    items = registered.config_items if registered else {}
    karpenter = _karpenter(event)
    strategy = strategy_now(cluster.config_items, current.config_items, cluster.id)
    budget = steps_per_execution()
    started = time.monotonic()
    from clm.kube.karpenter import applied_by_clm  # Karpenter's rules: this step's alone

    with kube_client(cluster, where) as kube:
        if karpenter and removing and not applied_by_clm(kube, pool):  # another's NodePool: none of CLM's business
            reason = f"NodePool {pool} was not applied by CLM: its nodes are left alone"
            return within_budget({"action": "done", "reason": reason}, event.get("previous"), budget)
        if karpenter:
            inventory, disruptions = _karpenter_pool(kube, where, event["rendering"], pool)
        else:
            inventory, disruptions = _inventory(where, pool, cluster.name), None
        baselines = {} if karpenter else _baselines(where, inventory.group_names)
        size = sum(baselines.get(group.name, group.desired) for group in inventory.groups) or inventory.desired
        settings = _capped(roll_settings(items, cluster.config_items, cluster.id, size), disruptions, pool)
        state, listed = _observe(kube, pool, inventory, baselines, karpenter)
        lead = time.monotonic() - started  # how long the next plan will take to see the pool
        if strategy == CLC:
            decision = plan_clc(state, settings, removing=removing)
        else:
            decision = plan_next(state, settings, removing=removing, lead=lead)
        if decision.watch_seconds is not None:
            booting = {m.instance_id for m in state.members if m.in_service and not (m.node and m.node.ready)}
            deadline = time.monotonic() + decision.watch_seconds
            watched = ReadyWatch(booting)
            if wait_for_event(kube, [watched.spec(_version(listed))], deadline) is not None:
                state, listed = _observe(kube, pool, inventory, baselines, karpenter, watched.after(listed))
                decision = plan_next(state, settings, removing=removing, lead=lead)
        awaiting = [] if removing else announce_replaced(kube, cluster.id, state, event.get("previous"))
        hold_disruption(decision.to_dict(), state, current, fleet_freezes, datetime.now(UTC))  # a node boundary
        if strategy != CLC and decision.action == "replace":  # the batch's own nodes are tainted by their cordon
            batch = {replacement.node for replacement in decision.replace}
            names = [name for name in to_taint(state, removing=removing) if name not in batch]
            _taint_outdated(kube, names, listed)
    carried = {"awaiting": awaiting} if awaiting else {}  # terminated nodes whose successor is not named yet
    return within_budget({**decision.to_dict(), **carried}, event.get("previous"), budget)


def _karpenter_pool(kube: Any, where: TargetAws, rendering_key: str, pool: str) -> tuple[NodePoolInventory, int | None]:
    """A Karpenter pool's instances, judged against its rendered EC2NodeClass and its NodeClaims' drift, and how many
    nodes its NodePool's disruption budgets let go at once (None: no budget)."""
    from clm.kube.karpenter import drifted_instances
    from clm.stacks.karpenter_pool import desired_config, disruption_budget, karpenter_pool_inventory

    rendered = rendering(rendering_key)
    manifests = rendered.node_pool_manifests.get(pool, [])
    desired = desired_config(manifests, pool)
    inventory = karpenter_pool_inventory(
        where.client("ec2"), rendered.cluster.name, pool, desired, drifted_instances(kube)
    )
    return inventory, disruption_budget(manifests, pool, len(inventory.instances))


def _capped(settings: RollSettings, disruptions: int | None, pool: str) -> RollSettings:
    """The settings with max_unavailable capped by a Karpenter NodePool's disruption budgets (PoolBlocked at 0)."""
    if disruptions is None:
        return settings
    if disruptions == 0:
        raise PoolBlocked(pool, "its NodePool's disruption budgets allow 0 nodes at a time")
    return dataclasses.replace(settings, max_unavailable=min(max(settings.max_unavailable, 1), disruptions))


def delete_karpenter_pool(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool}` -> after a removed Karpenter pool's nodes are drained: delete the
    NodePool and EC2NodeClass CLM applied for it."""
    from clm.kube.karpenter import delete_pool

    with kube_client(rendering(event["rendering"]).cluster, of_event(event)) as kube:
        return {"deleted": delete_pool(kube, event["node_pool"])}


def _observe(
    kube: Any,
    pool: str,
    inventory: NodePoolInventory,
    baselines: dict[str, int],
    karpenter: bool,
    listed: dict[str, Any] | None = None,
) -> tuple[PoolState, dict[str, Any]]:
    """The pool's state with its Nodes as `listed` (None: listed now), and that list."""
    listed = listed if listed is not None else kube.get("/api/v1/nodes") or {}
    state = pool_state(pool, inventory, listed.get("items", []), baselines, datetime.now(UTC), karpenter=karpenter)
    return state, listed


def _version(listed: dict[str, Any]) -> str:
    """The resourceVersion of a list."""
    return str((listed.get("metadata") or {}).get("resourceVersion", ""))


def _taint_outdated(kube: Any, names: list[str], listed: dict[str, Any]) -> None:
    """Taint the nodes `names` for replacement, ahead of their drains (clm.rolling.marks, clm.kube.nodes), each from
    its object in `listed`."""
    from clm.kube.nodes import taint_for_replacement

    by_name = {node["metadata"]["name"]: node for node in listed.get("items", [])}
    for name in names:
        taint_for_replacement(kube, name, AHEAD_EFFECT, by_name.get(name))


def scale(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, node_pool, decision}` -> set the desired (and min) size of each group the decision's `sizes`
    name, keeping each one's surge baseline; a name that is not one of the pool's groups is refused (PoolBlocked)
    before any change."""
    where = of_event(event)
    pool = event["node_pool"]
    groups = set(_inventory(where, pool, _name(event)).group_names)
    sizes = event["decision"].get("sizes") or []
    strangers = sorted({size["group"] for size in sizes} - groups)
    if strangers:
        raise PoolBlocked(pool, f"cluster {where.cluster_id}: {', '.join(strangers)} is not a group of the pool")
    autoscaling = where.client("autoscaling")
    changed = []
    for size in sizes:
        if size.get("baseline") is not None:
            autoscaling.create_or_update_tags(Tags=[_tag(size["group"], str(size["baseline"]))])
        sized = {key: size[name] for name, key in SIZE_KEYS.items() if size.get(name) is not None}
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=size["group"], **sized)
        changed.append({"asg": size["group"], **sized})
    return {"groups": changed}


def mark(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool, decision}` -> hand the decision's `mark` nodes to the
    cluster-lifecycle-controller (taint, label, CLM's drained-by), take back its `take_back` ones (clm.kube.nodes);
    idempotent. The taint is NoSchedule with decommission_node_no_schedule_taint "true", but never on a master
    pool's nodes (CLM's node_pool_manager.go)."""
    from clm.kube.nodes import hand_over, take_back

    decision = event["decision"]
    cluster = rendering(event["rendering"]).cluster
    effect = pool_drain_settings(cluster, event["node_pool"]).taint_effect
    no_replacement = bool(decision.get("no_replacement"))
    with kube_client(cluster, of_event(event)) as kube:
        handed = [n for n in decision.get("mark") or [] if hand_over(kube, n, effect, no_replacement=no_replacement)]
        taken = [n for n in decision.get("take_back") or [] if take_back(kube, n)]
    return {"handed_over": handed, "taken_back": taken}


def terminate(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, replacement}` -> terminate the replacement's instance (clm.workflow.terminations);
    idempotent."""
    replacement = event["replacement"]
    name = lambda: rendering(event["rendering"]).cluster.name  # noqa: E731  # read only for a Karpenter pool's
    state = terminate_replacement(of_event(event).client, replacement, name)
    return {"instance_id": replacement["instance_id"], "terminated": state}


def _baselines(where: TargetAws, groups: list[str]) -> dict[str, int]:
    """The surge baseline of each surged group of `groups`, by name."""
    pages = (
        where.client("autoscaling")
        .get_paginator("describe_tags")
        .paginate(Filters=[{"Name": "auto-scaling-group", "Values": groups}, {"Name": "key", "Values": [BASELINE_TAG]}])
    )
    return {tag["ResourceId"]: int(tag["Value"]) for page in pages for tag in page["Tags"] if tag["Value"]}


def _tag(group: str, value: str) -> dict[str, Any]:
    return {
        "ResourceId": group,
        "ResourceType": "auto-scaling-group",
        "Key": BASELINE_TAG,
        "Value": value,
        "PropagateAtLaunch": False,
    }


def left_outdated(event: dict[str, Any]) -> dict[str, int]:
    """`{cluster_id, rendering, pools: [{node_pool}]}` -> an apply-only run (clm.workflow.apply_only), after the
    pools' stacks: pool -> its outdated instances (of all its groups), for the pools that have some (none is
    touched)."""
    where, name = of_event(event), _name(event)
    counts = {pool["node_pool"]: len(_inventory(where, pool["node_pool"], name).outdated) for pool in event["pools"]}
    return {pool: count for pool, count in counts.items() if count}


STEPS = {
    "left_outdated": left_outdated,
    "suspend": suspend,
    "plan": plan,
    "scale": scale,
    **DRAIN_STEPS,
    "mark": mark,
    "terminate": terminate,
    "resume": resume,
    "resume_all": resume_all,
    "delete_karpenter_pool": delete_karpenter_pool,
}
