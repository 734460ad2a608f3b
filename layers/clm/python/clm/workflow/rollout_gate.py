"""The rollout gate: of the clusters needing a run, reconcile starts those taking a new configuration version only as
their rollout allows (clm.rollout.progress) and records them as admitted; a run checks its admission at its begin
and halts the rollout when it fails. A cluster's own change (a first provision, a decommission, a registry edit of a
cluster at the version) is not held. docs/rollouts.md says which is which."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from clm.aws import client
from clm.errors import ClmError, RolloutPolicyError
from clm.model import Cluster, Problem
from clm.registry.rollouts import RolloutStore
from clm.rollout.events import SOURCE, RolloutEvent, halted, transitions
from clm.rollout.policy import Policy
from clm.rollout.progress import Progress, advance, config_version_of
from clm.rollout.state import ROLLING, Halt, RolloutState
from clm.timestamps import format_time, utc_now
from clm.workflow.bus import put_events
from clm.workflow.reconcile import INTERRUPTED, OUTDATED, Selection, execution_name

MAX_LISTED = 50
# Failures that say nothing of the version a run brought: cluster_update_block set during the run, the configuration
# or the cluster changing between its renders (the next run takes the newer one), another run holding the lock, a
# roll waiting for the cluster's maintenance window (or a freeze) or held by a window that cannot be read.
NOT_THE_VERSIONS = frozenset(
    {"UpdateBlocked", "ConfigChanged", "LockHeld", "MaintenanceWindowClosed", "MaintenanceWindowInvalid"}
)


@dataclass
class Gated:
    """The selections that may start now, those the rollouts hold (with why), and the rollouts looked at."""

    allowed: list[Selection] = field(default_factory=list)
    held: list[dict[str, str]] = field(default_factory=list)
    rollouts: list[Progress] = field(default_factory=list)
    policy_error: str = ""

    @property
    def wake_at(self) -> datetime | None:
        """The earliest time a rolling rollout moves on by itself (a bake ends), if one does."""
        times = [progress.wake_at for progress in self.rollouts if progress.wake_at is not None]
        return min(times, default=None)

    @property
    def rolling(self) -> bool:
        """Whether some rollout rolls (its runs, once they end, may let it move on)."""
        return any(progress.state.state == ROLLING for progress in self.rollouts)

    def report(self) -> dict[str, Any]:
        """JSON-able, bounded."""
        return {
            "held": {"count": len(self.held), "clusters": self.held[:MAX_LISTED]},
            "rollouts": [_summary(progress) for progress in self.rollouts][:MAX_LISTED],
            **({"rollout_policy_error": self.policy_error} if self.policy_error else {}),
        }


def taking_version(cluster: Cluster, version: str) -> bool:
    """Whether a provision run would bring `cluster` a configuration version it does not have: a provisioned cluster
    whose current version is of another configuration (a first provision is the cluster's own change)."""
    current = config_version_of(cluster.status.current_version)
    return current is not None and current != version


def in_rollouts(cluster: Cluster) -> bool:
    """Whether a cluster counts in its version's rollout: provisioned, not being decommissioned, updates not
    blocked (a blocked cluster would hold its wave for good)."""
    active = cluster.lifecycle_status not in ("decommission-requested", "decommissioned")
    return active and bool(cluster.status.current_version) and not cluster.update_blocked


def rollout_policy(config_uri: str) -> Policy:
    """The fleet's rollout policy, with CLM's clients (clm.rollout.source, imported when a rollout is looked at: the
    run function's cold start does without YAML's)."""
    from clm.rollout.source import fleet_policy

    return fleet_policy(config_uri, client)


def members(
    clusters: Iterable[Cluster], versions: Mapping[str, str], version: str, rollable: Callable[[Cluster], bool]
) -> list[Cluster]:
    """The clusters counted in the rollout of `version`: those reading it that are `rollable`."""
    return [cluster for cluster in clusters if versions.get(cluster.id) == version and rollable(cluster)]


def look(
    clusters: Sequence[Cluster],
    versions: Mapping[str, str],
    store: RolloutStore,
    policy: Policy,
    now: datetime,
) -> list[Progress]:
    """Each rollout of a version some cluster reads, advanced as reconcile would (its start included) and written
    nowhere: `clm rollout status`. A version no rollout was kept for is shown as one starting now."""
    paused = store.pause_of() is not None
    looks = []
    for version in sorted(set(versions.values())):
        kept = store.get(version)
        taking = [c for c in members(clusters, versions, version, in_rollouts) if taking_version(c, version)]
        if kept is None and not taking:
            continue
        state = kept or RolloutState(version, now)
        looks.append(advance(policy, members(clusters, versions, version, in_rollouts), state, now, paused))
    return looks


def gate(
    needing: Sequence[Selection],
    clusters: Mapping[str, Cluster],
    versions: Mapping[str, str],
    rollable: Callable[[Cluster], bool],
    store: RolloutStore,
    policy: Callable[[], Policy],
    now: datetime,
    publish: Callable[[list[RolloutEvent]], None] = lambda events: None,
) -> Gated:
    """Split `needing` (reconcile's selections, in order) into what starts now (the clusters' own changes in that
    order, then those the rollouts admit in their waves' order) and what the rollouts hold; start,
    advance and keep each rollout of a version some cluster takes or that still rolls. `rollable` says whether a
    cluster counts in its version's rollout (provisioned, not blocked, reachable); `policy` is read only when a
    rollout is looked at; `publish` gets each look's events before anything is written."""
    gated = Gated()
    governed: dict[str, list[Selection]] = {version: [] for version in sorted(set(versions.values()))}
    for selection in needing:
        cluster, version = clusters[selection.cluster_id], versions[selection.cluster_id]
        if selection.reason in (OUTDATED, INTERRUPTED) and taking_version(cluster, version):
            governed[version].append(selection)
    kept = {version: store.get(version) for version in governed}
    looked = {v: s for v, s in governed.items() if s or (kept[v] is not None and kept[v].state == ROLLING)}
    chosen = _policy(policy, gated) if looked else None
    paused = bool(looked) and store.pause_of() is not None
    for version, selections in looked.items():
        if chosen is None:
            gated.held += [_held(s, version, f"rollout policy invalid: {gated.policy_error}") for s in selections]
            continue
        before = kept[version]
        progress = advance(chosen, members(clusters.values(), versions, version, rollable),
                           before or RolloutState(version, now), now, paused)  # fmt: skip
        publish(transitions(before, progress.state, progress.waves))  # first: a failed write repeats them, never loses
        state = before or store.start(RolloutState(version, now))
        if progress.state != state:
            store.record_progress(progress.state)
        now_admitted = progress.state
        if store.admit(version, progress.start):  # refused when halted or aborted since the look: none starts
            now_admitted = replace(progress.state, admitted=progress.state.admitted | set(progress.start))
        gated.rollouts.append(progress)
        for selection in selections:
            if now_admitted.holds(selection.cluster_id, paused):
                gated.held.append(_held(selection, version, progress.waiting_for))
    held = {entry["cluster_id"] for entry in gated.held}
    taking = {s.cluster_id: version for version, selections in governed.items() for s in selections}
    own = [selection for selection in needing if selection.cluster_id not in taking]
    order = {cluster_id: index for index, cluster_id in enumerate(_rollout_order(gated.rollouts))}
    resumes = {progress.state.version: progress.state.resumes for progress in gated.rollouts}
    admitted = [
        _after_resumes(s, clusters[s.cluster_id], resumes.get(taking[s.cluster_id], 0), now)
        for s in needing
        if s.cluster_id in taking and s.cluster_id not in held
    ]
    gated.allowed = own + sorted(admitted, key=lambda selection: order.get(selection.cluster_id, len(order)))
    return gated


def _after_resumes(selection: Selection, cluster: Cluster, resumes: int, now: datetime) -> Selection:
    """The selection, named anew after a resume: the run that halted the rollout failed in this time window under
    the same name, and Step Functions would take the retry for that finished execution."""
    if not resumes:
        return selection
    name = execution_name(cluster, resumed_version(selection.desired_version, resumes), now.timestamp())
    return replace(selection, execution_name=name)


def resumed_version(desired: str, resumes: int) -> str:
    """What names a run of `desired` after the rollout's `resumes`-th resume (execution_name's `desired`)."""
    return f"{desired}~resumed-{resumes}"


def _rollout_order(rollouts: Sequence[Progress]) -> list[str]:
    """The clusters of the rollouts in their waves' order."""
    return [cluster_id for progress in rollouts for wave in progress.waves for cluster_id, _ in wave.clusters]


def _policy(policy: Callable[[], Policy], gated: Gated) -> Policy | None:
    """The policy, or None (the error kept in `gated`) when it is invalid: every rollout then holds."""
    try:
        return policy()
    except RolloutPolicyError as exc:
        gated.policy_error = str(exc)
        return None


def _held(selection: Selection, version: str, why: str) -> dict[str, str]:
    return {"cluster_id": selection.cluster_id, "version": version, "waiting_for": why[:300]}


def _summary(progress: Progress) -> dict[str, Any]:
    current = next((wave.name for wave in progress.waves if wave.state in ("rolling", "baking")), "")
    return {
        "version": progress.state.version,
        "state": progress.state.state,
        "wave": current,
        "start": list(progress.start),
        "waiting_for": progress.waiting_for,
        **({"wake_at": format_time(progress.wake_at)} if progress.wake_at else {}),
    }


def governs(cluster: Cluster, desired: str) -> bool:
    """Whether a rollout governs a run bringing `cluster` the cluster version `desired`: it counts in rollouts and
    the run brings it another configuration (not the cluster's own change)."""
    version = config_version_of(desired)
    return version is not None and in_rollouts(cluster) and taking_version(cluster, version)


def run_hold(store: RolloutStore) -> Callable[[Cluster, str], str]:
    """A run's check before it provisions `cluster` to `desired` (a cluster version): why its rollout holds it,
    empty when it may go (a cluster's own change, or one admitted by a rolling, unpaused rollout)."""

    def hold(cluster: Cluster, desired: str) -> str:
        return store.holds(cluster.id, str(config_version_of(desired))) if governs(cluster, desired) else ""

    return hold


def halt_on_failure(
    store: RolloutStore, cluster: Cluster, desired: str, execution: str, problem: Problem
) -> RolloutEvent | None:
    """Halt the rollout of the configuration version a failed run was bringing `cluster` (as it was before the run)
    and return its event; None when the run brought none, its rollout does not roll, or the failure says nothing of
    the version (an operator's block, a newer configuration arriving mid-run: NOT_THE_VERSIONS)."""
    version = config_version_of(desired)
    if version is None or not taking_version(cluster, version) or problem.type.rsplit("/", 1)[-1] in NOT_THE_VERSIONS:
        return None
    halt = Halt(cluster.id, execution, problem.title[:500], utc_now())
    return halted(version, halt) if store.halt(version, halt) else None


def publisher(events_client: Callable[[], Any], bus: str) -> Callable[[list[RolloutEvent]], None]:
    """Publishing rollout events on `bus` (nothing without one); a refusal raises a transient error (the step is
    retried, and its events made again)."""

    def publish(events: list[RolloutEvent]) -> None:
        if not events or not bus:
            return
        pairs = [(event.detail_type, event.detail) for event in events]
        refused = put_events(events_client(), bus, SOURCE, pairs)
        if refused:
            raise RolloutEventsRefused(f"event bus {bus}: rollout events refused: {refused[:5]}")

    return publish


class RolloutEventsRefused(ClmError):
    """EventBridge refused some rollout events (transient: the step is retried)."""

    asl_name = "RolloutEventsRefused"
    transient = True
