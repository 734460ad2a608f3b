"""The start and end of a cluster run: decide what to do, hold the cluster's lock, record the outcome."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from clm.errors import ConfigSourceError, LockHeld, ValidationError
from clm.model import PROBLEM_TYPES, Cluster, Problem
from clm.registry.dynamodb import DynamoRegistry
from clm.registry.problems import configuration_problem
from clm.rolling.strategy import update_strategy
from clm.targets import Target
from clm.version import ClusterVersion, desired_version, spec_hash
from clm.workflow import placement, target_aws
from clm.workflow.apply_only import applied_without_roll, left_outdated_problem

PROVISION, DECOMMISSION, SKIP = "provision", "decommission", "skip"


@dataclass(frozen=True)
class RunPlan:
    """What a run does to a cluster, and why; `target`: the cluster's account and region, where every step acts."""

    cluster_id: str
    action: str
    reason: str
    desired_version: str = ""
    target: dict[str, str] = field(default_factory=dict)
    apply_only: bool = False  # no node pool is rolled (clm.workflow.apply_only)
    left_outdated: dict[str, int] = field(default_factory=dict)  # apply-only: pool -> outdated instances not rolled

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, for the workflow payload."""
        return asdict(self)


def begin(
    registry: DynamoRegistry,
    config_version: str | Callable[[Cluster], str],
    cluster_id: str,
    execution: str,
    is_running: Callable[[str], bool],
    wake: Callable[[], list[str]] | None = None,
    reach: Callable[[str, Target], str] = target_aws.refusal,
    hold: Callable[[Cluster, str], str] | None = None,
    apply_only: Callable[[Cluster], bool] = lambda _: False,
) -> RunPlan:
    """Decide whether the cluster needs a provision or decommission run; if so take its lock.

    Nothing to do (up to date, update blocked, decommissioned, or another running execution holds the
    lock) gives a `skip` plan; so does an item the registry cannot read as a cluster (its problem recorded): a
    duplicate trigger ends quietly instead of recording a problem. When the lock is held, `wake` (if given) wakes
    the holder's parked drains and names their nodes. A cluster whose `update_strategy` is unknown is a problem on
    the cluster and a `skip`, before any AWS call. A cluster whose target
    the hub may not or cannot reach (`reach` says why) is a problem on the cluster and a `skip`, before any other AWS
    call for it. A provision records where the cluster's resources are made; a registry edit of its account or region
    after that is refused (a problem), and its decommission acts where they are. A provision that its rollout holds
    (`hold` says why: the cluster's wave has not come, the rollout is halted or paused) is a `skip`. `apply_only`
    says whether the cluster's runs roll no node (clm.workflow.apply_only): its plan says so, and a version such a run
    applied already is a `skip`; a bad `apply_only` item is a problem on the cluster and a `skip`.
    """
    try:
        cluster = registry.get(cluster_id)
    except ValidationError as exc:  # a bad item is that cluster's problem (its status is still written), stops no other
        registry.record_problem(cluster_id, Problem(title=f"registry: {exc}", instance=execution))
        return RunPlan(cluster_id, SKIP, f"registry item invalid: {exc}")
    target = placement.of_cluster(cluster)
    if cluster.lifecycle_status == "decommissioned":
        return RunPlan(cluster_id, SKIP, "cluster is decommissioned", target=asdict(target))
    placed = registry.placement(cluster_id)
    if placed is not None and placed != target:
        if cluster.lifecycle_status == "decommission-requested":
            target = placed  # its resources are where it was provisioned, whatever the registry says now
        else:  # CLM does not move a cluster: a registry edit would orphan its resources and provision a copy
            title = f"target: {placement.moved(cluster, placed)}"
            registry.record_problem(cluster_id, Problem(title=title, instance=execution))
            return RunPlan(cluster_id, SKIP, title, target=asdict(placed))
    where = asdict(target)
    if cluster.lifecycle_status != "decommission-requested" and (settings := _settings_problem(cluster)):
        registry.record_problem(cluster_id, Problem(title=configuration_problem(settings), instance=execution))
        return RunPlan(cluster_id, SKIP, f"configuration: {settings}", target=where)
    refused = reach(cluster_id, target)
    if refused:  # recorded on the cluster as a configuration problem is; no lock, no AWS call for the cluster
        title = f"target: {refused}"
        registry.record_problem(cluster_id, Problem(title=title, instance=execution))
        return RunPlan(cluster_id, SKIP, title, target=where)
    if cluster.update_blocked:
        return RunPlan(cluster_id, SKIP, "updates blocked by config item cluster_update_block", target=where)
    try:
        desired = str(desired_version(cluster, config_version(cluster) if callable(config_version) else config_version))
    except ConfigSourceError as exc:  # e.g. a channel or override_channel naming no branch or prefix
        if cluster.lifecycle_status != "decommission-requested":  # a decommission needs no configuration
            # As CLM's controller (cluster_list.go): a problem on the cluster, not only a failed execution.
            registry.record_problem(cluster_id, Problem(title=configuration_problem(str(exc)), instance=execution))
            return RunPlan(cluster_id, SKIP, f"configuration cannot be read: {exc}", target=where)
        desired = ""
    try:
        no_roll = cluster.lifecycle_status != "decommission-requested" and apply_only(cluster)
    except ValidationError as exc:
        registry.record_problem(cluster_id, Problem(title=f"configuration: {exc}", instance=execution))
        return RunPlan(cluster_id, SKIP, f"configuration: {exc}", desired, where)
    if cluster.lifecycle_status == "decommission-requested":
        action, reason = DECOMMISSION, "decommission requested"
    elif cluster.status.current_version == desired:
        return RunPlan(cluster_id, SKIP, f"up to date at {desired}", desired, where)
    elif no_roll and applied_without_roll(cluster, desired):
        return RunPlan(cluster_id, SKIP, f"applied at {desired} in apply-only mode; nodes not rolled", desired, where)
    elif held := (hold(cluster, desired) if hold else ""):
        return RunPlan(cluster_id, SKIP, f"held by its rollout: {held}", desired, where)
    else:
        action, reason = PROVISION, f"{cluster.status.current_version or 'never provisioned'} -> {desired}"
    try:
        registry.acquire_lock(cluster_id, execution, is_running)
    except LockHeld as held:
        woken = wake() if wake else []
        note = f"; woke its parked drains of {', '.join(woken)}" if woken else ""
        reason = f"execution {held.holder} is already running for this cluster{note}"
        return RunPlan(cluster_id, SKIP, reason, desired, where)
    if action == PROVISION:
        registry.record_placement(cluster_id, target)
        registry.start_update(cluster_id, desired)
    if no_roll and action == PROVISION:
        reason += " (apply-only: stacks and manifests, no node pool rolled)"
    return RunPlan(cluster_id, action, reason, desired, where, apply_only=no_roll and action == PROVISION)


def _settings_problem(cluster: Cluster) -> str:
    """What is wrong with the cluster's run settings in its config items (`update_strategy`), or ""."""
    try:
        update_strategy(cluster.config_items, cluster.id)
    except ValidationError as exc:
        return str(exc)
    return ""


def succeed(registry: DynamoRegistry, plan: RunPlan, execution: str, version: str) -> None:
    """Record the outcome of a successful run and release the lock (safe to repeat); an apply-only run that left
    nodes outdated records that as a problem instead of the version (clm.workflow.apply_only)."""
    if plan.action == DECOMMISSION:
        registry.record_decommissioned(plan.cluster_id)
    elif plan.apply_only and any(plan.left_outdated.values()):  # not up to date: current_version stays
        registry.record_problem(plan.cluster_id, left_outdated_problem(version, plan.left_outdated, execution))
    else:  # a cluster's first successful provision makes it ready (a spec change: the next run follows, as in CLM)
        first = registry.get(plan.cluster_id).is_new
        registry.record_success(plan.cluster_id, version, mark_ready=first)
    registry.release_lock(plan.cluster_id, execution)


def changed_meanwhile(plan: RunPlan, cluster: Cluster) -> bool:
    """Whether a provision run's cluster, as the registry has it now, has another spec than the run brought: a change
    made during the run, whose own run skipped while this one held the lock."""
    brought = ClusterVersion.parse(plan.desired_version)
    return plan.action == PROVISION and brought is not None and spec_hash(cluster) != brought.spec_hash


def fail(registry: DynamoRegistry, cluster_id: str, execution: str, error: str, cause: str, step: str = "") -> Problem:
    """Record a failed run's error as a problem on the cluster (naming the `step` when known); `next_version` and
    the lock stay (the caller releases it once the failure's consequences are recorded)."""
    error, cause = innermost_error(error, cause)
    title = f"step {step}: {error_title(error, cause)}" if step else error_title(error, cause)
    problem = Problem(title=title, type=PROBLEM_TYPES + error, instance=execution)
    registry.record_problem(cluster_id, problem)
    return problem


def innermost_error(error: str, cause: str) -> tuple[str, str]:
    """The error of the child workflow that failed, when `cause` describes its execution (startExecution.sync:2)."""
    try:
        details = json.loads(cause)
    except (TypeError, ValueError):
        return error, cause
    if isinstance(details, dict) and details.get("ExecutionArn") and details.get("Error"):
        return innermost_error(details["Error"], details.get("Cause") or "")
    return error, cause


def error_title(error: str, cause: str) -> str:
    """The readable message of a Step Functions error: a Lambda error's errorMessage, or the cause itself."""
    try:
        details = json.loads(cause)
    except (TypeError, ValueError):
        details = None
    if isinstance(details, dict) and details.get("errorMessage"):
        return f"{error}: {details['errorMessage']}"
    return f"{error}: {cause}" if cause else error
