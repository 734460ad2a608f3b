"""Which new node replaced which old one, for the `Node Replaced` event.

An auto scaling group does not say which launch replaced which terminated instance, so CLM pairs them: a node the
roll terminated (gone from the pool) with the youngest up-to-date Ready node no earlier pair has claimed (a surge
node, launched before, or the group's launch after the termination), once no instance of the pool is booting (so
that the successors are among the Ready ones, and younger than any node that was up to date before the roll). A
claim is kept on the new Node (annotation `clm/replaces`), so that pairs survive executions; the terminated nodes
still waiting for their successor travel in the plan's decisions (`awaiting`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from clm.rolling.pool import Member, PoolState

REPLACES_ANNOTATION = "clm/replaces"


def gone(replaced: Iterable[Mapping[str, Any]], state: PoolState) -> list[dict[str, Any]]:
    """The nodes of a replace decision (`{instance_id, node}`) whose instance has left the pool."""
    present = {m.instance_id for m in state.members if m.in_service}
    return [
        {"instance_id": r["instance_id"], "node": r.get("node")} for r in replaced if r["instance_id"] not in present
    ]


def pair(
    awaiting: Sequence[Mapping[str, Any]], state: PoolState, claimed: set[str]
) -> tuple[list[tuple[Mapping[str, Any], Member]], list[Mapping[str, Any]]]:
    """Pair the terminated nodes `awaiting` their successor, in order, with the unclaimed (node names not in
    `claimed`) up-to-date serving members, youngest first, once none of the pool's instances is booting (none
    paired before); returns the pairs and the nodes still awaiting."""
    in_service = [m for m in state.members if m.in_service]
    if len(in_service) < state.desired or any(not (m.node and m.node.ready) for m in in_service):
        return [], list(awaiting)
    fresh = sorted(
        (m for m in in_service if m.serving and not m.outdated and m.node and m.node.name not in claimed),
        key=lambda m: m.seconds_since_launch,
    )
    pairs = list(zip(awaiting, fresh, strict=False))
    return pairs, list(awaiting[len(pairs) :])
