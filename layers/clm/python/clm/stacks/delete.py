"""Start deleting a stack (termination protection off first); `check` waits for `deleted`."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from clm.stacks.cfn import describe_stack, error_message
from clm.stacks.errors import StackRejected
from clm.stacks.results import DeleteResult
from clm.stacks.status import DELETING


def start_delete(cfn: Any, stack_name: str, cluster_id: str) -> DeleteResult:
    """Delete the stack unless it is gone or already being deleted; returns at once."""
    stack = describe_stack(cfn, stack_name)
    if stack is None:
        return DeleteResult(stack_name, "absent")
    status = stack["StackStatus"]
    if status == DELETING:
        return DeleteResult(stack_name, "waiting", status)
    try:
        if stack.get("EnableTerminationProtection"):
            cfn.update_termination_protection(StackName=stack["StackId"], EnableTerminationProtection=False)
        cfn.delete_stack(StackName=stack["StackId"])
    except ClientError as exc:
        raise StackRejected(cluster_id, stack_name, "delete", error_message(exc)) from None
    return DeleteResult(stack_name, "delete_started", status)
