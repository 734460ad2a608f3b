"""Parked drains: a drain blocked only by budgets that will not change on their own (every pod healthy)
sleeps until CLM's force rules allow, and a run triggered by a change wakes it sooner.

The roll workflow's ParkDrain state (`lambda:invoke.waitForTaskToken`, timing out when the force rules allow)
calls `park` with its task token, which is kept on the cluster's registry item under the node while the run
holds the cluster's lock. A run that finds the lock held calls `wake` (unless it only continues an interrupted
update, as the schedule does): every parked drain of the cluster takes its next pass at once, so that a fixed
budget, or a person's `clm provision`, is acted on without polling. A wake-up that comes between the drain's
pass and its parking is not lost: `park` sees it (it is later than the moment the pass listed the pods) and
wakes the drain itself.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from clm.timestamps import format_time, utc_now

if TYPE_CHECKING:
    from clm.registry.dynamodb import DynamoRegistry

# SendTaskSuccess for a drain that is no longer parked: it timed out, or its execution ended.
TOKEN_GONE = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})


def park(
    registry: DynamoRegistry, sfn: Any, cluster_id: str, node: str, token: str, execution: str, parking: dict[str, Any]
) -> dict[str, Any]:
    """Keep the drain's task token under `node` until `parking["seconds"]` from now; wake it at once if a
    wake-up came after `parking["since"]`. The result holds no token."""
    until = format_time(utc_now() + timedelta(seconds=int(parking["seconds"])))
    woken_at = registry.park(cluster_id, node, {"token": token, "execution": execution, "until": until})
    if woken_at and woken_at >= parking["since"] and registry.unpark(cluster_id, node, token):
        _resume(sfn, token, f"a run at {woken_at}")
        return {"node": node, "parked": False, "woken_at": woken_at}
    return {"node": node, "parked": True, "until": until}


def wake(registry: DynamoRegistry, sfn: Any, cluster_id: str, by: str) -> list[str]:
    """Wake every drain parked on the cluster; returns the nodes whose drain woke (sorted)."""
    parked = registry.take_parked(cluster_id, format_time(utc_now()))
    return [node for node, entry in sorted(parked.items()) if _resume(sfn, str(entry.get("token", "")), by)]


def _resume(sfn: Any, token: str, by: str) -> bool:
    """End a ParkDrain task now; False when it is no longer waiting."""
    try:
        sfn.send_task_success(taskToken=token, output=json.dumps({"woken_by": by}))
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in TOKEN_GONE:
            raise
        return False
    return True
