"""The lower bound of a roll: the waits no roll controller can avoid, as the node simulator's settings make them.

A pool rolled one node at a time (max_unavailable 1, no surge) replaces node i in two stretches:

- drain: its k_i pods of the PodDisruptionBudget (maxUnavailable 1) leave one after the other: evicting one
  lets the ReplicaSet start its replacement elsewhere, and the budget allows the next eviction only once that
  replacement is Ready (pod_ready_delay after it is bound; scheduling is taken as instant); the last pod then
  terminates for its grace period. Terminating pods no longer count against the budget, so the grace periods
  overlap: drain_i = (k_i - 1) * pod_ready_delay + grace, and 0 for a node without such pods;
- replace: its instance is terminated and the group launches the replacement, which is a Ready Node after
  boot_delay; only then may the next node be taken out.

    bound = sum over nodes of (drain_i + boot_delay)

k_i is observed (the pods the drain evicted from node i): where the scheduler put the pods is not CLM's choice.
Everything else a run takes (the provision steps before the roll, Lambda calls, Wait states ending after the
event they wait for, API latencies of the control plane) is overhead.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Simulation:
    """The node simulator's settings and the workload."""

    nodes: int
    replicas: int
    boot_delay: float
    grace: float
    pod_ready_delay: float

    def drain_bound(self, pods: int) -> float:
        """The least time to drain a node holding `pods` pods of the budget."""
        return 0.0 if pods <= 0 else (pods - 1) * self.pod_ready_delay + self.grace

    def node_bound(self, pods: int) -> float:
        """The least time to replace a node holding `pods` pods of the budget: drain, then boot the new one."""
        return self.drain_bound(pods) + self.boot_delay


@dataclass(frozen=True)
class NodeStretch:
    """One node's replacement as it happened: drain (first pass to done), then replace (done to the next step)."""

    node: str
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
    drains: list[tuple[str, int, float, float]], roll_end: float, simulation: Simulation
) -> list[NodeStretch]:
    """`drains`: (node, pods, first pass start, done) in order; node i's replace stretch ends when node i+1's drain
    starts, the last one at `roll_end` (when the roll saw its replacement Ready)."""
    ends = [start for _, _, start, _ in drains[1:]] + [roll_end]
    return [
        NodeStretch(node, pods, done - start, end - done, simulation.drain_bound(pods), simulation.boot_delay)
        for (node, pods, start, done), end in zip(drains, ends, strict=True)
    ]


def roll_bound(pods_per_node: list[int], simulation: Simulation) -> float:
    """The lower bound of rolling nodes that hold these numbers of budget pods, one at a time."""
    return sum(simulation.node_bound(pods) for pods in pods_per_node)
