"""A blocked drain recorded on its Node (`drain_blocked: continue`): annotation `clm/drain-blocked`, JSON
`{since, until, pods: [{namespace, name, owner_kind, owner_name, budget, reason}]}`.

`since` is when the node was first set aside in this drain (kept while it stays blocked: one blocked spell per
drain), `until` when CLM comes back to it (shortly before the force rules allow). The planner reads `until`
(clm.rolling.observe); the pods name their controller, a ReplicaSet's walked to its Deployment.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clm.kube.client import MERGE_PATCH
from clm.kube.errors import KubeApiError
from clm.kube.nodes import node_path
from clm.kube.pods import Pod, controller_of, pod_key
from clm.timestamps import format_time, parse_time

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

log = logging.getLogger(__name__)

ANNOTATION = "clm/drain-blocked"


def blocked_record(node: dict[str, Any]) -> dict[str, Any] | None:
    """The blocked drain recorded on a Node object, or None (absent or unreadable)."""
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if not text:
        return None
    try:
        record = json.loads(text)
        parse_time(record["until"]), parse_time(record["since"])
    except (ValueError, TypeError, KeyError):
        log.warning("node %s: ignoring invalid %s", (node.get("metadata") or {}).get("name"), ANNOTATION)
        return None
    return record if isinstance(record, dict) else None


def blocked_until(node: dict[str, Any]) -> datetime | None:
    """When the roll comes back to a node set aside with a blocked drain; None when it is not set aside."""
    record = blocked_record(node)
    return parse_time(record["until"]) if record else None


def blocking_pods(kube: KubeClient, node: str, blocked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods a drain pass found blocked (`{pod, reason, pdb}`) with their namespace, name, controller (a
    ReplicaSet's Deployment: one GET per ReplicaSet) and budget."""
    listed = kube.request("GET", "/api/v1/pods", query={"fieldSelector": f"spec.nodeName={node}"})
    pods = {pod_key(pod): pod for pod in listed.get("items") or []}
    owners: dict[tuple[str, str], tuple[str, str]] = {}
    result = []
    for entry in blocked:
        namespace, _, name = str(entry.get("pod", "")).partition("/")
        pod = pods.get(entry.get("pod", ""))
        kind, owner = _owner(kube, pod, owners) if pod else ("", "")
        result.append(
            {
                "namespace": namespace,
                "name": name,
                "owner_kind": kind,
                "owner_name": owner,
                "budget": entry.get("pdb") or "",
                "reason": entry.get("reason") or "",
            }
        )
    return result


def _owner(kube: KubeClient, pod: Pod, known: dict[tuple[str, str], tuple[str, str]]) -> tuple[str, str]:
    """The pod's controller (kind, name), a ReplicaSet walked to its own controller; ("", "") without one."""
    ref = controller_of(pod)
    if ref is None:
        return "", ""
    kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
    if kind != "ReplicaSet":
        return kind, name
    namespace = pod["metadata"].get("namespace", "")
    if (namespace, name) not in known:
        try:
            replica_set = kube.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets/{name}")
        except KubeApiError as exc:  # not allowed, or a passing failure: the ReplicaSet names the pod's owner
            log.warning("ReplicaSet %s/%s not read: %s %s", namespace, name, exc.status, exc.reason)
            replica_set = None
        above = controller_of(replica_set) if replica_set else None
        known[namespace, name] = (str(above["kind"]), str(above["name"])) if above else (kind, name)
    return known[namespace, name]


def record_blocked(
    kube: KubeClient,
    node: str,
    pods: list[dict[str, Any]],
    now: datetime,
    until: datetime,
    spell_starts: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Record the node's blocked drain, keeping `since` of one already recorded; when none was (the blocked spell
    starts), call `spell_starts(record)` first, so that a failure there leaves it unrecorded (and the caller's
    retry calls it again). Returns the record (nothing is recorded on a node that is gone)."""
    current = kube.get(node_path(node))
    earlier = blocked_record(current) if current else None
    record = {"since": earlier["since"] if earlier else format_time(now), "until": format_time(until), "pods": pods}
    if current is None:
        return record
    if earlier is None:
        spell_starts(record)
    patch = {"metadata": {"annotations": {ANNOTATION: json.dumps(record, separators=(",", ":"))}}}
    try:
        kube.request("PATCH", node_path(node), body=patch, content_type=MERGE_PATCH)
    except KubeApiError as exc:
        if exc.status != 404:  # gone meanwhile: nothing left to record
            raise
    return record
