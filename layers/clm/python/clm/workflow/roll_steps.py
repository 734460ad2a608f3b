"""The steps of the `roll` function: one node pool's rolling update, each step one bounded call.

suspend -> (plan -> wait | scale | drain passes + terminate)* -> resume. Everything a step needs is observed
again (group, instances, Nodes, node annotations), so an execution can die at any step and the next continues.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from clm.kube.waiting import WatchSpec, wait_for_event
from clm.rolling.observe import instance_id_of, node_state, pool_state
from clm.rolling.planner import PoolBlocked
from clm.rolling.planner import plan as plan_next
from clm.rolling.pool import PoolState, RollSettings
from clm.rolling.settings import roll_settings
from clm.stacks.inventory import NodePoolInventory, node_pool_inventory
from clm.stacks.names import node_pool_stack_name
from clm.stacks.removed import node_pool_stacks
from clm.workflow.cluster_access import kube_client, rendering
from clm.workflow.maintenance import fleet_freezes, hold_disruption
from clm.workflow.node_events import announce_replaced
from clm.workflow.roll_budget import steps_per_execution, within_budget
from clm.workflow.target_aws import TargetAws, of_event
from clm.workflow.update_block import stop_if_blocked

# Processes that would replace or move instances behind the roll's back.
ROLL_SUSPENDED = ["AZRebalance", "ReplaceUnhealthy"]
BASELINE_TAG = "clm:roll-baseline-desired"


def _inventory(where: TargetAws, pool: str) -> NodePoolInventory:
    return node_pool_inventory(
        where.client("cloudformation"),
        where.client("autoscaling"),
        where.client("ec2"),
        node_pool_stack_name(where.cluster_id, pool),
    )


def suspend(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, node_pool, pool}` -> suspend AZRebalance and ReplaceUnhealthy on the pool's group (a Karpenter
    pool has none)."""
    if _karpenter(event):
        return {"asg": None, "suspended": []}
    where = of_event(event)
    group = _inventory(where, event["node_pool"]).asg_name
    where.client("autoscaling").suspend_processes(AutoScalingGroupName=group, ScalingProcesses=ROLL_SUSPENDED)
    return {"asg": group, "suspended": ROLL_SUSPENDED}


def resume(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, node_pool, pool}` -> resume the suspended processes and forget the surge baseline."""
    if _karpenter(event):
        return {"asg": None}
    return {"asg": _resume(of_event(event), node_pool_stack_name(event["cluster_id"], event["node_pool"]))}


def _karpenter(event: dict[str, Any]) -> bool:
    """Whether the step's pool item (clm.workflow.stack_steps.pools) is a Karpenter pool."""
    return bool((event.get("pool") or {}).get("karpenter"))


def resume_all(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> resume every node pool of the cluster (after a failure; errors are reported, not raised)."""
    resumed, failed = [], []
    where = of_event(event)
    for stack in node_pool_stacks(where.client("cloudformation"), event["cluster_id"]):
        try:
            resumed.append(_resume(where, stack.stack_name))
        except Exception as exc:  # one pool's trouble must not keep the others suspended
            failed.append(f"{stack.node_pool}: {type(exc).__name__}: {exc}"[:300])
    return {"resumed": resumed, "failed": failed}


def _resume(where: TargetAws, stack_name: str) -> str:
    autoscaling = where.client("autoscaling")
    group = node_pool_inventory(where.client("cloudformation"), autoscaling, where.client("ec2"), stack_name).asg_name
    autoscaling.resume_processes(AutoScalingGroupName=group, ScalingProcesses=ROLL_SUSPENDED)
    autoscaling.delete_tags(Tags=[_tag(group, "")])
    return group


def plan(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool, removing, previous, pool}` -> the next decision (done, wait, scale,
    replace), or `continue` once this execution has spent its budget (clm.workflow.roll_budget; `previous` is the
    execution's last decision). A Karpenter pool (`pool.karpenter`) is observed through EC2 and its NodeClaims
    (clm.stacks.karpenter_pool), its max_unavailable capped by its NodePool's disruption budgets; a removed one
    whose NodePool CLM did not apply is left alone.

    Publishes `Node Replaced` for terminated nodes whose successor is Ready (clm.workflow.node_events); the others
    travel in the decision's `awaiting`.

    A safe point: raises UpdateBlocked when `cluster_update_block` was set since the run began, and
    MaintenanceWindowClosed when the decision is disruptive outside the cluster's window or in a fleet freeze
    (clm.workflow.maintenance; MaintenanceWindowInvalid when its window cannot be read).

    When the decision is to wait for nodes about to turn Ready (`watch_seconds`), watch for that first and
    decide again at once, from the Nodes listed again (the group's side is seconds old): the Wait state that
    would follow has whole seconds and a plan call of its own.
    """
    cluster = rendering(event["rendering"]).cluster
    where = of_event(event)
    pool = event["node_pool"]
    removing = bool(event.get("removing"))
    current = stop_if_blocked(cluster.id, f"before the next node of node pool {pool}")
    registered = None if removing else cluster.node_pool(pool)
    items = registered.config_items if registered else {}
    karpenter = _karpenter(event)
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
            inventory, disruptions = _inventory(where, pool), None
        baseline = None if karpenter else _baseline(where, inventory.asg_name)
        size = inventory.desired if baseline is None else baseline
        settings = _capped(roll_settings(items, cluster.config_items, cluster.id, size), disruptions, pool)
        state, nodes_version = _observe(kube, pool, inventory, baseline, karpenter)
        lead = time.monotonic() - started  # how long the next plan will take to see the pool
        decision = plan_next(state, settings, removing=removing, lead=lead)
        if decision.watch_seconds is not None:
            booting = {m.instance_id for m in state.members if m.in_service and not (m.node and m.node.ready)}
            deadline = time.monotonic() + decision.watch_seconds
            if wait_for_event(kube, [_ready_watch(nodes_version, booting)], deadline) is not None:
                state = _observe(kube, pool, inventory, baseline, karpenter)[0]
                decision = plan_next(state, settings, removing=removing, lead=lead)
        awaiting = [] if removing else announce_replaced(kube, cluster.id, state, event.get("previous"))
    hold_disruption(decision.to_dict(), state, current, fleet_freezes, datetime.now(UTC))  # a node boundary
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
        where.client("ec2"), rendered.cluster.id, pool, desired, drifted_instances(kube)
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
    kube: Any, pool: str, inventory: NodePoolInventory, baseline: int | None, karpenter: bool
) -> tuple[PoolState, str]:
    """The pool's state with its Nodes as listed now, and the resourceVersion of that list."""
    listed = kube.get("/api/v1/nodes") or {}
    state = pool_state(pool, inventory, listed.get("items", []), baseline, datetime.now(UTC), karpenter=karpenter)
    return state, (listed.get("metadata") or {}).get("resourceVersion", "")


def _ready_watch(nodes_version: str, instances: set[str]) -> WatchSpec:
    """Wakes when the Node of one of `instances` is (or turns) Ready."""

    def ready(kind: str, node: dict[str, Any]) -> bool:
        return kind in {"ADDED", "MODIFIED"} and instance_id_of(node) in instances and node_state(node).ready

    return WatchSpec("/api/v1/nodes", nodes_version, ready)


def scale(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, node_pool, decision}` -> set the group's desired (and min) size; keep the surge baseline."""
    decision = event["decision"]
    where = of_event(event)
    group = _inventory(where, event["node_pool"]).asg_name
    autoscaling = where.client("autoscaling")
    if decision.get("baseline") is not None:
        autoscaling.create_or_update_tags(Tags=[_tag(group, str(decision["baseline"]))])
    sizes = {"DesiredCapacity": decision["desired"]}
    if decision.get("min_size") is not None:
        sizes["MinSize"] = decision["min_size"]
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=group, **sizes)
    return {"asg": group, **sizes}


def drain(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool, replacement, previous}` -> one drain pass over the replacement's node
    (cordons it first), after `previous` (the last pass's result in this execution, or `{passes: 0}`), with the
    passes this execution has made over the node counting this one (the execution's budget counts them).
    A blocked drain is recorded and announced when the plan asks (`drain_blocked: continue`), and `set_aside`: the
    node is left cordoned while the roll goes on (clm.workflow.drain_aside)."""
    from clm.kube.drain import drain_pass
    from clm.kube.settings import DrainSettings
    from clm.workflow.drain_aside import announces, blocked

    previous = event.get("previous") or {}
    passes = int(previous.get("passes") or 0) + 1
    node = event["replacement"].get("node")
    if not node:
        return {"node": None, "done": True, "wait_seconds": 0, "passes": passes, "set_aside": False}
    cluster = rendering(event["rendering"]).cluster
    settings = DrainSettings.from_config_items(cluster.config_items, cluster.id)
    with kube_client(cluster, of_event(event)) as kube:
        result = {**drain_pass(kube, node, settings, seen=previous.get("budgets_seen")), "passes": passes}
        return blocked(kube, event, result) if announces(event, result) else {**result, "set_aside": False}


def terminate(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, replacement}` -> terminate the instance through its group, or through EC2 for a Karpenter
    pool's (after checking its tags: clm.stacks.karpenter_pool); idempotent."""
    replacement = event["replacement"]
    where = of_event(event)
    if replacement.get("karpenter_pool"):
        from clm.stacks.karpenter_pool import terminate_pool_instance

        state = terminate_pool_instance(
            where.client("ec2"), event["cluster_id"], replacement["karpenter_pool"], replacement["instance_id"]
        )
        return {"instance_id": replacement["instance_id"], "terminated": state}
    try:
        activity = where.client("autoscaling").terminate_instance_in_auto_scaling_group(
            InstanceId=replacement["instance_id"], ShouldDecrementDesiredCapacity=bool(replacement["decrement"])
        )["Activity"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ValidationError":  # not in a group any more: already terminated
            raise
        return {"instance_id": replacement["instance_id"], "terminated": "already"}
    return {"instance_id": replacement["instance_id"], "terminated": activity.get("StatusCode", "")}


def _baseline(where: TargetAws, group: str) -> int | None:
    tags = where.client("autoscaling").describe_tags(
        Filters=[{"Name": "auto-scaling-group", "Values": [group]}, {"Name": "key", "Values": [BASELINE_TAG]}]
    )["Tags"]
    return int(tags[0]["Value"]) if tags else None


def _tag(group: str, value: str) -> dict[str, Any]:
    return {
        "ResourceId": group,
        "ResourceType": "auto-scaling-group",
        "Key": BASELINE_TAG,
        "Value": value,
        "PropagateAtLaunch": False,
    }


def left_outdated(event: dict[str, Any]) -> dict[str, int]:
    """`{cluster_id, pools: [{node_pool}]}` -> an apply-only run (clm.workflow.apply_only), after the pools' stacks:
    pool -> its outdated instances, for the pools that have some (none is touched)."""
    where = of_event(event)
    counts = {pool["node_pool"]: len(_inventory(where, pool["node_pool"]).outdated) for pool in event["pools"]}
    return {pool: count for pool, count in counts.items() if count}


STEPS = {
    "left_outdated": left_outdated,
    "suspend": suspend,
    "plan": plan,
    "scale": scale,
    "drain": drain,
    "terminate": terminate,
    "resume": resume,
    "resume_all": resume_all,
    "delete_karpenter_pool": delete_karpenter_pool,
}
