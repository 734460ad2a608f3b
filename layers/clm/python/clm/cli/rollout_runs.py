"""The provision runs of a rollout's clusters, from the provision state machine's executions: when each started and
ended and how, for `clm rollout status` (its picture and `-o json`); the rollout state keeps per-wave times only.

The calls are bounded (docs/rollouts.md): ListExecutions pages (1,000 executions each, newest first) back to the
oldest rollout's start; a run reconcile started is told by its name, whose hash names the cluster and the version
(clm.workflow.reconcile.execution_name), so it costs no further call; a run started otherwise (`clm provision`) is
told by its input, one DescribeExecution each, at most MAX_DESCRIBED of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clm.cli.executions import input_cluster
from clm.model import Cluster
from clm.rollout.progress import Progress
from clm.timestamps import format_time
from clm.version import desired_version
from clm.workflow.reconcile import name_digest
from clm.workflow.rollout_gate import resumed_version

PAGE = 1000
MAX_DESCRIBED = 50
RECONCILE_NAME = re.compile(r"-([0-9a-f]{12})-\d+$")  # execution_name's `-<version hash>-<window>`


@dataclass(frozen=True)
class Run:
    """One execution for a cluster: its name, when it started and stopped (None: running) and its status."""

    execution: str
    started_at: datetime
    stopped_at: datetime | None
    status: str

    def to_dict(self) -> dict[str, str]:
        """JSON-able (no `stopped_at` while it runs)."""
        stopped = {"stopped_at": format_time(self.stopped_at)} if self.stopped_at else {}
        started = format_time(self.started_at)
        return {"execution": self.execution, "started_at": started, **stopped, "status": self.status}


@dataclass(frozen=True)
class Rollout:
    """What runs are looked for: a rollout's configuration version, start, resumes and clusters."""

    version: str
    started_at: datetime
    resumes: int
    clusters: tuple[Cluster, ...]


@dataclass
class Runs:
    """The runs found per cluster (oldest first), the calls made, the executions whose input was read and those
    left unread past the bound."""

    by_cluster: dict[str, list[Run]] = field(default_factory=dict)
    calls: int = 0
    described: int = 0
    not_described: int = 0


def rollout_runs(sfn: Any, state_machine_arn: str, rollouts: Sequence[Rollout]) -> Runs:
    """The runs of the `rollouts`' clusters since the oldest rollout started (see the module's bound)."""
    runs = Runs()
    if not rollouts:
        return runs
    since = min(rollout.started_at for rollout in rollouts)
    digests = {digest: cluster_id for rollout in rollouts for digest, cluster_id in _digests(rollout)}
    members = {cluster.id for rollout in rollouts for cluster in rollout.clusters}
    for execution in _executions_since(sfn, state_machine_arn, since, runs):
        named = RECONCILE_NAME.search(execution["name"])
        if named:  # reconcile's run: of a rollout's cluster or of nothing looked for
            cluster_id = digests.get(named[1])
        elif runs.described < MAX_DESCRIBED:
            runs.described, runs.calls = runs.described + 1, runs.calls + 1
            cluster_id = input_cluster(sfn, execution["executionArn"])
        else:
            runs.not_described += 1
            continue
        if cluster_id in members:
            runs.by_cluster.setdefault(cluster_id, []).append(_run(execution))
    for found in runs.by_cluster.values():
        found.sort(key=lambda run: run.started_at)
    return runs


def _digests(rollout: Rollout) -> Iterable[tuple[str, str]]:
    """The name hashes of the runs reconcile starts for the rollout's clusters, before and after each resume."""
    for cluster in rollout.clusters:
        desired = str(desired_version(cluster, rollout.version))
        for resumes in range(rollout.resumes + 1):
            yield name_digest(cluster.id, resumed_version(desired, resumes) if resumes else desired), cluster.id


def _executions_since(sfn: Any, state_machine_arn: str, since: datetime, runs: Runs) -> Iterable[dict[str, Any]]:
    """The state machine's executions started at or after `since`: pages newest first until one reaches back."""
    request: dict[str, Any] = {"stateMachineArn": state_machine_arn, "maxResults": PAGE}
    while True:
        page = sfn.list_executions(**request)
        runs.calls += 1
        executions = page["executions"]
        yield from (execution for execution in executions if execution["startDate"] >= since)
        if not page.get("nextToken") or any(execution["startDate"] < since for execution in executions):
            return
        request["nextToken"] = page["nextToken"]


def _run(execution: dict[str, Any]) -> Run:
    return Run(execution["name"], execution["startDate"], execution.get("stopDate"), execution["status"])


def rollouts_of(progresses: Sequence[Progress], clusters: Sequence[Cluster]) -> list[Rollout]:
    """What to look runs up for: each rollout looked at, with its clusters (those in its waves)."""
    by_id = {cluster.id: cluster for cluster in clusters}
    return [
        Rollout(
            progress.state.version,
            progress.state.started_at,
            progress.state.resumes,
            tuple(by_id[cluster_id] for wave in progress.waves for cluster_id, _ in wave.clusters),
        )
        for progress in progresses
    ]


def with_runs(rollouts: Sequence[dict[str, Any]], runs: Runs) -> None:
    """Add each cluster's `runs` (JSON-able) to the rollouts' `wave_progress` (Progress.to_dict), in place."""
    for rollout in rollouts:
        for wave in rollout["wave_progress"]:
            for cluster in wave["clusters"]:
                cluster["runs"] = [run.to_dict() for run in runs.by_cluster.get(cluster["id"], ())]
