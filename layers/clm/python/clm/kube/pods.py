"""Pods on a node as a drain sees them, with small composable filters like k8s.io/kubectl/pkg/drain.

A filter takes a pod and returns why the drain leaves it alone, or None. Pods no filter skips are
evicted, unless they are already terminating (then the drain waits for them to go).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clm.timestamps import parse_time

Pod = dict[str, Any]
PodFilter = Callable[[Pod], str | None]

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def pod_key(pod: Pod) -> str:
    """`namespace/name`."""
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def controller_of(pod: Pod) -> dict[str, Any] | None:
    """The owner reference marked as controller, if any."""
    return next((ref for ref in pod["metadata"].get("ownerReferences") or [] if ref.get("controller")), None)


def is_ready(pod: Pod) -> bool:
    """Whether the pod's Ready condition is True."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def created_at(pod: Pod) -> datetime:
    """metadata.creationTimestamp."""
    return parse_time(pod["metadata"]["creationTimestamp"])


def deletion_deadline(pod: Pod) -> datetime | None:
    """When a terminating pod's grace period ends (metadata.deletionTimestamp); None when not terminating."""
    stamp = pod["metadata"].get("deletionTimestamp")
    return parse_time(stamp) if stamp else None


def phase(pod: Pod) -> str:
    """status.phase ("" when unknown)."""
    return (pod.get("status") or {}).get("phase", "")


def has_empty_dir(pod: Pod) -> bool:
    """Whether the pod has an emptyDir volume (its data is lost on eviction)."""
    return any("emptyDir" in volume for volume in (pod.get("spec") or {}).get("volumes") or [])


def skip_mirror(pod: Pod) -> str | None:
    """Mirror pods (static pods of the kubelet) cannot be evicted through the API."""
    return "mirror pod" if MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {}) else None


def owned_by(pod: Pod, kind: str) -> bool:
    """Whether any owner reference of the pod is of `kind`."""
    return any(ref.get("kind") == kind for ref in pod["metadata"].get("ownerReferences") or [])


def skip_daemonset(pod: Pod) -> str | None:
    """DaemonSet pods would come straight back; they go with the node."""
    return "DaemonSet pod" if owned_by(pod, "DaemonSet") else None


def skip_finished(pod: Pod) -> str | None:
    """Succeeded and Failed pods hold no workload."""
    return f"finished ({phase(pod)})" if phase(pod) in ("Succeeded", "Failed") else None


DRAIN_FILTERS: tuple[PodFilter, ...] = (skip_mirror, skip_daemonset, skip_finished)


def skip_reason(pod: Pod, filters: Iterable[PodFilter] = DRAIN_FILTERS) -> str | None:
    """The first filter's reason to leave the pod alone, or None when it is to be drained."""
    return next((reason for reason in (f(pod) for f in filters) if reason), None)


@dataclass
class NodePods:
    """A node's pods sorted for a drain."""

    evictable: list[Pod] = field(default_factory=list)
    terminating: list[Pod] = field(default_factory=list)
    skipped: list[tuple[Pod, str]] = field(default_factory=list)


def sort_node_pods(pods: Sequence[Pod], filters: Iterable[PodFilter] = DRAIN_FILTERS) -> NodePods:
    """Split pods into skipped (with reason), terminating, and evictable."""
    filters = tuple(filters)
    result = NodePods()
    for pod in pods:
        reason = skip_reason(pod, filters)
        if reason:
            result.skipped.append((pod, reason))
        elif deletion_deadline(pod):
            result.terminating.append(pod)
        else:
            result.evictable.append(pod)
    return result
