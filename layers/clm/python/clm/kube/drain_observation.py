"""What a drain pass sees: its clock, and a node's pods with the budgets, listed together."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from clm.kube.budgets import Budget, list_budgets
from clm.kube.pods import NodePods, Pod, deletion_deadline, sort_node_pods
from clm.timestamps import utc_now

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

# A pod still terminating this long after its grace period ended is left behind (CLM's podEvictionHeadroom).
TERMINATION_HEADROOM = 30.0


class PassClock:
    """Wall time that starts at the caller's `now` and advances with the monotonic clock."""

    def __init__(self, now: datetime | None):
        self.start = now or utc_now()
        self.started = time.monotonic()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=time.monotonic() - self.started)


@dataclass
class Observation:
    """A node's pods and the budgets, listed together."""

    pods: NodePods
    pods_version: str
    budgets: list[Budget]
    budgets_version: str
    at: datetime
    waiting_for: list[Pod] = field(default_factory=list)  # terminating, within their grace period + headroom
    overdue: list[Pod] = field(default_factory=list)  # terminating past that: left behind


def observe(kube: KubeClient, node: str, clock: PassClock, pool: ThreadPoolExecutor) -> Observation:
    """The node's pods and every budget, listed together."""
    budgets = pool.submit(list_budgets, kube, now=clock.now())
    return observe_pods(kube, node, clock, budgets.result)


def observe_pods(
    kube: KubeClient, node: str, clock: PassClock, budgets: Callable[[], tuple[list[Budget], str]]
) -> Observation:
    """The node's pods, with the budgets `budgets()` gives once the pods are listed (a listing made meanwhile)."""
    at = clock.now()
    listed = kube.request("GET", "/api/v1/pods", query={"fieldSelector": f"spec.nodeName={node}"})
    observation = Observation(
        sort_node_pods(listed.get("items") or []),
        listed.get("metadata", {}).get("resourceVersion", ""),
        *budgets(),
        at,
    )
    cutoff = clock.now() - timedelta(seconds=TERMINATION_HEADROOM)
    for pod in observation.pods.terminating:
        end = deletion_deadline(pod)
        (observation.overdue if end and end < cutoff else observation.waiting_for).append(pod)
    return observation
