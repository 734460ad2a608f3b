"""What is kept of a rollout between reconciles: the configuration version it rolls out, whether it rolls, is
halted (by which cluster's failed run) or aborted, and when each wave was seen to start and to complete.
Stored by clm.registry.rollouts; advanced by clm.rollout.progress (docs/rollouts.md)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from clm.timestamps import format_time, parse_time

ROLLING, HALTED, ABORTED, COMPLETED = "rolling", "halted", "aborted", "completed"
STATES = (ROLLING, HALTED, ABORTED, COMPLETED)
KEY_PREFIX = "rollout#"  # `#` is never part of a cluster id (clm.model.CLUSTER_ID_RE): no item of both kinds
PAUSE_KEY = f"{KEY_PREFIX}pause"


def rollout_key(version: str) -> str:
    """The registry key of the rollout of configuration `version` (a digest: versions may be long)."""
    return f"{KEY_PREFIX}v-{hashlib.sha256(version.encode()).hexdigest()[:32]}"


@dataclass(frozen=True)
class Halt:
    """Why a rollout stopped: the cluster, the execution, and the problem its run recorded."""

    cluster_id: str
    execution: str
    problem: str
    at: datetime

    def to_dict(self) -> dict[str, str]:
        """JSON-able."""
        return {
            "cluster_id": self.cluster_id,
            "execution": self.execution,
            "problem": self.problem,
            "at": format_time(self.at),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Halt:
        """Read what `to_dict` wrote."""
        return cls(str(data["cluster_id"]), str(data["execution"]), str(data["problem"]), parse_time(data["at"]))


@dataclass(frozen=True)
class WaveTimes:
    """When a wave was first seen started (a run of it allowed) and complete (every cluster at the version)."""

    started_at: datetime | None = None
    completed_at: datetime | None = None

    def to_dict(self) -> dict[str, str]:
        """JSON-able; unset times left out."""
        times = {"started_at": self.started_at, "completed_at": self.completed_at}
        return {name: format_time(moment) for name, moment in times.items() if moment is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WaveTimes:
        """Read what `to_dict` wrote."""
        return cls(*(parse_time(data[name]) if data.get(name) else None for name in ("started_at", "completed_at")))


@dataclass(frozen=True)
class RolloutState:
    """A rollout of one configuration version."""

    version: str
    started_at: datetime
    state: str = ROLLING
    halt: Halt | None = None
    waves: dict[str, WaveTimes] = field(default_factory=dict)
    completed_at: datetime | None = None
    admitted: frozenset[str] = frozenset()  # the clusters reconcile let start the version (runs check it)
    resumes: int = 0  # how often a halt was lifted (reconcile's runs after a resume are new executions)

    @property
    def key(self) -> str:
        """Its registry key."""
        return rollout_key(self.version)

    def with_wave(self, name: str, times: WaveTimes) -> RolloutState:
        """A copy with wave `name`'s times replaced."""
        return replace(self, waves={**self.waves, name: times})

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, as stored."""
        data: dict[str, Any] = {
            "version": self.version,
            "started_at": format_time(self.started_at),
            "state": self.state,
            "waves": {name: times.to_dict() for name, times in self.waves.items()},
        }
        if self.halt is not None:
            data["halt"] = self.halt.to_dict()
        if self.completed_at is not None:
            data["completed_at"] = format_time(self.completed_at)
        if self.admitted:
            data["admitted"] = sorted(self.admitted)
        if self.resumes:
            data["resumes"] = self.resumes
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RolloutState:
        """Read what `to_dict` wrote; ValueError (or KeyError) for what it never writes."""
        state = str(data.get("state") or ROLLING)
        if state not in STATES:
            raise ValueError(f"rollout state {state!r}: one of {', '.join(STATES)}")
        return cls(
            version=str(data["version"]),
            started_at=parse_time(data["started_at"]),
            state=state,
            halt=Halt.from_dict(data["halt"]) if data.get("halt") else None,
            waves={str(name): WaveTimes.from_dict(times) for name, times in (data.get("waves") or {}).items()},
            completed_at=parse_time(data["completed_at"]) if data.get("completed_at") else None,
            admitted=frozenset(str(cluster_id) for cluster_id in data.get("admitted") or ()),
            resumes=int(data.get("resumes") or 0),
        )

    def holds(self, cluster_id: str, paused: bool) -> str:
        """Why a run may not bring this version to `cluster_id` now (empty: it may)."""
        if cluster_id not in self.admitted:
            return f"waits for its wave in the rollout of configuration {self.version} (clm rollout status)"
        if self.state not in (ROLLING, COMPLETED):  # a completed rollout's stragglers go (see clm.rollout.progress)
            why = f": {self.halt.cluster_id}: {self.halt.problem}" if self.halt else ""
            return f"the rollout of configuration {self.version} is {self.state}{why}"
        return "rollouts are paused (clm rollout resume)" if paused else ""
