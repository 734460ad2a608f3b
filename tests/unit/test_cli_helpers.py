"""Shared by the CLI tests (no tests of its own): a `clm` invoker on in-process moto with the registry table."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result

from clm.cli.main import cli
from clm.registry.dynamodb import DynamoRegistry, create_table
from tests.unit.test_cli import EXAMPLES

TABLE = "clm-registry"
KUBE_1 = "aws:123456789012:eu-central-1:kube-1"
KUBE_2 = "aws:123456789012:eu-central-1:kube-2"
Invoke = Callable[..., Result]


def invoker(session: boto3.Session) -> tuple[Invoke, DynamoRegistry]:
    """`clm` on the session's moto with examples/clusters.yaml imported, and the registry it uses."""
    create_table(session.client("dynamodb"), TABLE)
    runner = CliRunner()

    def invoke(*args: str, ok: bool = True, input: str | None = None) -> Result:
        result = runner.invoke(cli, ["--table", TABLE, *args], input=input, catch_exceptions=True)
        if ok:
            assert result.exit_code == 0, (result.output, result.exception)
        return result

    invoke("registry", "import", str(EXAMPLES / "clusters.yaml"))
    return invoke, DynamoRegistry(session.client("dynamodb"), TABLE)


@pytest.fixture
def clm(aws: boto3.Session) -> tuple[Invoke, DynamoRegistry]:
    """`clm` on plain in-process moto (executions are not run), with the example clusters imported."""
    return invoker(aws)


def deploy_clm_stack(session: boto3.Session, definition: dict[str, Any], stack: str = "Clm") -> str:
    """A stand-in for the CLM stack: a provision state machine running `definition`, named in the stack's outputs
    as the CDK app names it. Returns the state machine's ARN."""
    template = {
        "Resources": {
            "Provision": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "StateMachineName": f"{stack.lower()}-provision",
                    "RoleArn": "arn:aws:iam::123456789012:role/provision",
                    "DefinitionString": json.dumps(definition),
                },
            }
        },
        "Outputs": {"ProvisionStateMachineArn": {"Value": {"Ref": "Provision"}}},
    }
    cfn = session.client("cloudformation")
    cfn.create_stack(StackName=stack, TemplateBody=json.dumps(template))
    [described] = cfn.describe_stacks(StackName=stack)["Stacks"]
    return described["Outputs"][0]["OutputValue"]
