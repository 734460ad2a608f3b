"""Pure parts of the node simulator: the Node an instance becomes, pod status patches, deadlines.

Nothing here talks to AWS or Kubernetes; every function takes plain data (API dicts, times) and
returns plain data, so it is unit-tested without a cluster.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
KUBELET_VERSION = "v1.20.2"
CAPACITY = {"cpu": "2", "memory": "8Gi", "pods": "110"}
_PRESSURE_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory"),
    ("DiskPressure", "KubeletHasNoDiskPressure"),
    ("PIDPressure", "KubeletHasSufficientPID"),
)
_POD_CONDITIONS = ("Initialized", "ContainersReady", "Ready")


class EventKind(StrEnum):
    """What the simulator did, as recorded in :attr:`NodeSimulator.events`."""

    INSTANCE_SEEN = "instance-seen"  # subject: instance id
    BOOTSTRAP_FAILED = "bootstrap-failed"  # subject: instance id; detail: why (it never joins)
    NODE_REGISTERED = "node-registered"  # subject: node name (Ready=False, tainted not-ready)
    NODE_READY = "node-ready"  # Ready=True and the not-ready taint removed: schedulable
    NODE_DELETED = "node-deleted"  # its instance terminated or left the group
    POD_BOUND = "pod-bound"  # subject: namespace/name; seen bound to one of our nodes
    POD_READY = "pod-ready"  # Running and Ready
    POD_DELETION_SEEN = "pod-deletion-seen"  # a deletionTimestamp appeared
    POD_DELETED = "pod-deleted"  # graceful deletion finished (deleted with grace 0)
    POD_FORCE_DELETED = "pod-force-deleted"  # its node went away (what podgc does)


@dataclass(frozen=True)
class SimEvent:
    """One entry of the simulator's timeline.

    ``at`` is ``time.monotonic()``: for what the simulator observed, when it noticed; for what it
    did, just before the API write that did it, so no effect of it is seen before ``at``.
    """

    at: float
    kind: EventKind
    subject: str
    detail: str = ""


@dataclass(frozen=True)
class Instance:
    """A running EC2 instance of one of the cluster's auto scaling groups (or one Karpenter launched)."""

    instance_id: str
    node_name: str  # the private DNS name
    private_ip: str
    zone: str
    region: str
    instance_type: str
    asg: str
    pool: str  # ASG tag kubernetes.io/node-pool
    profile: str  # ASG tag kubernetes.io/node-pool/profile
    launched_at: float  # wall-clock seconds, as EC2 reports it (whole seconds)
    labels: tuple[tuple[str, str], ...] = ()  # more Node labels (a Karpenter NodeClaim's)
    taints: tuple[tuple[str, str, str], ...] = ()  # Node taints: key, value, effect

    @property
    def provider_id(self) -> str:
        """``aws:///<az>/<instance-id>``, as the AWS cloud provider sets it."""
        return f"aws:///{self.zone}/{self.instance_id}"


def k8s_time(wall: float) -> str:
    """A wall-clock time in Kubernetes' RFC 3339 form (whole seconds, UTC)."""
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_k8s_time(text: str) -> float:
    """Wall-clock seconds of a Kubernetes timestamp such as ``2021-01-13T13:44:05Z``."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def started_at(reported: float, noticed: float) -> float:
    """Best estimate of when something happened that the API reports at `reported` and we noticed at `noticed`.

    A time with a fraction of a second is exact (the sandbox's EC2: clm_sandbox.patches.ec2_timestamps). A whole
    second may be truncated (EC2's LaunchTime, Kubernetes' timestamps): the true time lies in ``[reported,
    reported + 1)`` and is not after ``noticed``: take ``noticed`` clamped into that second, so a prompt observer
    is exact and a late one (e.g. after a restart) is at most a second late, never early.
    """
    if reported % 1:
        return reported
    return min(max(noticed, reported), reported + 1.0)


def node_labels(instance: Instance) -> dict[str, str]:
    """The labels a kubelet (plus CLM's node-pool conventions, and Karpenter's for its nodes) puts on the Node."""
    labels = {
        "kubernetes.io/hostname": instance.node_name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": instance.instance_type,
        "topology.kubernetes.io/zone": instance.zone,
        "topology.kubernetes.io/region": instance.region,
        "node.kubernetes.io/node-pool": instance.pool,
        "node.kubernetes.io/profile": instance.profile,
        "lifecycle-status": "ready",
    }
    if not instance.profile:  # launched by Karpenter: the NodeClaim's labels say the rest
        del labels["node.kubernetes.io/node-pool"], labels["node.kubernetes.io/profile"]
    return labels | dict(instance.labels)


def node_manifest(instance: Instance, wall: float) -> dict[str, Any]:
    """The Node a kubelet registers for ``instance``: labelled, with capacity (and taints), not Ready yet."""
    spec: dict[str, Any] = {"providerID": instance.provider_id}
    if instance.taints:
        spec["taints"] = [{"key": key, "value": value, "effect": effect} for key, value, effect in instance.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": instance.node_name, "labels": node_labels(instance)},
        "spec": spec,
        "status": node_status(instance, wall, ready=False),
    }


def node_conditions(wall: float, *, ready: bool) -> list[dict[str, Any]]:
    """Ready (True or False) and the pressure conditions (all False), heartbeat at ``wall``."""
    now = k8s_time(wall)
    conditions = [
        {"type": kind, "status": "False", "reason": reason, "lastHeartbeatTime": now, "lastTransitionTime": now}
        for kind, reason in _PRESSURE_CONDITIONS
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if ready else "container runtime is starting",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    )
    return conditions


def node_status(instance: Instance, wall: float, *, ready: bool) -> dict[str, Any]:
    """The whole Node status a kubelet posts: capacity, addresses, conditions, node info."""
    return {
        "capacity": dict(CAPACITY),
        "allocatable": dict(CAPACITY),
        "addresses": [
            {"type": "InternalIP", "address": instance.private_ip},
            {"type": "Hostname", "address": instance.node_name},
            {"type": "InternalDNS", "address": instance.node_name},
        ],
        "conditions": node_conditions(wall, ready=ready),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": _digest(instance.instance_id, "machine")[:32],
            "systemUUID": _digest(instance.instance_id, "uuid")[:32],
            "bootID": _digest(instance.instance_id, "boot")[:32],
            "kernelVersion": "5.10.0-sandbox",
            "osImage": "clm sandbox (simulated kubelet)",
            "containerRuntimeVersion": "containerd://1.4.13",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def heartbeat_patch(wall: float) -> dict[str, Any]:
    """A status patch renewing every condition's heartbeat (conditions merge by type)."""
    return {
        "status": {
            "conditions": [
                {"type": c["type"], "status": c["status"], "lastHeartbeatTime": c["lastHeartbeatTime"]}
                for c in node_conditions(wall, ready=True)
            ]
        }
    }


def without_taint(taints: list[dict[str, Any]] | None, key: str) -> list[dict[str, Any]] | None:
    """``taints`` minus every taint with ``key``; None when there is nothing to remove."""
    taints = taints or []
    kept = [t for t in taints if t.get("key") != key]
    return kept if len(kept) != len(taints) else None


def pod_ref(pod: dict[str, Any]) -> str:
    """``namespace/name`` of a pod dict."""
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def pod_is_ready(pod: dict[str, Any]) -> bool:
    """Whether the pod is Running with a Ready=True condition."""
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return status.get("phase") == "Running" and ready


def pod_ready_patch(pod: dict[str, Any], host_ip: str, pod_ip: str, wall: float) -> dict[str, Any]:
    """The status patch that makes a bound pod Running and Ready, as a kubelet reports it.

    It carries the pod's uid so that it cannot land on a newer pod of the same name.
    """
    now = k8s_time(wall)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    uid = pod["metadata"]["uid"]
    have = {c.get("type") for c in status.get("conditions") or []}
    kinds = _POD_CONDITIONS if "PodScheduled" in have else ("PodScheduled", *_POD_CONDITIONS)
    conditions = [{"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now} for kind in kinds]
    containers = [
        {
            **_container_identity(uid, container),
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": now}},
            "lastState": {},
        }
        for container in spec.get("containers") or []
    ]
    init_containers = [
        {
            **_container_identity(uid, container),
            "ready": True,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}},
            "lastState": {},
        }
        for container in spec.get("initContainers") or []
    ]
    new_status: dict[str, Any] = {
        "phase": "Running",
        "hostIP": host_ip,
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": status.get("startTime") or now,
        "conditions": conditions,
        "containerStatuses": containers,
    }
    if init_containers:
        new_status["initContainerStatuses"] = init_containers
    return {"metadata": {"uid": uid}, "status": new_status}


def bound_at(pod: dict[str, Any], noticed: float) -> float:
    """Wall-clock time the pod was bound to its node (PodScheduled), estimated with :func:`started_at`."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("lastTransitionTime"):
            return started_at(parse_k8s_time(condition["lastTransitionTime"]), noticed)
    return noticed


def deletion_deadline(pod: dict[str, Any], noticed: float, time_scale: float) -> float:
    """Wall-clock time a gracefully deleted pod is to be gone: request time + grace * ``time_scale``.

    The API server sets ``deletionTimestamp`` = request time + grace period (in whole seconds);
    the request time is recovered from it, not from when the deletion was ``noticed``.
    """
    meta = pod["metadata"]
    grace = float(meta.get("deletionGracePeriodSeconds") or 0)
    requested = started_at(parse_k8s_time(meta["deletionTimestamp"]) - grace, noticed)
    return requested + grace * time_scale


def pod_ip(index: int) -> str:
    """The ``index``-th pod IP of a simulator, from 100.64.0.0/10 (shared address space)."""
    value = (100 << 24) + (64 << 16) + 1 + index % ((1 << 22) - 2)
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def _container_identity(uid: str, container: dict[str, Any]) -> dict[str, str]:
    image = container.get("image") or ""
    return {
        "name": container["name"],
        "image": image,
        "imageID": f"{image}@sha256:{_digest(image, 'image')}",
        "containerID": f"containerd://{_digest(uid, container['name'])}",
    }


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
