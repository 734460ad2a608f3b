"""Assigning a fleet's clusters to the waves of a rollout policy: each cluster to exactly one wave, the first
that takes it (clusters no wave takes to a final wave `unmatched`), in the wave's order, with its concurrency
resolved to a count. Pure: no AWS, no clock."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from clm.kube.settings import format_duration
from clm.model import Cluster
from clm.rollout.policy import UNMATCHED, Policy, Wave

# Clusters no wave takes: one at a time, least critical first, no bake (the end of the rollout).
UNMATCHED_WAVE = Wave(UNMATCHED)


@dataclass(frozen=True)
class WaveAssignment:
    """A wave with its clusters in order and how many of them may change at once (at least 1)."""

    wave: Wave
    clusters: tuple[Cluster, ...]
    concurrency: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: the wave's settings and its clusters with what placed them."""
        return {
            "wave": self.wave.name,
            "concurrency": self.concurrency,
            "concurrency_given": str(self.wave.concurrency),
            "bake_seconds": self.wave.bake_seconds,
            "bake": format_duration(self.wave.bake_seconds),
            "order": list(self.wave.order),
            "clusters": [cluster_facts(cluster) for cluster in self.clusters],
        }


def cluster_facts(cluster: Cluster) -> dict[str, Any]:
    """What a plan shows of a cluster: where it is and what orders it."""
    return {
        "id": cluster.id,
        "account": cluster.account_id,
        "region": cluster.region,
        "environment": cluster.environment,
        "criticality": cluster.criticality_level,
        "channel": cluster.channel or "",
    }


def assign(clusters: Iterable[Cluster], policy: Policy) -> list[WaveAssignment]:
    """The policy's waves in order, each with the clusters it takes from those no earlier wave took, then
    `unmatched` when some cluster is left (not otherwise)."""
    remaining = list(clusters)
    assignments = []
    for wave in policy.waves:
        taken = ordered([cluster for cluster in remaining if wave.takes(cluster)], wave.order, policy.environments)
        if wave.size is not None:
            taken = taken[: wave.size]
        chosen = {cluster.id for cluster in taken}
        remaining = [cluster for cluster in remaining if cluster.id not in chosen]
        assignments.append(_assignment(wave, taken, policy))
    if remaining:
        rest = ordered(remaining, UNMATCHED_WAVE.order, policy.environments)
        assignments.append(_assignment(UNMATCHED_WAVE, rest, policy))
    return assignments


def _assignment(wave: Wave, clusters: list[Cluster], policy: Policy) -> WaveAssignment:
    count = min(wave.concurrency.resolve(len(clusters)), policy.max_concurrency)
    return WaveAssignment(wave, tuple(clusters), count)


def ordered(clusters: Sequence[Cluster], order: Sequence[str], environments: Sequence[str]) -> list[Cluster]:
    """`clusters` sorted by the order keys (`-key` descending), the first key deciding first, then by id."""
    result = sorted(clusters, key=lambda cluster: cluster.id)
    for key in reversed(order):
        field = key.removeprefix("-")
        result.sort(key=_sort_keys(environments)[field], reverse=key.startswith("-"))
    return result


def _sort_keys(environments: Sequence[str]) -> dict[str, Callable[[Cluster], Any]]:
    """Per order key, what it sorts by; an environment by its place in `environments` (one not listed after
    every listed one, then by name)."""
    rank = {name: index for index, name in enumerate(environments)}
    return {
        "criticality": lambda cluster: cluster.criticality_level,
        "environment": lambda cluster: (rank.get(cluster.environment, len(rank)), cluster.environment),
        "id": lambda cluster: cluster.id,
        "region": lambda cluster: cluster.region,
        "account": lambda cluster: cluster.account_id,
        "channel": lambda cluster: cluster.channel or "",
    }
