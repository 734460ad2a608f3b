"""The sandbox's moto patches against moto's real state: Lambda handlers run by Step Functions (in-process and in
child processes of moto's server), EventBridge rules starting executions, CloudFormation-created state machines
and scaled Wait states. The handler is tests/fixtures/lambdas/recorder; it records each call in DynamoDB."""

from __future__ import annotations

import io
import itertools
import json
import os
import time
import uuid
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from clm_sandbox.moto_server import moto_server
from clm_sandbox.patches import wait_scale as wait_scaling

pytestmark = pytest.mark.integration

LAMBDAS = Path(__file__).resolve().parents[1] / "fixtures" / "lambdas"
FUNCTION_ACTIONS = ["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:Query"]  # the recorder's calls
STATE_MACHINE_ACTIONS = [
    "lambda:InvokeFunction",
    "states:StartExecution",
    "states:DescribeExecution",
    "states:StopExecution",
]
REGION = "eu-central-1"
TABLE = "recorder-calls"
ITEMS = [{"name": "a", "fail": False}, {"name": "b", "fail": True}, {"name": "c", "fail": False}]
Client = Callable[[str], Any]


def zipped(folder: Path) -> bytes:
    """The Python files under ``folder`` as a Lambda zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*.py")):
            archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def deploy_recorder(client: Client, name: str) -> str:
    """The recorder function (with its layer) and its DynamoDB table; returns the function's ARN."""
    if TABLE not in client("dynamodb").list_tables()["TableNames"]:
        client("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "run", "KeyType": "HASH"}, {"AttributeName": "call", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "run", "AttributeType": "S"},
                {"AttributeName": "call", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
    role = allowed_role(client, name, FUNCTION_ACTIONS)
    lambdas = client("lambda")
    layer = lambdas.publish_layer_version(LayerName=name, Content={"ZipFile": zipped(LAMBDAS / "recorder_layer")})
    function = lambdas.create_function(
        FunctionName=name,
        Runtime="python3.11",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": zipped(LAMBDAS / "recorder")},
        Layers=[layer["LayerVersionArn"]],
        Environment={"Variables": {"TABLE": TABLE, "GREETING": f"hello from {name}"}},
        Timeout=60,
        MemorySize=256,
    )
    return function["FunctionArn"]


def calls(client: Client, run: str) -> list[dict[str, Any]]:
    """The recorder's calls for ``run``, in the order they started."""
    items = client("dynamodb").query(
        TableName=TABLE, KeyConditionExpression="run = :run", ExpressionAttributeValues={":run": {"S": run}}
    )["Items"]
    decoded = [
        {
            "item": json.loads(item["item"]["S"]),
            "started": float(item["started"]["N"]),
            "ended": float(item["ended"]["N"]),
            "pid": int(item["pid"]["N"]),
            "memory": int(item["memory"]["N"]),
            "remaining_ms": int(item["remaining_ms"]["N"]),
            "function": item["function"]["S"],
        }
        for item in items
    ]
    return sorted(decoded, key=lambda call: call["started"])


def workflow(function_arn: str, retries: int, interval: int = 1) -> dict[str, Any]:
    """Lambda Task (service integration) with Retry/Catch, Choice, Wait, Map (MaxConcurrency 1, direct ARN)."""
    return {
        "StartAt": "Record",
        "States": {
            "Record": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {
                    "FunctionName": function_arn,
                    "Payload": {"run.$": "$.run", "item": "first", "fail.$": "$.fail"},
                },
                "ResultSelector": {"greeting.$": "$.Payload.greeting"},
                "ResultPath": "$.first",
                "Retry": [
                    {"ErrorEquals": ["Boom"], "IntervalSeconds": interval, "MaxAttempts": retries, "BackoffRate": 1.0}
                ],
                "Catch": [
                    {"ErrorEquals": ["SomethingElse"], "Next": "Wrong"},
                    {"ErrorEquals": ["Boom"], "ResultPath": "$.error", "Next": "Caught"},
                ],
                "Next": "Decide",
            },
            "Decide": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.pause", "NumericGreaterThan": 0, "Next": "Pause"}],
                "Default": "Items",
            },
            "Pause": {"Type": "Wait", "SecondsPath": "$.pause", "Next": "Items"},
            "Items": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrency": 1,
                "ItemSelector": {
                    "run.$": "$.run",
                    "item.$": "$$.Map.Item.Value.name",
                    "fail.$": "$$.Map.Item.Value.fail",
                    "sleep": 0.05,
                },
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Each",
                    "States": {
                        "Each": {
                            "Type": "Task",
                            "Resource": function_arn,
                            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "ItemFailed"}],
                            "End": True,
                        },
                        "ItemFailed": {"Type": "Pass", "Parameters": {"failed.$": "$.Error"}, "End": True},
                    },
                },
                "ResultPath": "$.results",
                "Next": "Done",
            },
            "Caught": {"Type": "Pass", "Parameters": {"caught.$": "$.error.Error", "run.$": "$.run"}, "End": True},
            "Wrong": {"Type": "Fail", "Error": "WrongCatcher"},
            "Done": {"Type": "Succeed"},
        },
    }


def allowed_role(client: Client, name: str, actions: list[str]) -> str:
    """A role allowed `actions` (IAM is enforced in the sandbox: the recorder and the interpreter call as it)."""
    iam = client("iam")
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    statement = {"Effect": "Allow", "Action": actions, "Resource": "*"}
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    iam.put_role_policy(RoleName=name, PolicyName="allowed", PolicyDocument=document)
    return arn


def create_state_machine(client: Client, name: str, definition: dict[str, Any]) -> str:
    role = allowed_role(client, f"{name}-sfn", STATE_MACHINE_ACTIONS)
    return client("stepfunctions").create_state_machine(name=name, definition=json.dumps(definition), roleArn=role)[
        "stateMachineArn"
    ]


def finished(client: Client, execution_arn: str, timeout: float = 60) -> dict[str, Any]:
    """describe_execution once the execution has stopped running."""
    deadline = time.monotonic() + timeout
    while True:
        execution = client("stepfunctions").describe_execution(executionArn=execution_arn)
        if execution["status"] != "RUNNING":
            return execution
        if time.monotonic() > deadline:
            raise AssertionError(f"execution {execution_arn} still running after {timeout} s")
        time.sleep(0.02)


def run_workflow(client: Client, machine: str, run: str, fail: bool, pause: int) -> dict[str, Any]:
    started = client("stepfunctions").start_execution(
        stateMachineArn=machine, input=json.dumps({"run": run, "fail": fail, "pause": pause, "items": ITEMS})
    )
    return finished(client, started["executionArn"])


def assert_succeeded_through_every_state(client: Client, execution: dict[str, Any], run: str, name: str) -> None:
    assert execution["status"] == "SUCCEEDED", execution
    output = json.loads(execution["output"])
    assert output["first"] == {"greeting": f"hello from {name}"}
    assert output["results"] == [
        {"run": run, "item": "a", "greeting": f"hello from {name}"},
        {"failed": "Boom"},  # States.ALL caught the handler's exception class
        {"run": run, "item": "c", "greeting": f"hello from {name}"},
    ]
    recorded = calls(client, run)
    assert [call["item"] for call in recorded] == ["first", "a", "b", "c"]
    map_calls = recorded[1:]
    assert all(earlier["ended"] <= later["started"] for earlier, later in itertools.pairwise(map_calls))
    assert {(call["function"], call["memory"]) for call in recorded} == {(name, 256)}
    assert all(0 < call["remaining_ms"] <= 60_000 for call in recorded)


def assert_retried_then_caught(client: Client, execution: dict[str, Any], run: str, attempts: int) -> None:
    assert execution["status"] == "SUCCEEDED", execution
    assert json.loads(execution["output"]) == {"caught": "Boom", "run": run}
    assert [call["item"] for call in calls(client, run)] == ["first"] * attempts


@pytest.fixture
def local(sandbox_aws: boto3.Session) -> Client:
    return sandbox_aws.client


def test_lambda_invoke_runs_the_handler_and_reports_its_exception_like_aws(local: Client) -> None:
    deploy_recorder(local, "direct")
    ok = local("lambda").invoke(FunctionName="direct", Payload=json.dumps({"run": "direct", "item": 1}), LogType="Tail")
    assert "FunctionError" not in ok
    assert json.loads(ok["Payload"].read()) == {"run": "direct", "item": 1, "greeting": "hello from direct"}

    failed = local("lambda").invoke(
        FunctionName="direct", Payload=json.dumps({"run": "direct", "item": 2, "fail": True})
    )
    assert failed["FunctionError"] == "Unhandled"
    payload = json.loads(failed["Payload"].read())
    assert payload["errorType"] == "Boom"
    assert payload["errorMessage"] == "run direct asked to fail"
    assert "app.py" in payload["stackTrace"][-1]
    assert [call["pid"] for call in calls(local, "direct")] == [os.getpid()] * 2
    assert local("logs").describe_log_streams(logGroupName="/aws/lambda/direct")["logStreams"]


def test_workflow_runs_our_handler_in_every_kind_of_state(local: Client, wait_scale: Callable[[float], None]) -> None:
    wait_scale(0.001)
    machine = create_state_machine(local, "workflow", workflow(deploy_recorder(local, "worker"), retries=2))
    execution = run_workflow(local, machine, "happy", fail=False, pause=60)
    assert_succeeded_through_every_state(local, execution, "happy", "worker")
    # the 60 s Wait was scaled (to 0.06 s): the whole run is shorter than the Wait alone (a loaded machine took 13 s)
    assert (execution["stopDate"] - execution["startDate"]).total_seconds() < 60


def test_failing_handler_is_retried_then_caught_by_its_class_name(
    local: Client, wait_scale: Callable[[float], None]
) -> None:
    wait_scale(0.01)
    machine = create_state_machine(local, "flaky", workflow(deploy_recorder(local, "flaky"), retries=2, interval=30))
    execution = run_workflow(local, machine, "sad", fail=True, pause=0)
    assert_retried_then_caught(local, execution, "sad", attempts=3)
    # the 2 x 30 s retry intervals were scaled (to 0.6 s): the whole run is shorter than the intervals alone
    assert (execution["stopDate"] - execution["startDate"]).total_seconds() < 60


def test_workflow_with_handlers_in_child_processes_of_the_moto_server(moto_endpoint: str) -> None:
    session = boto3.Session(region_name=REGION, aws_access_key_id="sandbox", aws_secret_access_key="sandbox")

    def remote(name: str) -> Any:
        return session.client(name, endpoint_url=moto_endpoint)

    name = f"child-{uuid.uuid4().hex[:8]}"
    machine = create_state_machine(remote, name, workflow(deploy_recorder(remote, name), retries=1))
    happy, sad = f"{name}-happy", f"{name}-sad"
    assert_succeeded_through_every_state(remote, run_workflow(remote, machine, happy, fail=False, pause=0), happy, name)
    assert_retried_then_caught(remote, run_workflow(remote, machine, sad, fail=True, pause=0), sad, attempts=2)
    pids = [call["pid"] for call in calls(remote, happy) + calls(remote, sad)]
    assert len(set(pids)) == len(pids)  # a fresh process per call
    assert os.getpid() not in pids


def test_thread_server_runs_handlers_in_process_with_scaled_waits() -> None:
    """What the demo uses: moto_server() in a thread; the interpreter reaches it over HTTP (MOTO_PORT)."""
    session = boto3.Session(region_name=REGION, aws_access_key_id="sandbox", aws_secret_access_key="sandbox")
    with moto_server() as endpoint, wait_scaling.scaled(0.001):

        def remote(name: str) -> Any:
            return session.client(name, endpoint_url=endpoint)

        machine = create_state_machine(remote, "threaded", workflow(deploy_recorder(remote, "threaded"), retries=1))
        execution = run_workflow(remote, machine, "threaded", fail=False, pause=60)
        assert_succeeded_through_every_state(remote, execution, "threaded", "threaded")
        assert {call["pid"] for call in calls(remote, "threaded")} == {os.getpid()}
    assert "MOTO_PORT" not in os.environ


def put_cluster_changed(client: Client, bus: str | None = None) -> None:
    entry = {"Source": "clm.registry", "DetailType": "Cluster Changed", "Detail": json.dumps({"cluster_id": "kube-1"})}
    response = client("events").put_events(Entries=[entry | ({"EventBusName": bus} if bus else {})])
    assert response["FailedEntryCount"] == 0


def executions(client: Client, machine: str) -> list[dict[str, Any]]:
    listed = client("stepfunctions").list_executions(stateMachineArn=machine)["executions"]
    return [finished(client, execution["executionArn"]) for execution in listed]


def test_put_events_on_a_custom_bus_starts_exactly_one_execution(local: Client) -> None:
    machine = create_state_machine(
        local, "provision", {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    )
    events = local("events")
    events.create_event_bus(Name="clm")
    pattern = json.dumps({"source": ["clm.registry"], "detail-type": ["Cluster Changed"]})
    for rule, bus, state in [
        ("matching", "clm", "ENABLED"),
        ("disabled", "clm", "DISABLED"),
        ("default-bus", "default", "ENABLED"),
    ]:
        events.put_rule(Name=rule, EventBusName=bus, EventPattern=pattern, State=state)
        events.put_targets(
            Rule=rule, EventBusName=bus, Targets=[{"Id": "provision", "Arn": machine, "InputPath": "$.detail"}]
        )
    events.put_rule(Name="other", EventBusName="clm", EventPattern=json.dumps({"source": ["elsewhere"]}))
    events.put_targets(Rule="other", EventBusName="clm", Targets=[{"Id": "provision", "Arn": machine}])

    put_cluster_changed(local, bus="clm")

    [execution] = executions(local, machine)
    assert execution["status"] == "SUCCEEDED"
    assert json.loads(execution["input"]) == {"cluster_id": "kube-1"}
    uuid.UUID(execution["name"])


def test_a_schedule_rule_matches_no_event(local: Client) -> None:
    """On AWS a rule with only a schedule never matches an event (moto's empty pattern would match every one)."""
    machine = create_state_machine(
        local, "reconcile", {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    )
    local("events").put_rule(Name="schedule", ScheduleExpression="rate(15 minutes)")
    local("events").put_targets(Rule="schedule", Targets=[{"Id": "reconcile", "Arn": machine}])
    put_cluster_changed(local, bus="default")
    assert executions(local, machine) == []


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ({"Input": '{"reason": "registry"}'}, {"reason": "registry"}),
        ({"InputPath": "$.detail.cluster_id"}, "kube-1"),
        (
            {
                "InputTransformer": {
                    "InputPathsMap": {"id": "$.detail.cluster_id"},
                    "InputTemplate": '{"cluster_id": "<id>"}',
                }
            },
            {"cluster_id": "kube-1"},
        ),
        ({}, None),
    ],
    ids=["Input", "InputPath", "InputTransformer", "event"],
)
def test_state_machine_target_input(local: Client, target: dict[str, Any], expected: Any) -> None:
    machine = create_state_machine(
        local, "echo", {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    )
    local("events").put_rule(Name="changes", EventPattern=json.dumps({"source": ["clm.registry"]}))
    local("events").put_targets(Rule="changes", Targets=[{"Id": "echo", "Arn": machine, **target}])

    put_cluster_changed(local)

    [execution] = executions(local, machine)
    received = json.loads(execution["input"])
    if expected is not None:
        assert received == expected
    else:  # the whole event, as EventBridge delivers it
        assert set(received) == {
            "version",
            "id",
            "detail-type",
            "source",
            "account",
            "time",
            "region",
            "resources",
            "detail",
        }
        assert received["detail"] == {"cluster_id": "kube-1"}
        datetime.strptime(received["time"], "%Y-%m-%dT%H:%M:%SZ")


def test_s3_object_created_event_starts_a_state_machine(local: Client) -> None:
    """The config trigger: S3 sends Object Created to EventBridge, a rule on the prefix starts the workflow."""
    machine = create_state_machine(
        local, "reconcile", {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    )
    s3 = local("s3")
    s3.create_bucket(Bucket="clm-config", CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_notification_configuration(
        Bucket="clm-config", NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    pattern = {
        "source": ["aws.s3"],
        "detail-type": ["Object Created"],
        "detail": {"bucket": {"name": ["clm-config"]}, "object": {"key": [{"prefix": "config/"}]}},
    }
    local("events").put_rule(Name="config-changed", EventPattern=json.dumps(pattern))
    target = {"Id": "reconcile", "Arn": machine, "InputPath": "$.detail.object.key"}
    local("events").put_targets(Rule="config-changed", Targets=[target])

    s3.put_object(Bucket="clm-config", Key="elsewhere/readme.txt", Body=b"not config")
    s3.put_object(Bucket="clm-config", Key="config/cluster/stack.yaml", Body=b"Resources: {}")

    [execution] = executions(local, machine)
    assert json.loads(execution["input"]) == "config/cluster/stack.yaml"


def cfn_state_machine(definition: dict[str, Any]) -> dict[str, Any]:
    """A template with one state machine calling ``${Recorder}``, then waiting ``${Pause}`` seconds."""
    return {
        "Parameters": {"RecorderArn": {"Type": "String"}, "RoleArn": {"Type": "String"}},
        "Resources": {
            "Workflow": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "RoleArn": {"Ref": "RoleArn"},
                    **definition,
                    "DefinitionSubstitutions": {"Recorder": {"Ref": "RecorderArn"}, "Pause": 1},
                },
            }
        },
        "Outputs": {"Arn": {"Value": {"Ref": "Workflow"}}},
    }


ASL_TEXT = '{"StartAt": "Call", "States": {"Call": {"Type": "Task", "Resource": "${Recorder}", "Next": "Pause"}, '
ASL_TEXT_END = '"Pause": {"Type": "Wait", "Seconds": ${Pause}, "End": true}}}'
ASL_OBJECT = {
    "StartAt": "Call",
    "States": {
        "Call": {"Type": "Task", "Resource": "${Recorder}", "ResultPath": None, "Next": "Pause"},
        "Pause": {"Type": "Wait", "SecondsPath": "$.pause", "End": True},
    },
}


@pytest.mark.parametrize("form", ["DefinitionString", "Definition", "DefinitionS3Location"])
def test_state_machine_created_by_cloudformation_executes(
    local: Client, wait_scale: Callable[[float], None], form: str
) -> None:
    wait_scale(0.01)
    recorder = deploy_recorder(local, "cfn-recorder")
    if form == "DefinitionString":  # as CDK writes it
        definition: dict[str, Any] = {"DefinitionString": {"Fn::Join": ["", [ASL_TEXT, ASL_TEXT_END]]}}
    elif form == "Definition":
        definition = {"Definition": ASL_OBJECT}
    else:
        local("s3").create_bucket(Bucket="assets", CreateBucketConfiguration={"LocationConstraint": REGION})
        local("s3").put_object(Bucket="assets", Key="workflow.asl.json", Body=(ASL_TEXT + ASL_TEXT_END).encode())
        definition = {"DefinitionS3Location": {"Bucket": "assets", "Key": "workflow.asl.json"}}
    role = allowed_role(local, "cfn-sfn", STATE_MACHINE_ACTIONS)
    cfn = local("cloudformation")
    cfn.create_stack(
        StackName="workflows",
        TemplateBody=json.dumps(cfn_state_machine(definition)),
        Parameters=[
            {"ParameterKey": "RecorderArn", "ParameterValue": recorder},
            {"ParameterKey": "RoleArn", "ParameterValue": role},
        ],
    )
    [output] = cfn.describe_stacks(StackName="workflows")["Stacks"][0]["Outputs"]
    machine = output["OutputValue"]
    described = json.loads(local("stepfunctions").describe_state_machine(stateMachineArn=machine)["definition"])
    assert described["States"]["Call"]["Resource"] == recorder

    started = local("stepfunctions").start_execution(
        stateMachineArn=machine, input=json.dumps({"run": form, "pause": 1})
    )
    assert finished(local, started["executionArn"])["status"] == "SUCCEEDED"
    assert [call["item"] for call in calls(local, form)] == [None]

    cfn.delete_stack(StackName="workflows")
    assert local("stepfunctions").list_state_machines()["stateMachines"] == []


def test_cloudformation_stack_update_changes_the_executed_definition(local: Client) -> None:
    role = allowed_role(local, "cfn-sfn", STATE_MACHINE_ACTIONS)
    template: dict[str, Any] = {
        "Resources": {
            "Workflow": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "StateMachineName": "updated",
                    "RoleArn": role,
                    "DefinitionString": json.dumps(
                        {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": {"v": "${Version}"}, "End": True}}}
                    ),
                    "DefinitionSubstitutions": {"Version": "one"},
                },
            }
        }
    }
    cfn = local("cloudformation")
    cfn.create_stack(StackName="updates", TemplateBody=json.dumps(template))
    template["Resources"]["Workflow"]["Properties"]["DefinitionSubstitutions"] = {"Version": "two"}
    cfn.update_stack(StackName="updates", TemplateBody=json.dumps(template))
    [machine] = local("stepfunctions").list_state_machines()["stateMachines"]
    started = local("stepfunctions").start_execution(stateMachineArn=machine["stateMachineArn"])
    assert json.loads(finished(local, started["executionArn"])["output"]) == {"v": "two"}


def test_bus_rule_and_state_machine_deployed_by_cloudformation_work_together(local: Client) -> None:
    """How CDK wires the product's trigger: its own bus (Ref), a rule on it, the state machine as target (GetAtt)."""
    role = allowed_role(local, "cfn-trigger", STATE_MACHINE_ACTIONS)
    template = {
        "Resources": {
            "Bus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": "clm-events"}},
            "Provision": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "RoleArn": role,
                    "DefinitionString": json.dumps(
                        {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": {"r": "${R}"}, "End": True}}}
                    ),
                    "DefinitionSubstitutions": {"R": "provisioned"},
                },
            },
            "ClusterChanged": {
                "Type": "AWS::Events::Rule",
                "Properties": {
                    "EventBusName": {"Ref": "Bus"},
                    "EventPattern": {"source": ["clm.registry"], "detail-type": ["Cluster Changed"]},
                    "Targets": [
                        {
                            "Id": "provision",
                            "Arn": {"Fn::GetAtt": ["Provision", "Arn"]},
                            "RoleArn": role,
                            "InputPath": "$.detail",
                        }
                    ],
                },
            },
        }
    }
    local("cloudformation").create_stack(StackName="triggers", TemplateBody=json.dumps(template))
    [machine] = local("stepfunctions").list_state_machines()["stateMachines"]

    put_cluster_changed(local, bus="clm-events")

    [execution] = executions(local, machine["stateMachineArn"])
    assert json.loads(execution["input"]) == {"cluster_id": "kube-1"}
    assert json.loads(execution["output"]) == {"r": "provisioned"}


def wait_machine(local: Client, name: str, wait: dict[str, Any]) -> str:
    return create_state_machine(local, name, {"StartAt": "W", "States": {"W": {"Type": "Wait", **wait, "End": True}}})


def in_a_minute() -> str:
    return (datetime.now(UTC) + timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("kind", ["Seconds", "SecondsPath", "Timestamp", "TimestampPath"])
def test_wait_scale_makes_a_minute_wait_short(local: Client, wait_scale: Callable[[float], None], kind: str) -> None:
    wait_scale(0.001)
    wait = {
        "Seconds": {"Seconds": 60},
        "SecondsPath": {"SecondsPath": "$.seconds"},
        "Timestamp": {"Timestamp": in_a_minute()},
        "TimestampPath": {"TimestampPath": "$.at"},
    }[kind]
    machine = wait_machine(local, f"wait-{kind}", wait)
    began = time.monotonic()
    started = local("stepfunctions").start_execution(
        stateMachineArn=machine, input=json.dumps({"seconds": 60, "at": in_a_minute()})
    )
    assert finished(local, started["executionArn"])["status"] == "SUCCEEDED"
    assert time.monotonic() - began < 15.0  # not the minute (a loaded CI machine took over a second to poll)


def test_without_scale_waits_take_real_time(local: Client) -> None:
    machine = wait_machine(local, "real-time", {"Seconds": 1})
    began = time.monotonic()
    started = local("stepfunctions").start_execution(stateMachineArn=machine)
    assert finished(local, started["executionArn"])["status"] == "SUCCEEDED"
    assert time.monotonic() - began >= 1.0
