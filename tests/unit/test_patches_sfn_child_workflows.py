"""Child workflows as in AWS: a parent runs one with ``states:startExecution.sync:2`` (output, failure, in a Map)."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest

ROLE = "arn:aws:iam::123456789012:role/sfn"
CHILD_WORKFLOW_ACTIONS = ["states:StartExecution", "states:DescribeExecution", "states:StopExecution"]


@pytest.fixture(autouse=True)
def _parent_role(sandbox_aws: boto3.Session) -> None:
    """The parents' role, allowed what a .sync child workflow needs (IAM is enforced in the sandbox)."""
    iam = sandbox_aws.client("iam")
    iam.create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")
    statement = {"Effect": "Allow", "Action": CHILD_WORKFLOW_ACTIONS, "Resource": "*"}
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    iam.put_role_policy(RoleName="sfn", PolicyName="children", PolicyDocument=document)


def _machine(sfn: Any, name: str, definition: dict[str, Any]) -> str:
    return sfn.create_state_machine(name=name, roleArn=ROLE, definition=json.dumps(definition))["stateMachineArn"]


def _parent_of(sfn: Any, child: str) -> str:
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::states:startExecution.sync:2",
        "Parameters": {"StateMachineArn": child, "Input": {"cluster_id.$": "$.cluster_id"}},
        "OutputPath": "$.Output",
        "End": True,
    }
    return _machine(sfn, "parent", {"StartAt": "Child", "States": {"Child": task}})


def _run(sfn: Any, machine: str, payload: dict[str, Any]) -> dict[str, Any]:
    arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps(payload))["executionArn"]
    deadline = time.monotonic() + 10
    while (described := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the parent did not finish"
        time.sleep(0.05)
    return described


def test_the_child_gets_the_input_and_the_parent_its_output(sandbox_aws: boto3.Session) -> None:
    sfn = sandbox_aws.client("stepfunctions")
    echo = {"Type": "Pass", "Parameters": {"seen.$": "$.cluster_id"}, "End": True}
    child = _machine(sfn, "child", {"StartAt": "Echo", "States": {"Echo": echo}})
    parent = _run(sfn, _parent_of(sfn, child), {"cluster_id": "kube-1"})
    assert parent["status"] == "SUCCEEDED", parent
    assert json.loads(parent["output"]) == {"seen": "kube-1"}
    (child_run,) = sfn.list_executions(stateMachineArn=child)["executions"]
    assert child_run["status"] == "SUCCEEDED"


def test_a_failed_child_fails_the_task_with_its_error(sandbox_aws: boto3.Session) -> None:
    sfn = sandbox_aws.client("stepfunctions")
    fail = {"Type": "Fail", "Error": "ClusterRunFailed", "Cause": "node never Ready"}
    child = _machine(sfn, "child", {"StartAt": "Fail", "States": {"Fail": fail}})
    parent = _run(sfn, _parent_of(sfn, child), {"cluster_id": "kube-1"})
    assert (parent["status"], parent["error"]) == ("FAILED", "States.TaskFailed")
    assert json.loads(parent["cause"])["Error"] == "ClusterRunFailed", parent["cause"]


def test_a_failed_child_inside_a_map_reaches_the_maps_catch(sandbox_aws: boto3.Session) -> None:
    sfn = sandbox_aws.client("stepfunctions")
    fail = {"Type": "Fail", "Error": "NodeStartupTimeout", "Cause": "i-1 never Ready"}
    child = _machine(sfn, "child", {"StartAt": "Fail", "States": {"Fail": fail}})
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::states:startExecution.sync:2",
        "Parameters": {"StateMachineArn": child, "Input": {"pool.$": "$"}},
        "End": True,
    }
    pools = {
        "Type": "Map",
        "ItemsPath": "$.pools",
        "MaxConcurrency": 1,
        "ItemProcessor": {"StartAt": "Roll", "States": {"Roll": task}},
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}],
        "End": True,
    }
    caught = {"Type": "Pass", "End": True}
    parent = _machine(sfn, "pools", {"StartAt": "Pools", "States": {"Pools": pools, "Caught": caught}})
    run = _run(sfn, parent, {"pools": ["default-worker"]})
    assert run["status"] == "SUCCEEDED", run
    error = json.loads(run["output"])["error"]
    assert error["Error"] == "States.TaskFailed"
    assert json.loads(error["Cause"])["Error"] == "NodeStartupTimeout"


def test_stopping_the_parent_stops_the_child(sandbox_aws: boto3.Session) -> None:
    sfn = sandbox_aws.client("stepfunctions")
    child = _machine(
        sfn, "child", {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": True}}}
    )
    parent = sfn.start_execution(stateMachineArn=_parent_of(sfn, child), input='{"cluster_id": "kube-1"}')
    deadline = time.monotonic() + 10
    while not sfn.list_executions(stateMachineArn=child)["executions"]:
        assert time.monotonic() < deadline, "the child did not start"
        time.sleep(0.05)
    sfn.stop_execution(executionArn=parent["executionArn"])
    while (status := sfn.list_executions(stateMachineArn=child)["executions"][0]["status"]) == "RUNNING":
        assert time.monotonic() < deadline + 5, "the child still runs"
        time.sleep(0.05)
    assert status == "ABORTED"
