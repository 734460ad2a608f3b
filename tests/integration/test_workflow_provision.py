"""The provision workflow end to end on the sandbox: the real ASL on moto's interpreter, our Lambda handlers,
CloudFormation stacks in moto, manifests on the real control plane, and Nodes from the node simulator."""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.nodesim import NodeSimulator

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
FUNCTIONS = ("run", "stacks", "kube", "roll")
REGION = "eu-central-1"


@dataclass
class Deployment:
    """The workflow deployed into in-process moto, and what it works on."""

    session: boto3.Session
    registry: DynamoRegistry
    state_machine: str
    cluster_id: str

    def run(self, timeout: float = 240.0) -> dict[str, Any]:
        """Start a provision execution for the cluster and wait for it to end."""
        sfn = self.session.client("stepfunctions")
        arn = sfn.start_execution(
            stateMachineArn=self.state_machine, input=json.dumps({"cluster_id": self.cluster_id, "reason": "test"})
        )["executionArn"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            execution = sfn.describe_execution(executionArn=arn)
            if execution["status"] != "RUNNING":
                return execution
            time.sleep(0.2)
        pytest.fail(f"execution {arn} still running after {timeout} s")

    def states(self, arn: str) -> list[str]:
        """The names of the states the execution entered, in order."""
        pages = self.session.client("stepfunctions").get_paginator("get_execution_history").paginate(executionArn=arn)
        return [
            event["stateEnteredEventDetails"]["name"]
            for page in pages
            for event in page["events"]
            if "stateEnteredEventDetails" in event
        ]


def _zip(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*.py")):
            archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def _deploy(session: boto3.Session, env: dict[str, str]) -> str:
    """Functions from lambdas/ and the provision state machine, created through the APIs."""
    role = session.client("iam").create_role(RoleName="clm", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    arns = {}
    for name in FUNCTIONS:
        arns[f"{name.capitalize()}Function"] = session.client("lambda").create_function(
            FunctionName=f"clm-{name}",
            Runtime="python3.11",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": _zip(ROOT / "lambdas" / name)},
            Environment={"Variables": env},
            Timeout=120,
        )["FunctionArn"]
    definition = (ROOT / "statemachines" / "provision.asl.json").read_text()
    for key, value in arns.items():
        definition = definition.replace("${" + key + "}", value)
    return session.client("stepfunctions").create_state_machine(
        name="clm-provision", definition=definition, roleArn=role
    )["stateMachineArn"]


def _upload_config(s3: Any, bucket: str) -> None:
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for path in sorted((ROOT / "examples" / "config").rglob("*")):
        if path.is_file():
            key = "config/" + path.relative_to(ROOT / "examples" / "config").as_posix()
            s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())


@pytest.fixture
def deployment(
    sandbox_aws: boto3.Session,
    wait_scale: Callable[[float], None],
    control_plane: ControlPlane,
    monkeypatch: pytest.MonkeyPatch,
) -> Deployment:
    wait_scale(0.02)
    env = {
        "CLM_REGISTRY_TABLE": "clm-registry",
        "CLM_CONFIG_SOURCE": "s3://clm-config/config/",
        "CLM_ARTEFACT_BUCKET": "clm-artefacts",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "CLM",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    from clm.aws import client
    from clm.workflow.cluster_access import rendering

    client.cache_clear()
    rendering.cache_clear()
    s3 = sandbox_aws.client("s3")
    _upload_config(s3, "clm-config")
    s3.create_bucket(Bucket="clm-artefacts", CreateBucketConfiguration={"LocationConstraint": REGION})
    sandbox_aws.client("secretsmanager").create_secret(
        Name="clm/kube-1", SecretString=control_plane.kubeconfig_path.read_text()
    )
    dynamodb = sandbox_aws.client("dynamodb")
    create_table(dynamodb, "clm-registry")
    registry = DynamoRegistry(dynamodb, "clm-registry")
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    registry.put(cluster)
    return Deployment(sandbox_aws, registry, _deploy(sandbox_aws, env), cluster.id)


@pytest.fixture
def nodes(deployment: Deployment, kube_api: k8s.ApiClient) -> Iterator[NodeSimulator]:
    with NodeSimulator(
        kube_api, deployment.session, deployment.cluster_id, boot_delay=1.0, pod_ready_delay=0.2, time_scale=0.1
    ) as simulator:
        yield simulator


def test_provision_creates_stacks_applies_manifests_and_records_the_version(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    execution = deployment.run()
    assert execution["status"] == "SUCCEEDED", execution.get("error") or execution
    states = deployment.states(execution["executionArn"])
    assert [s for s in states if s in {"Render", "StartStack", "ApplyPhase", "Plan", "Drain", "Succeed"}] == [
        "Render",
        "StartStack",
        "StartStack",
        "ApplyPhase",
        "ApplyPhase",
        "ApplyPhase",
        "Plan",
        "Succeed",
    ]
    output = json.loads(execution["output"])
    status = deployment.registry.get(deployment.cluster_id).status
    assert (status.current_version, status.next_version, status.problems) == (output["rendering"]["version"], "", [])
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    stacks = {
        s["StackName"]: s["StackStatus"]
        for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]
    }
    assert stacks == {
        "kube-1": "CREATE_COMPLETE",
        "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1": "CREATE_COMPLETE",
    }
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
    deployments = k8s.AppsV1Api(kube_api).list_namespaced_deployment("example").items
    assert [d.metadata.name for d in deployments] == ["web"]
    again = deployment.run()
    assert again["status"] == "SUCCEEDED"
    assert json.loads(again["output"])["plan"]["action"] == "skip"


class HealthyPods(threading.Thread):
    """Counts the Ready pods of `app=web` every few milliseconds; `lowest` is the least seen."""

    def __init__(self, api: k8s.ApiClient):
        super().__init__(daemon=True)
        self.core = k8s.CoreV1Api(api)
        self.lowest: int | None = None
        self.samples = 0
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(0.02):
            pods = self.core.list_namespaced_pod("example", label_selector="app=web").items
            ready = sum(
                1
                for pod in pods
                if pod.metadata.deletion_timestamp is None
                and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
            )
            self.lowest = ready if self.lowest is None else min(self.lowest, ready)
            self.samples += 1

    def stop(self) -> None:
        self._stopping.set()
        self.join()


def _instances(session: boto3.Session) -> set[str]:
    groups = session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    return {instance["InstanceId"] for group in groups for instance in group["Instances"]}


def test_config_change_rolls_every_node_without_breaking_the_pdb(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    assert deployment.run()["status"] == "SUCCEEDED"
    nodes.wait_for_ready_nodes(3, timeout=30)
    _wait_for_ready_pods(kube_api, 3)
    before = _instances(deployment.session)
    defaults = ROOT / "examples" / "config" / "cluster" / "config-defaults.yaml"
    changed = defaults.read_text().replace("worker_ami: ami-0c1a7f89451184c8b", "worker_ami: ami-0d2b8f9a562295d9c")
    deployment.session.client("s3").put_object(
        Bucket="clm-config", Key="config/cluster/config-defaults.yaml", Body=changed.encode()
    )
    watcher = HealthyPods(kube_api)
    watcher.start()
    try:
        execution = deployment.run()
    finally:
        watcher.stop()
    assert execution["status"] == "SUCCEEDED", execution.get("error") or execution
    after = _instances(deployment.session)
    assert len(after) == 3 and not after & before, (before, after)
    assert watcher.samples > 10 and watcher.lowest is not None and watcher.lowest >= 2  # PDB minAvailable=2
    states = deployment.states(execution["executionArn"])
    assert states.count("Terminate") == 3
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3


def _wait_for_ready_pods(api: k8s.ApiClient, count: int, timeout: float = 30.0) -> None:
    core = k8s.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = core.list_namespaced_pod("example", label_selector="app=web").items
        if sum(any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or []) for p in pods) >= count:
            return
        time.sleep(0.1)
    pytest.fail(f"fewer than {count} Ready web pods after {timeout} s")
