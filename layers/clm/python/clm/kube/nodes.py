"""Node marks of a drain, with Zalando CLM's names so migrated clusters keep their clocks.

- label `lifecycle-status`: ready, decommission-pending (marked for replacement), draining;
- taint `decommission-pending=rolling-upgrade`, effect PreferNoSchedule (NoSchedule when the cluster's config item
  `decommission_node_no_schedule_taint` is "true", as in CLM), and spec.unschedulable (cordoned);
- annotations `cluster-lifecycle-manager.zalando.org/drain-start` and `.../last-forced-drain` (RFC 3339,
  whole seconds rounded up, so the clocks they start never run short), and CLM's own
  `clm/last-drain-progress`: the last pass that evicted or deleted a pod (how long a budget has been settling).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clm.kube.client import MERGE_PATCH
from clm.kube.errors import DrainError, KubeApiError, NodeNotFound
from clm.timestamps import format_time, parse_time

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

log = logging.getLogger(__name__)

LIFECYCLE_LABEL = "lifecycle-status"
READY, DECOMMISSION_PENDING, DRAINING = "ready", "decommission-pending", "draining"
PREFER_NO_SCHEDULE, NO_SCHEDULE = "PreferNoSchedule", "NoSchedule"
TAINT_KEY, TAINT_VALUE = "decommission-pending", "rolling-upgrade"
DRAIN_START = "cluster-lifecycle-manager.zalando.org/drain-start"
LAST_FORCED = "cluster-lifecycle-manager.zalando.org/last-forced-drain"
LAST_PROGRESS = "clm/last-drain-progress"
_CONFLICT_RETRIES = 5

Node = dict[str, Any]


@dataclass(frozen=True)
class DrainClock:
    """A node's drain clocks: when its drain started, its last forced deletion and its last progress (None: never)."""

    drain_start: datetime
    last_forced: datetime | None
    last_progress: datetime | None = None


def node_path(name: str) -> str:
    """The API path of a Node."""
    return f"/api/v1/nodes/{name}"


def _annotation_time(node: Node, annotation: str) -> datetime | None:
    value = (node["metadata"].get("annotations") or {}).get(annotation)
    if not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        log.warning("node %s: ignoring invalid %s=%r", node["metadata"]["name"], annotation, value)
        return None


def drain_clock(node: Node) -> DrainClock | None:
    """The clocks kept on a node; None when no drain has started."""
    start = _annotation_time(node, DRAIN_START)
    if not start:
        return None
    return DrainClock(start, _annotation_time(node, LAST_FORCED), _annotation_time(node, LAST_PROGRESS))


def decommission_taint(effect: str = PREFER_NO_SCHEDULE) -> dict[str, str]:
    """CLM's taint of a node being replaced, with `effect` (CLM's default: PreferNoSchedule)."""
    return {"key": TAINT_KEY, "value": TAINT_VALUE, "effect": effect}


def _with_taint(node: Node, effect: str) -> list[dict[str, Any]] | None:
    """The node's taints with ours added or corrected (value, effect); None when they already hold it."""
    taint = decommission_taint(effect)
    taints = list((node.get("spec") or {}).get("taints") or [])
    if taint in [{k: t.get(k) for k in taint} for t in taints]:
        return None
    return [t for t in taints if t.get("key") != TAINT_KEY] + [taint]


def _patch_node(kube: KubeClient, name: str, change: Any) -> Node:
    """Apply `change(node) -> merge patch | None` with optimistic concurrency; return the node."""
    for _ in range(_CONFLICT_RETRIES):
        node = kube.get(node_path(name))
        if node is None:
            raise NodeNotFound(f"node {name} does not exist", kube.cluster_id)
        patch = change(node)
        if not patch:
            return node
        patch.setdefault("metadata", {})["resourceVersion"] = node["metadata"]["resourceVersion"]
        try:
            return kube.request("PATCH", node_path(name), body=patch, content_type=MERGE_PATCH)
        except KubeApiError as exc:
            if exc.status != 409:
                message = f"updating node {name}: {exc.status or 'no response'} {exc.reason}"
                raise DrainError(message, kube.cluster_id, transient=exc.transient) from None
    raise DrainError(f"updating node {name}: still conflicting after {_CONFLICT_RETRIES} tries", kube.cluster_id)


def _marks(node: Node, label: str, effect: str) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    if (node["metadata"].get("labels") or {}).get(LIFECYCLE_LABEL) != label:
        patch["metadata"] = {"labels": {LIFECYCLE_LABEL: label}}
    taints = _with_taint(node, effect)
    if taints is not None:
        patch["spec"] = {"taints": taints}
    return patch


def mark_for_decommission(kube: KubeClient, name: str, taint_effect: str = PREFER_NO_SCHEDULE) -> None:
    """Label a node decommission-pending (unless already draining) and taint it, so new pods avoid it."""

    def change(node: Node) -> dict[str, Any]:
        current = (node["metadata"].get("labels") or {}).get(LIFECYCLE_LABEL)
        return _marks(node, DRAINING if current == DRAINING else DECOMMISSION_PENDING, taint_effect)

    _patch_node(kube, name, change)


def cordon(kube: KubeClient, name: str, now: datetime, taint_effect: str = PREFER_NO_SCHEDULE) -> DrainClock:
    """Mark a node draining: label, taint, unschedulable, and drain-start (kept if already set). Idempotent."""

    def change(node: Node) -> dict[str, Any]:
        patch = _marks(node, DRAINING, taint_effect)
        if not (node.get("spec") or {}).get("unschedulable"):
            patch.setdefault("spec", {})["unschedulable"] = True
        if drain_clock(node) is None:
            patch.setdefault("metadata", {})["annotations"] = {DRAIN_START: format_time(now, round_up=True)}
        return patch

    clock = drain_clock(_patch_node(kube, name, change))
    if clock is None:  # the server dropped our annotation: never expected
        raise DrainError(f"node {name}: {DRAIN_START} was not recorded", kube.cluster_id)
    return clock


def record_forced_deletion(kube: KubeClient, name: str, now: datetime) -> datetime:
    """Write the last-forced-drain annotation and return the time stored (CLM wrote it into drain-start by
    mistake; this does not)."""
    stamp = format_time(now, round_up=True)
    _patch_node(kube, name, lambda node: {"metadata": {"annotations": {LAST_FORCED: stamp}}})
    return parse_time(stamp)


def record_progress(kube: KubeClient, name: str, now: datetime) -> None:
    """Write the last-drain-progress annotation (a merge patch of one annotation: no read, no conflict)."""
    patch = {"metadata": {"annotations": {LAST_PROGRESS: format_time(now)}}}
    kube.request("PATCH", node_path(name), body=patch, content_type=MERGE_PATCH)
