"""One-line errors on in-process moto: a missing registry table, stack or state machine names what is missing,
where the CLI looked and how to deploy CLM; any other AWS error names the operation and the resource."""

from __future__ import annotations

import json
import sys

import pytest
from botocore.exceptions import ClientError

from clm.cli.aws_errors import record_failed_calls
from clm.cli.main import main
from tests.unit.test_cli_helpers import KUBE_1, deploy_clm_stack, invoker

HOW = "deploy CLM there: `clm sandbox deploy` in the sandbox, docs/deploy.md on AWS"
WAITING = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}


def where(aws, service: str) -> str:
    client = aws.client(service)
    return f"endpoint {client.meta.endpoint_url}, region {client.meta.region_name}"


def clm_main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """`clm ARGS` through the entry point users run: its exit code and what it printed on stderr."""
    monkeypatch.setattr(sys, "argv", ["clm", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    return exited.value.code, capsys.readouterr().err


@pytest.mark.parametrize("args", [["registry", "list"], ["status"], ["registry", "show", KUBE_1]])
def test_a_missing_registry_table_says_where_it_looked_and_how_to_deploy(aws, monkeypatch, capsys, args):
    code, err = clm_main(monkeypatch, capsys, *args)
    assert code == 1
    assert err.splitlines() == [
        f"error: registry table clm-registry not found ({where(aws, 'dynamodb')}): {HOW}; "
        "or pass --table (or set CLM_REGISTRY_TABLE)"
    ]


def test_a_missing_stack_says_where_it_looked_and_how_to_deploy(aws, monkeypatch, capsys):
    invoker(aws)
    code, err = clm_main(monkeypatch, capsys, "provision", KUBE_1)
    assert code == 1
    assert err.splitlines() == [
        f"error: stack Clm not found ({where(aws, 'cloudformation')}): is CLM deployed? {HOW}; "
        "or pass --stack (or set CLM_STACK)"
    ]


def test_a_missing_state_machine_names_it_and_the_stack(aws, monkeypatch, capsys):
    invoker(aws)
    arn = deploy_clm_stack(aws, WAITING)
    aws.client("stepfunctions").delete_state_machine(stateMachineArn=arn)
    code, err = clm_main(monkeypatch, capsys, "provision", KUBE_1)
    assert code == 1
    assert err.splitlines() == [
        f"error: state machine {arn} (output ProvisionStateMachineArn of stack Clm) not found "
        f"({where(aws, 'stepfunctions')}): is CLM deployed? {HOW}; or pass --stack (or set CLM_STACK)"
    ]


def test_any_other_aws_error_names_the_operation_and_the_resource(aws, monkeypatch, capsys):
    invoker(aws)
    code, err = clm_main(monkeypatch, capsys, "plan", KUBE_1, "--config", "s3://no-such-bucket/config")
    assert code == 1
    [line] = err.splitlines()
    assert "no-such-bucket" in line and "NoSuchBucket" in line
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("service", "call", "expected"),
    [
        ("s3", lambda c: c.get_object(Bucket="b", Key="k/1"), "AWS GetObject on s3://b/k/1 failed"),
        (
            "secretsmanager",
            lambda c: c.get_secret_value(SecretId="clm/kube-1"),
            "AWS GetSecretValue on clm/kube-1 failed",
        ),
        (
            "stepfunctions",
            lambda c: c.describe_execution(executionArn="arn:aws:states:eu-central-1:123456789012:execution:m:e"),
            "AWS DescribeExecution on arn:aws:states:eu-central-1:123456789012:execution:m:e failed",
        ),
    ],
)
def test_failed_calls_are_described_with_operation_resource_and_place(aws, service, call, expected):
    from clm.cli.main import describe_error

    with pytest.raises(ClientError) as raised:
        call(record_failed_calls(aws.client(service)))
    message = describe_error(raised.value)
    assert message.startswith(f"{expected} ({where(aws, service)}): ")
    assert "\n" not in message
    assert json.dumps(message)  # plain text


def test_sandbox_deploy_without_a_sandbox_says_how_to_start_one(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("CLM_SANDBOX_DIR", str(tmp_path))
    code, err = clm_main(monkeypatch, capsys, "sandbox", "deploy")
    assert code == 1
    assert err.splitlines() == ["error: sandbox not running: start it with `clm sandbox up`"]
