"""Whether an existing stack is CLM's stack of a cluster: checked before every change CLM makes to a stack."""

from __future__ import annotations

from typing import Any

from clm.stacks.errors import StackNotOwned
from clm.stacks.names import owned_tags


def ensure_owned(stack: dict[str, Any], cluster_id: str) -> None:
    """Raise StackNotOwned unless `stack` (as DescribeStacks returns it) carries the tags every stack of the cluster
    is created with (`kubernetes.io/cluster/<id>=owned`, `clm:managed-by=clm`); the error names each one missing."""
    tags = {tag["Key"]: tag["Value"] for tag in stack.get("Tags", [])}
    wanted = owned_tags(cluster_id)
    missing = [f"{key}={value}" for key, value in wanted.items() if tags.get(key) != value]
    if missing:
        raise StackNotOwned(cluster_id, stack["StackName"], missing)
