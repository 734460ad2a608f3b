"""Small CloudFormation helpers: look up one stack, name the service role, read an API error."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError


def describe_stack(cfn: Any, stack_name: str) -> dict[str, Any] | None:
    """The live stack called `stack_name`, or None when there is none (never created, or deleted)."""
    try:
        stacks = cfn.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        if error_code(exc) == "ValidationError" and "does not exist" in error_message(exc):
            return None
        raise
    return stacks[0] if stacks else None


def stack_outputs(cfn: Any, stack_name: str) -> dict[str, str] | None:
    """The live stack's outputs (OutputKey -> OutputValue), None when there is no such stack."""
    stack = describe_stack(cfn, stack_name)
    return None if stack is None else {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs") or []}


def error_code(exc: ClientError) -> str:
    """The AWS error code of a failed call."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def error_message(exc: ClientError) -> str:
    """The AWS error message of a failed call (the exception text when there is none)."""
    return str(exc.response.get("Error", {}).get("Message") or exc)


def role_argument(role_arn: str | None) -> dict[str, str]:
    """`RoleARN` for a call that takes CloudFormation's service role, when CLM has one (its deployment always does)."""
    return {"RoleARN": role_arn} if role_arn else {}
