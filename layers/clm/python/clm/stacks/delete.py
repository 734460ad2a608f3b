"""Start deleting a stack CLM may delete (termination protection off first); `check` waits for `deleted`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from clm.stacks.cfn import describe_stack, error_message, role_argument
from clm.stacks.errors import StackRejected
from clm.stacks.ownership import ensure_owned
from clm.stacks.results import DeleteResult
from clm.stacks.status import DELETING


def start_delete(
    cfn: Any,
    stack_name: str,
    cluster_id: str,
    role_arn: str | None = None,
    ensure: Callable[[dict[str, Any], str], None] = ensure_owned,
) -> DeleteResult:
    """Delete the stack with CloudFormation's service role `role_arn` unless it is gone or already being deleted;
    returns at once. Raises StackNotOwned, changing nothing, when `ensure` refuses the stack (by default: it lacks
    the cluster's ownership tags; without a role, DeleteStack would run with whatever role the stack was last
    given)."""
    stack = describe_stack(cfn, stack_name)
    if stack is None:
        return DeleteResult(stack_name, "absent")
    ensure(stack, cluster_id)
    status = stack["StackStatus"]
    if status == DELETING:
        return DeleteResult(stack_name, "waiting", status)
    try:
        if stack.get("EnableTerminationProtection"):
            cfn.update_termination_protection(StackName=stack["StackId"], EnableTerminationProtection=False)
        cfn.delete_stack(StackName=stack["StackId"], **role_argument(role_arn))
    except ClientError as exc:
        raise StackRejected(cluster_id, stack_name, "delete", error_message(exc)) from None
    return DeleteResult(stack_name, "delete_started", status)
