"""Node-pool stacks of a cluster whose pool is no longer in the registry, for the workflow to drain and delete.

The stacks are found with ListStacks (by name: `nodepool-<pool>-<cluster>`), then each candidate is described by
name for its tags. DescribeStacks without a StackName would need cloudformation:ListStacks too, and reads every
stack of the account and region; by name it reads only the cluster's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from clm.model import Cluster
from clm.stacks.cfn import describe_stack
from clm.stacks.names import (
    NODE_POOL_PROFILE_TAG,
    NODE_POOL_ROLE_TAG,
    NODE_POOL_TAG,
    OWNED,
    cluster_tag_key,
    may_be_node_pool_stack,
)
from clm.stacks.status import DELETED


@dataclass(frozen=True)
class RemovedNodePool:
    """A node-pool stack left over from a pool that was removed from the cluster."""

    stack_name: str
    node_pool: str
    profile: str
    status: str

    def to_dict(self) -> dict[str, str]:
        """Plain dict for Step Functions payloads."""
        return asdict(self)


def node_pool_stacks(cfn: Any, cluster_id: str, cluster_name: str) -> list[RemovedNodePool]:
    """Every existing stack named and tagged as a node pool of the cluster, by stack name.

    Named by the cluster's id and tagged as CLM tags them (provisioner/node_pools.go Reconcile:
    `kubernetes.io/cluster/<name>=owned`, <name> the cluster's name, Cluster.name, and
    `kubernetes.io/role/node-pool=true`; the pool's name from `kubernetes.io/node-pool`), so the stacks CLM
    created are found as they are.
    """
    cluster_tag = cluster_tag_key(cluster_name)
    found = []
    for name in sorted(_live_stack_names(cfn)):
        if not may_be_node_pool_stack(cluster_id, name):
            continue
        stack = describe_stack(cfn, name)  # None: deleted since it was listed
        tags = {tag["Key"]: tag["Value"] for tag in (stack or {}).get("Tags", [])}
        pool = tags.get(NODE_POOL_TAG)
        if stack and tags.get(cluster_tag) == OWNED and tags.get(NODE_POOL_ROLE_TAG) == "true" and pool is not None:
            found.append(
                RemovedNodePool(
                    stack_name=name,
                    node_pool=pool,
                    profile=tags.get(NODE_POOL_PROFILE_TAG, ""),
                    status=stack["StackStatus"],
                )
            )
    return found


def _live_stack_names(cfn: Any) -> set[str]:
    """The names of the account's and region's stacks in any status but DELETE_COMPLETE."""
    statuses = [status for status in cfn.meta.service_model.shape_for("StackStatus").enum if status != DELETED]
    pages = cfn.get_paginator("list_stacks").paginate(StackStatusFilter=statuses)
    return {summary["StackName"] for page in pages for summary in page["StackSummaries"]}


def removed_node_pools(cfn: Any, cluster: Cluster) -> list[RemovedNodePool]:
    """Stacks tagged as node pools of the cluster whose pool the cluster no longer has, by stack name.

    Delete each with `start_delete` (after draining its nodes) and wait with `check` for `deleted`.
    """
    current = {pool.name for pool in cluster.asg_pools}  # as CLM: a pool now on Karpenter leaves its stack
    return [stack for stack in node_pool_stacks(cfn, cluster.id, cluster.name) if stack.node_pool not in current]
