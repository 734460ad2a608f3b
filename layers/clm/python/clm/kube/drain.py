"""One bounded, reentrant drain pass over a node, for a Step Functions loop with Wait states between passes.

A pass cordons the node (idempotent; the drain start is kept on the node), evicts what it can,
force-deletes a PDB-blocked pod when CLM's force rules allow, and then, while something that gates
progress is expected within its budget (a budget settling as replacements turn Ready, a terminating
pod's grace period ending), watches for it and acts again at once. It returns when the node is
empty of evictable pods, or when nothing more is expected within its budget, with `wait_seconds`
computed from what it saw.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from clm.kube.budgets import Budget, budgets_for, list_budgets
from clm.kube.errors import NodeNotFound
from clm.kube.eviction import BLOCKED, EVICTED, EvictionOutcome, delete_pod, evict
from clm.kube.force_rules import force_decision, siblings_of
from clm.kube.nodes import DrainClock, cordon, record_forced_deletion
from clm.kube.pods import NodePods, Pod, deletion_deadline, phase, pod_key, sort_node_pods
from clm.kube.timestamps import format_time, utc_now
from clm.kube.waiting import WatchSpec, wait_for_event

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.settings import DrainSettings

PASS_BUDGET = 5.0
# A pod still terminating this long after its grace period ended is left behind (CLM's podEvictionHeadroom).
TERMINATION_HEADROOM = 30.0
# deletionTimestamp has whole seconds: a pod's grace period ends within a second after it.
STAMP_PRECISION = 1.0
# Waits for a pod past its grace period grow with how late it is, up to this.
MAX_OVERDUE_WAIT = 5.0
SETTLING_WAIT = 1.0
MAX_LISTED = 20
EVICTION_WORKERS = 8


class _PassClock:
    """Wall time that starts at the caller's `now` and advances with the monotonic clock."""

    def __init__(self, now: datetime | None):
        self.start = now or utc_now()
        self.started = time.monotonic()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=time.monotonic() - self.started)


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


@dataclass
class _Observation:
    pods: NodePods
    pods_version: str
    budgets: list[Budget]
    budgets_version: str
    waiting_for: list[Pod] = field(default_factory=list)  # terminating, within their grace period + headroom
    overdue: list[Pod] = field(default_factory=list)  # terminating past that: left behind


def _listed(keys: Sequence[str]) -> list[str]:
    return list(keys[:MAX_LISTED])


class _Drainer:
    def __init__(
        self,
        kube: KubeClient,
        node: str,
        settings: DrainSettings,
        clock: _PassClock,
        drain: DrainClock,
        deadline: float,
    ):
        self.kube, self.node, self.settings, self.clock, self.deadline = kube, node, settings, clock, deadline
        self.drain_start, self.last_forced = drain.drain_start, drain.last_forced
        self.eviction_version = kube.discovery.eviction_api_version()
        self.evicted: list[str] = []
        self.forced: list[str] = []
        self.blocked: list[_Blocked] = []

    def observe(self) -> _Observation:
        listed = self.kube.request("GET", "/api/v1/pods", query={"fieldSelector": f"spec.nodeName={self.node}"})
        budgets, budgets_version = list_budgets(self.kube)
        observation = _Observation(
            sort_node_pods(listed.get("items") or []),
            listed.get("metadata", {}).get("resourceVersion", ""),
            budgets,
            budgets_version,
        )
        cutoff = self.clock.now() - timedelta(seconds=TERMINATION_HEADROOM)
        for pod in observation.pods.terminating:
            end = deletion_deadline(pod)
            (observation.overdue if end and end < cutoff else observation.waiting_for).append(pod)
        return observation

    def evict(self, observation: _Observation) -> bool:
        """Evict every pod no budget is known to refuse; remember the blocked ones. True if any went."""
        self.blocked, candidates = [], []
        for pod in observation.pods.evictable:
            refusing = [b for b in budgets_for(pod, observation.budgets) if b.blocks]
            if refusing and phase(pod) != "Pending":  # the server evicts pending pods regardless of budgets
                self.blocked.append(
                    _Blocked(pod, refusing[0].describe(), refusing[0].key, any(b.settling for b in refusing))
                )
            else:
                candidates.append(pod)
        outcomes = self._evict_all(candidates)
        for pod, outcome in zip(candidates, outcomes, strict=True):
            if outcome.result == EVICTED:
                self.evicted.append(outcome.pod)
            elif outcome.result == BLOCKED:
                self.blocked.append(self._blocked_by_server(pod, outcome, observation.budgets))
        return any(o.result == EVICTED for o in outcomes)

    def _evict_all(self, pods: list[Pod]) -> list[EvictionOutcome]:
        if len(pods) <= 1:
            return [evict(self.kube, pod, self.eviction_version) for pod in pods]
        with ThreadPoolExecutor(min(EVICTION_WORKERS, len(pods))) as pool:
            return list(pool.map(lambda pod: evict(self.kube, pod, self.eviction_version), pods))

    @staticmethod
    def _blocked_by_server(pod: Pod, outcome: EvictionOutcome, budgets: list[Budget]) -> _Blocked:
        if not outcome.by_budget:
            return _Blocked(pod, outcome.reason, None, settling=True, by_budget=False)
        covering = budgets_for(pod, budgets)
        named = [b for b in covering if b.key == outcome.pdb] or covering
        pdb = outcome.pdb or (named[0].key if named else None)
        return _Blocked(pod, outcome.reason, pdb, any(b.settling for b in named))

    def force(self, observation: _Observation) -> bool:
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

    def next_step(self, observation: _Observation) -> tuple[float | None, int]:
        """When to act again within this pass (monotonic; None: not within it), and wait_seconds after it."""
        now, mono = self.clock.now(), time.monotonic()
        remaining = self.deadline - mono
        waits: list[float] = []
        watch = False
        timer: float | None = None
        for pod in observation.waiting_for:
            earliest = ((deletion_deadline(pod) or now) - now).total_seconds()
            latest = earliest + STAMP_PRECISION
            waits.append(latest if latest > 0 else min(MAX_OVERDUE_WAIT, -latest))
            watch = watch or earliest <= remaining
        age = (now - self.drain_start).total_seconds()
        backoff = min(self.settings.poll_interval, max(SETTLING_WAIT, age / 10))
        for blocked in self.blocked:
            if blocked.settling:
                waits.append(SETTLING_WAIT)
                watch = True
                continue
            until_force = (blocked.force_at - now).total_seconds() if blocked.force_at else math.inf
            waits.append(min(backoff, max(until_force, 0.0)))
            if until_force <= remaining:
                timer = min(timer if timer is not None else math.inf, mono + max(until_force, 0.0))
        wait_seconds = max(1, math.ceil(min(waits, default=SETTLING_WAIT)))
        if watch:
            return min(self.deadline, timer if timer is not None else math.inf), wait_seconds
        return timer, wait_seconds

    def watches(self, observation: _Observation) -> list[WatchSpec]:
        specs = [
            WatchSpec(
                "/api/v1/pods",
                observation.pods_version,
                lambda kind, _: kind == "DELETED",
                (("fieldSelector", f"spec.nodeName={self.node}"),),
            )
        ]
        blocking = {b.pdb for b in self.blocked if b.pdb}
        if blocking:

            def opened(_: str, pdb: dict[str, Any]) -> bool:
                key = f"{pdb['metadata'].get('namespace')}/{pdb['metadata']['name']}"
                return key in blocking and int((pdb.get("status") or {}).get("disruptionsAllowed", 0)) > 0

            specs.append(WatchSpec(self.kube.discovery.pdb_resource().path(), observation.budgets_version, opened))
        return specs

    def result(self, observation: _Observation, done: bool, wait_seconds: int) -> dict[str, Any]:
        return {
            "node": self.node,
            "done": done,
            "wait_seconds": 0 if done else wait_seconds,
            "evicted": _listed(self.evicted),
            "forced": _listed(self.forced),
            "blocked": [b.to_dict() for b in self.blocked[:MAX_LISTED]],
            "terminating": _listed([pod_key(p) for p in observation.waiting_for]),
            "left_behind": _listed([pod_key(p) for p in observation.overdue]),
            "drain_start": format_time(self.drain_start),
        }

    def run(self) -> dict[str, Any]:
        while True:
            observation = self.observe()
            if not observation.pods.evictable and not observation.waiting_for:
                self.blocked = []
                return self.result(observation, True, 0)
            progressed = self.evict(observation)
            progressed = self.force(observation) or progressed
            if progressed and time.monotonic() < self.deadline:
                continue  # list again: what was evicted is terminating now
            wake_at, wait_seconds = self.next_step(observation)
            if wake_at is None or time.monotonic() >= self.deadline:
                return self.result(observation, False, wait_seconds)
            wait_for_event(self.kube, self.watches(observation), wake_at)


def drain_pass(
    kube: KubeClient,
    node: str,
    settings: DrainSettings,
    *,
    now: datetime | None = None,
    budget_seconds: float = PASS_BUDGET,
) -> dict[str, Any]:
    """One drain pass over `node`, bounded by about `budget_seconds` (plus one last round of requests).

    `now` is the pass's start in wall time (default: the clock); force rules use it. Returns a small
    JSON-able dict: {node, done, wait_seconds, evicted, forced, blocked: [{pod, reason, pdb}],
    terminating, left_behind, drain_start}; lists hold at most MAX_LISTED names. A node that no longer
    exists is done ({"node", "done": true, "gone": true, "wait_seconds": 0}).
    """
    clock = _PassClock(now)
    deadline = time.monotonic() + budget_seconds
    try:
        drain = cordon(kube, node, clock.now())
    except NodeNotFound:
        return {"node": node, "done": True, "gone": True, "wait_seconds": 0}
    return _Drainer(kube, node, settings, clock, drain, deadline).run()
