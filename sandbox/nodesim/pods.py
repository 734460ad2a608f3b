"""The pod half of the simulated kubelets: bound pods turn Running and Ready, deletions finish."""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from clm_sandbox.nodesim.kube import KubeletApi
from clm_sandbox.nodesim.model import (
    EventKind,
    bound_at,
    deletion_deadline,
    pod_ip,
    pod_is_ready,
    pod_ready_patch,
    pod_ref,
)
from clm_sandbox.nodesim.timers import TimerHeap

log = logging.getLogger(__name__)

RETRY_ATTEMPTS = 5
RETRY_BASE_SECONDS = 0.2
_FINISHED_PHASES = ("Succeeded", "Failed")

Recorder = Callable[[EventKind, str, str, float | None], None]  # (kind, subject, detail, at or None for now)
NodeLookup = Callable[[str], str | None]  # node name -> its host IP when it is one of ours and Ready-able
OrphanCheck = Callable[[str], bool]  # node name -> whether it is one of ours that was removed


@dataclass
class _Pod:
    node: str
    stage: str  # starting | ready | deleting
    deadline: float = 0.0  # monotonic, while deleting


class PodKeeper:
    """Reacts to the pod watch for the pods bound to the simulator's nodes.

    A bound pod becomes Running and Ready ``pod_ready_delay`` seconds after its binding; a pod
    with a deletionTimestamp is deleted for good grace period * ``time_scale`` seconds after the
    deletion request; a pod bound to a removed node is force-deleted. Actions run on the timer
    heap and are retried with backoff when they fail.
    """

    def __init__(
        self,
        kubelet: KubeletApi,
        timers: TimerHeap,
        record: Recorder,
        host_ip_of: NodeLookup,
        is_removed: OrphanCheck,
        *,
        pod_ready_delay: float,
        time_scale: float,
        label: str,
    ) -> None:
        self._kubelet = kubelet
        self._timers = timers
        self._record = record
        self._host_ip_of = host_ip_of
        self._is_removed = is_removed
        self._pod_ready_delay = pod_ready_delay
        self._time_scale = time_scale
        self._label = label
        self._lock = threading.Lock()
        self._pods: dict[str, _Pod] = {}  # uid ->
        self._pod_ips = itertools.count()

    def on_resync(self, pods: list[dict[str, Any]]) -> None:
        """Take a full list of bound pods: forget vanished ones, handle every listed one."""
        present = {pod["metadata"]["uid"] for pod in pods}
        with self._lock:
            vanished = [uid for uid in self._pods if uid not in present]
        for uid in vanished:
            self.forget(uid)
        for pod in pods:
            self.on_event("ADDED", pod)

    def on_event(self, kind: str, pod: dict[str, Any]) -> None:
        """Handle one watch event (ADDED, MODIFIED or DELETED) of a bound pod."""
        uid = pod["metadata"]["uid"]
        if kind == "DELETED":
            self.forget(uid)
            return
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if self._host_ip_of(node) is not None:
            self._track(uid, node, pod)
        elif self._is_removed(node):
            self._later(
                ("delete", uid), time.monotonic(), functools.partial(self._delete, pod, EventKind.POD_FORCE_DELETED)
            )

    def forget(self, uid: str) -> None:
        """Stop tracking a pod and drop its pending actions."""
        with self._lock:
            self._pods.pop(uid, None)
        self._timers.cancel(("ready", uid))
        self._timers.cancel(("delete", uid))

    def forget_node(self, node: str) -> None:
        """Stop tracking every pod of a removed node."""
        with self._lock:
            uids = [uid for uid, pod in self._pods.items() if pod.node == node]
        for uid in uids:
            self.forget(uid)

    def _track(self, uid: str, node: str, pod: dict[str, Any]) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._track_deletion(uid, node, pod)
        elif (pod.get("status") or {}).get("phase") not in _FINISHED_PHASES:
            self._track_start(uid, node, pod)

    def _track_deletion(self, uid: str, node: str, pod: dict[str, Any]) -> None:
        noticed, wall = time.monotonic(), time.time()
        at = noticed + deletion_deadline(pod, wall, self._time_scale) - wall
        with self._lock:
            tracked = self._pods.get(uid)
            if tracked is not None and tracked.stage == "deleting" and tracked.deadline <= at:
                return  # an earlier deadline is pending already
            self._pods[uid] = _Pod(node, "deleting", at)
        self._timers.cancel(("ready", uid))
        self._later(("delete", uid), at, functools.partial(self._delete, pod, EventKind.POD_DELETED))
        if tracked is None or tracked.stage != "deleting":
            grace = pod["metadata"].get("deletionGracePeriodSeconds")
            self._record(
                EventKind.POD_DELETION_SEEN, pod_ref(pod), f"grace {grace} s, due in {at - noticed:.2f} s", noticed
            )

    def _track_start(self, uid: str, node: str, pod: dict[str, Any]) -> None:
        ready = pod_is_ready(pod)  # e.g. running from before the simulator (re)started
        with self._lock:
            if uid in self._pods:
                return
            self._pods[uid] = _Pod(node, "ready" if ready else "starting")
        if ready:
            return
        noticed, wall = time.monotonic(), time.time()
        at = noticed + bound_at(pod, wall) + self._pod_ready_delay - wall
        self._later(("ready", uid), at, functools.partial(self._make_ready, pod))
        self._record(EventKind.POD_BOUND, pod_ref(pod), node, noticed)

    def _make_ready(self, pod: dict[str, Any]) -> None:
        uid, node = pod["metadata"]["uid"], pod["spec"]["nodeName"]
        with self._lock:
            tracked = self._pods.get(uid)
            if tracked is None or tracked.stage != "starting":
                return
        host_ip = self._host_ip_of(node)
        if host_ip is None:
            return
        patch = pod_ready_patch(pod, host_ip, pod_ip(next(self._pod_ips)), time.time())
        patching = time.monotonic()
        if not self._kubelet.patch_pod_status(pod["metadata"]["namespace"], pod["metadata"]["name"], patch):
            return
        with self._lock:
            if tracked.stage == "starting":
                tracked.stage = "ready"
        self._record(EventKind.POD_READY, pod_ref(pod), node, patching)

    def _delete(self, pod: dict[str, Any], kind: EventKind) -> None:
        """Delete the pod for good (grace 0, only while its uid matches) and record ``kind``."""
        meta, deleting = pod["metadata"], time.monotonic()
        if self._kubelet.delete_pod_now(meta["namespace"], meta["name"], meta["uid"]):
            self._record(kind, pod_ref(pod), pod["spec"]["nodeName"], deleting)

    def _later(self, key: Hashable, at: float, action: Callable[[], None], attempt: int = 1) -> None:
        """Schedule ``action``; when it raises, retry it with exponential backoff, then log and give up."""

        def run() -> None:
            try:
                action()
            except Exception as exc:
                if attempt >= RETRY_ATTEMPTS:
                    log.exception("%s: %s failed %d times; giving up", self._label, key, attempt)
                    return
                log.warning("%s: %s failed (%s); retrying", self._label, key, exc)
                self._later(key, time.monotonic() + RETRY_BASE_SECONDS * 2**attempt, action, attempt + 1)

        self._timers.schedule(key, at, run)
