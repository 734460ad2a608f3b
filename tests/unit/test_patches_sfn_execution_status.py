"""An execution created but not yet started reads RUNNING on patched moto (clm_sandbox.patches.sfn_execution_status):
listing or describing it from another thread in that moment failed, as a chaos run's poll did during a handover."""

from __future__ import annotations

import json

import boto3
from moto.stepfunctions.parser.backend.execution import Execution

DEFINITION = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}


def test_an_execution_not_yet_started_is_listed_and_described_running(sandbox_aws: boto3.Session, monkeypatch) -> None:
    monkeypatch.setattr(Execution, "start", lambda self: None)  # held between its creation and its start
    sfn = sandbox_aws.client("stepfunctions")
    role = "arn:aws:iam::123456789012:role/sfn"
    machine = sfn.create_state_machine(name="m", definition=json.dumps(DEFINITION), roleArn=role)["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine)["executionArn"]
    assert [e["status"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]] == ["RUNNING"]
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    running = sfn.list_executions(stateMachineArn=machine, statusFilter="RUNNING")["executions"]
    assert [e["executionArn"] for e in running] == [arn]
