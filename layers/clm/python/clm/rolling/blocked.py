"""Cordon and continue (`drain_blocked: continue`): which nodes a roll sets aside while budgets block their drains.

A node whose drain is blocked only by budgets that will not change on their own is left cordoned, with the time
the force rules allow recorded on it (clm.kube.blocked_drain); the roll goes on with the other outdated nodes and
comes back to it when that time comes, or when nothing else is left. At most max_unavailable nodes (at least one)
are set aside at once, beside the batch being replaced, so a workload that blocks every node makes the roll wait
for the force rules node after node, never cordon the pool. Rationale: docs/workflows.md.
"""

from __future__ import annotations

from collections.abc import Iterable

from clm.rolling.pool import Member, RollSettings


def set_aside(members: Iterable[Member], settings: RollSettings) -> list[Member]:
    """The members set aside now: cordoned with a blocked drain that is not due yet, at most max(max_unavailable,
    1) of them (any others, e.g. recorded by a drain that parked when an execution died, are continued); none
    without `drain_blocked: continue` (a record left from an earlier roll with it changes nothing)."""
    if not settings.continue_blocked:
        return []
    return [m for m in members if m.node is not None and m.node.set_aside][: max(settings.max_unavailable, 1)]


def _recorded(members: Iterable[Member]) -> list[Member]:
    """The members with a blocked drain recorded on their Node, due or not."""
    return [m for m in members if m.in_service and m.node is not None and m.node.set_aside_seconds is not None]


def may_set_aside(pool: Iterable[Member], batch: Iterable[Member], max_unavailable: int) -> set[str]:
    """The instance ids of the `batch` whose drain may end set aside: those already set aside once, and new ones
    while the pool has fewer than max(max_unavailable, 1) set aside."""
    recorded = {m.instance_id for m in _recorded(pool)}
    room = max(max_unavailable, 1) - len(recorded)
    allowed = set()
    for member in batch:
        if member.instance_id in recorded:
            allowed.add(member.instance_id)
        elif room > 0:
            allowed.add(member.instance_id)
            room -= 1
    return allowed


def aside_note(members: Iterable[Member], settings: RollSettings) -> str:
    """`; N set aside (blocked drains): nodes` for a decision's reason, or "" when none is."""
    aside = set_aside(members, settings)
    if not aside:
        return ""
    names = ", ".join(m.node.name for m in aside if m.node)
    return f"; {len(aside)} set aside with blocked drains: {names}"


def come_back_reason(aside: list[Member]) -> str:
    """The reason of coming back to set-aside nodes before they are due: nothing else is left to replace."""
    return f"back to {len(aside)} node(s) set aside with blocked drains: nothing else left to replace"
