"""CLM's node events on its event bus (source `clm.node`; schemas: docs/events.md, "Node events"):
`Drain Blocked` once per node per blocked spell, `Node Replaced` once a terminated node's successor is Ready."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from clm.aws import client
from clm.errors import ClmError
from clm.kube.client import MERGE_PATCH
from clm.kube.nodes import node_path
from clm.rolling.pool import Member, PoolState
from clm.rolling.replaced import REPLACES_ANNOTATION, gone, pair
from clm.workflow.bus import EVENT_BUS_ENV, put_events

SOURCE = "clm.node"
DRAIN_BLOCKED, NODE_REPLACED = "Drain Blocked", "Node Replaced"


class NodeEventsRefused(ClmError):
    """EventBridge refused some node events (transient: the step is retried, and its events made again)."""

    asl_name = "NodeEventsRefused"
    transient = True


def publish(events: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Put `(detail type, detail)` node events on CLM's bus (nothing without one: CLM_EVENT_BUS unset)."""
    bus = os.environ.get(EVENT_BUS_ENV, "")
    if not events or not bus:
        return
    refused = put_events(client("events"), bus, SOURCE, events)
    if refused:
        raise NodeEventsRefused(f"event bus {bus}: node events refused: {refused[:5]}")


def drain_blocked_detail(
    cluster_id: str, node_pool: str, replacement: Mapping[str, Any], record: Mapping[str, Any]
) -> dict[str, Any]:
    """The `Drain Blocked` detail of a node set aside (`record`: clm.kube.blocked_drain's)."""
    return {
        "cluster_id": cluster_id,
        "node_pool": node_pool,
        "node": replacement.get("node"),
        "instance_id": replacement.get("instance_id"),
        "blocked_since": record["since"],
        "until": record["until"],
        "pods": list(record["pods"]),
    }


def node_replaced_detail(cluster_id: str, node_pool: str, old: Mapping[str, Any], new: Member) -> dict[str, Any]:
    """The `Node Replaced` detail: the terminated node and instance, and the successor paired with it."""
    return {
        "cluster_id": cluster_id,
        "node_pool": node_pool,
        "node": old.get("node"),
        "instance_id": old.get("instance_id"),
        "new_node": new.node.name if new.node else None,
        "new_instance_id": new.instance_id,
    }


def announce_replaced(
    kube: Any, cluster_id: str, state: PoolState, previous: Mapping[str, Any] | None
) -> list[Mapping[str, Any]]:
    """Publish `Node Replaced` for the nodes the previous decisions terminated whose successor is Ready (claiming
    it with an annotation); returns the nodes still awaiting theirs, for the next decision to carry."""
    previous = previous or {}
    awaiting = list(previous.get("awaiting") or [])
    if previous.get("action") == "replace":
        awaiting += gone(previous.get("replace") or [], state)
    if not awaiting:
        return []
    claimed = {m.node.name for m in state.members if m.node and m.node.replaces}
    pairs, left = pair(awaiting, state, claimed)
    publish([(NODE_REPLACED, node_replaced_detail(cluster_id, state.name, old, new)) for old, new in pairs])
    for old, new in pairs:
        patch = {"metadata": {"annotations": {REPLACES_ANNOTATION: str(old.get("node") or old["instance_id"])}}}
        kube.request("PATCH", node_path(new.node.name if new.node else ""), body=patch, content_type=MERGE_PATCH)
    return left
