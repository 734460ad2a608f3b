"""The PodDisruptionBudget's side of the roll benchmark: the Ready web pods at every change while the roll runs.

A list-then-watch of the bound pods (the node simulator's PodWatcher), not sampling: every change of a web pod is
checked, and a count below the budget's minimum at any point is a violation. Listing hundreds of pods every few
hundred milliseconds would also load the machine the roll is timed on.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

from clm.kube.client import KubeClient
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
    dips, idles = _turns(timeline, full, windows)
    return dips, [end - start for start, end in idles]


def idle_shares(
    timeline: Sequence[tuple[float, int]],
    full: int,
    windows: Sequence[tuple[float, float]],
    allowing: Sequence[float],
) -> tuple[list[float], list[float]]:
    """Each stretch at `full` (as `budget_turns`) split where the budget's status turned allowing (`allowing`:
    epochs, BudgetWatch): the disruption controller's share (the pod Ready until the status allows; 0 when the
    status was seen first) and CLM's (the status allowing until the eviction). A stretch with no such turn within
    it (less `SEEN_EARLY`) is left out."""
    controller: list[float] = []
    clm: list[float] = []
    for start, end in _turns(timeline, full, windows)[1]:
        turned = next((at for at in allowing if start - SEEN_EARLY <= at <= end), None)
        if turned is not None:
            controller.append(max(turned - start, 0.0))
            clm.append(end - max(turned, start))
    return controller, clm


# Both watches deliver from one API server, each at its own pace: a status seen up to this much before the pod's
# Ready belongs to this stretch (the one before turned at least a pod-ready earlier, before its own eviction).
SEEN_EARLY = 0.2


def _turns(
    timeline: Sequence[tuple[float, int]], full: int, windows: Sequence[tuple[float, float]]
) -> tuple[list[float], list[tuple[float, float]]]:
    dips: list[float] = []
    idles: list[tuple[float, float]] = []
    dip_start = full_start = None
    for at, ready in timeline:
        if ready < full and dip_start is None:
            if full_start is not None and _within(windows, full_start, at):
                idles.append((full_start, at))
            dip_start, full_start = at, None
        elif ready >= full and dip_start is not None:
            if _within(windows, dip_start, at):
                dips.append(at - dip_start)
            dip_start, full_start = None, at
    return dips, idles


def _within(windows: Sequence[tuple[float, float]], start: float, end: float) -> bool:
    return any(low <= start and end <= high for low, high in windows)


class BudgetWatch:
    """Follows the PodDisruptionBudgets of `namespace` (the bench has one): `allowing`, the epochs at which their
    status turned from allowing no disruption to allowing some (the disruption controller's turn of the budget)."""

    def __init__(self, api_client: Any, namespace: str = "example", seconds: float = 60.0):
        self.allowing: list[float] = []
        self._kube = KubeClient.from_api_client(api_client)
        self._path = self._kube.discovery.pdb_resource().path(namespace)
        self._seconds = seconds
        self._allowed: int | None = None
        self._budgets: dict[str, dict[str, Any]] = {}  # by name, as last seen
        self._stream: Any = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="roll-bench-budget-watch", daemon=True)

    def start(self) -> None:
        """List the budgets, then follow them on a thread."""
        self._version = self._list()
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(timeout=10)

    def _list(self) -> str:
        listed = self._kube.get(self._path) or {}
        self._budgets = {item["metadata"]["name"]: item for item in listed.get("items") or []}
        self._seen()
        return str((listed.get("metadata") or {}).get("resourceVersion", ""))

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._stream = self._kube.watch(self._path, {"resourceVersion": self._version}, self._seconds)
                for event in self._stream.events():
                    item = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise RuntimeError(item.get("message", "watch error"))
                    self._version = item["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._budgets[item["metadata"]["name"]] = item
                    elif event["type"] == "DELETED":
                        self._budgets.pop(item["metadata"]["name"], None)
                    self._seen()
            except (
                Exception
            ):  # an expired version or a failed watch: list again (a failed list: later), unless stopping
                if self._stopping.wait(0.5):
                    return
                with contextlib.suppress(Exception):
                    self._version = self._list()

    def _seen(self) -> None:
        allowed = sum(int((b.get("status") or {}).get("disruptionsAllowed") or 0) for b in self._budgets.values())
        if self._allowed == 0 and allowed > 0:
            self.allowing.append(time.time())
        self._allowed = allowed
