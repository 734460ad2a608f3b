"""The budgets of a batch's drain pass, kept current by one watch: each disruption a budget allows is seen at once.

A pass listed the budgets again after each eviction and opened a watch for each wait; the follower lists them
once and watches them for the whole pass. A budget the pass evicted a Ready pod through allows nothing until its
status shows that eviction (the server's own decrement lists the pod in `disruptedPods`), so no eviction goes out
on a count from before it (docs/workflows.md, "A batch drains together").
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from clm.kube.budgets import Budget, list_budgets
from clm.kube.errors import KubeError

if TYPE_CHECKING:
    from clm.kube.client import KubeClient, WatchStream
    from clm.kube.drain_observation import PassClock

log = logging.getLogger(__name__)

MAX_IDLE_WATCHES = 3  # watches in a row that ended with no event: the server will not keep one open


class BudgetFollower:
    """Every PDB as a listing and then one watch keep it, from `start` to `stop` (within `seconds`)."""

    def __init__(self, kube: KubeClient, listing: tuple[list[Budget], str], clock: PassClock, seconds: float):
        self.kube, self.clock, self.seconds = kube, clock, seconds
        self._resource = kube.discovery.pdb_resource()
        self._lock = threading.Condition()
        self._budgets, self._version = {b.key: b for b in listing[0]}, listing[1]
        self._spent: dict[str, set[str]] = {}  # budget -> Ready pods evicted through it, not yet in its status
        self._refusing: set[str] = set()  # budgets that refused an eviction since they last changed
        self._wakes: list[tuple[set[str], queue.Queue[str]]] = []
        self._stream: WatchStream | None = None
        self._stopped = False
        self.broken = False  # the watch cannot be kept: every listing() lists
        self._thread = threading.Thread(target=self._follow, daemon=True, name="budget follower")

    def start(self) -> BudgetFollower:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
        self._thread.join(1.0)

    def listing(self) -> tuple[list[Budget], str]:
        """The budgets as last seen (a budget spent by this pass's eviction allowing none), and their version."""
        if self.broken:
            self._relist()
        with self._lock:
            return [self._seen(budget) for budget in self._budgets.values()], self._version

    def evicting(self, pod: dict[str, Any], budgets: Sequence[Budget]) -> None:
        """`pod` is about to be evicted through `budgets` (called before the request, so that the watch cannot show
        the eviction first): a Ready pod's eviction is a decrement their status will show."""
        if not _ready(pod):  # the server evicts an unready pod without a decrement (or refuses it)
            return
        with self._lock:
            for budget in budgets:
                self._spent.setdefault(budget.key, set()).add(pod["metadata"]["name"])

    def refused(self, pod: dict[str, Any], budget: str | None) -> None:
        """`pod`'s eviction failed: no decrement; `budget` refused it (something else took its disruption), so it
        allows nothing until it changes again."""
        with self._lock:
            for spent in self._spent.values():
                spent.discard(pod["metadata"]["name"])
            if budget:
                self._refusing.add(budget)

    @contextlib.contextmanager
    def waking(self, blocking: set[str], wake: queue.Queue[str]) -> Iterator[None]:
        """While inside, `wake` gets a message once one of `blocking` allows a disruption (at once if one does)."""
        entry = (blocking, wake)
        with self._lock:
            self._wakes.append(entry)
            self._notify()
        try:
            yield
        finally:
            with self._lock:
                self._wakes.remove(entry)

    def _seen(self, budget: Budget) -> Budget:
        """As its status will show once the server counted the eviction in flight: settling, allowing none."""
        if not (self._spent.get(budget.key) or budget.key in self._refusing):
            return budget
        return replace(budget, disruptions_allowed=0, disrupted_pods=max(budget.disrupted_pods, 1))

    def _notify(self) -> None:
        allowing = {key for key, b in self._budgets.items() if self._seen(b).disruptions_allowed > 0}
        for blocking, wake in self._wakes:
            if blocking & allowing:
                wake.put(f"budget {sorted(blocking & allowing)[0]} allows a disruption")

    def _follow(self) -> None:
        """Watch until stopped; a watch that cannot be kept (or an object it cannot read) leaves listing per round."""
        try:
            self._watch_until_stopped()
        except Exception:  # a thread of its own: nothing above it would see the error
            log.exception("following the budgets failed, listing them for each round")
        self.broken = True

    def _watch_until_stopped(self) -> None:
        idle = 0
        while idle < MAX_IDLE_WATCHES:
            with self._lock:
                if self._stopped:
                    return
                version = self._version
            try:
                stream = self.kube.watch(self._resource.path(), {"resourceVersion": version}, self.seconds)
            except KubeError as exc:
                log.warning("cannot watch the budgets, listing them for each round: %s", exc.message)
                break
            with self._lock:
                self._stream = stream
                if self._stopped:
                    stream.close()
                    return
            idle = 0 if self._apply_all(stream) else idle + 1
            self._relist()

    def _apply_all(self, stream: WatchStream) -> bool:
        """Apply the stream's events until it ends; whether any came."""
        came = False
        for event in stream.events():
            kind, pdb = event.get("type", ""), event.get("object") or {}
            if kind == "ERROR":
                return came
            came = True
            with self._lock:
                self._apply(kind, pdb)
        return came

    def _apply(self, kind: str, pdb: dict[str, Any]) -> None:
        self._version = str(pdb.get("metadata", {}).get("resourceVersion") or self._version)
        if kind == "BOOKMARK":
            return
        budget = Budget.from_object(pdb, self._resource.api_version, self.clock.now())
        if kind == "DELETED":
            self._budgets.pop(budget.key, None)
            self._spent.pop(budget.key, None)
            self._refusing.discard(budget.key)
            return
        self._budgets[budget.key] = budget
        self._refusing.discard(budget.key)
        shown = set((pdb.get("status") or {}).get("disruptedPods") or {})
        if self._spent.get(budget.key):
            self._spent[budget.key] -= shown
        self._notify()

    def _relist(self) -> None:
        """List again (after a watch ended, or for each round without one): a listing shows every eviction made
        before it, not those made while it was made."""
        with self._lock:
            if self._stopped:
                return
            before = {key: set(pods) for key, pods in self._spent.items()}
        try:
            budgets, version = list_budgets(self.kube, now=self.clock.now())
        except KubeError as exc:
            log.warning("cannot list the budgets again: %s", exc.message)
            return
        with self._lock:
            self._budgets, self._version, self._refusing = {b.key: b for b in budgets}, version, set()
            for key, pods in before.items():
                self._spent.get(key, set()).difference_update(pods)
            self._notify()


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
