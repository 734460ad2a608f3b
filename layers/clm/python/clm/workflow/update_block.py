"""`cluster_update_block` set while a run works: the run stops at its next safe point.

CLM cancels a running update when the item appears (controller/cluster_list.go updateClusters: cancelUpdate), and
its provisioner returns at the next `ctx.Err()` check. Here the safe points are the roll's plan (before the next
node: a node being drained finishes first) and the start of the pools' rolls; the run then fails as any failed run
does: the problem names the block, `next_version` stays, the pools are resumed and the lock released, so the run
continues where it stopped once the item is removed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clm.errors import ClmError
from clm.model import UPDATE_BLOCK_ITEM

if TYPE_CHECKING:
    from clm.model import Cluster


class UpdateBlocked(ClmError):
    """The cluster's updates were blocked (config item cluster_update_block) while its run was working."""

    asl_name = "UpdateBlocked"

    def __init__(self, cluster_id: str, reason: str, where: str):
        shown = f" ({reason!r})" if reason else ""
        super().__init__(
            f"cluster {cluster_id}: updates blocked by config item {UPDATE_BLOCK_ITEM}{shown} during the run; "
            f"stopped {where}; the next run continues from there once the item is removed"
        )


def stop_if_blocked(cluster_id: str, where: str) -> Cluster:
    """The registry's cluster as it is now; UpdateBlocked when it now carries `cluster_update_block`."""
    from clm.aws import client
    from clm.registry.dynamodb import DynamoRegistry  # boto3's DynamoDB types: not at the handler's import
    from clm.workflow.settings import Settings

    cluster = DynamoRegistry(client("dynamodb"), Settings.from_env().registry_table).get(cluster_id)
    ensure_not_blocked(cluster, where)
    return cluster


def ensure_not_blocked(cluster: Cluster, where: str) -> None:
    """Raise UpdateBlocked when `cluster` (as just read from the registry) carries `cluster_update_block`."""
    if UPDATE_BLOCK_ITEM in cluster.config_items:
        raise UpdateBlocked(cluster.id, cluster.config_items[UPDATE_BLOCK_ITEM], where)
