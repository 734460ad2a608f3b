"""The provision workflow end to end on the sandbox: the real ASL on moto's interpreter, our Lambda handlers,
CloudFormation stacks in moto, manifests on the real control plane, and Nodes from the node simulator."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry
from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.deploy import deploy_assembly
from clm_sandbox.deploy_synth import Assembly
from clm_sandbox.nodesim import NodeSimulator

pytestmark = [
    pytest.mark.integration,
    # moto's CloudFormation skips AWS::S3::BucketPolicy and AWS::CloudWatch::Alarm (nothing tested here needs them)
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),
]

ROOT = Path(__file__).parents[2]
REGION = "eu-central-1"


@dataclass
class Deployment:
    """The CDK app deployed into in-process moto, and the cluster it works on.

    Its triggers are live: a registry write starts provision through the stream and the bus; a config upload
    starts reconcile, which starts provision. Tests wait for what the triggers start, as a user would.
    """

    session: boto3.Session
    registry: DynamoRegistry
    outputs: dict[str, str]
    cluster_id: str

    def __post_init__(self) -> None:
        self.sfn = self.session.client("stepfunctions")

    @property
    def provision(self) -> str:
        return self.outputs["ProvisionStateMachineArn"]

    def executions(self, state_machine: str) -> list[dict[str, Any]]:
        """Every execution of the state machine, oldest first."""
        pages = self.sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine)
        return sorted((e for page in pages for e in page["executions"]), key=lambda e: e["startDate"])

    def settle(self, known: int | None = None, timeout: float = 240.0) -> list[dict[str, Any]]:
        """Wait until no execution runs (and, given `known`, more than `known` provision executions exist);
        returns the provision executions after the first `known`, described."""
        sfn = self.sfn
        machines = [m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            executions = self.executions(self.provision)
            running = [e for m in machines for e in self.executions(m) if e["status"] == "RUNNING"]
            if not running and (known is None or len(executions) > known):
                return [sfn.describe_execution(executionArn=e["executionArn"]) for e in executions[known or 0 :]]
            time.sleep(0.2)
        still = [(e["name"], self.states(e["executionArn"])[-3:]) for e in running]
        pytest.fail(f"executions did not settle within {timeout} s; running: {still}")

    def start(self) -> dict[str, Any]:
        """Start provision from the console (StartExecution with the documented input) and wait for it."""
        known = len(self.executions(self.provision))
        self.sfn.start_execution(
            stateMachineArn=self.provision, input=json.dumps({"cluster_id": self.cluster_id, "reason": "console"})
        )
        return self.settle(known)[-1]

    @property
    def roll_node_pool(self) -> str:
        machines = self.sfn.list_state_machines()["stateMachines"]
        [roll] = [m["stateMachineArn"] for m in machines if m["name"].endswith("-roll-node-pool")]
        return roll

    def roll_states(self) -> list[str]:
        """The states entered by every execution of the roll-node-pool workflow so far."""
        executions = self.executions(self.roll_node_pool)
        return [state for execution in executions for state in self.states(execution["executionArn"])]

    def states(self, arn: str) -> list[str]:
        """The names of the states the execution entered, in order."""
        pages = self.sfn.get_paginator("get_execution_history").paginate(executionArn=arn)
        return [
            event["stateEnteredEventDetails"]["name"]
            for page in pages
            for event in page["events"]
            if "stateEnteredEventDetails" in event
        ]


def the_run(executions: list[dict[str, Any]]) -> dict[str, Any]:
    """The one execution that did the work; every other one must have skipped (lock held or up to date)."""
    outputs = {e["executionArn"]: json.loads(e.get("output") or "{}") for e in executions}
    assert all(e["status"] == "SUCCEEDED" for e in executions), [(e["status"], e.get("error")) for e in executions]
    working = [e for e in executions if outputs[e["executionArn"]].get("plan", {}).get("action") != "skip"]
    assert len(working) == 1, [outputs[e["executionArn"]].get("plan") for e in executions]
    return working[0]


def _upload_config(s3: Any, bucket: str) -> None:
    for path in sorted((ROOT / "examples" / "config").rglob("*")):
        if path.is_file():
            key = "config/" + path.relative_to(ROOT / "examples" / "config").as_posix()
            s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())


@pytest.fixture
def deployment(
    sandbox_aws: boto3.Session,
    assembly: Assembly,
    wait_scale: Callable[[float], None],
    control_plane: ControlPlane,
) -> Iterator[Deployment]:
    """The CDK app deployed into moto as `cdk deploy` would and the example config uploaded; kube-1 is not in the
    registry yet (registering it is what starts its first run). Waits at the end until no execution runs."""
    wait_scale(0.02)
    outputs = deploy_assembly(assembly, sandbox_aws.client, REGION)
    _upload_config(sandbox_aws.client("s3"), outputs["ConfigBucketName"])
    sandbox_aws.client("secretsmanager").create_secret(
        Name="clm/kube-1", SecretString=control_plane.kubeconfig_path.read_text()
    )
    registry = DynamoRegistry(sandbox_aws.client("dynamodb"), outputs["RegistryTableName"])
    deployment = Deployment(sandbox_aws, registry, outputs, "aws:123456789012:eu-central-1:kube-1")
    yield deployment
    deployment.settle()  # nothing may run on after the test's moto is gone


def register_example_cluster(deployment: Deployment) -> None:
    """Put kube-1 of examples/clusters.yaml into the registry, reachable through a Secrets Manager kubeconfig."""
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    deployment.registry.put(cluster)


@pytest.fixture
def nodes(deployment: Deployment, kube_api: k8s.ApiClient) -> Iterator[NodeSimulator]:
    with NodeSimulator(
        kube_api, deployment.session, deployment.cluster_id, boot_delay=1.0, pod_ready_delay=0.2, time_scale=0.1
    ) as simulator:
        yield simulator


def test_provision_creates_stacks_applies_manifests_and_records_the_version(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)  # the registry change starts the first run
    execution = the_run(deployment.settle(known=0))
    states = deployment.states(execution["executionArn"])
    assert [s for s in states if s in {"Render", "StartStack", "ApplyPhase", "RollNodePool", "Succeed"}] == [
        "Render",
        "StartStack",
        "StartStack",
        "ApplyPhase",
        "ApplyPhase",
        "ApplyPhase",
        "RollNodePool",
        "Succeed",
    ]
    output = json.loads(execution["output"])
    status = deployment.registry.get(deployment.cluster_id).status
    assert (status.current_version, status.next_version, status.problems) == (output["rendering"]["version"], "", [])
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    stacks = {
        s["StackName"]: s["StackStatus"]
        for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]
        if s["StackName"] != "Clm"  # CLM's own deployment
    }
    assert stacks == {
        "kube-1": "CREATE_COMPLETE",
        "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1": "CREATE_COMPLETE",
    }
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
    deployments = k8s.AppsV1Api(kube_api).list_namespaced_deployment("example").items
    assert [d.metadata.name for d in deployments] == ["web"]
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "ready"  # requested -> ready
    again = deployment.start()  # ready is a spec change, so one more run follows, as in CLM; it changes no stack
    assert json.loads(again["output"])["plan"]["action"] == "provision"
    assert "RollNodePool" in deployment.states(again["executionArn"])
    current = deployment.registry.get(deployment.cluster_id).status.current_version
    assert current != status.current_version
    third = deployment.start()
    assert third["status"] == "SUCCEEDED"
    assert json.loads(third["output"])["plan"] == {
        "cluster_id": deployment.cluster_id,
        "action": "skip",
        "reason": f"up to date at {current}",
        "desired_version": current,
    }
    assert len(_instances(deployment.session)) == 3  # nothing was replaced


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
    register_example_cluster(deployment)
    the_run(deployment.settle(known=0))
    nodes.wait_for_ready_nodes(3, timeout=30)
    _wait_for_ready_pods(kube_api, 3)
    before = _instances(deployment.session)
    defaults = ROOT / "examples" / "config" / "cluster" / "config-defaults.yaml"
    changed = defaults.read_text().replace("worker_ami: ami-0c1a7f89451184c8b", "worker_ami: ami-0d2b8f9a562295d9c")
    known = len(deployment.executions(deployment.provision))
    watcher = HealthyPods(kube_api)
    watcher.start()
    try:  # the upload starts reconcile (S3 Object Created), which starts provision
        deployment.session.client("s3").put_object(
            Bucket=deployment.outputs["ConfigBucketName"],
            Key="config/cluster/config-defaults.yaml",
            Body=changed.encode(),
        )
        execution = the_run(deployment.settle(known))
    finally:
        watcher.stop()
    after = _instances(deployment.session)
    assert len(after) == 3 and not after & before, (before, after)
    assert watcher.samples > 10 and watcher.lowest is not None and watcher.lowest >= 2  # PDB minAvailable=2
    assert deployment.states(execution["executionArn"]).count("RollNodePool") == 1
    assert deployment.roll_states().count("Terminate") == 3
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


def test_broken_template_fails_the_run_before_any_stack_and_records_the_problem(deployment: Deployment) -> None:
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"],
        Key="config/cluster/stack.yaml",
        Body=b"Resources:\n  Vpc: {{ cluster.config_items.no_such_item }}\n",
    )
    deployment.settle()  # the upload's reconcile runs (no cluster yet)
    register_example_cluster(deployment)
    runs = deployment.settle(known=0)
    failed = [e for e in runs if e["status"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["error"] == "ClusterRunFailed", [(e["status"], e.get("error")) for e in runs]
    status = deployment.registry.get(deployment.cluster_id).status
    assert status.problems[-1].title == (
        f"RenderError: cluster {deployment.cluster_id}: cluster/stack.yaml:2: undefined variable: "
        "'dict object' has no attribute 'no_such_item'"
    )
    assert status.next_version and not status.current_version
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    stacks = [s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]]
    assert stacks == ["Clm"]


def test_removed_pool_is_drained_and_deleted_then_the_cluster_decommissioned(
    deployment: Deployment, nodes: NodeSimulator
) -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    extra = dataclasses.replace(cluster.node_pools[0], name="extra", min_size=1, max_size=2, config_items={})
    deployment.registry.put(dataclasses.replace(cluster, node_pools=[*cluster.node_pools, extra]))
    the_run(deployment.settle(known=0))
    assert len(nodes.wait_for_ready_nodes(4, timeout=30)) == 4
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(cluster)  # the pool "extra" is gone from the registry
    the_run(deployment.settle(known))
    stacks = {s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]}
    assert stacks == {"Clm", "kube-1", "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"}
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(dataclasses.replace(cluster, lifecycle_status="decommission-requested"))
    decommission = the_run(deployment.settle(known))
    assert json.loads(decommission["output"])["plan"]["action"] == "decommission"
    stacks = {s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]}
    assert stacks == {"Clm"}
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "decommissioned"


def test_replacement_that_never_becomes_ready_stops_the_roll_naming_the_instance(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    cluster.node_pools[0].config_items["node_startup_timeout"] = "20s"
    deployment.registry.put(cluster)
    the_run(deployment.settle(known=0))
    nodes.wait_for_ready_nodes(3, timeout=30)
    _wait_for_ready_pods(kube_api, 3)
    before = _instances(deployment.session)
    nodes.boot_delay = 3600.0  # from now on, new instances never register a Node
    known = len(deployment.executions(deployment.provision))
    defaults = ROOT / "examples" / "config" / "cluster" / "config-defaults.yaml"
    changed = defaults.read_text().replace("worker_ami: ami-0c1a7f89451184c8b", "worker_ami: ami-0d2b8f9a562295d9c")
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"], Key="config/cluster/config-defaults.yaml", Body=changed.encode()
    )
    runs = deployment.settle(known)
    failed = [e for e in runs if e["status"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["error"] == "ClusterRunFailed", [(e["status"], e.get("error")) for e in runs]
    replacement = (_instances(deployment.session) - before).pop()
    problem = deployment.registry.get(deployment.cluster_id).status.problems[-1]
    assert re.fullmatch(
        rf"NodeStartupTimeout: node pool default-worker: instance {replacement} \(eu-central-1\w\) not Ready after "
        r"\d+ s \(no Node registered; node startup timeout 20 s\)",
        problem.title,
    ), problem.title
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    groups = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert [g["SuspendedProcesses"] for g in groups] == [[]]  # resumed after the failure


def _wait_for_second_drain(deployment: Deployment, timeout: float = 180.0) -> None:
    """Wait until a roll has replaced one node and is draining the next."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for execution in deployment.executions(deployment.roll_node_pool):
            if execution["status"] == "RUNNING":
                states = deployment.states(execution["executionArn"])
                if "Terminate" in states and "Drain" in states[len(states) - states[::-1].index("Terminate") :]:
                    return
        time.sleep(0.1)
    pytest.fail(f"no roll reached its second drain within {timeout} s")


def test_killed_mid_drain_and_triggered_again_the_roll_completes_replacing_each_node_once(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    the_run(deployment.settle(known=0))
    nodes.wait_for_ready_nodes(3, timeout=30)
    _wait_for_ready_pods(kube_api, 3)
    before = _instances(deployment.session)
    defaults = ROOT / "examples" / "config" / "cluster" / "config-defaults.yaml"
    changed = defaults.read_text().replace("worker_ami: ami-0c1a7f89451184c8b", "worker_ami: ami-0d2b8f9a562295d9c")
    watcher = HealthyPods(kube_api)
    watcher.start()
    try:
        deployment.session.client("s3").put_object(
            Bucket=deployment.outputs["ConfigBucketName"],
            Key="config/cluster/config-defaults.yaml",
            Body=changed.encode(),
        )
        _wait_for_second_drain(deployment)
        [killed] = [e for e in deployment.executions(deployment.provision) if e["status"] == "RUNNING"]
        deployment.sfn.stop_execution(executionArn=killed["executionArn"], cause="killed by the test mid-drain")
        deployment.settle()
        assert deployment.registry.lock_holder(deployment.cluster_id) == killed["executionArn"]  # as a crash leaves it
        again = deployment.start()
    finally:
        watcher.stop()
    assert again["status"] == "SUCCEEDED", again
    after = _instances(deployment.session)
    assert len(after) == 3 and not after & before, (before, after)
    rolls = deployment.executions(deployment.roll_node_pool)
    # the child stopped with its parent (moto ends an execution stopped inside a Map FAILED, AWS ABORTED)
    stopped = [deployment.states(e["executionArn"]) for e in rolls if e["status"] in {"ABORTED", "FAILED"}]
    assert len(stopped) == 1 and stopped[0].count("Terminate") == 1, stopped
    assert deployment.roll_states().count("Terminate") == 3  # every node replaced exactly once, over both runs
    assert watcher.lowest is not None and watcher.lowest >= 2  # PDB minAvailable=2 held throughout
    cluster = deployment.registry.get(deployment.cluster_id)
    assert cluster.status.current_version == json.loads(again["output"])["rendering"]["version"]
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    groups = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert [g["SuspendedProcesses"] for g in groups] == [[]]
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
