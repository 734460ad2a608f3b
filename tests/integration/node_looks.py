"""Looks at the Nodes while a roll runs: which are cordoned, tainted for replacement, and how they are labelled."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

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
