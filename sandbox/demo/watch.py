"""What the demo watches while a roll runs: each node's phases (cordoned, drained, gone; launched, Ready) and
the Ready pods of the example workload against its PodDisruptionBudget (a violation is a sample below it).

A budget only limits evictions: it says nothing about a workload that has not come up yet. The watch is
therefore started once the workload's rollout is complete (:func:`wait_for_rollout`); from then on every
sample below the budget is a violation."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s


@dataclass
class NodePhases:
    """Monotonic times (seconds since the watch began) at which a node entered each phase; None: not seen."""

    name: str
    seen: float | None = None
    ready: float | None = None
    cordoned: float | None = None
    drained: float | None = None
    gone: float | None = None


@dataclass
class Workload:
    """The Ready pods of one label selector over time, against the minimum its budget allows."""

    namespace: str
    selector: str
    min_available: int
    samples: int = 0
    lowest: int | None = None
    violations: int = 0
    first_violation: float | None = None  # seconds since the watch began


@dataclass(eq=False)  # a Thread must stay hashable
class RollWatch(threading.Thread):
    """Polls Nodes and pods every `interval` seconds until stopped."""

    api: k8s.ApiClient
    workload: Workload
    interval: float = 0.1
    nodes: dict[str, NodePhases] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(daemon=True)
        self.core = k8s.CoreV1Api(self.api)
        self.started = time.monotonic()
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(self.interval):
            self.observe(time.monotonic() - self.started)

    def stop(self) -> None:
        """Stop polling (after one last observation)."""
        self._stopping.set()
        self.join()
        self.observe(time.monotonic() - self.started)

    def observe(self, now: float) -> None:
        """One sample of every Node's phase and of the workload's Ready pods."""
        nodes = self.core.list_node().items
        pods = self.core.list_pod_for_all_namespaces().items
        present = set()
        for node in nodes:
            name = node.metadata.name
            present.add(name)
            phases = self.nodes.setdefault(name, NodePhases(name, seen=now))
            if phases.ready is None and _ready(node):
                phases.ready = now
            if phases.cordoned is None and node.spec.unschedulable:
                phases.cordoned = now
            if phases.cordoned is not None and phases.drained is None and not _evictable_pods(pods, name):
                phases.drained = now
        for phases in self.nodes.values():
            if phases.name not in present and phases.gone is None:
                phases.gone = now
        self._count(pods, now)

    def _count(self, pods: list[Any], now: float) -> None:
        workload = self.workload
        ready = healthy_pods(pods, workload)
        workload.samples += 1
        workload.lowest = ready if workload.lowest is None else min(workload.lowest, ready)
        if ready < workload.min_available:
            workload.violations += 1
            if workload.first_violation is None:
                workload.first_violation = now


def healthy_pods(pods: list[Any], workload: Workload) -> int:
    """The workload's pods its budget counts healthy, as the disruption controller does: matching the selector,
    not terminating, Ready."""
    labels = dict(part.split("=", 1) for part in workload.selector.split(","))
    return sum(
        1
        for pod in pods
        if pod.metadata.namespace == workload.namespace
        and labels.items() <= (pod.metadata.labels or {}).items()
        and serving(pod)
    )


def serving(pod: Any) -> bool:
    """Ready and not terminating: what a PodDisruptionBudget counts healthy."""
    conditions = (pod.status.conditions or []) if pod.status else []
    return pod.metadata.deletion_timestamp is None and any(c.type == "Ready" and c.status == "True" for c in conditions)


def rolled_out(deployment: Any) -> bool:
    """Whether the Deployment's rollout is complete, as `kubectl rollout status` decides: its latest spec
    observed, every replica updated and available, no old replica left."""
    spec, status = deployment.spec, deployment.status
    replicas = spec.replicas if spec.replicas is not None else 1
    return (
        (status.observed_generation or 0) >= (deployment.metadata.generation or 0)
        and (status.updated_replicas or 0) >= replicas
        and (status.replicas or 0) <= (status.updated_replicas or 0)
        and (status.available_replicas or 0) >= (status.updated_replicas or 0)
    )


def wait_for_rollout(api: k8s.ApiClient, namespace: str, name: str, timeout: float, poll: float = 0.2) -> int:
    """Wait until the Deployment's rollout is complete; return its available replicas. TimeoutError names it."""
    apps = k8s.AppsV1Api(api)
    deadline = time.monotonic() + timeout
    while True:
        deployment = apps.read_namespaced_deployment(name, namespace)
        if rolled_out(deployment):
            return deployment.status.available_replicas or 0
        if time.monotonic() >= deadline:
            status = deployment.status
            raise TimeoutError(
                f"deployment {namespace}/{name}: {status.available_replicas or 0} of {deployment.spec.replicas} "
                f"replicas available after {timeout:.0f} s"
            )
        time.sleep(poll)


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def _evictable_pods(pods: list[Any], node: str) -> list[Any]:
    """Pods on the node a drain must remove (DaemonSet pods stay until the node goes)."""
    return [
        pod
        for pod in pods
        if pod.spec.node_name == node
        and not any(owner.kind == "DaemonSet" for owner in pod.metadata.owner_references or [])
        and pod.status.phase not in {"Succeeded", "Failed"}
    ]
