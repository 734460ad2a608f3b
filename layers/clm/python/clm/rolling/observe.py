"""Join a node pool's instances (its auto scaling group's or its Karpenter instances: clm.stacks) with its Kubernetes
Nodes into a PoolState."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from clm.kube.blocked_drain import blocked_until
from clm.kube.nodes import DRAINED_BY, TAINT_KEY
from clm.rolling.pool import LIFECYCLE_READY, GroupState, Member, NodeState, PoolState
from clm.rolling.replaced import REPLACES_ANNOTATION
from clm.stacks.inventory import NodePoolInventory

LIFECYCLE_LABEL = "lifecycle-status"
# The taints Karpenter puts on a node it disrupts: v1, and v1beta1 (value "disrupting").
KARPENTER_DISRUPTION_TAINTS = ("karpenter.sh/disrupted", "karpenter.sh/disruption")


def instance_id_of(node: dict[str, Any]) -> str:
    """The EC2 instance id in a Node's providerID (`aws:///<az>/<instance-id>`), or ""."""
    provider_id = (node.get("spec") or {}).get("providerID", "")
    return provider_id.rsplit("/", 1)[-1] if provider_id.startswith("aws://") else ""


def _ready_condition(node: dict[str, Any]) -> dict[str, Any]:
    """The Node's Ready condition ({} when it has none)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Ready"), {})


def _ready_since(node: dict[str, Any]) -> datetime | None:
    """When the Node last turned Ready; None when it is not Ready or the time is unknown."""
    condition = _ready_condition(node)
    return _parse_time(condition.get("lastTransitionTime", "")) if condition.get("status") == "True" else None


def node_state(node: dict[str, Any], now: datetime | None = None) -> NodeState:
    """The planner's view of a Node object (a set-aside node's seconds until due counted from `now`)."""
    metadata, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    until = blocked_until(node)
    return NodeState(
        name=metadata.get("name", ""),
        ready=_ready_condition(node).get("status") == "True",
        unschedulable=bool(spec.get("unschedulable")),
        lifecycle_status=(metadata.get("labels") or {}).get(LIFECYCLE_LABEL, LIFECYCLE_READY),
        volumes_attached=bool(status.get("volumesAttached")),
        disrupted_by_karpenter=any(t.get("key") in KARPENTER_DISRUPTION_TAINTS for t in spec.get("taints") or []),
        set_aside_seconds=None if until is None or now is None else (until - now).total_seconds(),
        replaces=(metadata.get("annotations") or {}).get(REPLACES_ANNOTATION, ""),
        drained_by=(metadata.get("annotations") or {}).get(DRAINED_BY, ""),
        taint_effect=next((t.get("effect", "") for t in spec.get("taints") or [] if t.get("key") == TAINT_KEY), ""),
    )


def pool_state(
    name: str,
    inventory: NodePoolInventory,
    nodes: Iterable[dict[str, Any]],
    baselines: Mapping[str, int] | None,
    now: datetime,
    *,
    karpenter: bool = False,
) -> PoolState:
    """The pool as the planner sees it: each instance with its Node (if registered), ages relative to `now`
    (`baselines`: a surged group's desired capacity before the surge, by group name; `karpenter`: the inventory is a
    Karpenter pool's, clm.stacks.karpenter_pool)."""
    by_instance = {instance_id_of(node): node for node in nodes}
    members, boot_times, outdated_boot_times = [], [], []
    for instance in inventory.instances:
        launched = _parse_time(instance.launch_time)
        node = by_instance.get(instance.id)
        members.append(
            Member(
                instance_id=instance.id,
                az=instance.az,
                lifecycle_state=instance.lifecycle_state,
                outdated=instance.outdated,
                seconds_since_launch=(now - launched).total_seconds() if launched else 0.0,
                node=node_state(node, now) if node else None,
                group=instance.group,
            )
        )
        ready_since = _ready_since(node) if node else None
        if launched and ready_since:
            seconds = max((ready_since - launched).total_seconds(), 0.0)
            (outdated_boot_times if instance.outdated else boot_times).append(seconds)
    boot_times = boot_times or outdated_boot_times  # the pool's older instances until a new one has booted
    baselines = baselines or {}
    groups = tuple(GroupState(g.name, g.desired, g.min, g.max, baselines.get(g.name)) for g in inventory.groups)
    surged = [group.baseline_desired for group in groups if group.baseline_desired is not None]
    return PoolState(
        name=name,
        asg_name=groups[0].name if len(groups) == 1 else inventory.asg_name,
        desired=inventory.desired,
        min_size=inventory.min,
        max_size=inventory.max,
        members=members,
        baseline_desired=sum(group.capacity for group in groups) if surged else None,
        typical_boot_seconds=statistics.median(boot_times) if boot_times else None,
        karpenter=karpenter,
        groups=groups if len(groups) > 1 else (),
    )


def _parse_time(text: str) -> datetime | None:
    """An ISO 8601 / RFC 3339 timestamp (Kubernetes' `Z` suffix included), or None."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
