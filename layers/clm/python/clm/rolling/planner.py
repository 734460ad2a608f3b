"""Which node of a pool to replace next, decided from observed state only.

The roll-node-pool workflow calls :func:`plan` in a loop. Each call looks at the pool as it is now and
answers with one :class:`Decision`: wait (the pool is not healthy yet), scale the group (surge, or a new
node in the AZ of a node with attached volumes), replace some nodes (cordon, drain, terminate), or done.
Because the plan is recomputed from the group and the Nodes every time, an execution that died halfway is
continued by the next one: nodes CLM already took out of service are finished first.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from clm.errors import ClmError
from clm.rolling.blocked import aside_note, come_back_reason, may_set_aside, set_aside
from clm.rolling.groups import (
    GroupSize,
    back_to_capacity,
    pool_desired,
    shrinkable,
    surge_sizes,
    surplus,
    surplus_first,
)
from clm.rolling.pool import LIFECYCLE_DECOMMISSION_PENDING, Member, PoolState, RollSettings

MIN_WAIT_SECONDS = 1
MAX_WAIT_SECONDS = 30
UNKNOWN_BOOT_WAIT_SECONDS = 10
# After replacing nodes, the workflow waits for their successors' boot before planning again, ending this many
# seconds (plus the time a plan takes to observe the pool) before they are expected Ready; the plan then watches
# for them (Wait states have whole seconds).
BOOT_LEAD = 0.5
# A plan watches for booting nodes expected Ready within this many seconds (or late by less), until a little past.
BOOT_WATCH = 2.5
BOOT_SLACK = 2.0
# How often a roll looks again at nodes the cluster-lifecycle-controller drains: CLM's clcPollingInterval
# (provisioner/clusterpy.go).
CONTROLLER_POLL_SECONDS = 10


class NodeStartupTimeout(ClmError):
    """A new instance did not become a Ready Node within the node startup timeout."""

    asl_name = "NodeStartupTimeout"

    def __init__(self, pool: str, member: Member, timeout: float):
        self.pool = pool
        self.instance_id = member.instance_id
        state = "its Node is not Ready" if member.node else "no Node registered"
        super().__init__(
            f"node pool {pool}: instance {member.instance_id} ({member.az}) not Ready after "
            f"{member.seconds_since_launch:.0f} s ({state}; node startup timeout {timeout:.0f} s)"
        )


class PoolBlocked(ClmError):
    """The pool cannot be rolled with its settings and limits; a human has to decide."""

    asl_name = "PoolBlocked"

    def __init__(self, pool: str, reason: str):
        self.pool = pool
        super().__init__(f"node pool {pool}: {reason}")


@dataclass(frozen=True)
class Replacement:
    """Take one node out: cordon, drain, terminate its instance (decrementing the group's capacity or not; an
    instance of Karpenter pool `karpenter_pool` is terminated through EC2); `set_aside`: the drain may end with the
    node set aside, cordoned, when budgets that will not change on their own block it; `announce_blocked`: such a
    block is recorded and announced, set aside or not (`drain_blocked: continue`)."""

    instance_id: str
    node: str | None
    decrement: bool
    karpenter_pool: str | None = None
    set_aside: bool = False  # if budgets block its drain, leave it cordoned and go on (clm.rolling.blocked)
    announce_blocked: bool = False  # if budgets block its drain, record it on the node and publish Drain Blocked


@dataclass(frozen=True)
class Decision:
    """What the workflow does next: `done`, `wait`, `scale`, `replace` or `mark`.

    `mark`: hand the nodes `mark` to the cluster-lifecycle-controller (`update_strategy: clc`; `no_replacement`:
    it launches no successors), take back the hand-overs `take_back` it has not started (clm.rolling.clc).

    `wait_seconds`: for `wait`, until planning again; for `replace`, after the replacements, for their successors
    to boot. `watch_seconds`: for `wait`, how long the plan step may watch for the booting nodes turning Ready
    and then decide again at once (None: not worth it, the Wait state carries the wait). For `scale`, `sizes` are
    what the scale step sets, group by group; `desired`, `min_size` and `baseline` the pool's sums, for people.
    """

    action: str
    reason: str
    wait_seconds: int = 0
    desired: int | None = None
    min_size: int | None = None
    baseline: int | None = None
    replace: list[Replacement] = field(default_factory=list)
    watch_seconds: float | None = None
    sizes: list[GroupSize] = field(default_factory=list)
    mark: list[str] = field(default_factory=list)
    take_back: list[str] = field(default_factory=list)
    no_replacement: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict for the Step Functions payload, without empty fields; `batch` when several nodes are
        replaced at once (their drains go together: clm.kube.batch_drain)."""
        fields = {key: value for key, value in asdict(self).items() if value not in (None, [])}
        return {**fields, "batch": True} if len(self.replace) > 1 else fields


def plan(state: PoolState, settings: RollSettings, *, removing: bool = False, lead: float = 0.0) -> Decision:
    """The next step of rolling `state` (or of draining it to zero when the pool is `removing`).

    `lead`: how long observing the pool took; the wait after a replacement ends that much earlier, so that the
    next plan has observed the pool by the time the successors are expected Ready.
    """
    decision = _decide(state, settings, removing)
    if decision.action != "replace" or state.typical_boot_seconds is None:
        return decision
    if all(r.decrement for r in decision.replace):  # the group shrinks: no successor to wait for
        return decision
    if _slides(state, settings, removing):  # the next plan takes more nodes beside the booting ones, or waits
        return decision
    wait = max(0, math.floor(state.typical_boot_seconds - lead - BOOT_LEAD))
    return dataclasses.replace(decision, wait_seconds=wait)


def _decide(state: PoolState, settings: RollSettings, removing: bool) -> Decision:
    in_service = [m for m in state.members if m.in_service]
    if removing and state.min_size > 0:
        sizes = shrinkable(state)
        return Decision("scale", "let the group(s) shrink to zero", desired=state.desired, min_size=0, sizes=sizes)

    handed = _beside_controller(in_service)
    if handed:
        return handed
    aside = set_aside(in_service, settings)
    taken_out = [m for m in in_service if m.node is not None and m.node.being_replaced and m not in aside]
    if taken_out:  # at most a batch: the marks are on the nodes, where whoever may patch a Node can set them too
        reason = "continue the nodes already being replaced"
        most = max(_most_out(state, settings, removing), 1)
        return replace_decision(taken_out[:most], state, removing, reason, settings)

    booting = [m for m in in_service if not (m.node and m.node.ready)]
    missing = max(state.desired - len(in_service), 0)
    waiting = wait_for_boot(state, booting, settings) or _launching(missing)
    outdated = [m for m in (in_service if removing else [m for m in in_service if m.outdated]) if m not in aside]
    unavailable = len(booting) + missing
    if waiting and not (outdated and _slides(state, settings, removing) and settings.max_unavailable > unavailable):
        return waiting
    if aside and not outdated:  # nothing else to do: back to them, their drains wait for the force rules
        return replace_decision(aside, state, removing, come_back_reason(aside), settings, may_aside=False)
    if state.karpenter:
        outdated, waiting = _beside_karpenter(in_service, outdated, settings)
        if waiting:
            return waiting
    if not outdated:
        sizes = back_to_capacity(state)
        if sizes:
            reason = "roll finished: back to the capacity before the surge"
            return Decision("scale", reason, desired=state.capacity, sizes=sizes)
        return Decision("done", "every node is up to date and Ready")
    return _next_batch(state, settings, outdated, removing, unavailable)


def _most_out(state: PoolState, settings: RollSettings, removing: bool) -> int:
    """The most nodes a batch takes out: max_unavailable beside the surge's extra nodes; at least one when removing
    a pool or in a Karpenter pool (no surge there)."""
    if removing or state.karpenter:
        return max(settings.max_unavailable, 1)
    return max(state.desired - state.capacity, 0) + settings.max_unavailable


def _launching(missing: int) -> Decision | None:
    if not missing:
        return None
    reason = f"waiting for the group to launch {missing} instance(s)"
    return Decision("wait", reason, wait_seconds=UNKNOWN_BOOT_WAIT_SECONDS)


def _slides(state: PoolState, settings: RollSettings, removing: bool) -> bool:
    """Whether a batch may start while successors boot, they and it within max_unavailable (a window sliding over
    the pool): not while a surge is in effect (its nodes are Ready first), nor for Karpenter or a removal (no
    successors), nor one node at a time (nothing would start beside the one booting)."""
    return not (removing or state.karpenter) and state.desired <= state.capacity and settings.max_unavailable > 1


def _beside_controller(in_service: list[Member]) -> Decision | None:
    """Never drain a node handed to the cluster-lifecycle-controller (`update_strategy` was `clc`): take back the
    hand-overs it has not started, wait for the drains it has (None: no such node)."""
    handed = [m.node for m in in_service if m.node is not None and m.node.with_controller]
    pending = [node.name for node in handed if node.lifecycle_status == LIFECYCLE_DECOMMISSION_PENDING]
    if pending:
        reason = f"take back {len(pending)} node(s) handed to the cluster-lifecycle-controller it has not started"
        return Decision("mark", reason, take_back=pending)
    if handed:
        names = ", ".join(node.name for node in handed)
        reason = f"the cluster-lifecycle-controller is draining {names} (handed to it under update_strategy clc)"
        return Decision("wait", reason + ": waiting", wait_seconds=CONTROLLER_POLL_SECONDS)
    return None


def _disrupted(members: list[Member]) -> list[Member]:
    """The members Karpenter is taking out itself (consolidation, drift, expiry: its disruption taint)."""
    return [m for m in members if m.in_service and m.node is not None and m.node.disrupted_by_karpenter]


def _beside_karpenter(
    in_service: list[Member], outdated: list[Member], settings: RollSettings
) -> tuple[list[Member], Decision | None]:
    """No fight with Karpenter's own disruptions: the outdated nodes it is not taking out itself (it replaces those),
    or a wait while the nodes it takes out use up max_unavailable."""
    disrupted = _disrupted(in_service)
    limit = max(settings.max_unavailable, 1)
    if outdated and len(disrupted) >= limit:
        reason = f"Karpenter is taking out {len(disrupted)} node(s) of the pool (max_unavailable {limit}): waiting"
        return outdated, Decision("wait", reason, wait_seconds=UNKNOWN_BOOT_WAIT_SECONDS)
    return [m for m in outdated if m not in disrupted], None


def wait_for_boot(state: PoolState, booting: list[Member], settings: RollSettings) -> Decision | None:
    """Wait for booting instances; fail on one that exceeded the node startup timeout."""
    if not booting:
        return None
    oldest = max(booting, key=lambda m: m.seconds_since_launch)
    if oldest.seconds_since_launch > settings.node_startup_timeout:
        raise NodeStartupTimeout(state.name, oldest, settings.node_startup_timeout)
    ids = ", ".join(m.instance_id for m in booting)
    remaining = _boot_remaining(state, booting)
    return Decision(
        "wait",
        f"waiting for {len(booting)} new node(s) to become Ready: {ids}",
        wait_seconds=_boot_wait(remaining),
        watch_seconds=_boot_watch(remaining),
    )


def _boot_remaining(state: PoolState, booting: list[Member]) -> float | None:
    """Seconds until the youngest booting instance is expected Ready, from how long the others took (None: unknown)."""
    if state.typical_boot_seconds is None:
        return None
    return state.typical_boot_seconds - min(m.seconds_since_launch for m in booting)


def _boot_wait(remaining: float | None) -> int:
    if remaining is None:
        return UNKNOWN_BOOT_WAIT_SECONDS
    return int(min(max(remaining + 0.999, MIN_WAIT_SECONDS), MAX_WAIT_SECONDS))


def _boot_watch(remaining: float | None) -> float | None:
    """Watch for nodes due within BOOT_WATCH seconds (or late by less than that), until a little past their time."""
    if remaining is None or not -BOOT_WATCH < remaining <= BOOT_WATCH:
        return None
    return max(remaining, 0.0) + BOOT_SLACK


def _next_batch(
    state: PoolState, settings: RollSettings, outdated: list[Member], removing: bool, unavailable: int = 0
) -> Decision:
    """Surge if configured, then choose up to `extra + max_unavailable` outdated nodes, less the `unavailable` ones
    (booting or not launched yet)."""
    capacity = 0 if removing else state.capacity
    if settings.surge and not removing and not state.karpenter:
        sizes = surge_sizes(state, outdated, settings.surge)
        if sizes:
            target = pool_desired(state, sizes)
            reason = f"surge: {target - capacity} extra node(s) before replacing"
            return Decision("scale", reason, desired=target, baseline=capacity, sizes=sizes)
    # Removing a pool, or a Karpenter pool: nothing to surge with (Karpenter launches for the drained pods).
    taking_out = removing or state.karpenter
    allowed = _most_out(state, settings, removing) - (0 if taking_out else unavailable)
    if state.karpenter:  # the nodes Karpenter is taking out itself count as unavailable
        allowed -= len(_disrupted(state.members))
    budget = min(allowed, len(outdated))
    if budget == 0:
        raise PoolBlocked(state.name, f"cannot surge at max_size {state.max_size} and max_unavailable is 0")
    chosen, unmatched = _choose(state, outdated, budget)
    if chosen:
        reason = f"replace {len(chosen)} of {len(outdated)} outdated node(s)" + aside_note(state.members, settings)
        return replace_decision(chosen, state, removing, reason, settings)
    member = unmatched[0]
    group = state.group_of(member)  # a node in its group's zone(s): the group of its zone in a split pool
    if group.desired < group.max_size:
        size = GroupSize(group.name, desired=group.desired + 1, baseline=group.capacity)
        return Decision(
            "scale",
            f"a new node in {member.az} first: {member.instance_id} has volumes attached",
            desired=state.desired + 1,
            baseline=capacity,
            sizes=[size],
        )
    raise PoolBlocked(
        state.name,
        f"instance {member.instance_id} has volumes attached and there is no new node "
        f"in {member.az} to take them over; its group is at max_size {group.max_size}",
    )


def _choose(state: PoolState, outdated: list[Member], budget: int) -> tuple[list[Member], list[Member]]:
    """Nodes without volumes first; a node with volumes only when a new node in its AZ is free to take them (in a
    Karpenter pool any: Karpenter launches a node in the volumes' AZ for the drained pods). AZ by AZ in turn, so a
    batch takes from every AZ alike, after the nodes a surged group's surplus covers (clm.rolling.groups)."""
    outdated = surplus_first(state, _az_balanced(outdated))
    if state.karpenter:
        return outdated[:budget], []
    new_by_az: dict[str, int] = {}
    for member in state.members:
        if member.serving and not member.outdated:
            new_by_az[member.az] = new_by_az.get(member.az, 0) + 1
    with_volumes = [m for m in outdated if m.node and m.node.volumes_attached]
    chosen = [m for m in outdated if m not in with_volumes][:budget]
    unmatched: list[Member] = []
    for member in with_volumes:
        if len(chosen) < budget and new_by_az.get(member.az, 0) > 0:
            new_by_az[member.az] -= 1
            chosen.append(member)
        else:
            unmatched.append(member)
    return chosen, unmatched


def _az_balanced(members: list[Member]) -> list[Member]:
    """The members AZ by AZ in turn (a, b, c, a, b, ...), each AZ's in their order."""
    by_az: dict[str, list[Member]] = {}
    for member in members:
        by_az.setdefault(member.az, []).append(member)
    return [m for turn in itertools.zip_longest(*by_az.values()) for m in turn if m is not None]


def replace_decision(
    members: list[Member],
    state: PoolState,
    removing: bool,
    reason: str,
    settings: RollSettings | None = None,
    may_aside: bool = True,
) -> Decision:
    """A replace decision; a node is terminated with decrement while its group is above its capacity. With
    `settings` that continue past blocked drains, the nodes that may be set aside (clm.rolling.blocked; none
    unless `may_aside`), and every blocked drain announced."""
    above = surplus(state, removing)  # each group's: a node is decremented while its own group is above capacity
    may: set[str] = set()
    if settings and settings.continue_blocked and may_aside:
        may = may_set_aside(state.members, members, settings.max_unavailable)
    replacements = []
    for member in members:
        group = state.group_of(member).name
        decrement = above[group] > 0
        above[group] -= int(decrement)
        node = member.node.name if member.node else None
        pool = state.name if state.karpenter else None
        announce = bool(settings and settings.continue_blocked)
        replacements.append(Replacement(member.instance_id, node, decrement, pool, member.instance_id in may, announce))
    return Decision("replace", reason, replace=replacements)
