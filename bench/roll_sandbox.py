"""The roll benchmark's sandbox: moto's server in a process of its own, the real control plane, CLM deployed into
moto, the example config uploaded (the workload's grace period set), kube-1 with one pool of N nodes, the node
simulator; and the run of a trigger, timed from the trigger to the provision execution's end.

moto runs as a server process with in-process Lambdas (warm containers, as Lambda keeps them): Step Functions,
the Lambda handlers and AWS live in one process (CLM's side), apart from this process's node simulator and
watcher (the kubelets' side), so neither one's CPU use shows up in the other's time figures. The server's output
(the handlers' logs) goes to a file: clm_sandbox.moto_server.moto_server_process keeps it on a pipe nobody reads
after the first line, and with in-process Lambdas the pipe fills within minutes and blocks the handlers' logging.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
from kubernetes import config
from roll_bound import Simulation

from clm.model import Cluster, NodePool
from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry
from clm_sandbox.controlplane import ControlPlane, ensure_built
from clm_sandbox.demo.steps import next_run
from clm_sandbox.deploy import cli
from clm_sandbox.deploy.examples import store_secret, upload_config
from clm_sandbox.iam.record import LOG_ENV
from clm_sandbox.moto_server import MODULE, READY_LINE, SANDBOX_ENV
from clm_sandbox.nodesim import NodeSimulator

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
WORKLOAD = "cluster/manifests/example-app/02-workload.yaml"
DEFAULTS = "cluster/config-defaults.yaml"
WEB_GRACE = "      terminationGracePeriodSeconds: 2\n"  # the web Deployment's, in WORKLOAD
OLD_AMI, NEW_AMI = "worker_ami: ami-0c1a7f89451184c8b", "ami-0d2b8f9a562295d9c"
SECRET = "clm/kube-1"
# The split pool (`--split`): the test profile modelled on Zalando's worker-splitaz, one group per zone.
SPLIT_PROFILE = "worker-splitaz"
SPLIT_KEY = f"cluster/node-pools/{SPLIT_PROFILE}/stack.yaml"
SPLIT_TEMPLATE = ROOT / "tests" / "fixtures" / "splitaz" / "node-pools" / SPLIT_PROFILE / "stack.yaml"
ZONES = 3  # the example cluster's (config-defaults.yaml availability_zones)
# The roll alone is measured: one wave, no health gate after the run (the built-in one watches for minutes).
ROLLOUT = {"cluster/rollout.yaml": "waves:\n  - {name: bench, concurrency: 100%}\nhealth: false\n"}
RUN_TIMEOUT = 1800.0
SECONDS_PER_NODE = 20.0  # more time for a run (and the set-up) per node of the pool
SERVER_START_TIMEOUT = 120.0


class BenchError(RuntimeError):
    """The sandbox did not get where the benchmark needs it."""


@dataclass(frozen=True)
class Run:
    """One provision execution started by a trigger, which succeeded: wall times (epoch seconds) of the trigger, of
    its start and of its end."""

    arn: str
    triggered: float
    started: float
    stopped: float

    @property
    def seconds(self) -> float:
        """From the trigger to the end of the execution."""
        return self.stopped - self.triggered


@dataclass
class RollSandbox:
    """What the benchmark started and the clients it uses."""

    endpoint: str
    server_pid: int
    plane: ControlPlane
    kube_api: Any
    session: boto3.Session
    outputs: dict[str, str]
    simulation: Simulation
    cluster: Cluster
    simulator: NodeSimulator | None = None

    def server_cpu_seconds(self) -> float:
        """CPU time moto's server process used so far: Step Functions, the Lambda handlers and AWS."""
        fields = Path(f"/proc/{self.server_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def client(self, service: str) -> Any:
        """A boto3 client for moto's server."""
        return self.session.client(service, endpoint_url=self.endpoint)

    @property
    def registry(self) -> DynamoRegistry:
        return DynamoRegistry(self.client("dynamodb"), self.outputs["RegistryTableName"])

    @property
    def provision(self) -> str:
        return self.outputs["ProvisionStateMachineArn"]

    def run(self, trigger: Callable[[], object], timeout: float | None = None) -> Run:
        """Call `trigger()`, then wait for the provision run it starts and for every execution to end (by default
        for RUN_TIMEOUT and SECONDS_PER_NODE per node of the pool)."""
        timeout = timeout or RUN_TIMEOUT + SECONDS_PER_NODE * self.simulation.nodes
        sfn = self.client("stepfunctions")
        known = {e["executionArn"] for e in _executions(sfn, self.provision)}
        triggered = time.time()
        trigger()
        arn = next_run(sfn, self.provision, self.cluster.id, known)
        deadline = time.monotonic() + timeout
        while (described := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            if time.monotonic() > deadline:
                raise BenchError(f"provision run {arn} of {self.cluster.id} still running after {timeout:.0f} s")
            time.sleep(0.2)
        self.settle(deadline)
        if described["status"] != "SUCCEEDED":
            raise BenchError(
                f"provision run {arn} of {self.cluster.id}: {described['status']}: {described.get('cause', '')[:500]}"
            )
        return Run(arn, triggered, _epoch(described["startDate"]), _epoch(described["stopDate"]))

    def settle(self, deadline: float) -> None:
        """Wait until no execution of any state machine runs."""
        sfn = self.client("stepfunctions")
        machines = [m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]]
        while any(e["status"] == "RUNNING" for m in machines for e in _executions(sfn, m)):
            if time.monotonic() > deadline:
                raise BenchError("executions still running at the deadline")
            time.sleep(0.5)

    def put_cluster(self, cluster: Cluster) -> None:
        """Write the cluster to the registry (a spec change starts a provision run) and remember it."""
        self.cluster = cluster
        self.registry.put(cluster)

    def new_ami(self, ami: str = NEW_AMI) -> None:
        """Upload config-defaults.yaml with worker AMI `ami`: the upload starts reconcile, which starts provision."""
        text = (EXAMPLES / "config" / DEFAULTS).read_text()
        if OLD_AMI not in text:
            raise BenchError(f"examples/config/{DEFAULTS}: no line {OLD_AMI!r} to change")
        changed = {DEFAULTS: text.replace(OLD_AMI, f"worker_ami: {ami}")}
        upload_config(self.client("s3"), self.outputs["ConfigBucketName"], EXAMPLES / "config", changed)

    def set_pool_items(self, **items: str) -> None:
        """Set config items of the pool (its `surge`, `max_unavailable`) and wait for the provision run it starts."""
        [pool] = self.cluster.node_pools
        pool = dataclasses.replace(pool, config_items={**pool.config_items, **items})
        self.run(lambda: self.put_cluster(dataclasses.replace(self.cluster, node_pools=[pool])))


def _executions(sfn: Any, machine: str) -> list[dict[str, Any]]:
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=machine)
    return [e for page in pages for e in page["executions"]]


def _epoch(value: datetime | float) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def bench_cluster(
    simulation: Simulation, max_unavailable: str = "1", surge: str = "0", *, split: bool = False
) -> Cluster:
    """kube-1 of examples/clusters.yaml: one pool of exactly N nodes, up to N + the simulation's surge while rolled
    (`max_unavailable`, `surge`: its config items, counts or percentages; `split`: one group per zone, N a multiple
    of ZONES), `replicas` web pods, already `ready`."""
    if split and simulation.nodes % ZONES:
        raise BenchError(f"a split pool has one group per zone: --nodes must be a multiple of {ZONES}")
    [cluster] = [c for c in load_clusters((EXAMPLES / "clusters.yaml").read_text()) if c.local_id == "kube-1"]
    pool: NodePool = dataclasses.replace(
        cluster.node_pools[0],
        name="split" if split else cluster.node_pools[0].name,
        profile=SPLIT_PROFILE if split else cluster.node_pools[0].profile,
        min_size=simulation.nodes,
        max_size=simulation.nodes + simulation.surge,
        config_items={"max_unavailable": max_unavailable, "surge": surge},
    )
    items = {**cluster.config_items, "app_replicas": str(simulation.replicas), "kube_auth_secret": SECRET}
    return dataclasses.replace(cluster, lifecycle_status="ready", config_items=items, node_pools=[pool])


def workload_with_grace(grace: float) -> str:
    """The example workload with the web pods' termination grace period set to `grace` seconds."""
    text = (EXAMPLES / "config" / WORKLOAD).read_text()
    if text.count(WEB_GRACE) != 1:
        raise BenchError(f"examples/config/{WORKLOAD}: expected one line {WEB_GRACE.strip()!r} (the web pods')")
    return text.replace(WEB_GRACE, WEB_GRACE.replace(": 2", f": {grace:g}"))


@contextmanager
def moto_server_logged(log: Path) -> Iterator[tuple[str, int]]:
    """moto's server in a process of its own (in-process Lambdas, real-time waits), its output in `log`; yields
    its endpoint and process id."""
    env = {**os.environ, **SANDBOX_ENV, LOG_ENV: str(log.parent / "iam-calls.jsonl")}  # judged calls: their cost
    env.pop("AWS_ENDPOINT_URL", None)
    command = [sys.executable, "-m", MODULE, "--lambda-mode", "inprocess", "--wait-scale", "1"]
    with log.open("w") as output:
        server = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, text=True)
    try:
        yield _endpoint_from(log, server), server.pid
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _endpoint_from(log: Path, server: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline and server.poll() is None:
        for line in log.read_text().splitlines():
            if line.startswith(READY_LINE):
                return line.removeprefix(READY_LINE).strip()
        time.sleep(0.2)
    raise BenchError(f"moto server did not start within {SERVER_START_TIMEOUT:.0f} s (its output: {log})")


def start(
    stack: ExitStack,
    simulation: Simulation,
    logs: Path,
    say: Callable[[str], None],
    max_unavailable: str = "1",
    surge: str = "0",
    *,
    split: bool = False,
) -> RollSandbox:
    """Start everything, provision the bench cluster (its pool's `max_unavailable` and `surge`; `split`: one group
    per zone) and wait for N Ready nodes and the Ready web pods."""
    ensure_built()
    os.environ.update(SANDBOX_ENV)
    plane = stack.enter_context(ControlPlane(log_dir=logs / "control-plane"))
    endpoint, server_pid = stack.enter_context(moto_server_logged(logs / "moto-server.log"))
    say(f"moto server {endpoint}, Kubernetes {plane.server}; deploying CLM (CDK app) into moto")
    outputs = cli.bootstrap_and_deploy(endpoint, logs / "cdk.out")
    session = boto3.Session(region_name=SANDBOX_ENV["AWS_DEFAULT_REGION"])
    kube_api = config.new_client_from_config(str(plane.kubeconfig_path))
    cluster = bench_cluster(simulation, max_unavailable, surge, split=split)
    sandbox = RollSandbox(endpoint, server_pid, plane, kube_api, session, outputs, simulation, cluster)
    s3, bucket = sandbox.client("s3"), outputs["ConfigBucketName"]
    upload_config(s3, bucket, EXAMPLES / "config")
    if split:
        upload_config(s3, bucket, EXAMPLES / "config", {SPLIT_KEY: SPLIT_TEMPLATE.read_text()})
    upload_config(s3, bucket, EXAMPLES / "config", {WORKLOAD: workload_with_grace(simulation.grace), **ROLLOUT})
    store_secret(sandbox.client("secretsmanager"), SECRET, plane.kubeconfig_path.read_text(), sandbox.cluster.id)
    simulator = NodeSimulator(
        kube_api,
        session,
        sandbox.cluster.id,
        boot_delay=simulation.boot_delay,
        pod_ready_delay=simulation.pod_ready_delay,
        time_scale=1.0,
        endpoint_url=endpoint,
    )
    sandbox.simulator = stack.enter_context(simulator)
    say(f"provisioning {sandbox.cluster.id}: {simulation.nodes} nodes, {simulation.replicas} web pods")
    sandbox.run(lambda: sandbox.put_cluster(sandbox.cluster))
    simulator.wait_for_ready_nodes(simulation.nodes, timeout=120 + SECONDS_PER_NODE * simulation.nodes)
    wait_for_ready_pods(kube_api, "example", "app=web", simulation.replicas, 120 + simulation.replicas)
    return sandbox


def wait_for_ready_pods(kube_api: Any, namespace: str, selector: str, count: int, timeout: float = 120.0) -> None:
    """Wait until `count` pods of the selector are Ready."""
    deadline = time.monotonic() + timeout
    while (ready := ready_pods(kube_api, namespace, selector)) < count:
        if time.monotonic() > deadline:
            raise BenchError(f"{ready} of {count} pods {namespace}/{selector} Ready after {timeout:.0f} s")
        time.sleep(0.5)


def ready_pods(kube_api: Any, namespace: str, selector: str) -> int:
    """The Ready, not terminating pods of the selector (raw JSON: cheap enough to sample often)."""
    response = kube_api.call_api(
        f"/api/v1/namespaces/{namespace}/pods",
        "GET",
        query_params=[("labelSelector", selector)],
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    pods = json.loads(response.data)["items"]
    return sum(
        1
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])
    )
