"""Reconcile: which clusters need a run, in Zalando CLM's priority order, and starting their provision runs.

Priority, as CLM's controller (controller/cluster_list.go) has it: interrupted updates first (a run started and did
not finish), then decommission requests (a decommission-requested cluster counts as one even when an update of it was
interrupted), then clusters whose desired version differs from their current one. Within a priority the higher
`criticality_level` first, then by id: CLM's unmerged pull request #670 (CLM's master takes the least recently
handled; docs/migrating-from-zalando-clm.md). Executions are named from the cluster, its desired version and a time
window, so triggers that arrive together collapse into one run, and a failed run is tried again in the next window.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from clm.model import Cluster
from clm.registry.problems import configuration_problem
from clm.version import desired_version

INTERRUPTED, DECOMMISSION, OUTDATED = "interrupted update", "decommission requested", "outdated"
UNRESOLVABLE = "configuration cannot be resolved"
_PRIORITY = {INTERRUPTED: 0, DECOMMISSION: 1, OUTDATED: 2}
UNRESOLVED_VERSION = "unresolved"  # names the runs of a cluster whose configuration cannot be read
WINDOW_SECONDS = 900
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class Selection:
    """A cluster that needs a run, why, and the execution name for it."""

    cluster_id: str
    reason: str
    desired_version: str
    execution_name: str

    def to_dict(self) -> dict[str, str]:
        """JSON-able."""
        return asdict(self)


def execution_name(cluster: Cluster, desired: str, now: float) -> str:
    """`<local id>-<version hash>-<window>`: at most 80 characters of [A-Za-z0-9_-], as Step Functions wants."""
    suffix = f"-{name_digest(cluster.id, desired)}-{int(now // WINDOW_SECONDS)}"
    return _NAME_UNSAFE.sub("-", cluster.local_id)[: 80 - len(suffix)] + suffix


def name_digest(cluster_id: str, desired: str) -> str:
    """The version hash of the execution names of runs bringing `cluster_id` to `desired` (what names a run's
    cluster and version without reading its input: clm.cli.rollout_runs)."""
    return hashlib.sha256(f"{cluster_id}\n{desired}".encode()).hexdigest()[:12]


def select(clusters: Iterable[Cluster], config_version: str | Callable[[Cluster], str], now: float) -> list[Selection]:
    """The clusters needing a run, highest priority first (then higher criticality, then by id);
    `config_version` may depend on the cluster (its channel)."""
    ranked = []
    for cluster in clusters:
        version = config_version(cluster) if callable(config_version) else config_version
        reason = _reason(cluster, version)
        if reason:
            desired = str(desired_version(cluster, version))
            selection = Selection(cluster.id, reason, desired, execution_name(cluster, desired, now))
            ranked.append(((_PRIORITY[reason], -cluster.criticality_level, cluster.id), selection))
    return [selection for _, selection in sorted(ranked, key=lambda pair: pair[0])]


def select_unresolvable(clusters: Iterable[Cluster], errors: Mapping[str, str], now: float) -> list[Selection]:
    """The runs of the clusters whose configuration cannot be resolved (`errors`: cluster id -> why), decommissions
    first: a decommission goes on (it needs no configuration); any other cluster gets a run that records why on it
    (clm.workflow.run.begin) and ends, unless its last problem says so already. As CLM's controller, which takes
    such a cluster at every pass and records the error (controller/cluster_list.go, controller.go). Decommissioned
    and update-blocked clusters are left out, as by `select`."""
    chosen = []
    for cluster in sorted(clusters, key=lambda c: (-c.criticality_level, c.id)):
        error = errors.get(cluster.id)
        if error is None or cluster.update_blocked or cluster.lifecycle_status == "decommissioned":
            continue
        problems = cluster.status.problems
        if cluster.lifecycle_status == "decommission-requested":
            reason = DECOMMISSION
        elif problems and problems[-1].title == configuration_problem(error):
            continue
        else:
            reason = UNRESOLVABLE
        chosen.append(Selection(cluster.id, reason, "", execution_name(cluster, UNRESOLVED_VERSION, now)))
    return sorted(chosen, key=lambda selection: selection.reason != DECOMMISSION)


def _reason(cluster: Cluster, config_version: str) -> str | None:
    if cluster.lifecycle_status == "decommissioned" or cluster.update_blocked:
        return None
    status = cluster.status
    if cluster.lifecycle_status == "decommission-requested":
        return DECOMMISSION
    if status.next_version and status.next_version != status.current_version:
        return INTERRUPTED
    if status.current_version != str(desired_version(cluster, config_version)):
        return OUTDATED
    return None


def start_runs(
    sfn: Any,
    state_machine_arn: str,
    selections: list[Selection],
    max_running: int,
    running_names: set[str] | None = None,
    in_progress: Collection[str] = (),
) -> dict[str, Any]:
    """Start provision runs for the selections, keeping at most `max_running` executions running
    (`running_names`: those running, as listed; listed now if not given), none for a cluster whose run is going: a
    run to the same version named in another time window (before it takes the lock), or one `in_progress` (a running
    execution holds its lock). A run started beside would only skip; CLM's controller never takes a cluster it is
    updating.

    Returns what was started, what was already started (a run to the same version), what waits for a free slot and
    what waits for its cluster's going run to end (that run brings another version, or one not known): the last two
    are for a later look.
    """
    running_names = running_names_of(sfn, state_machine_arn) if running_names is None else running_names
    running = len(running_names)
    going = {_without_window(name) for name in running_names}
    started, duplicates, deferred, behind = [], [], [], []
    for selection in selections:
        if _without_window(selection.execution_name) in going:
            duplicates.append(selection.cluster_id)  # AWS would answer a same-name start with the running one
            continue
        if selection.cluster_id in in_progress:
            behind.append(selection.cluster_id)
            continue
        if running >= max_running:
            deferred.append(selection.cluster_id)
            continue
        try:
            sfn.start_execution(
                stateMachineArn=state_machine_arn,
                name=selection.execution_name,
                input=json.dumps({"cluster_id": selection.cluster_id, "reason": selection.reason}),
            )
        except sfn.exceptions.ExecutionAlreadyExists:
            duplicates.append(selection.cluster_id)
            continue
        started.append(selection.cluster_id)
        running += 1
    return {"started": started, "already_started": duplicates, "deferred": deferred, "waiting_for_run": behind}


def _without_window(name: str) -> str:
    """An execution name without its time window: the cluster and the version it brings (`execution_name`)."""
    return name.rsplit("-", 1)[0]


def running_names_of(sfn: Any, state_machine_arn: str) -> set[str]:
    """The names of the state machine's running executions."""
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn, statusFilter="RUNNING")
    return {execution["name"] for page in pages for execution in page["executions"]}
