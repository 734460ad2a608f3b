"""The first failed resource of a stack's latest operation, read from its events."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

STACK_TYPE = "AWS::CloudFormation::Stack"
# Stack events that open an operation; events older than the newest of them belong to earlier operations.
OPERATION_STARTS = frozenset({"CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "DELETE_IN_PROGRESS", "IMPORT_IN_PROGRESS"})
MAX_EVENT_PAGES = 10  # bounds the Lambda time on stacks with a long history


@dataclass(frozen=True)
class Failure:
    """A resource that failed: logical id, type, status and CloudFormation's reason."""

    resource: str
    resource_type: str
    status: str
    reason: str

    def describe(self) -> str:
        """`resource X (Type) CREATE_FAILED: reason`."""
        return f"resource {self.resource} ({self.resource_type}) {self.status}: {self.reason}"

    def to_dict(self) -> dict[str, str]:
        """Plain dict for Step Functions payloads."""
        return asdict(self)


def first_failure(cfn: Any, stack: dict[str, Any]) -> Failure | None:
    """The oldest failed resource event of the stack's latest operation, or None when no resource failed.

    `stack` is the stack as describe_stacks returns it.
    """
    found: Failure | None = None
    stack_name = stack["StackName"]
    pages = cfn.get_paginator("describe_stack_events").paginate(StackName=stack["StackId"])
    for number, page in enumerate(pages):
        for event in page["StackEvents"]:  # newest first
            status = event.get("ResourceStatus", "")
            if _is_stack_itself(event, stack_name):
                if status in OPERATION_STARTS:
                    return found
                continue
            if status.endswith("_FAILED"):
                found = Failure(
                    resource=event["LogicalResourceId"],
                    resource_type=event.get("ResourceType", ""),
                    status=status,
                    reason=event.get("ResourceStatusReason", ""),
                )
        if number + 1 >= MAX_EVENT_PAGES:
            break
    return found


def _is_stack_itself(event: dict[str, Any], stack_name: str) -> bool:
    return event.get("ResourceType") == STACK_TYPE and event.get("LogicalResourceId") == stack_name
