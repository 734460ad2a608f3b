"""Advancing a rollout by one look: which clusters may start the version now, and what each wave is doing.

Pure (no AWS; the time is given): everything it decides follows from the policy, the clusters' registry status and
the rollout's kept state, so a decision can be reproduced from the registry alone (docs/rollouts.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from clm.model import Cluster
from clm.rollout.assign import assign
from clm.rollout.policy import Policy
from clm.rollout.state import COMPLETED, ROLLING, RolloutState, WaveTimes
from clm.timestamps import format_time
from clm.version import ClusterVersion

# A cluster in a rollout: at the version; on its way (a run started for it, running or interrupted); not yet.
DONE, STARTED, WAITING = "done", "started", "waiting"
# A wave: not reached yet; its clusters starting or running; every cluster done, baking; baked (or empty).
PENDING, ROLLING_WAVE, BAKING, PASSED = "pending", "rolling", "baking", "passed"


def config_version_of(version: str) -> str | None:
    """The configuration version of a cluster version `<config>#<spec hash>` (None for none)."""
    parsed = ClusterVersion.parse(version)
    return None if parsed is None else parsed.config_version


def cluster_state(cluster: Cluster, version: str) -> str:
    """DONE, STARTED or WAITING: where `cluster` is on its way to configuration `version`."""
    if config_version_of(cluster.status.current_version) == version:
        return DONE
    if config_version_of(cluster.status.next_version) == version:
        return STARTED
    return WAITING


@dataclass(frozen=True)
class WaveProgress:
    """A wave now: its state, its clusters with theirs (in order), its concurrency and when its bake ends."""

    name: str
    state: str
    clusters: tuple[tuple[str, str], ...]
    concurrency: int
    bake_seconds: int
    times: WaveTimes
    bake_until: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {
            "wave": self.name,
            "state": self.state,
            "concurrency": self.concurrency,
            "bake_seconds": self.bake_seconds,
            **self.times.to_dict(),
            **({"bake_until": format_time(self.bake_until)} if self.bake_until else {}),
            "clusters": [{"id": cluster_id, "state": state} for cluster_id, state in self.clusters],
        }


@dataclass(frozen=True)
class Progress:
    """One look's outcome: the state to keep, the waves, the clusters to start now, and why no more start."""

    state: RolloutState
    waves: tuple[WaveProgress, ...]
    start: tuple[str, ...]
    waiting_for: str
    wake_at: datetime | None = None  # when the rollout moves on by itself (a bake ends), if it does

    @property
    def moving(self) -> bool:
        """Whether runs of the rollout start now or go on."""
        return bool(self.start) or any(state == STARTED for wave in self.waves for _, state in wave.clusters)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {
            **self.state.to_dict(),
            "moving": self.moving,
            "start": list(self.start),
            "waiting_for": self.waiting_for,
            **({"wake_at": format_time(self.wake_at)} if self.wake_at else {}),
            "wave_progress": [wave.to_dict() for wave in self.waves],
        }


def advance(
    policy: Policy, clusters: Sequence[Cluster], state: RolloutState, now: datetime, paused: bool = False
) -> Progress:
    """Look at a rollout of `state.version` over `clusters` (the provisioned clusters it concerns, none blocked):
    the first wave not passed is the current one; it starts its waiting clusters, in order, up to its concurrency
    less those started, unless the rollout is halted, aborted or `paused`. A wave passes when all its clusters
    are done and its bake (counted from when that was first seen) has passed; an empty wave, and one with no
    cluster left to take the version after it, passes at once. A completed rollout's stragglers (clusters blocked
    or unreachable until then) start without waves, `max_concurrency` at a time."""
    waves: list[WaveProgress] = []
    start: tuple[str, ...] = ()
    waiting_for, wake_at, current = "", None, False
    assignments = assign(clusters, policy)
    left = [sum(1 for c in a.clusters if cluster_state(c, state.version) != DONE) for a in assignments]
    for index, assignment in enumerate(assignments):
        wave = assignment.wave
        states = tuple((cluster.id, cluster_state(cluster, state.version)) for cluster in assignment.clusters)
        times = state.waves.get(wave.name, WaveTimes())
        progress = WaveProgress(wave.name, PENDING, states, assignment.concurrency, wave.bake_seconds, times)
        if current:
            waves.append(progress)
            continue
        if all(cluster_state_ == DONE for _, cluster_state_ in states):
            if states and times.completed_at is None:
                times = replace(times, started_at=times.started_at or now, completed_at=now)
                state = state.with_wave(wave.name, times)
            ahead = any(left[index + 1 :])  # a bake only holds back a wave with clusters to take the version
            bake_until = times.completed_at + timedelta(seconds=wave.bake_seconds) if states and ahead else None
            if bake_until is not None and now < bake_until:
                current, wake_at = True, bake_until
                baking = f"wave {wave.name} bakes until {format_time(bake_until)}"
                waiting_for = _stopped(state, paused) or baking  # a pause or halt is what it waits for
                waves.append(replace(progress, state=BAKING, times=times, bake_until=bake_until))
            else:
                waves.append(replace(progress, state=PASSED, times=times, bake_until=bake_until))
            continue
        current = True
        start, waiting_for = _starts(assignment.concurrency, states, state, paused, wave.name)
        if start and times.started_at is None:
            times = replace(times, started_at=now)
            state = state.with_wave(wave.name, times)
        waves.append(replace(progress, state=ROLLING_WAVE, times=times))
    if not current and state.state == ROLLING:
        state = replace(state, state=COMPLETED, completed_at=state.completed_at or now)
    if state.state == COMPLETED and not paused:  # stragglers (unblocked since): the fleet has proven the version
        start, waiting_for, wake_at = _stragglers(policy, waves), "", None
    return Progress(state, tuple(waves), start, waiting_for or f"nothing: rollout {state.state}", wake_at)


def _stragglers(policy: Policy, waves: list[WaveProgress]) -> tuple[str, ...]:
    """A completed rollout's clusters not yet at the version, in waves' order, up to the policy's bound with those
    started."""
    states = [(cluster_id, state) for wave in waves for cluster_id, state in wave.clusters]
    started = sum(1 for _, state in states if state == STARTED)
    waiting = [cluster_id for cluster_id, state in states if state == WAITING]
    return tuple(waiting[: max(0, policy.max_concurrency - started)])


def _stopped(state: RolloutState, paused: bool) -> str:
    """Why the rollout starts nothing whatever its waves say (halted, aborted, paused); empty when it rolls."""
    if state.state != ROLLING:
        reason = f": {state.halt.cluster_id}: {state.halt.problem}" if state.halt else ""
        return f"rollout {state.state}{reason}"
    return "rollout paused (clm rollout resume)" if paused else ""


def _starts(
    concurrency: int, states: tuple[tuple[str, str], ...], state: RolloutState, paused: bool, wave: str
) -> tuple[tuple[str, ...], str]:
    """The current wave's clusters to start now, and what it waits for."""
    stopped = _stopped(state, paused)
    if stopped:
        return (), stopped
    started = sum(1 for _, cluster_state_ in states if cluster_state_ == STARTED)
    waiting = [cluster_id for cluster_id, cluster_state_ in states if cluster_state_ == WAITING]
    start = tuple(waiting[: max(0, concurrency - started)])
    left = len(waiting) - len(start)
    return start, f"wave {wave}: {started + len(start)} of its clusters running, {left} waiting" if left else (
        f"wave {wave}: its runs"
    )
