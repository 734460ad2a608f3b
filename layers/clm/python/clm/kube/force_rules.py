"""When a PDB-blocked pod may be force-deleted: CLM's forceTerminationAllowed, as pure functions.

Every rule must allow, in CLM's order:
1. the drain grace period since the drain started is over;
2. the force-evict interval since the node's last forced deletion is over;
3. the pod is at least the minimum pod lifetime old;
4. every sibling (another pod of the namespace covered by a budget covering this pod, neither finished nor
   owned by a Job: CLM's ignoredSiblingPod) is older than the healthy sibling lifetime if Ready, else the
   unhealthy one.
Each rule yields the moment it starts to allow; the pod may be forced once all those have passed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from clm.kube.budgets import Budget, budgets_for
from clm.kube.pods import Pod, created_at, is_ready, owned_by, pod_key, skip_finished
from clm.kube.settings import DrainSettings, format_duration
from clm.timestamps import format_time


@dataclass(frozen=True)
class Rule:
    """One rule's verdict: it allows from `allows_at` on; `why` describes it when it does not yet."""

    allows_at: datetime
    why: str


@dataclass(frozen=True)
class ForceDecision:
    """Whether forcing is allowed now; else the rules that forbid it and the earliest moment they could all allow."""

    allowed: bool
    reason: str
    not_before: datetime | None


def _after(start: datetime, seconds: float) -> datetime:
    return start + timedelta(seconds=seconds)


def clock_rules(pod: Pod, settings: DrainSettings, drain_start: datetime, last_forced: datetime | None) -> list[Rule]:
    """Rules 1-3, which need no other pods."""
    rules = [
        Rule(
            _after(drain_start, settings.grace_period),
            f"drain grace period {format_duration(settings.grace_period)} since {format_time(drain_start)}",
        )
    ]
    if last_forced is not None:
        rules.append(
            Rule(
                _after(last_forced, settings.force_evict_interval),
                f"force-evict interval {format_duration(settings.force_evict_interval)} since the last "
                f"forced deletion at {format_time(last_forced)}",
            )
        )
    rules.append(
        Rule(
            _after(created_at(pod), settings.min_pod_lifetime),
            f"minimum pod lifetime {format_duration(settings.min_pod_lifetime)}",
        )
    )
    return rules


def sibling_rules(siblings: Sequence[Pod], settings: DrainSettings) -> list[Rule]:
    """Rule 4, one verdict per sibling."""
    rules = []
    for sibling in siblings:
        ready = is_ready(sibling)
        lifetime = settings.min_healthy_sibling_lifetime if ready else settings.min_unhealthy_sibling_lifetime
        rules.append(
            Rule(
                _after(created_at(sibling), lifetime),
                f"{'healthy' if ready else 'unhealthy'} sibling {pod_key(sibling)} younger than "
                f"{format_duration(lifetime)}",
            )
        )
    return rules


def siblings_of(pod: Pod, namespace_pods: Sequence[Pod], namespace_budgets: Sequence[Budget]) -> list[Pod]:
    """Other pods of the namespace covered by any budget that covers `pod` (CLM's findSiblingPods), except
    Succeeded/Failed pods and pods owned by a Job, which never come back healthy (CLM's ignoredSiblingPod)."""
    covering = budgets_for(pod, namespace_budgets)
    name = pod["metadata"]["name"]
    return [
        other
        for other in namespace_pods
        if other["metadata"]["name"] != name
        and not skip_finished(other)
        and not owned_by(other, "Job")
        and any(b.selects(other) for b in covering)
    ]


def decide(rules: Sequence[Rule], now: datetime) -> ForceDecision:
    """Allowed when every rule allows at `now`; else name the rules that do not, and when all would."""
    waiting = [rule for rule in rules if now < rule.allows_at]
    if not waiting:
        return ForceDecision(True, "all force rules allow", None)
    not_before = max(rule.allows_at for rule in rules)
    reasons = "; ".join(f"{rule.why} (until {format_time(rule.allows_at)})" for rule in waiting[:3])
    more = f"; and {len(waiting) - 3} more" if len(waiting) > 3 else ""
    return ForceDecision(False, f"no forced deletion yet: {reasons}{more}", not_before)


def force_decision(
    pod: Pod,
    settings: DrainSettings,
    now: datetime,
    drain_start: datetime,
    last_forced: datetime | None,
    siblings: Callable[[], Sequence[Pod]],
) -> ForceDecision:
    """CLM's forceTerminationAllowed; `siblings` (which may need an API call) is asked only when rules 1-3 allow."""
    decision = decide(clock_rules(pod, settings, drain_start, last_forced), now)
    if not decision.allowed:
        return decision
    return decide(sibling_rules(siblings(), settings), now)
