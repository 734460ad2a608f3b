"""Create or update a stack from a template in S3 and wait for the outcome (moto's CloudFormation; change sets on
existing stacks are broken there, so updates use UpdateStack)."""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError

CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
DONE = ("CREATE_COMPLETE", "UPDATE_COMPLETE")
NO_UPDATES = "No updates are to be performed"


class DeployError(RuntimeError):
    """The stack did not reach CREATE_COMPLETE / UPDATE_COMPLETE; the message names the failed resources."""


def deploy_stack(cfn: Any, name: str, template_url: str, timeout: float = 300) -> dict[str, str]:
    """Create the stack, or update it when it exists; returns its outputs `{key: value}`."""
    try:
        cfn.describe_stacks(StackName=name)
        exists = True
    except ClientError:
        exists = False
    try:
        if exists:
            cfn.update_stack(StackName=name, TemplateURL=template_url, Capabilities=CAPABILITIES)
        else:
            cfn.create_stack(StackName=name, TemplateURL=template_url, Capabilities=CAPABILITIES)
    except ClientError as exc:
        if NO_UPDATES not in str(exc):
            raise DeployError(f"stack {name}: CloudFormation refused the template {template_url}: {exc}") from None
    stack = _wait(cfn, name, timeout)
    return {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}


def _wait(cfn: Any, name: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
        status = stack["StackStatus"]
        if status in DONE:
            return stack
        if not status.endswith("_IN_PROGRESS"):
            raise DeployError(f"stack {name}: {status} {stack.get('StackStatusReason', '')}; {_failures(cfn, name)}")
        if time.monotonic() > deadline:
            raise DeployError(f"stack {name}: still {status} after {timeout:.0f} s")
        time.sleep(0.5)


def _failures(cfn: Any, name: str) -> str:
    events = cfn.describe_stack_events(StackName=name)["StackEvents"]
    failed = [
        f"{event['LogicalResourceId']} ({event['ResourceType']}): {event.get('ResourceStatusReason', '')}"
        for event in events
        if event["ResourceStatus"].endswith("_FAILED") and event["LogicalResourceId"] != name
    ]
    return "failed resources: " + ("; ".join(failed) if failed else "none reported")
