"""Node marks of a drain, with Zalando CLM's names so migrated clusters keep their clocks.

- label `lifecycle-status`: ready, decommission-pending (marked for replacement), draining;
- taint `decommission-pending=rolling-upgrade`, effect PreferNoSchedule (NoSchedule when the cluster's config item
  `decommission_node_no_schedule_taint` is "true", as in CLM), and spec.unschedulable (cordoned);
- annotations `cluster-lifecycle-manager.zalando.org/drain-start` and `.../last-forced-drain` (RFC 3339,
  whole seconds rounded up, so the clocks they start never run short), and CLM's own
  `clm/last-drain-progress`: the last pass that evicted or deleted a pod (how long a budget has been settling);
- CLM's own annotation `clm/drained-by`: who drains the node, `clm` (this CLM's drain, written when it starts) or
  `cluster-lifecycle-controller` (handed to the in-cluster controller under `update_strategy: clc`), so that the two
  never act on the same node (docs/workflows.md, "Update strategies").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clm.kube.client import MERGE_PATCH
from clm.kube.errors import DrainError, KubeApiError, NodeNotFound
from clm.rolling.pool import DRAINED_BY_CLM, DRAINED_BY_CONTROLLER
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
DRAINED_BY = "clm/drained-by"
BY_CLM, BY_CONTROLLER = DRAINED_BY_CLM, DRAINED_BY_CONTROLLER
# CLM's label telling the controller not to launch a successor (pkg/updatestrategy/node_pool_manager.go).
REPLACEMENT_STRATEGY_LABEL, NO_REPLACEMENT = "cluster-lifecycle-controller.zalan.do/replacement-strategy", "none"
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


def _patch_node(kube: KubeClient, name: str, change: Any, known: Node | None = None) -> Node:
    """Apply `change(node) -> merge patch | None` with optimistic concurrency; return the node. `known`: the node
    as just listed, tried first (a conflict reads it again)."""
    for attempt in range(_CONFLICT_RETRIES):
        node = known if known is not None and attempt == 0 else kube.get(node_path(name))
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


def taint_for_replacement(
    kube: KubeClient, name: str, taint_effect: str = PREFER_NO_SCHEDULE, known: Node | None = None
) -> None:
    """Taint a node to be replaced (CLM's decommission taint), so new pods prefer other nodes; its label stays, the
    cluster-lifecycle-controller's hand-over signal. `known`: the node as just listed, saving a read."""

    def change(node: Node) -> dict[str, Any]:
        taints = _with_taint(node, taint_effect)
        return {} if taints is None else {"spec": {"taints": taints}}

    _patch_node(kube, name, change, known)


def drained_by(node: Node) -> str:
    """Who drains the node: BY_CLM, BY_CONTROLLER, or "" (nobody has said)."""
    return str((node["metadata"].get("annotations") or {}).get(DRAINED_BY, ""))


def hand_over(kube: KubeClient, name: str, taint_effect: str, *, no_replacement: bool = False) -> bool:
    """Mark a node for the cluster-lifecycle-controller as CLM's clc strategy does (clc_update.go markNodes:
    taint, label decommission-pending) and record it as the controller's; with `no_replacement`, also CLM's label
    telling the controller to launch no successor (a removed pool). A node draining and not the controller's is
    left as it is (False). Idempotent, in one conflict-safe patch."""
    handed = True

    def change(node: Node) -> dict[str, Any]:
        nonlocal handed
        current = (node["metadata"].get("labels") or {}).get(LIFECYCLE_LABEL)
        handed = current != DRAINING or drained_by(node) == BY_CONTROLLER
        if not handed:
            return {}
        patch = _marks(node, DRAINING if current == DRAINING else DECOMMISSION_PENDING, taint_effect)
        if drained_by(node) != BY_CONTROLLER:
            patch.setdefault("metadata", {})["annotations"] = {DRAINED_BY: BY_CONTROLLER}
        labels = node["metadata"].get("labels") or {}
        if no_replacement and labels.get(REPLACEMENT_STRATEGY_LABEL) != NO_REPLACEMENT:
            patch.setdefault("metadata", {}).setdefault("labels", {})[REPLACEMENT_STRATEGY_LABEL] = NO_REPLACEMENT
        return patch

    _patch_node(kube, name, change)
    return handed


def take_back(kube: KubeClient, name: str) -> bool:
    """Undo a hand-over the controller has not started (label decommission-pending -> ready, as CLM's
    AbortNodeDecommissioning; the taint stays, as there): True when the node is CLM's to drain now, False when the
    controller is draining it. Conflict-safe: the controller's own label change and this one cannot both win."""
    taken = True

    def change(node: Node) -> dict[str, Any]:
        nonlocal taken
        current = (node["metadata"].get("labels") or {}).get(LIFECYCLE_LABEL)
        taken = drained_by(node) != BY_CONTROLLER or current != DRAINING
        if drained_by(node) != BY_CONTROLLER or not taken:
            return {}
        patch: dict[str, Any] = {"metadata": {"annotations": {DRAINED_BY: None}}}
        if current == DECOMMISSION_PENDING:
            patch["metadata"]["labels"] = {LIFECYCLE_LABEL: READY}
        return patch

    _patch_node(kube, name, change)
    return taken


def cordon(kube: KubeClient, name: str, now: datetime, taint_effect: str = PREFER_NO_SCHEDULE) -> DrainClock:
    """Mark a node draining: label, taint, unschedulable, and drain-start with CLM as its drainer (both kept if
    already set). Idempotent. DrainError for a node the cluster-lifecycle-controller was handed and has not given
    back (labelled decommission-pending or draining): never both on one node."""

    def change(node: Node) -> dict[str, Any]:
        handed = drained_by(node) == BY_CONTROLLER
        if handed and (node["metadata"].get("labels") or {}).get(LIFECYCLE_LABEL) in (DECOMMISSION_PENDING, DRAINING):
            raise DrainError(f"node {name} is the cluster-lifecycle-controller's to drain", kube.cluster_id)
        patch = _marks(node, DRAINING, taint_effect)
        if not (node.get("spec") or {}).get("unschedulable"):
            patch.setdefault("spec", {})["unschedulable"] = True
        annotations = {DRAIN_START: format_time(now, round_up=True)} if drain_clock(node) is None else {}
        if annotations or handed:  # CLM's drain starts (a hand-over taken back is CLM's)
            annotations[DRAINED_BY] = BY_CLM
        if annotations:
            patch.setdefault("metadata", {})["annotations"] = annotations
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
