"""Apply-only runs: stacks, manifests and deletions applied, no node pool rolled, as CLM's `--apply-only`.

CLM (config/config.go flag `apply-only`; provisioner/clusterpy.go provisionNodePoolGroup) provisions every pool's
stack but skips `updater.Update` for masters, workers and Karpenter pools; removed pools are still drained and deleted
(Reconcile). Here the deployment sets it for every cluster (CDK context `clm:applyOnly`: CLM_APPLY_ONLY on the run
function) and a cluster's config item `apply_only` ("true" or "false") overrides it, as `update_strategy` overrides
CLM's flag of that name.

What differs on purpose: CLM records the run's version as current whatever the nodes run, so a later run without
apply-only finds the cluster up to date and never rolls them. Here a run that leaves nodes outdated says so: the run's
plan names the mode, it counts the outdated instances of the pools it did not roll, and then records a problem of
type `apply-only-nodes-outdated` naming them and keeps `current_version` where it was (`next_version` stays the
applied version), so `clm status` shows the cluster behind; the next run without apply-only rolls them. While
apply-only stays on, runs for the same version are skipped (nothing new to apply). A run that leaves no node
outdated records success as any other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from clm.errors import ValidationError
from clm.model import PROBLEM_TYPES, Cluster, Problem

APPLY_ONLY_ENV = "CLM_APPLY_ONLY"  # "true": the deployment's default (CDK context clm:applyOnly)
APPLY_ONLY_ITEM = "apply_only"
PROBLEM_TYPE = PROBLEM_TYPES + "apply-only-nodes-outdated"


def is_apply_only(cluster: Cluster, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether runs of the cluster are apply-only: its config item `apply_only` ("true"/"false"), else the
    deployment's setting; ValidationError naming the cluster and the item for any other value."""
    value = cluster.config_items.get(APPLY_ONLY_ITEM)
    if value is None:
        return environ.get(APPLY_ONLY_ENV) == "true"
    if value not in ("true", "false"):
        problem = f'config item {APPLY_ONLY_ITEM} is {value!r}, expected "true" or "false"'
        raise ValidationError([problem], cluster.id)
    return value == "true"


def left_outdated_problem(version: str, left: Mapping[str, int], execution: str) -> Problem:
    """The problem an apply-only run records when it leaves nodes outdated: pool -> outdated instances."""
    pools = ", ".join(f"{pool} ({count})" for pool, count in sorted(left.items()))
    title = f"apply-only: {sum(left.values())} outdated node(s) not rolled at version {version}: {pools}"
    return Problem(title=title, type=PROBLEM_TYPE, detail=version, instance=execution)


def applied_without_roll(cluster: Cluster, version: str) -> bool:
    """Whether an apply-only run already applied `version` to the cluster and left nodes outdated (its last
    problem says so): a run in apply-only mode has nothing more to do."""
    problems = cluster.status.problems
    return bool(problems) and problems[-1].type == PROBLEM_TYPE and problems[-1].detail == version
