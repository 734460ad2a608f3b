"""The CDK app deployed into in-process moto, with live triggers, and what end-to-end tests wait for and check.

The fixtures `deployment` and `nodes` (tests/integration/conftest.py) build on it.
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.rest import ApiException
from urllib3.exceptions import ProtocolError

from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry
from clm_sandbox.demo.watch import serving
from tests.integration.node_looks import ready

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
    terminations: list[str] = field(default_factory=list)  # by record_terminations

    def __post_init__(self) -> None:
        self.sfn = self.session.client("stepfunctions")

    @property
    def provision(self) -> str:
        return self.outputs["ProvisionStateMachineArn"]

    def executions(self, state_machine: str, status: str | None = None) -> list[dict[str, Any]]:
        """Every execution of the state machine (with `status` only, given one), oldest first."""
        status_filter = {"statusFilter": status} if status else {}
        pages = self.sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine, **status_filter)
        return sorted((e for page in pages for e in page["executions"]), key=lambda e: e["startDate"])

    def settle(self, known: int | None = None, timeout: float = 240.0) -> list[dict[str, Any]]:
        """Wait until no execution runs (and, given `known`, more than `known` provision executions exist);
        returns the provision executions after the first `known`, described."""
        sfn = self.sfn
        machines = [m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = [e for m in machines for e in self.executions(m, "RUNNING")]  # the few, not the many ended
            if not running:
                executions = self.executions(self.provision)
                if known is None or len(executions) > known:
                    return [sfn.describe_execution(executionArn=e["executionArn"]) for e in executions[known or 0 :]]
            time.sleep(0.2)
        still = [(e["name"], self.states(e["executionArn"])[-3:]) for e in running]
        pytest.fail(f"executions did not settle within {timeout} s; running: {still}")

    def stop_running(self) -> None:
        """Stop every execution still running (a test that did not settle): none may act in the next test's moto."""
        for machine in self.sfn.list_state_machines()["stateMachines"]:
            for execution in self.executions(machine["stateMachineArn"], "RUNNING"):
                self.sfn.stop_execution(executionArn=execution["executionArn"], cause="the test is over")

    def only_run(self, known: int) -> dict[str, Any]:
        """The one provision execution started after the first `known` (waiting as `settle`), described; fails
        naming each run (name, input, status) when there is not exactly one."""
        runs = self.settle(known)
        assert len(runs) == 1, f"expected one run, got {[(r['name'], r['input'], r['status']) for r in runs]}"
        return runs[0]

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


def wait_for_roll(
    deployment: Deployment, reached: Callable[[list[str]], bool], what: str, timeout: float = 180.0
) -> None:
    """Wait until the states a running roll entered satisfy `reached` (`what` says what, for the failure)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for execution in deployment.executions(deployment.roll_node_pool):
            if execution["status"] == "RUNNING" and reached(deployment.states(execution["executionArn"])):
                return
        time.sleep(0.05)
    pytest.fail(f"no roll reached {what} within {timeout} s")


# A run's last step releases the lock, then starts the run of a change made during it; the execution ends a
# transition later (milliseconds unloaded; 5 s leaves room for a loaded machine, and a run started beside a going one
# would have skipped, never counted among those that did the work).
LAST_STEP = datetime.timedelta(seconds=5)


def the_run(executions: list[dict[str, Any]], status: str = "SUCCEEDED") -> dict[str, Any]:
    """The one execution that did the work, ended with `status`; every other one must have skipped (lock held, up
    to date, or held by its rollout)."""
    [run] = the_runs(executions, 1, status)
    return run


def the_runs(executions: list[dict[str, Any]], count: int, status: str = "SUCCEEDED") -> list[dict[str, Any]]:
    """The `count` executions that did the work, in order, each ended with `status`, none started before the one
    before it ended (reconcile starts no run beside a going one), or before its last step had released the lock
    (that step starts the run of a change made meanwhile: LAST_STEP); every other one must have skipped."""
    outputs = {e["executionArn"]: json.loads(e.get("output") or "{}") for e in executions}
    working = working_runs(executions)
    assert len(working) == count and all(e["status"] == "SUCCEEDED" for e in executions if e not in working), [
        (e["name"], e["status"], outputs[e["executionArn"]].get("plan"), e.get("error")) for e in executions
    ]
    assert all(e["status"] == status for e in working), [(e["status"], e.get("error"), e.get("cause")) for e in working]
    pairs = itertools.pairwise(working)
    assert all(later["startDate"] >= earlier["stopDate"] - LAST_STEP for earlier, later in pairs), working
    return working


def working_runs(executions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The executions that did not skip (described, as `Deployment.settle` returns them)."""
    return [e for e in executions if json.loads(e.get("output") or "{}").get("plan", {}).get("action") != "skip"]


def remove_example_objects(api: k8s.ApiClient, timeout: float = 60.0) -> None:
    """Delete what the example config applied to the shared control plane (its namespace, cluster role and
    kube-system ConfigMap), so that its DaemonSet and pending pods never land on other tests' Nodes."""
    core = k8s.CoreV1Api(api)
    deletions = (
        lambda: core.delete_namespace("example"),
        lambda: core.delete_namespaced_config_map("cluster-info", "kube-system"),
        lambda: k8s.RbacAuthorizationV1Api(api).delete_cluster_role("cluster-info-reader"),
    )
    for delete in deletions:
        try:
            delete()
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
    deadline = time.monotonic() + timeout
    while any(n.metadata.name == "example" for n in core.list_namespace().items):
        assert time.monotonic() < deadline, "namespace example still there after the test"
        # No kubelet finishes the pods of a gone simulator: delete them at once, so the namespace can go.
        core.delete_collection_namespaced_pod("example", grace_period_seconds=0)
        time.sleep(0.5)


# The states at which a replaced node's iteration ends with its instance terminated: Terminate, or its drain's.
TERMINATED_AT = ("Terminate", "TerminatedByDrain")


def nodes_terminated(states: list[str]) -> int:
    """How many nodes' instances the roll's `states` (as entered) terminated."""
    return sum(state in TERMINATED_AT for state in states)


def upload_config(s3: Any, bucket: str) -> None:
    for path in sorted((ROOT / "examples" / "config").rglob("*")):
        if path.is_file():
            key = "config/" + path.relative_to(ROOT / "examples" / "config").as_posix()
            s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())


def lower_roll_budget(deployment: Deployment, steps: int) -> None:
    """Set the roll function's CLM_ROLL_STEPS_PER_EXECUTION (what clm:rollStepsPerExecution deploys)."""
    lambdas = deployment.session.client("lambda")
    [(name, variables)] = [
        (f["FunctionName"], f["Environment"]["Variables"])
        for f in lambdas.list_functions()["Functions"]
        if "CLM_ROLL_STEPS_PER_EXECUTION" in f.get("Environment", {}).get("Variables", {})
    ]
    lambdas.update_function_configuration(
        FunctionName=name, Environment={"Variables": {**variables, "CLM_ROLL_STEPS_PER_EXECUTION": str(steps)}}
    )


def register_example_cluster(deployment: Deployment) -> None:
    """Put kube-1 of examples/clusters.yaml into the registry, reachable through a Secrets Manager kubeconfig."""
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    deployment.registry.put(cluster)


@contextlib.contextmanager
def first_run_config_map(
    deployment: Deployment, kube_api: k8s.ApiClient, key: str, body: str, name: str
) -> Iterator[dict[str, str]]:
    """Upload a component (S3 `key`: a ConfigMap `name` in namespace default), register kube-1 and let its first run
    succeed; yields the ConfigMap's data as the API server has it. Removes the component and the ConfigMap after."""
    s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
    s3.put_object(Bucket=bucket, Key=key, Body=body.encode())
    deployment.settle()
    core = k8s.CoreV1Api(kube_api)
    try:
        register_example_cluster(deployment)
        runs = deployment.settle(known=0)
        assert all(e["status"] == "SUCCEEDED" for e in runs), [(e["status"], e.get("error")) for e in runs]
        yield core.read_namespaced_config_map(name, "default").data
    finally:
        s3.delete_object(Bucket=bucket, Key=key)
        core.delete_namespaced_config_map(name, "default")


class HealthyPods(threading.Thread):
    """Counts the Ready pods of `selector` (the example's `app=web`) at every change the API server reports (a list,
    then a watch from its resource version): `lowest` is the least seen, `samples` how many states were seen.

    A watch sees every change, where polling saw only the moments it sampled, and costs no CPU between changes."""

    def __init__(self, api: k8s.ApiClient, namespace: str = "example", selector: str = "app=web"):
        super().__init__(daemon=True)
        self.core = k8s.CoreV1Api(api)
        self.namespace, self.selector = namespace, selector
        self.lowest: int | None = None
        self.at_lowest = ""  # the change that led to `lowest`, and which pods were Ready then
        self.samples = 0
        self._stopping = threading.Event()
        self._pods: dict[str, k8s.V1Pod] = {}  # by name, as last seen

    def run(self) -> None:
        version = self._list()
        while not self._stopping.is_set():
            try:
                version = self._watch(version)
            except ApiException as exc:
                if exc.status != 410:  # Gone: the version is too old to watch from; list again
                    raise
                version = self._list()

    def _list(self) -> str:
        listed = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector)
        self._pods = {pod.metadata.name: pod for pod in listed.items}
        self._observe()
        return listed.metadata.resource_version

    def _watch(self, version: str) -> str:
        """Follow the changes from `version` for a second (the server then ends the watch); the last version seen
        (a watch the server ended mid-chunk ends there too)."""
        stream = watch.Watch()
        events = stream.stream(
            self.core.list_namespaced_pod,
            self.namespace,
            label_selector=self.selector,
            resource_version=version,
            timeout_seconds=1,
        )
        with contextlib.suppress(ProtocolError):
            for event in events:
                pod = event["object"]
                if event["type"] == "DELETED":
                    self._pods.pop(pod.metadata.name, None)
                else:
                    self._pods[pod.metadata.name] = pod
                self._observe(f"{event['type']} {pod.metadata.name}")
        return stream.resource_version or version

    def _observe(self, change: str = "listed") -> None:
        ready = sum(serving(pod) for pod in self._pods.values())
        if self.lowest is None or ready < self.lowest:
            pods = sorted((name, _described(pod)) for name, pod in self._pods.items())
            self.lowest, self.at_lowest = ready, f"after {change}: {pods}"
        self.samples += 1

    def stop(self) -> None:
        """Stop watching (within the second a watch lasts)."""
        self._stopping.set()
        self.join()


def _described(pod: k8s.V1Pod) -> str:
    """The pod's node and conditions, and whether it is being deleted."""
    deleting = " deleting" if pod.metadata.deletion_timestamp else ""
    conditions = (pod.status.conditions or []) if pod.status else []
    return f"on {pod.spec.node_name} ({', '.join(f'{c.type}={c.status}' for c in conditions)}{deleting})"


def as_role(role_arn: str, session_name: str) -> boto3.Session:
    """A session of the role whose calls the sandbox judges against the role's policies (as AWS would)."""
    from clm_sandbox.iam.principals import role_session

    credentials = role_session(role_arn, session_name, REGION)
    return boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials["AWS_SESSION_TOKEN"],
        region_name=REGION,
    )


def instances(session: boto3.Session) -> set[str]:
    groups = session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    return {instance["InstanceId"] for group in groups for instance in group["Instances"]}


def wait_for_ready_pods(
    api: k8s.ApiClient, count: int, timeout: float = 30.0, namespace: str = "example", selector: str = "app=web"
) -> None:
    core = k8s.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = core.list_namespaced_pod(namespace, label_selector=selector).items
        if sum(ready(p) for p in pods) >= count:
            return
        time.sleep(0.1)
    pytest.fail(f"fewer than {count} Ready pods {selector} in {namespace} after {timeout} s")


def provisioned(deployment: Deployment, nodes: Any, kube_api: k8s.ApiClient) -> set[str]:
    """Wait for the first run of the registered cluster, its 3 Ready Nodes and web pods; returns its instances."""
    the_run(deployment.settle(known=0))
    nodes.wait_for_ready_nodes(3, timeout=30)
    wait_for_ready_pods(kube_api, 3)
    return instances(deployment.session)


# A rollout policy of one wave taking every cluster at once (within clm:maxRunning): for tests of something else
# than waves, whose fleets must change together (docs/rollouts.md).
ALL_AT_ONCE = "waves:\n  - {name: everyone, concurrency: 100%}\nmax_concurrency: 1000\n"


def upload_rollout_policy(deployment: Deployment, policy: str) -> None:
    """Upload cluster/rollout.yaml (a new configuration version: upload it before the clusters are registered)."""
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"], Key="config/cluster/rollout.yaml", Body=policy.encode()
    )
    deployment.settle()


def upload_new_ami(deployment: Deployment) -> None:
    """Upload config-defaults.yaml with a new worker AMI (every node outdated): the upload starts reconcile."""
    defaults = ROOT / "examples" / "config" / "cluster" / "config-defaults.yaml"
    changed = defaults.read_text().replace("worker_ami: ami-0c1a7f89451184c8b", "worker_ami: ami-0d2b8f9a562295d9c")
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"], Key="config/cluster/config-defaults.yaml", Body=changed.encode()
    )


def record_terminations(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """Append to `deployment.terminations` each instance moto terminates through its group
    (TerminateInstanceInAutoScalingGroup, whoever asks and from whichever call, even one of an execution stopped
    meanwhile), once the termination succeeded."""
    from moto.autoscaling.models import AutoScalingBackend

    original = AutoScalingBackend.terminate_instance

    def recording(backend: AutoScalingBackend, instance_id: str, should_decrement: bool) -> Any:
        activity = original(backend, instance_id, should_decrement)
        deployment.terminations.append(instance_id)
        return activity

    monkeypatch.setattr(AutoScalingBackend, "terminate_instance", recording)
