"""The PodDisruptionBudget's side of the roll benchmark: the Ready web pods at every change while the roll runs.

A list-then-watch of the bound pods (the node simulator's PodWatcher), not sampling: every change of a web pod is
checked, and a count below the budget's minimum at any point is a violation. Listing hundreds of pods every few
hundred milliseconds would also load the machine the roll is timed on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from clm_sandbox.nodesim.watch import PodWatcher


def _ready(pod: dict[str, Any]) -> bool:
    """Ready and not terminating (a terminating pod no longer counts for the budget)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not pod["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions
    )


class ReadyWatch:
    """Follows the Ready pods of `namespace` with label `app`=`label`: `lowest` count seen, `changes` seen,
    `violations` (changes after which fewer than `minimum` were Ready) and the pods seen leaving each node
    (terminating or deleted: evicted, for a drain)."""

    def __init__(self, api_client: Any, minimum: int, namespace: str = "example", app: str = "web"):
        self.minimum, self.namespace, self.app = minimum, namespace, app
        self.changes = self.violations = 0
        self.lowest: int | None = None
        self.timeline: list[tuple[float, int]] = []  # (epoch, Ready pods) at each change of the count
        self._ready: dict[str, bool] = {}
        self._left: dict[str, set[str]] = {}  # node name -> pods seen leaving it
        self._lock = threading.Lock()
        self._synced = threading.Event()
        self._watcher = PodWatcher(api_client, self._on_event, self._on_resync)

    def start(self, timeout: float = 60.0) -> None:
        """Start watching; return once the first list is in."""
        self._watcher.start("roll-bench-ready-watch")
        if not self._synced.wait(timeout):
            raise TimeoutError(f"no list of the pods of {self.namespace} within {timeout:.0f} s")

    def stop(self) -> None:
        self._watcher.stop()

    def _mine(self, pod: dict[str, Any]) -> bool:
        meta = pod["metadata"]
        return meta.get("namespace") == self.namespace and (meta.get("labels") or {}).get("app") == self.app

    def _on_resync(self, pods: list[dict[str, Any]]) -> None:
        with self._lock:
            self._ready = {p["metadata"]["name"]: _ready(p) for p in pods if self._mine(p)}
            self._count()
        self._synced.set()

    def _on_event(self, kind: str, pod: dict[str, Any]) -> None:
        if not self._mine(pod):
            return
        with self._lock:
            if kind == "DELETED" or pod["metadata"].get("deletionTimestamp"):
                node = (pod.get("spec") or {}).get("nodeName") or ""
                self._left.setdefault(node, set()).add(pod["metadata"]["name"])
            if kind == "DELETED":
                self._ready.pop(pod["metadata"]["name"], None)
            else:
                self._ready[pod["metadata"]["name"]] = _ready(pod)
            self._count()

    def pods_left(self, nodes: list[str]) -> list[int]:
        """How many of the pods seen leaving each of `nodes` (in their order)."""
        with self._lock:
            return [len(self._left.get(node, ())) for node in nodes]

    def _count(self) -> None:
        ready = sum(self._ready.values())
        if not self.timeline or self.timeline[-1][1] != ready:
            self.timeline.append((time.time(), ready))
        self.changes += 1
        self.lowest = ready if self.lowest is None else min(self.lowest, ready)
        self.violations += ready < self.minimum


def budget_turns(
    timeline: Sequence[tuple[float, int]], full: int, windows: Sequence[tuple[float, float]]
) -> tuple[list[float], list[float]]:
    """Within `windows` (epochs): how long each dip below `full` Ready pods lasted (an eviction until its
    replacement is Ready), and each stretch at `full` that a dip ended (the budget allowing until the next eviction)."""
    dips: list[float] = []
    idles: list[float] = []
    dip_start = full_start = None
    for at, ready in timeline:
        if ready < full and dip_start is None:
            if full_start is not None and _within(windows, full_start, at):
                idles.append(at - full_start)
            dip_start, full_start = at, None
        elif ready >= full and dip_start is not None:
            if _within(windows, dip_start, at):
                dips.append(at - dip_start)
            dip_start, full_start = None, at
    return dips, idles


def _within(windows: Sequence[tuple[float, float]], start: float, end: float) -> bool:
    return any(low <= start and end <= high for low, high in windows)
