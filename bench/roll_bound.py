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

For m = 1 the capacity term is the sum of every node's drain and boot, the bound of a one-at-a-time roll; it is
never below the budget term while pod_ready_delay <= grace + boot_delay (each node adds a boot_delay and a grace
where the budget term has a pod_ready_delay). k_i is observed (the pods the drain evicted from node i): where the
scheduler put the pods is not CLM's choice. Everything else a run takes (the provision steps before the roll,
Lambda calls, Wait states ending after the event they wait for, API latencies, batches waiting for their slowest
node) is overhead. A batch's own bound (its nodes drained together: drain(sum of its k_i) + boot_delay) is what
CLM's batch-at-a-time schedule could do at best; the stretches compare each batch with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Simulation:
    """The node simulator's settings, the workload and the roll's max_unavailable (a count, resolved)."""

    nodes: int
    replicas: int
    boot_delay: float
    grace: float
    pod_ready_delay: float
    max_unavailable: int = 1

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
    i+1's drain starts, the last one at `roll_end` (when the roll saw its replacements Ready)."""
    ends = [start for _, _, start, _ in batches[1:]] + [roll_end]
    return [
        BatchStretch(nodes, pods, done - start, end - done, simulation.drain_bound(pods), simulation.boot_delay)
        for (nodes, pods, start, done), end in zip(batches, ends, strict=True)
    ]


def roll_bound(pods_per_node: list[int], simulation: Simulation) -> float:
    """The lower bound of rolling nodes that hold these numbers of budget pods, `max_unavailable` at a time."""
    return max(capacity_bound(pods_per_node, simulation), budget_bound(pods_per_node, simulation))


def capacity_bound(pods_per_node: list[int], simulation: Simulation) -> float:
    """Every node's least unavailable time, shared among `max_unavailable` slots."""
    return sum(simulation.node_bound(pods) for pods in pods_per_node) / max(simulation.max_unavailable, 1)


def budget_bound(pods_per_node: list[int], simulation: Simulation) -> float:
    """Every eviction of the roll one after the other (one budget), then the last pod's grace and a boot."""
    return simulation.node_bound(sum(pods_per_node)) if pods_per_node else 0.0
