"""Pre-flight of a drain, for `clm plan`: what would hold up or hurt draining a node now. Changes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clm.kube.budgets import budgets_for, list_budgets
from clm.kube.errors import NodeNotFound
from clm.kube.nodes import node_path
from clm.kube.pods import controller_of, has_empty_dir, pod_key, sort_node_pods

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

MAX_LISTED = 50


def preflight(kube: KubeClient, node: str) -> dict[str, Any]:
    """What would block or hurt draining `node` now, as a small JSON-able dict.

    {node, evictable: n, blockers: [{pod, reason, pdb}], warnings: [{pod, reason}]}. Blockers are pods
    whose budget allows no disruption now, or that several budgets cover (the eviction API refuses
    those); warnings are pods nothing recreates (no controller) and pods whose emptyDir data is lost.
    Raises NodeNotFound when the node does not exist.
    """
    if kube.get(node_path(node)) is None:
        raise NodeNotFound(f"node {node} does not exist", kube.cluster_id)
    listed = kube.request("GET", "/api/v1/pods", query={"fieldSelector": f"spec.nodeName={node}"})
    pods = sort_node_pods(listed.get("items") or []).evictable
    budgets, _ = list_budgets(kube)
    blockers: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    for pod in pods:
        covering = budgets_for(pod, budgets)
        if len(covering) > 1:
            names = ", ".join(b.key for b in covering)
            blockers.append(
                {
                    "pod": pod_key(pod),
                    "reason": f"covered by several PodDisruptionBudgets ({names}): the eviction API refuses it",
                    "pdb": covering[0].key,
                }
            )
        elif covering and covering[0].blocks:
            blockers.append({"pod": pod_key(pod), "reason": covering[0].describe(), "pdb": covering[0].key})
        if controller_of(pod) is None:
            warnings.append({"pod": pod_key(pod), "reason": "no controller: nothing recreates it"})
        if has_empty_dir(pod):
            warnings.append({"pod": pod_key(pod), "reason": "emptyDir volume: its data is lost"})
    return {"node": node, "evictable": len(pods), "blockers": blockers[:MAX_LISTED], "warnings": warnings[:MAX_LISTED]}
