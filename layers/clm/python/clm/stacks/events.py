"""The first failure of a stack's latest operation, read from its events."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

STACK_TYPE = "AWS::CloudFormation::Stack"
# Stack events that open an operation; events older than the newest of them belong to earlier operations.
OPERATION_STARTS = frozenset({"CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "DELETE_IN_PROGRESS", "IMPORT_IN_PROGRESS"})
MAX_EVENT_PAGES = 10  # bounds the Lambda time on stacks with a long history


@dataclass(frozen=True)
class Failure:
    """A failed resource (or the stack itself): logical id, type, status and CloudFormation's reason."""

    resource: str
    resource_type: str
    status: str
    reason: str

    def describe(self) -> str:
        """`resource X (Type) CREATE_FAILED: reason`."""
        return f"resource {self.resource} ({self.resource_type}) {self.status}: {self.reason}"


def first_failure(cfn: Any, stack: dict[str, Any]) -> Failure | None:
    """The first failure of the stack's latest operation, or None when nothing failed.

    That is the oldest failed resource; when no resource failed, the stack's own reason for failing or rolling
    back (a missing export, for one). `stack` is the stack as describe_stacks returns it.
    """
    resource_failure = stack_failure = None
    for event in _latest_operation(cfn, stack):  # newest first, so the last match is the oldest
        status, reason = event.get("ResourceStatus", ""), event.get("ResourceStatusReason", "")
        failing = status.endswith("_FAILED")
        if not _is_stack_itself(event, stack["StackName"]):
            resource_failure = _failure(event) if failing else resource_failure
        elif reason and (failing or status.endswith("ROLLBACK_IN_PROGRESS")):
            stack_failure = _failure(event)
    return resource_failure or stack_failure


def stack_status_count(cfn: Any, stack: dict[str, Any], status: str) -> int:
    """How often the stack itself reached `status` since its latest operation started."""
    return sum(
        1
        for event in _latest_operation(cfn, stack)
        if _is_stack_itself(event, stack["StackName"]) and event.get("ResourceStatus") == status
    )


def _latest_operation(cfn: Any, stack: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The stack's events since its latest operation started, newest first."""
    pages = cfn.get_paginator("describe_stack_events").paginate(StackName=stack["StackId"])
    for page in itertools.islice(pages, MAX_EVENT_PAGES):
        for event in page["StackEvents"]:
            if _is_stack_itself(event, stack["StackName"]) and event.get("ResourceStatus") in OPERATION_STARTS:
                return
            yield event


def _failure(event: dict[str, Any]) -> Failure:
    return Failure(
        resource=event["LogicalResourceId"],
        resource_type=event.get("ResourceType", ""),
        status=event.get("ResourceStatus", ""),
        reason=event.get("ResourceStatusReason", ""),
    )


def _is_stack_itself(event: dict[str, Any], stack_name: str) -> bool:
    return event.get("ResourceType") == STACK_TYPE and event.get("LogicalResourceId") == stack_name
