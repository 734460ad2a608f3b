"""Where a cluster lives (its target) and where CLM runs (the deployment's account and region).

The workflows act in each cluster's target (clm.workflow.target_aws). `clm plan` still acts with the caller's
credentials, in their account and region, and refuses a cluster elsewhere (`refusal`, ONLY_HERE); `clm registry
import|set` judge by the deployed hub's settings (clm.cli.hub).
"""

from __future__ import annotations

import functools
from typing import Any

from clm.aws import client
from clm.model import Cluster
from clm.targets import Target

ONLY_HERE = "CLM acts only in its own account and region"  # the CLI's, with the caller's credentials


def of_cluster(cluster: Cluster) -> Target:
    """The account of the cluster's `infrastructure_account` (aws:<12 digits>) and its `region`."""
    return Target(cluster.account_id, cluster.region)


def of_caller(sts: Any, region: str) -> Target:
    """The account of the credentials of `sts` (a boto3 STS client: GetCallerIdentity, which needs no permission)
    in `region`."""
    return Target(sts.get_caller_identity()["Account"], region)


def deployment() -> Target:
    """The deployment's own account and region, for its functions: the STS caller identity, asked once per container
    and credentials (steps see no Lambda context), in the region CLM's clients call (the function's AWS_REGION)."""
    return _deployment(client("sts"))


@functools.cache
def _deployment(sts: Any) -> Target:
    return of_caller(sts, sts.meta.region_name)


def refusal(cluster: Cluster, home: Target) -> str:
    """Why CLM, running in `home`, refuses `cluster` (to be followed by ONLY_HERE), naming the cluster, its fields that
    differ and `home`; empty when the cluster is in `home`."""
    where = of_cluster(cluster)
    fields = [
        f"{name} {value}"
        for name, value, differs in (
            ("infrastructure_account", cluster.infrastructure_account, where.account != home.account),
            ("region", cluster.region, where.region != home.region),
        )
        if differs
    ]
    if not fields:
        return ""
    return (
        f"cluster {cluster.id}: {' and '.join(fields)} {'are' if len(fields) > 1 else 'is'} not this deployment's "
        f"({home})"
    )


def moved(cluster: Cluster, placed: Target) -> str:
    """Why a provision of `cluster`, whose resources are in `placed`, is refused now that its registry item names
    another account or region (CLM does not move a cluster)."""
    return (
        f"cluster {cluster.id}: its registry item names {of_cluster(cluster)}, but CLM provisioned it in {placed}: "
        "CLM does not move a cluster; restore infrastructure_account and region, or decommission it (it is "
        "decommissioned where it was provisioned) and register it anew"
    )
