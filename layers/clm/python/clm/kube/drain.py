"""One bounded, reentrant drain pass over a node, for a Step Functions loop with Wait states between passes.

A pass cordons the node, evicts what the budgets allow, force-deletes what CLM's force rules allow, watches for
what is expected within WATCH_HORIZON and otherwise returns `wait_seconds` (and `park` when only budgets that will
not change on their own block it): docs/workflows.md, "A drain pass", says when and why.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from clm.kube.budgets import Allowance, Budget, budgets_for
from clm.kube.drain_observation import Observation, PassClock, observe
from clm.kube.errors import NodeNotFound
from clm.kube.eviction import BLOCKED, EVICTED, EvictionOutcome, delete_pod, evict
from clm.kube.force_rules import force_decision, siblings_of
from clm.kube.nodes import DrainClock, cordon, record_forced_deletion, record_progress
from clm.kube.pods import Pod, deletion_deadline, phase, pod_key
from clm.kube.waiting import WatchSpec, wait_for_event
from clm.timestamps import format_time

if TYPE_CHECKING:
    from clm.kube.budget_follower import BudgetFollower
    from clm.kube.client import KubeClient
    from clm.kube.settings import DrainSettings

PASS_BUDGET = 5.0
PASS_LIMIT = 60.0  # a pass that keeps evicting goes on this long at most (docs/workflows.md, "A drain pass")
# deletionTimestamp has whole seconds: a pod's grace period ends within a second after it.
STAMP_PRECISION = 1.0
# Waits for a pod past its grace period grow with how late it is, up to this.
MAX_OVERDUE_WAIT = 5.0
# A kubelet reports a pod gone about this long after its grace period ended, at most (else it is overdue).
KUBELET_SLACK = 1.0
SETTLING_WAIT = 1  # seconds
# A pass watches for what it expects within this many seconds; a longer wait is the workflow's Wait state,
# ending LEAD seconds before the expected moment (whole seconds, rounded down).
WATCH_HORIZON = 1.5
LEAD = 0.5
MAX_LISTED = 20
EVICTION_WORKERS = 8


@dataclass
class _Blocked:
    pod: Pod
    reason: str
    pdb: str | None
    settling: bool
    by_budget: bool = True
    force_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pod": pod_key(self.pod), "reason": self.reason, "pdb": self.pdb}


def _listed(keys: Sequence[str]) -> list[str]:
    return list(keys[:MAX_LISTED])


def _ahead_of(seconds: float) -> int:
    """A Wait (whole seconds, at least 1) that ends about LEAD seconds before something `seconds` away."""
    return max(1, math.floor(seconds - LEAD))


class NodeDrainer:
    """The drain of one node within a pass: evicts, forces, and says when to act again and what to watch."""

    def __init__(
        self,
        kube: KubeClient,
        node: str,
        settings: DrainSettings,
        clock: PassClock,
        drain: DrainClock,
        deadline: float,
        pool: ThreadPoolExecutor,
        eviction_version: str,
        seen: Mapping[str, str],
    ):
        self.kube, self.node, self.settings, self.clock, self.deadline = kube, node, settings, clock, deadline
        self.drain_start, self.last_forced = drain.drain_start, drain.last_forced
        self.progress_at = drain.last_progress or drain.drain_start
        self.progressed = False  # in this pass: then recorded on the node when the pass ends
        self.pool, self.eviction_version = pool, eviction_version
        self.evicted: list[str] = []
        self.refused = 0  # evictions the server refused (429: a budget; another drain took its disruption)
        self.forced: list[str] = []
        self.blocked: list[_Blocked] = []
        self.evicted_at: dict[str, datetime] = {}  # uid -> when this pass evicted it
        self.settle_watch_ends: float | None = None  # monotonic end of the watch on a settling budget
        self.seen = seen  # blocking budget -> its resourceVersion, as the previous pass saw it
        self.versions: dict[str, str] = {}  # the same, as this pass last saw it
        self.extension, self.limit = 0.0, deadline  # how far an eviction moves the deadline, and never past when
        self.follower: BudgetFollower | None = None  # told of each eviction (a batch's pass)

    def observe(self) -> Observation:
        return observe(self.kube, self.node, self.clock, self.pool)

    def evict(self, observation: Observation, allowance: Allowance) -> bool:
        """Evict every pod the budgets let go, as `allowance` counts what they allow (taking from it); remember the
        blocked ones. True if any went."""
        self.blocked, candidates = [], []
        self.versions = {b.key: b.version for b in observation.budgets}
        for pod in observation.pods.evictable:
            covering = budgets_for(pod, observation.budgets)
            refusing = [b for b in covering if allowance.refuses(b)]
            pending = phase(pod) == "Pending"  # the server evicts pending pods regardless of budgets
            if refusing and not pending:
                self.blocked.append(
                    _Blocked(pod, allowance.describe(refusing[0]), refusing[0].key, any(b.settling for b in refusing))
                )
                continue
            if not pending:
                allowance.take(covering)
            candidates.append(pod)
            if self.follower is not None:  # before the request: the watch may show the eviction before its answer
                self.follower.evicting(pod, covering)
        outcomes = self._evict_all(candidates)
        evicted_at = self.clock.now()
        for pod, outcome in zip(candidates, outcomes, strict=True):
            if outcome.result == EVICTED:
                self.evicted.append(outcome.pod)
                self.evicted_at[pod["metadata"].get("uid", "")] = evicted_at
                continue
            blocked = self._blocked_by_server(pod, outcome, observation.budgets) if outcome.result == BLOCKED else None
            if self.follower is not None:
                self.follower.refused(pod, blocked.pdb if blocked else None)
            if blocked is not None:
                self.refused += 1
                self.blocked.append(blocked)
        return any(o.result == EVICTED for o in outcomes)

    def _evict_all(self, pods: list[Pod]) -> list[EvictionOutcome]:
        if len(pods) <= 1:
            return [evict(self.kube, pod, self.eviction_version) for pod in pods]
        return list(self.pool.map(lambda pod: evict(self.kube, pod, self.eviction_version), pods))

    @staticmethod
    def _blocked_by_server(pod: Pod, outcome: EvictionOutcome, budgets: list[Budget]) -> _Blocked:
        if not outcome.by_budget:
            return _Blocked(pod, outcome.reason, None, settling=True, by_budget=False)
        covering = budgets_for(pod, budgets)
        named = [b for b in covering if b.key == outcome.pdb] or covering
        pdb = outcome.pdb or (named[0].key if named else None)
        return _Blocked(pod, outcome.reason, pdb, any(b.settling for b in named))

    def force(self, observation: Observation) -> bool:
        """Force-delete the blocked pods the force rules allow (after one, the interval rule stops the rest)."""
        namespace_pods: dict[str, list[Pod]] = {}

        def siblings(pod: Pod) -> list[Pod]:
            namespace = pod["metadata"]["namespace"]
            if namespace not in namespace_pods:
                listed = self.kube.request("GET", f"/api/v1/namespaces/{namespace}/pods")
                namespace_pods[namespace] = listed.get("items") or []
            in_namespace = [b for b in observation.budgets if b.namespace == namespace]
            return siblings_of(pod, namespace_pods[namespace], in_namespace)

        forced = False
        for blocked in [b for b in self.blocked if b.by_budget]:
            now = self.clock.now()
            decision = force_decision(
                blocked.pod,
                self.settings,
                now,
                self.drain_start,
                self.last_forced,
                lambda pod=blocked.pod: siblings(pod),
            )
            if not decision.allowed:
                blocked.reason = f"{blocked.reason}; {decision.reason}"
                blocked.force_at = decision.not_before
                continue
            # Recorded first, so a crash never loses the interval.
            self.last_forced = record_forced_deletion(self.kube, self.node, now)
            self.blocked.remove(blocked)
            if delete_pod(self.kube, blocked.pod):
                self.forced.append(pod_key(blocked.pod))
            forced = True
        return forced

    def next_step(self, observation: Observation) -> tuple[float | None, int]:
        """When to act again within this pass (monotonic; None: not within it), and wait_seconds after it."""
        now, mono = self.clock.now(), time.monotonic()
        if self.blocked:  # progress needs an eviction or a forced deletion
            wake_at, wait_seconds = self._next_for_blocked(now, mono)
        else:  # only terminating pods are left: the node is empty when the last one is gone
            wake_at, wait_seconds = self._next_for_terminating(observation, now, mono)
        return (None if wake_at is None else min(wake_at, self.deadline)), wait_seconds

    def _next_for_terminating(self, observation: Observation, now: datetime, mono: float) -> tuple[float | None, int]:
        last = max((self._seconds_left(pod, now) for pod in observation.waiting_for), default=None)
        if last is None:  # what was listed went away meanwhile: list again soon
            return None, SETTLING_WAIT
        if last < -KUBELET_SLACK:  # overdue: look again after a wait that grows with how late it is
            return None, math.ceil(min(MAX_OVERDUE_WAIT, -last))
        # Soon, or within a pass that evicted them (a pass's three transitions cost more than its seconds of watch).
        if last <= WATCH_HORIZON or (self.progressed and mono + last + KUBELET_SLACK <= self.deadline):
            return mono + last + KUBELET_SLACK, SETTLING_WAIT
        return None, _ahead_of(last)

    def _seconds_left(self, pod: Pod, now: datetime) -> float:
        """Until the pod's grace period ends: exact if this pass evicted it, else the latest its timestamp allows."""
        meta = pod["metadata"]
        grace = meta.get("deletionGracePeriodSeconds")
        evicted_at = self.evicted_at.get(meta.get("uid", ""))
        if evicted_at is not None and grace is not None:
            return (evicted_at + timedelta(seconds=float(grace)) - now).total_seconds()
        return ((deletion_deadline(pod) or now) - now).total_seconds() + STAMP_PRECISION

    def _moving(self) -> bool:
        """Whether a settling budget blocking the node changed since the previous pass (or is new to it)."""
        return any(b.settling and b.pdb and self.seen.get(b.pdb) != self.versions.get(b.pdb) for b in self.blocked)

    def _next_for_blocked(self, now: datetime, mono: float) -> tuple[float | None, int]:
        age = 0.0 if self._moving() else (now - max(self.progress_at, self.drain_start)).total_seconds()
        backoff = min(self.settings.poll_interval, max(SETTLING_WAIT, age / 10))
        wakes: list[float] = []
        waits: list[int] = []
        if any(b.settling for b in self.blocked):  # a replacement turning Ready will open the budget
            if backoff <= WATCH_HORIZON:  # a young drain: watch for it a while; to the pass's end when it moves
                if self.settle_watch_ends is None:
                    self.settle_watch_ends = (
                        self.deadline if self._moving() or self.progressed else mono + WATCH_HORIZON
                    )
                if mono < self.settle_watch_ends:
                    wakes.append(self.settle_watch_ends)
            waits.append(math.ceil(backoff))
        for blocked in self.blocked:
            if blocked.settling:
                continue
            until_force = (blocked.force_at - now).total_seconds() if blocked.force_at else math.inf
            if until_force <= WATCH_HORIZON:
                wakes.append(mono + max(until_force, 0.0))
            elif until_force == math.inf:  # no force rule said when: CLM's poll
                waits.append(math.ceil(self.settings.poll_interval))
            else:  # nothing changes on its own: come back just before the force rules allow
                waits.append(_ahead_of(until_force))
        return min(wakes, default=None), max(1, min(waits, default=SETTLING_WAIT))

    def watches(self, observation: Observation) -> list[WatchSpec]:
        """A pod of the node deleted; a budget blocking it opening."""
        blocking = self.blocking
        budgets = [budget_watch(self.kube, blocking, observation.budgets_version)] if blocking else []
        return [self.pod_watch(observation), *budgets]

    def pod_watch(self, observation: Observation) -> WatchSpec:
        """A pod of the node deleted."""
        query = (("fieldSelector", f"spec.nodeName={self.node}"),)
        return WatchSpec("/api/v1/pods", observation.pods_version, lambda kind, _: kind == "DELETED", query)

    @property
    def blocking(self) -> set[str]:
        """The budgets blocking the node, as `namespace/name`."""
        return {b.pdb for b in self.blocked if b.pdb}

    def parks(self) -> bool:
        """Whether only budgets that will not change on their own block the node (so the drain may park)."""
        return bool(self.blocked) and not any(b.settling for b in self.blocked)

    def result(self, observation: Observation, done: bool, wait_seconds: int) -> dict[str, Any]:
        if self.progressed and not done:
            record_progress(self.kube, self.node, self.progress_at)
        result = {
            "node": self.node,
            "done": done,
            "wait_seconds": 0 if done else wait_seconds,
            "evicted": _listed(self.evicted),
            "forced": _listed(self.forced),
            "refused": self.refused,
            "blocked": [b.to_dict() for b in self.blocked[:MAX_LISTED]],
            "terminating": _listed([pod_key(p) for p in observation.waiting_for]),
            "left_behind": _listed([pod_key(p) for p in observation.overdue]),
            "drain_start": format_time(self.drain_start),
            "park": None,
            "budgets_seen": {b.pdb: self.versions.get(b.pdb, "") for b in self.blocked[:MAX_LISTED] if b.pdb},
        }
        if not done and wait_seconds > self.settings.poll_interval and self.parks():
            result["park"] = {"seconds": wait_seconds, "since": format_time(observation.at)}
        return result

    def run(self, first: Observation) -> dict[str, Any]:
        """Drain from `first`, listed while the cordon went out (so a pod bound meanwhile may be missing from it)."""
        observation, cordoned = first, False
        while True:
            if not observation.pods.evictable and not observation.waiting_for:
                if cordoned:  # done only by a listing made with the cordon in place
                    self.blocked = []
                    return self.result(observation, True, 0)
            elif (result := self.act(observation)) is not None:
                return result
            observation, cordoned = self.observe(), True

    def progress(self, observation: Observation, allowance: Allowance) -> bool:
        """Evict and force what `observation` allows; True (and the progress noted) if any pod went."""
        progressed = self.evict(observation, allowance)
        progressed = self.force(observation) or progressed
        if progressed:
            self.settle_watch_ends = None
            self.progressed, self.progress_at = True, self.clock.now()
            self.deadline = max(self.deadline, min(time.monotonic() + self.extension, self.limit))
        return progressed

    def act(self, observation: Observation) -> dict[str, Any] | None:
        """Evict, force, or watch for what is expected soon; the pass's result when it ends here, else None."""
        if self.progress(observation, Allowance(observation.budgets)):
            if time.monotonic() < self.deadline:
                return None  # list again: what was evicted is terminating now
            return self.result(observation, False, SETTLING_WAIT)  # listed before this round: soon again
        wake_at, wait_seconds = self.next_step(observation)
        if wake_at is None or time.monotonic() >= self.deadline:
            return self.result(observation, False, wait_seconds)
        wait_for_event(self.kube, self.watches(observation), wake_at)
        return None


def budget_watch(kube: KubeClient, blocking: set[str], version: str) -> WatchSpec:
    """One of `blocking` (budgets as `namespace/name`) allowing a disruption, from the listing at `version`."""

    def opened(_: str, pdb: dict[str, Any]) -> bool:
        key = f"{pdb['metadata'].get('namespace')}/{pdb['metadata']['name']}"
        return key in blocking and int((pdb.get("status") or {}).get("disruptionsAllowed", 0)) > 0

    return WatchSpec(kube.discovery.pdb_resource().path(), version, opened)


def drain_pass(
    kube: KubeClient,
    node: str,
    settings: DrainSettings,
    *,
    now: datetime | None = None,
    budget_seconds: float = PASS_BUDGET,
    seen: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One drain pass over `node`, bounded by about `budget_seconds` after its last eviction (PASS_LIMIT in all),
    plus one last round of requests.

    `now` is the pass's start in wall time (default: the clock); force rules use it. `seen` is the previous
    pass's `budgets_seen`. Returns a small JSON-able dict: {node, done, wait_seconds, evicted, forced, blocked:
    [{pod, reason, pdb}], terminating, left_behind, drain_start, park: {seconds, since} when the drain may park,
    else null, budgets_seen: {pdb: resourceVersion} of the blocking budgets}; lists hold at most MAX_LISTED names.
    A node that no longer exists is done ({"node", "done": true, "gone": true, "wait_seconds": 0}).
    """
    clock = PassClock(now)
    deadline = time.monotonic() + budget_seconds
    with ThreadPoolExecutor(EVICTION_WORKERS) as pool:
        # The first listing and discovery go out with the cordon; evictions wait until the cordon is in place.
        eviction_version = pool.submit(kube.discovery.eviction_api_version)
        first = pool.submit(observe, kube, node, clock, pool)
        try:
            drain = cordon(kube, node, clock.now(), settings.taint_effect)
        except NodeNotFound:
            return {"node": node, "done": True, "gone": True, "wait_seconds": 0}
        drainer = NodeDrainer(kube, node, settings, clock, drain, deadline, pool, eviction_version.result(), seen or {})
        drainer.extension, drainer.limit = budget_seconds, deadline - budget_seconds + max(PASS_LIMIT, budget_seconds)
        return drainer.run(first.result())
