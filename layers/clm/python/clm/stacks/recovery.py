"""What `start` does with a stack left broken by an earlier run.

A node-pool stack in ROLLBACK_COMPLETE (its create failed) is deleted and created again on the next call;
UPDATE_ROLLBACK_FAILED gets continue_update_rollback, once per failed update (when the continued rollback
fails too, the stack is UPDATE_ROLLBACK_FAILED a second time). Anything else, the cluster stack in
ROLLBACK_COMPLETE included, is reported for a human.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from clm.stacks.cfn import error_message, role_argument
from clm.stacks.delete import start_delete
from clm.stacks.errors import ClusterStackRolledBack, StackNeedsAttention, StackRejected
from clm.stacks.events import first_failure, stack_status_count
from clm.stacks.ownership import ensure_owned
from clm.stacks.results import StartResult
from clm.stacks.spec import StackSpec
from clm.stacks.status import ROLLBACK_FAILED_UPDATE, ROLLED_BACK_CREATE


def recover(cfn: Any, spec: StackSpec, stack: dict[str, Any], role_arn: str | None = None) -> StartResult:
    """Repair the stack where CLM may (with CloudFormation's service role `role_arn`), or raise
    StackNeedsAttention naming the first failed resource. The caller has checked that CLM owns the stack."""
    status = stack["StackStatus"]
    if status == ROLLED_BACK_CREATE and spec.node_pool is not None:
        start_delete(cfn, spec.name, spec.cluster_id, role_arn, partial(ensure_owned, wanted=spec.owner_tags))
        return StartResult(spec.name, "recreating", status, stack["StackId"])
    if status == ROLLBACK_FAILED_UPDATE and stack_status_count(cfn, stack, status) < 2:
        try:
            cfn.continue_update_rollback(StackName=stack["StackId"], **role_argument(role_arn))
        except ClientError as exc:
            raise StackRejected(spec.cluster_id, spec.name, "continue_update_rollback", error_message(exc)) from None
        return StartResult(spec.name, "rollback_continued", status, stack["StackId"])
    error = ClusterStackRolledBack if status == ROLLED_BACK_CREATE else StackNeedsAttention
    raise error(spec.cluster_id, spec.name, status, first_failure(cfn, stack), stack.get("StackStatusReason", ""))
