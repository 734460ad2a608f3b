"""One drain pass over a batch of nodes, evicting through their budgets together.

The nodes of a batch share budgets (a web Deployment's pods spread over them): drained one pass per node, each
node's pass would watch the same budget and race the others for it. One pass over them all lists the budgets
once, hands each disruption a budget allows to the node with the fewest pods left (so that nodes are drained one
after another, each handed to `on_drained` as soon as it is), and watches the budgets once, so evictions go out as
soon as a budget allows, with no refusal spent on another node's turn. Each node keeps its own drain
(clm.kube.drain.NodeDrainer): its clocks, force rules and result are a single node pass's.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clm.kube.budget_follower import BudgetFollower
from clm.kube.budgets import Allowance, list_budgets
from clm.kube.drain import EVICTION_WORKERS, PASS_BUDGET, PASS_LIMIT, SETTLING_WAIT, NodeDrainer
from clm.kube.drain_observation import Observation, PassClock, observe_pods
from clm.kube.errors import NodeNotFound
from clm.kube.nodes import cordon
from clm.kube.waiting import wait_for_event

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.settings import DrainSettings

GONE = {"done": True, "gone": True, "wait_seconds": 0}


def drain_batch_pass(
    kube: KubeClient,
    nodes: Sequence[str],
    settings: DrainSettings,
    *,
    now: datetime | None = None,
    budget_seconds: float = PASS_BUDGET,
    limit_seconds: float = PASS_LIMIT,
    seen: Mapping[str, Mapping[str, str]] | None = None,
    on_drained: Callable[[str], None] = lambda node: None,
) -> dict[str, dict[str, Any]]:
    """One drain pass over `nodes` together, bounded by about `budget_seconds` after its last eviction, and
    `limit_seconds` in all; per node, the result a single pass (clm.kube.drain.drain_pass) gives, `seen` holding
    each node's previous `budgets_seen`. `on_drained` is called with each node once it is done (drained, or
    gone), in the pass: it must return at once."""
    clock = PassClock(now)
    deadline = time.monotonic() + budget_seconds
    limit = time.monotonic() + max(limit_seconds, budget_seconds)
    with ThreadPoolExecutor(EVICTION_WORKERS) as pool:
        eviction_version = pool.submit(kube.discovery.eviction_api_version)
        first = pool.submit(_observe_all, kube, list(nodes), clock, pool)
        clocks = dict(zip(nodes, pool.map(lambda node: _cordon(kube, node, clock, settings), nodes), strict=True))
        results: dict[str, dict[str, Any]] = {
            node: {"node": node, **GONE} for node, drain in clocks.items() if drain is None
        }
        for node in results:
            on_drained(node)
        version, previous = eviction_version.result(), seen or {}
        drainers = {
            node: NodeDrainer(kube, node, settings, clock, drain, deadline, pool, version, previous.get(node, {}))
            for node, drain in clocks.items()
            if drain is not None
        }
        observations = {node: o for node, o in first.result().items() if node in drainers}
        if observations:
            listed = next(iter(observations.values()))
            follower = BudgetFollower(kube, (listed.budgets, listed.budgets_version), clock, limit - time.monotonic())
            for drainer in drainers.values():
                drainer.follower = follower
            batch = _Batch(kube, drainers, pool, clock, (deadline, limit, budget_seconds), results, on_drained)
            try:
                batch.run(observations, follower.start())
            finally:
                follower.stop()
    return {node: results[node] for node in nodes}


def _cordon(kube: KubeClient, node: str, clock: PassClock, settings: DrainSettings) -> Any:
    try:
        return cordon(kube, node, clock.now(), settings.taint_effect)
    except NodeNotFound:
        return None


def _observe_all(kube: KubeClient, nodes: list[str], clock: PassClock, pool: ThreadPoolExecutor) -> dict:
    """Each node's pods, all with one listing of the budgets."""
    budgets = pool.submit(list_budgets, kube, now=clock.now())
    listed = list(pool.map(lambda node: observe_pods(kube, node, clock, budgets.result), nodes))
    return dict(zip(nodes, listed, strict=True))


class _Batch:
    """The rounds of a batch pass: evict for every node through one allowance, then watch for them all."""

    def __init__(
        self,
        kube: KubeClient,
        drainers: dict[str, NodeDrainer],
        pool: ThreadPoolExecutor,
        clock: PassClock,
        bounds: tuple[float, float, float],
        results: dict[str, dict[str, Any]],
        on_drained: Callable[[str], None],
    ):
        """`bounds`: the pass's deadline and limit (monotonic), and how far an eviction moves the deadline."""
        self.kube, self.drainers, self.pool, self.clock = kube, drainers, pool, clock
        (self.deadline, self.limit, self.extension), self.results = bounds, results
        self.on_drained = on_drained

    def run(self, observations: dict[str, Observation], follower: BudgetFollower) -> None:
        """Rounds until every node is done or the pass ends: after a round that evicted, the nodes it evicted from
        are listed again (their budgets allow nothing meanwhile); after a wake, the next round acts first, on the
        budgets as `follower` keeps them, and only then lists the nodes whose pods may have gone."""
        cordoned, woken = False, False
        while observations:
            acted = self._round(observations, cordoned)
            pending = {node: o for node, o in observations.items() if node not in self.results}
            if not pending:
                return
            unconfirmed = set() if cordoned else {node for node, o in pending.items() if _empty(o)}
            # Only what can have changed is listed again: the nodes this pass evicted from, and after a wake those
            # waiting for their pods to go (a cordoned node's pods change only so).
            stale = acted | unconfirmed
            if woken:
                stale |= {node for node, o in pending.items() if not o.pods.evictable}
            elif not stale:
                if not self._watch(pending, follower):
                    return
                observations, woken = self._refresh(pending, set(), follower), True
                continue
            observations, cordoned, woken = self._refresh(pending, stale, follower), True, False

    def _refresh(
        self, observations: dict[str, Observation], stale: set[str], follower: BudgetFollower
    ) -> dict[str, Observation]:
        """The `stale` nodes' pods listed again, the others' as they were; the budgets as `follower` has them."""
        budgets = follower.listing()
        listed = dict(
            zip(
                stale,
                self.pool.map(lambda node: observe_pods(self.kube, node, self.clock, lambda: budgets), stale),
                strict=True,
            )
        )
        kept = {n: replace(o, budgets=budgets[0], budgets_version=budgets[1]) for n, o in observations.items()}
        return {node: listed.get(node) or kept[node] for node in observations}

    def _round(self, observations: dict[str, Observation], cordoned: bool) -> set[str]:
        """Evict and force for each node, the one with fewest pods left first; record the nodes found empty (and
        hand them to `on_drained`). The nodes that progressed."""
        allowance = Allowance(next(iter(observations.values())).budgets)
        acted: set[str] = set()
        for node, observation in sorted(observations.items(), key=lambda item: len(item[1].pods.evictable)):
            drainer = self.drainers[node]
            if _empty(observation):
                if cordoned:  # empty only by a listing made with the cordon in place
                    drainer.blocked = []
                    self.results[node] = drainer.result(observation, True, 0)
                    self.on_drained(node)
                continue
            if drainer.progress(observation, allowance):
                acted.add(node)
        if acted:
            self._extend()
        if acted and time.monotonic() >= self.deadline:  # listed before this round: soon again
            for node, observation in observations.items():
                self.results.setdefault(node, self.drainers[node].result(observation, False, SETTLING_WAIT))
        return acted

    def _extend(self) -> None:
        """Another `extension` of the pass after an eviction, within its limit (every node's drain sees it)."""
        deadline = min(time.monotonic() + self.extension, self.limit)
        if deadline > self.deadline:
            self.deadline = deadline
            for drainer in self.drainers.values():
                drainer.deadline = deadline

    def _watch(self, pending: dict[str, Observation], follower: BudgetFollower) -> bool:
        """Watch for the soonest thing any node expects; False (each node's result made) when that is not within
        the pass."""
        steps = {node: self.drainers[node].next_step(o) for node, o in pending.items()}
        wake_at = min((wake for wake, _ in steps.values() if wake is not None), default=None)
        if wake_at is None or time.monotonic() >= self.deadline:
            for node, observation in pending.items():
                self.results[node] = self.drainers[node].result(observation, False, steps[node][1])
            return False
        # Pods going are watched where nothing is left to evict; the rest wait for a budget.
        watches = [self.drainers[node].pod_watch(o) for node, o in pending.items() if not o.pods.evictable]
        blocking = set().union(*(self.drainers[node].blocking for node in pending))
        wake: queue.Queue[str] = queue.Queue()
        with follower.waking(blocking, wake):
            wait_for_event(self.kube, watches, wake_at, wake)
        return True


def _empty(observation: Observation) -> bool:
    return not observation.pods.evictable and not observation.waiting_for
