"""The lower bound of a roll: the waits no roll controller can avoid, as the node simulator's settings make them.

A node taken out of service is unavailable from its cordon until its successor is a Ready Node; in between:

- drain: its k_i pods of the PodDisruptionBudget (maxUnavailable 1) leave one after the other: evicting one
  lets the ReplicaSet start its replacement elsewhere, and the budget allows the next eviction only once that
  replacement is Ready (pod_ready_delay after it is bound; scheduling is taken as instant); the last pod then
  terminates for its grace period. Terminating pods no longer count against the budget, so the grace periods
  overlap: drain(k) = (k - 1) * pod_ready_delay + grace, and 0 for k = 0;
- replace: its instance is terminated and the group launches the replacement, a Ready Node after boot_delay.

A roll that takes at most m nodes out at a time (max_unavailable m, no surge) is bounded by two constraints:

- capacity: each node is unavailable for at least drain(k_i) + boot_delay, and at most m nodes are at once:
  T >= sum_i (drain(k_i) + boot_delay) / m;
- budget: the budget spans the whole pool, so every eviction of the roll (P = sum_i k_i) waits for the previous
  one's replacement pod, whichever node it was on: the evictions of a batch do not overlap, only the batch's grace
  periods and boots do. After the last eviction its pod still terminates and its node's successor boots:
  T >= drain(P) + boot_delay.

    bound = max(capacity, budget)

With a surge s > 0 (s' = min(s, N) extra nodes: CLM surges at most one per outdated node; eks-rolling-update
doubles the group, s = N) the pool may hold N + s' instances with N - m of them in service, so s' + m instances
may be unavailable at once, and the roll scales the group up first and waits for the new nodes before the first
cordon (CLM and eks-rolling-update both do):

- capacity: the surge boots (one boot_delay, its nodes side by side), then the s' + m slots share every old
  node's drain and the boots of the N - s' successors still to come; a node the surplus covers is terminated with
  decrement and needs no boot: T >= boot_delay + (sum_i drain(k_i) + (N - s') * boot_delay) / (s' + m);
- budget: the evictions still go one after the other, and the first one waits for the surge's nodes to take its
  pod: T >= boot_delay + drain(P), the same sum as without a surge: its boot comes first instead of last (no
  boot need follow the last eviction: the surplus can cover the last node, and does for every node when s >= N).

For s = N (eks-rolling-update's surge; CLM's `surge` = the pool's size) the budget term is the bound: one boot,
then P - 1 waits for a replacement pod, then the last pod's grace: boot_delay + (P - 1) * pod_ready + grace
(drain(P) holds the last grace already); the capacity term, boot_delay + sum_i drain(k_i) / (N + m), is never
above it since drain(k_1) + ... + drain(k_N) <= N * drain(P). For 10 nodes of 2 pods (5 s boot, 3 s grace, 1 s
pod Ready): 5 + 19 + 3 = 27 s, where one at a time takes 10 * (1 + 3 + 5) = 90 s.

For m = 1 and no surge the capacity term is the sum of every node's drain and boot, the bound of a one-at-a-time
roll; it is never below the budget term while pod_ready_delay <= grace + boot_delay (each node adds a boot_delay
and a grace where the budget term has a pod_ready_delay). k_i is observed (the pods the drain evicted from node
i): where the scheduler put the pods is not the roll's choice. Everything else a run takes (the provision steps
before the roll, Lambda calls, Wait states ending after the event they wait for, API latencies, batches waiting
for their slowest node) is overhead. A batch's own bound (its nodes drained together: drain(sum of its k_i) +
boot_delay) is what CLM's batch-at-a-time schedule could do at best; the stretches compare each batch with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Simulation:
    """The node simulator's settings, the workload and the roll's max_unavailable and surge (counts, resolved)."""

    nodes: int
    replicas: int
    boot_delay: float
    grace: float
    pod_ready_delay: float
    max_unavailable: int = 1
    surge: int = 0

    def drain_bound(self, pods: int) -> float:
        """The least time to drain nodes holding `pods` pods of the budget between them."""
        return 0.0 if pods <= 0 else (pods - 1) * self.pod_ready_delay + self.grace

    def node_bound(self, pods: int) -> float:
        """The least time a node holding `pods` pods of the budget is unavailable: drain, then boot the new one."""
        return self.drain_bound(pods) + self.boot_delay


@dataclass(frozen=True)
class BatchStretch:
    """One batch's replacement as it happened: drain (its first pass to its last node done), then replace (done to
    the next batch's first pass)."""

    nodes: tuple[str, ...]
    pods: int
    drain_seconds: float
    replace_seconds: float
    drain_bound: float
    boot_delay: float

    @property
    def drain_overhead(self) -> float:
        return self.drain_seconds - self.drain_bound

    @property
    def replace_overhead(self) -> float:
        return self.replace_seconds - self.boot_delay


def stretches(
    batches: list[tuple[tuple[str, ...], int, float, float]], roll_end: float, simulation: Simulation
) -> list[BatchStretch]:
    """`batches`: (nodes, pods, first pass start, last done) in order; batch i's replace stretch ends when batch
    i+1's drain starts, the last one at `roll_end` (when the roll saw its replacements Ready). A batch whose nodes
    the surge's surplus covers (terminated with decrement, the first ones) waits for no boot: its bound is 0; nor
    does one the next batch started less than a boot after (the window slid over the booting successors)."""
    ends = [start for _, _, start, _ in batches[1:]] + [roll_end]
    surplus = min(simulation.surge, sum(len(nodes) for nodes, *_ in batches))
    result = []
    for index, ((nodes, pods, start, done), end) in enumerate(zip(batches, ends, strict=True)):
        covered = min(len(nodes), surplus)
        surplus -= covered
        slid = index < len(batches) - 1 and end - done < simulation.boot_delay
        boot = simulation.boot_delay if len(nodes) > covered and not slid else 0.0
        result.append(BatchStretch(nodes, pods, done - start, end - done, simulation.drain_bound(pods), boot))
    return result


def roll_bound(pods_per_node: list[int], simulation: Simulation) -> float:
    """The lower bound of rolling nodes that hold these numbers of budget pods (`max_unavailable`, `surge`)."""
    return max(capacity_bound(pods_per_node, simulation), budget_bound(pods_per_node, simulation))


def capacity_bound(pods_per_node: list[int], simulation: Simulation) -> float:
    """Every node's least unavailable time shared among the slots: `max_unavailable` of them; with a surge, its
    boot first, then `surge + max_unavailable` slots and no boot for the nodes its surplus covers."""
    nodes = len(pods_per_node)
    surge = min(simulation.surge, nodes)
    if not surge:
        return sum(simulation.node_bound(pods) for pods in pods_per_node) / max(simulation.max_unavailable, 1)
    drains = sum(simulation.drain_bound(pods) for pods in pods_per_node)
    return simulation.boot_delay + (drains + (nodes - surge) * simulation.boot_delay) / (
        surge + simulation.max_unavailable
    )


def budget_bound(pods_per_node: list[int], simulation: Simulation) -> float:
    """Every eviction of the roll one after the other (one budget), then the last pod's grace, and a boot: the
    surge's before the first eviction, or the last node's successor's after the last."""
    return simulation.node_bound(sum(pods_per_node)) if pods_per_node else 0.0
