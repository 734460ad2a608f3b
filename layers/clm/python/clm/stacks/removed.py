"""Node-pool stacks of a cluster whose pool is no longer in the registry, for the workflow to drain and delete."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from clm.model import Cluster
from clm.stacks.names import NODE_POOL_PROFILE_TAG, NODE_POOL_TAG, OWNED, cluster_tag_key
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


def node_pool_stacks(cfn: Any, cluster_id: str) -> list[RemovedNodePool]:
    """Every existing stack tagged as a node pool of the cluster, by stack name."""
    cluster_tag = cluster_tag_key(cluster_id)
    found = []
    for page in cfn.get_paginator("describe_stacks").paginate():
        for stack in page["Stacks"]:
            tags = {tag["Key"]: tag["Value"] for tag in stack.get("Tags", [])}
            pool = tags.get(NODE_POOL_TAG)
            if tags.get(cluster_tag) == OWNED and pool is not None and stack["StackStatus"] != DELETED:
                found.append(
                    RemovedNodePool(
                        stack_name=stack["StackName"],
                        node_pool=pool,
                        profile=tags.get(NODE_POOL_PROFILE_TAG, ""),
                        status=stack["StackStatus"],
                    )
                )
    return sorted(found, key=lambda item: item.stack_name)


def removed_node_pools(cfn: Any, cluster: Cluster) -> list[RemovedNodePool]:
    """Stacks tagged as node pools of the cluster whose pool the cluster no longer has, by stack name.

    Delete each with `start_delete` (after draining its nodes) and wait with `check` for `deleted`.
    """
    current = {pool.name for pool in cluster.node_pools}
    return [stack for stack in node_pool_stacks(cfn, cluster.id) if stack.node_pool not in current]
