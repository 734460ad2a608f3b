"""The CDK app deployed into in-process moto (with the sandbox's patches) as `cdk deploy` would deploy it
(clm_sandbox.deploy.inprocess; test_cdk_cli deploys with the CLI itself), and the deployed pieces working
together: our handlers run from the deployed zips and layer, the bus rule starts provision, and a registry spec
change reaches provision through DynamoDB Streams, registry_events and the bus."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry
from clm_sandbox.deploy import deploy_assembly
from clm_sandbox.deploy.synth import Assembly
from clm_sandbox.patches import cfn_lambda, events_input_template

pytestmark = [
    pytest.mark.integration,
    # moto's CloudFormation skips AWS::S3::BucketPolicy and AWS::CloudWatch::Alarm (nothing tested here needs them)
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),
]

REGION = "eu-central-1"
CLUSTER = "aws:123456789012:eu-central-1:deployed-1"
FUNCTIONS = ("Run", "Stacks", "Kube", "Roll", "Reconcile", "RegistryEvents")


@pytest.fixture
def deployed(sandbox_aws: boto3.Session, assembly: Assembly) -> dict[str, str]:
    install_new_patches()
    return deploy_assembly(assembly, sandbox_aws.client, REGION)


def install_new_patches() -> None:
    """The patches not yet in clm_sandbox.patches.PATCHES (so not installed by the sandbox_aws fixture)."""
    cfn_lambda.install()
    events_input_template.install()


def functions(session: boto3.Session) -> dict[str, dict[str, Any]]:
    """The stack's functions by construct name (Run, Stacks, ...)."""
    found = {}
    for function in session.client("lambda").list_functions()["Functions"]:
        for name in FUNCTIONS:
            if function["FunctionName"].startswith(f"Clm-{name}Function"):
                found[name] = function
    return found


def executions(session: boto3.Session, state_machine: str) -> list[dict[str, Any]]:
    return session.client("stepfunctions").list_executions(stateMachineArn=state_machine)["executions"]


def finished(session: boto3.Session, state_machine: str, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    """The state machine's executions once `count` exist and none runs (described, with their input)."""
    sfn = session.client("stepfunctions")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = executions(session, state_machine)
        if len(listed) >= count and all(execution["status"] != "RUNNING" for execution in listed):
            return [sfn.describe_execution(executionArn=execution["executionArn"]) for execution in listed]
        time.sleep(0.2)
    raise AssertionError(f"{state_machine}: {len(executions(session, state_machine))} executions after {timeout} s")


def test_run_function_runs_our_handler_from_the_deployed_zip(sandbox_aws: boto3.Session, deployed) -> None:
    run = functions(sandbox_aws)["Run"]
    response = sandbox_aws.client("lambda").invoke(FunctionName=run["FunctionName"], Payload=b'{"step": "nope"}')
    assert response["FunctionError"] == "Unhandled"
    error = json.loads(response["Payload"].read())
    assert error["errorType"] == "UnknownStep"
    assert "function run has no step 'nope'" in error["errorMessage"]


def test_cluster_changed_event_on_the_bus_starts_one_provision_execution(
    sandbox_aws: boto3.Session, deployed, wait_scale: Callable[[float], None]
) -> None:
    wait_scale(0.01)
    detail = {"cluster_id": "aws:123456789012:eu-central-1:nowhere", "reason": "test"}
    sandbox_aws.client("events").put_events(
        Entries=[
            {
                "Source": "clm.registry",
                "DetailType": "Cluster Changed",
                "Detail": json.dumps(detail),
                "EventBusName": deployed["EventBusName"],
            }
        ]
    )
    [execution] = finished(sandbox_aws, deployed["ProvisionStateMachineArn"], 1)
    assert json.loads(execution["input"]) == detail
    assert execution["status"] == "FAILED"  # Begin: the cluster is not in the registry
    assert execution["error"] == "ClusterNotFound"


def test_registry_spec_change_starts_provision_through_stream_function_and_bus(
    sandbox_aws: boto3.Session, deployed, wait_scale: Callable[[float], None]
) -> None:
    wait_scale(0.01)
    examples = Path(__file__).parents[2] / "examples" / "clusters.yaml"
    from clm.registry.clusters_yaml import load_clusters

    example = load_clusters(examples.read_text())[0].to_dict()
    cluster = Cluster.from_dict({**example, "id": CLUSTER, "local_id": "deployed-1"}, "test")
    registry = DynamoRegistry(sandbox_aws.client("dynamodb"), deployed["RegistryTableName"])
    machine = deployed["ProvisionStateMachineArn"]

    registry.put(cluster)  # INSERT with a spec -> registry_events -> Cluster Changed -> provision
    [execution] = finished(sandbox_aws, machine, 1)
    assert json.loads(execution["input"]) == {"cluster_id": CLUSTER, "reason": "registry: cluster added"}
    # The run failed (the config bucket is empty) and recorded its problem: a write by CLM itself, no new run.
    assert execution["status"] == "FAILED"
    assert "RenderError" in registry.get(CLUSTER).status.problems[-1].title

    registry.start_update(CLUSTER, "v0#abc")  # CLM's own status write: no event
    registry.put(cluster)  # the same spec again: no event
    time.sleep(1)
    assert len(executions(sandbox_aws, machine)) == 1

    changed = Cluster.from_dict({**cluster.to_dict(), "environment": "production"}, "test")
    registry.put(changed)
    inputs = [json.loads(execution["input"]) for execution in finished(sandbox_aws, machine, 2)]
    assert {"cluster_id": CLUSTER, "reason": "registry: spec changed (environment)"} in inputs
    time.sleep(1)
    assert len(executions(sandbox_aws, machine)) == 2
