"""Looks at the Nodes while a roll runs: which are cordoned, tainted for replacement, and how they are labelled;
what a stuck roll waits on."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s


@dataclass(frozen=True)
class NodeLook:
    """A Node at one look: cordoned, and tainted for replacement (CLM's decommission taint); its lifecycle label."""

    unschedulable: bool
    tainted: bool
    lifecycle: str


class NodeLooks(threading.Thread):
    """Looks at the Nodes every 0.1 s from its start until stopped: node name -> NodeLook, at each look."""

    def __init__(self, kube_api: k8s.ApiClient):
        super().__init__(daemon=True)
        self.core, self.seen, self.stop = k8s.CoreV1Api(kube_api), [], threading.Event()
        self.start()

    def run(self) -> None:
        while not self.stop.is_set():
            self.seen.append({n.metadata.name: _look(n) for n in self.core.list_node().items})
            time.sleep(0.1)

    def stopped(self) -> list[dict[str, NodeLook]]:
        """Every look taken (stops looking)."""
        self.stop.set()
        self.join(timeout=5)
        return self.seen

    def of(self, node: str) -> list[bool]:
        """Whether `node` was unschedulable, at each look while it existed (stops looking)."""
        return [look[node].unschedulable for look in self.stopped() if node in look]


def _look(node: k8s.V1Node) -> NodeLook:
    tainted = any(t.key == "decommission-pending" for t in node.spec.taints or [])
    return NodeLook(bool(node.spec.unschedulable), tainted, (node.metadata.labels or {}).get("lifecycle-status", ""))


def ready(obj: k8s.V1Node | k8s.V1Pod) -> bool:
    """Whether a Node or a pod says it is Ready."""
    return any(c.type == "Ready" and c.status == "True" for c in obj.status.conditions or [])


def cluster_view(kube_api: k8s.ApiClient, autoscaling: Any) -> str:
    """What a stuck roll is waiting on, in a few lines: each Node (Ready, cordoned, lifecycle label, who drains it,
    taints), each pod of the example namespace (node, phase, Ready, deleting), each group (desired, instances)."""
    core = k8s.CoreV1Api(kube_api)
    lines = []
    for node in core.list_node().items:
        taints = ",".join(f"{t.key}:{t.effect}" for t in node.spec.taints or [])
        drained_by = (node.metadata.annotations or {}).get("clm/drained-by", "")
        label = (node.metadata.labels or {}).get("lifecycle-status", "")
        cordon = "cordoned" if node.spec.unschedulable else ""
        lines.append(f"node {node.metadata.name}: ready={ready(node)} {cordon} {label} by={drained_by} taints={taints}")
    for pod in core.list_namespaced_pod("example").items:
        deleting = " deleting" if pod.metadata.deletion_timestamp else ""
        lines.append(f"pod {pod.metadata.name}: {pod.spec.node_name} {pod.status.phase} ready={ready(pod)}{deleting}")
    for group in autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]:
        members = [(i["InstanceId"], i["LifecycleState"]) for i in group["Instances"]]
        lines.append(f"group {group['AutoScalingGroupName']}: desired={group['DesiredCapacity']} {members}")
    return "\n".join(lines)
