"""What a cluster's API says of its health, for a rollout's health gate: nodes not Ready and workloads not available,
each a short sentence (docs/rollouts.md: health gates)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

LIST_LIMIT = 500
KINDS = {"deployment": "Deployment", "statefulset": "StatefulSet", "daemonset": "DaemonSet"}  # as policies name them


def findings(kube: KubeClient, namespaces: Sequence[str], workloads: Sequence[str]) -> list[str]:
    """Why the cluster is not healthy (empty: it is): every node not Ready, every Deployment, StatefulSet and
    DaemonSet of `namespaces` not available, and each of `workloads` (`namespace/kind/name`) missing or not."""
    found = [f"node {_name(node)} not Ready{_why(node)}" for node in _items(kube, "/api/v1/nodes") if not _ready(node)]
    for namespace in namespaces:
        for kind in KINDS:
            for workload in _items(kube, f"/apis/apps/v1/namespaces/{namespace}/{kind}s"):
                found += _unavailable(kind, workload)
    for named in workloads:
        namespace, kind, name = named.split("/")
        workload = kube.get(f"/apis/apps/v1/namespaces/{namespace}/{kind}s/{name}")
        found += [f"{named} not found"] if workload is None else _unavailable(kind, workload)
    return found


def _items(kube: KubeClient, path: str) -> Iterator[dict[str, Any]]:
    """The objects a list path holds, page by page."""
    query: dict[str, Any] = {"limit": LIST_LIMIT}
    while True:
        page = kube.get(path, query) or {}
        yield from page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return
        query = {"limit": LIST_LIMIT, "continue": token}


def _name(item: dict[str, Any]) -> str:
    return str((item.get("metadata") or {}).get("name", "?"))


def _ready_condition(node: dict[str, Any]) -> dict[str, Any]:
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Ready"), {})


def _ready(node: dict[str, Any]) -> bool:
    return _ready_condition(node).get("status") == "True"


def _why(node: dict[str, Any]) -> str:
    reason = _ready_condition(node).get("reason")
    return f" ({str(reason)[:80]})" if reason else ""


def _unavailable(kind: str, workload: dict[str, Any]) -> list[str]:
    """One sentence when the workload has not rolled out its current spec to as many available pods as it wants."""
    metadata, spec, status = workload.get("metadata") or {}, workload.get("spec") or {}, workload.get("status") or {}
    label = f"{KINDS[kind]} {metadata.get('namespace', '?')}/{metadata.get('name', '?')}"
    if int(status.get("observedGeneration") or 0) < int(metadata.get("generation") or 0):
        return [f"{label}: its controller has not seen its latest spec"]
    if kind == "daemonset":
        wanted = int(status.get("desiredNumberScheduled") or 0)
        ready, updated = int(status.get("numberAvailable") or 0), int(status.get("updatedNumberScheduled") or 0)
    else:
        wanted = int(spec.get("replicas", 1))
        ready = int(status.get("availableReplicas" if kind == "deployment" else "readyReplicas") or 0)
        updated = int(status.get("updatedReplicas") or 0)
    if (spec.get("updateStrategy") or {}).get("type") == "OnDelete":  # pods are updated only when someone deletes them
        updated = wanted
    if ready >= wanted and updated >= wanted:
        return []
    return [f"{label}: {min(ready, updated)} of {wanted} pods updated and available"]
