"""The deployed CLM stack: its CloudFormation outputs (state machine ARNs) and the `--stack` option."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from botocore.exceptions import ClientError

from clm.cli.aws_errors import where
from clm.cli.context import CliContext
from clm.cli.errors import DeploymentNotFound

DEFAULT_STACK = "Clm"
PROVISION_OUTPUT = "ProvisionStateMachineArn"

F = TypeVar("F", bound=Callable[..., Any])


def stack_option(function: F) -> F:
    """The `--stack` option (env CLM_STACK): the CloudFormation stack CLM is deployed as."""
    return click.option(
        "--stack",
        envvar="CLM_STACK",
        default=DEFAULT_STACK,
        show_default=True,
        help="CloudFormation stack of the CLM deployment (env CLM_STACK).",
    )(function)


def stack_outputs(cfn: Any, stack: str) -> dict[str, str]:
    """The outputs of `stack`; DeploymentNotFound when there is no such stack."""
    try:
        [described] = cfn.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as exc:
        error = exc.response.get("Error", {})
        if error.get("Code") == "ValidationError" and "does not exist" in error.get("Message", ""):
            raise DeploymentNotFound(f"stack {stack} not found", stack, where(cfn)) from None
        raise
    return {output["OutputKey"]: output["OutputValue"] for output in described.get("Outputs", [])}


def provision_state_machine(cli: CliContext, stack: str) -> str:
    """The ARN of the provision state machine of `stack`, checked to exist."""
    cfn, sfn = cli.client("cloudformation"), cli.client("stepfunctions")
    arn = stack_outputs(cfn, stack).get(PROVISION_OUTPUT)
    if not arn:
        raise DeploymentNotFound(f"stack {stack} has no output {PROVISION_OUTPUT}", stack, where(cfn))
    try:
        sfn.describe_state_machine(stateMachineArn=arn)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "StateMachineDoesNotExist":
            raise
        raise DeploymentNotFound(
            f"state machine {arn} (output {PROVISION_OUTPUT} of stack {stack}) not found", stack, where(sfn)
        ) from None
    return arn
