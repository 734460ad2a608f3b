"""Proof that CLM provisioned a cluster, asked before a decommission cleans anything up.

A registry item alone proves nothing: anyone who may write the registry can name another team's cluster. The proof is
the cluster stack, carrying the ownership tags CLM creates it with, alive or deleted (CloudFormation keeps a deleted
stack's description for 90 days, so an interrupted decommission that already deleted it goes on).
"""

from __future__ import annotations

from typing import Any

from clm.errors import ClmError, ValidationError
from clm.model import Cluster
from clm.stacks.cfn import describe_stack
from clm.stacks.names import cluster_stack_name, owned_tags
from clm.stacks.ownership import has_tags

_FILTER_WILDCARDS = frozenset("*?,")


class ClusterNotManaged(ClmError):
    """The cluster has no cluster stack CLM created: a decommission deletes nothing of it."""

    asl_name = "ClusterNotManaged"

    def __init__(self, cluster_id: str, reason: str):
        self.cluster_id = cluster_id
        super().__init__(
            f"cluster {cluster_id}: nothing cleaned up: {reason}; CLM decommissions only clusters it provisioned "
            "(to retire a registry item CLM never provisioned, delete the item)"
        )


def ensure_provisioned(cfn: Any, cluster: Cluster) -> str:
    """Return how CLM's cluster stack proves the cluster is CLM's (`"stack X exists"`, `"stack X deleted"`); raise
    ClusterNotManaged when no stack of that name carries the cluster's ownership tags, alive or deleted."""
    name = cluster_stack_name(cluster)
    wanted = owned_tags(cluster.id)
    live = describe_stack(cfn, name)
    if live is not None:
        if not has_tags(live, wanted):
            raise ClusterNotManaged(cluster.id, f"stack {name} is not CLM's (it lacks {_tags(wanted)})")
        return f"stack {name} exists"
    if _deleted_with_tags(cfn, name, wanted):
        return f"stack {name} deleted"
    raise ClusterNotManaged(cluster.id, f"no stack {name} tagged {_tags(wanted)} exists or was deleted")


def ensure_filter_value(value: str, what: str, cluster_id: str) -> str:
    """Return `value` for an EC2 filter; raise ValidationError when it is empty or holds a filter wildcard (`*`, `?`)
    or a separator (`,`), which would select other clusters' resources."""
    if not value or _FILTER_WILDCARDS & set(value):
        raise ValidationError([f"{what} {value!r} cannot select resources: empty, or holds * ? or ,"], cluster_id)
    return value


def _deleted_with_tags(cfn: Any, name: str, wanted: dict[str, str]) -> bool:
    pages = cfn.get_paginator("list_stacks").paginate(StackStatusFilter=["DELETE_COMPLETE"])
    ids = [s["StackId"] for page in pages for s in page["StackSummaries"] if s["StackName"] == name]
    return any(
        has_tags(stack, wanted) for stack_id in ids for stack in cfn.describe_stacks(StackName=stack_id)["Stacks"]
    )


def _tags(wanted: dict[str, str]) -> str:
    return ", ".join(f"{key}={value}" for key, value in wanted.items())
