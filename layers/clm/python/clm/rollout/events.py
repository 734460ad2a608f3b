"""The events a rollout's progress makes (source `clm.rollout` on CLM's bus; schemas in docs/rollouts.md): what
changed between the state kept before a look and the state after it. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clm.rollout.progress import WaveProgress
from clm.rollout.state import COMPLETED, Halt, RolloutState
from clm.timestamps import format_time

SOURCE = "clm.rollout"
STARTED, WAVE_STARTED, WAVE_COMPLETED = "Rollout Started", "Rollout Wave Started", "Rollout Wave Completed"
HALTED, ROLLOUT_COMPLETED = "Rollout Halted", "Rollout Completed"


@dataclass(frozen=True)
class RolloutEvent:
    """One event: its detail type and its detail (JSON-able)."""

    detail_type: str
    detail: dict[str, Any]


def transitions(before: RolloutState | None, after: RolloutState, waves: Sequence[WaveProgress]) -> list[RolloutEvent]:
    """The events of one look: the rollout started (no state kept before), each wave seen started or completed
    for the first time, the rollout completed; in that order."""
    base = {"version": after.version}
    found = [] if before is not None else [RolloutEvent(STARTED, {**base, "at": format_time(after.started_at)})]
    earlier = before.waves if before is not None else {}
    by_name = {wave.name: wave for wave in waves}
    for name, times in after.waves.items():
        was = earlier.get(name)
        wave = by_name.get(name)
        clusters = [cluster_id for cluster_id, _ in wave.clusters] if wave else []
        if times.started_at and not (was and was.started_at):
            detail = {**base, "wave": name, "clusters": clusters, "at": format_time(times.started_at)}
            found.append(RolloutEvent(WAVE_STARTED, detail | {"concurrency": wave.concurrency if wave else 0}))
        if times.completed_at and not (was and was.completed_at):
            detail = {**base, "wave": name, "clusters": clusters, "at": format_time(times.completed_at)}
            bake = {"bake_until": format_time(wave.bake_until)} if wave and wave.bake_until else {}
            found.append(RolloutEvent(WAVE_COMPLETED, detail | bake))
    if after.state == COMPLETED and (before is None or before.state != COMPLETED) and after.completed_at:
        found.append(RolloutEvent(ROLLOUT_COMPLETED, {**base, "at": format_time(after.completed_at)}))
    return found


def halted(version: str, halt: Halt) -> RolloutEvent:
    """The event of a rollout halted by a failed run."""
    return RolloutEvent(HALTED, {"version": version, **halt.to_dict()})
