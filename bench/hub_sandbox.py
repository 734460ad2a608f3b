"""The hub benchmark's sandbox: one CLM deployment (moto's server, the CDK app, the example config) and N clusters
of a few nodes each, all reached through one real kube-apiserver, each with a node simulator of its own.

The clusters share the control plane, as the sandbox's fleet does (clm_sandbox.nodesim.fleet): CLM's calls to one
cluster name only that cluster's Nodes (its instances' provider ids) and its own namespace, so sharing changes no
request CLM makes, only the server's load (which makes the shared server slower, never faster: conservative).
Each cluster's secret carries a token of its own (user `clm-<local_id>`, group `clm-hub`), and the API server's
audit log records every request of that group: CLM's requests per cluster, apart from the simulators' and the
controllers'. Each cluster's workload (the example app) lives in a namespace of its own, `example-<local_id>`,
with its pods pinned to the cluster's pool: one cluster's budget never holds another's drain.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import boto3
import yaml
from kubernetes import config
from roll_bound import Simulation
from roll_sandbox import (
    EXAMPLES,
    BenchError,
    RollSandbox,
    bench_cluster,
    moto_server_logged,
    wait_for_ready_pods,
    workload_with_grace,
)

from clm.model import Cluster
from clm_sandbox.controlplane import ControlPlane, ensure_built
from clm_sandbox.deploy import cli
from clm_sandbox.deploy.examples import store_secret, upload_config
from clm_sandbox.moto_server import SANDBOX_ENV
from clm_sandbox.nodesim import NodeSimulator

AUDIT_GROUP = "clm-hub"
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "userGroups": [AUDIT_GROUP]}, {"level": "None"}],
}
WORKLOAD_DIR = "cluster/manifests/example-app/"
CLUSTER_STACK = "cluster/stack.yaml"
SUBNET = '"10.0.{{ loop.index0 * 32 }}.0/19"'  # the example cluster stack's subnets, in every VPC alike
# Each cluster's network of its own (10.<i>.0.0/16): node names (ip-10-<i>-...) never collide on the shared server.
NET_ITEM = "hub_net"
NAMESPACE = "example"
POOL_LABEL = "node.kubernetes.io/node-pool"
SIMULATOR_POLL = 2.0  # seconds between a simulator's looks at its groups (0.5 by default: 20 would load moto)


class HubControlPlane(ControlPlane):
    """The sandbox's control plane with an audit log of the `clm-hub` group and a token per cluster in that group."""

    def __init__(self, log_dir: Path, local_ids: list[str]):
        log_dir.mkdir(parents=True, exist_ok=True)
        policy = log_dir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY))
        self.audit_log = log_dir / "audit.jsonl"
        super().__init__(
            log_dir=log_dir,
            extra_apiserver_args=[f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}"],
        )
        self.tokens = {local_id: secrets.token_hex(32) for local_id in local_ids}

    def _write_credentials(self) -> None:
        """The admin's credentials, then one token line per cluster (system:masters, and the audited group)."""
        super()._write_credentials()
        with (self._require_tmpdir() / "tokens.csv").open("a") as tokens:
            for local_id, token in self.tokens.items():
                tokens.write(f'{token},clm-{local_id},clm-{local_id},"system:masters,{AUDIT_GROUP}"\n')

    def kubeconfig_of(self, local_id: str) -> str:
        """The admin kubeconfig with the cluster's own token."""
        kubeconfig = yaml.safe_load(self.kubeconfig_path.read_text())
        kubeconfig["users"][0]["user"]["token"] = self.tokens[local_id]
        return yaml.safe_dump(kubeconfig, sort_keys=False)


def hub_clusters(count: int, simulation: Simulation) -> list[Cluster]:
    """`count` copies of the roll benchmark's cluster (hub-01, ...), each with its secret and its own pool name."""
    base = bench_cluster(simulation)
    clusters = []
    for i in range(1, count + 1):
        local_id = f"hub-{i:02d}"
        pool = dataclasses.replace(base.node_pools[0], name=f"pool-{local_id}")
        clusters.append(
            dataclasses.replace(
                base,
                id=base.id.replace(base.local_id, local_id),
                local_id=local_id,
                alias=f"hub-{local_id}",
                api_server_url=base.api_server_url.replace(base.local_id, local_id),
                config_items={
                    **base.config_items,
                    "kube_auth_secret": f"clm/{local_id}",
                    "vpc_cidr": f"10.{i}.0.0/16",
                    NET_ITEM: f"10.{i}",
                },
                node_pools=[pool],
            )
        )
    return clusters


def per_cluster_workload(text: str) -> str:
    """An example-app manifest with the cluster's own namespace and (pod templates) a node selector on its pool."""
    text = text.replace(f"namespace: {NAMESPACE}\n", f"namespace: {NAMESPACE}-{{{{ cluster.local_id }}}}\n")
    text = text.replace(f"  name: {NAMESPACE}\n", f"  name: {NAMESPACE}-{{{{ cluster.local_id }}}}\n")
    selector = f"      nodeSelector:\n        {POOL_LABEL}: pool-{{{{ cluster.local_id }}}}\n"
    return text.replace(
        "    spec:\n      terminationGracePeriodSeconds", f"    spec:\n{selector}      terminationGracePeriodSeconds"
    )


def per_cluster_network(text: str) -> str:
    """The example cluster stack with subnets in the cluster's own network (config item NET_ITEM)."""
    if SUBNET not in text:
        raise BenchError(f"examples/config/{CLUSTER_STACK}: no subnet {SUBNET} to move into the cluster's network")
    return text.replace(SUBNET, SUBNET.replace("10.0", f"{{{{ cluster.config_items.{NET_ITEM} }}}}"))


def rollout_policy(clusters: int) -> str:
    """One wave taking every cluster at once (no health gate: the roll alone is measured)."""
    return f"max_concurrency: {clusters}\nwaves:\n  - {{name: hub, concurrency: 100%}}\nhealth: false\n"


def hub_config(simulation: Simulation, clusters: int) -> dict[str, str]:
    """The files uploaded over examples/config: the per-cluster network and example app (the web pods' grace set),
    and the rollout policy."""
    changed = {
        "cluster/rollout.yaml": rollout_policy(clusters),
        CLUSTER_STACK: per_cluster_network((EXAMPLES / "config" / CLUSTER_STACK).read_text()),
    }
    for path in sorted((EXAMPLES / "config" / WORKLOAD_DIR).glob("*.yaml")):
        relative = WORKLOAD_DIR + path.name
        text = workload_with_grace(simulation.grace) if path.name == "02-workload.yaml" else path.read_text()
        changed[relative] = per_cluster_workload(text)
    return changed


@dataclass
class Hub:
    """The hub's sandbox: a RollSandbox (of the first cluster) for its clients, every cluster and its simulator."""

    sandbox: RollSandbox
    plane: HubControlPlane
    clusters: list[Cluster]
    simulators: dict[str, NodeSimulator]

    def wait_until_ready(self, timeout: float) -> None:
        """Every cluster's nodes and web pods Ready."""
        simulation = self.sandbox.simulation
        for cluster in self.clusters:
            self.simulators[cluster.id].wait_for_ready_nodes(simulation.nodes, timeout=timeout)
            namespace = f"{NAMESPACE}-{cluster.local_id}"
            wait_for_ready_pods(self.sandbox.kube_api, namespace, "app=web", simulation.replicas, timeout)


def start_hub(
    stack: ExitStack, simulation: Simulation, count: int, max_running: int, logs: Path, say: Callable[[str], None]
) -> Hub:
    """Start the control plane, moto's server and CLM (`clm:maxRunning` = `max_running`), register `count`
    clusters (their first runs start together) and wait for their nodes and pods."""
    ensure_built()
    os.environ.update(SANDBOX_ENV)
    clusters = hub_clusters(count, simulation)
    plane = stack.enter_context(HubControlPlane(logs / "control-plane", [c.local_id for c in clusters]))
    endpoint, server_pid = stack.enter_context(moto_server_logged(logs / "moto-server.log"))
    say(f"moto server {endpoint}, Kubernetes {plane.server}; deploying CLM (clm:maxRunning={max_running})")
    outputs = cli.bootstrap_and_deploy(endpoint, logs / "cdk.out", {"clm:maxRunning": max_running})
    session = boto3.Session(region_name=SANDBOX_ENV["AWS_DEFAULT_REGION"])
    kube_api = config.new_client_from_config(str(plane.kubeconfig_path))
    sandbox = RollSandbox(endpoint, server_pid, plane, kube_api, session, outputs, simulation, clusters[0])
    s3, bucket = sandbox.client("s3"), outputs["ConfigBucketName"]
    upload_config(s3, bucket, EXAMPLES / "config")
    upload_config(s3, bucket, EXAMPLES / "config", hub_config(simulation, count))
    simulators = {}
    for cluster in clusters:
        store_secret(
            sandbox.client("secretsmanager"),
            f"clm/{cluster.local_id}",
            plane.kubeconfig_of(cluster.local_id),
            cluster.id,
        )
        simulator = NodeSimulator(
            kube_api,
            session,
            cluster.id,
            boot_delay=simulation.boot_delay,
            pod_ready_delay=simulation.pod_ready_delay,
            time_scale=1.0,
            poll_interval=SIMULATOR_POLL,
            endpoint_url=endpoint,
        )
        simulators[cluster.id] = stack.enter_context(simulator)
    sandbox.settle(time.monotonic() + 300)  # the uploads' reconciles (nothing registered yet)
    say(f"registering {count} clusters of {simulation.nodes} nodes ({simulation.replicas} web pods each)")
    for cluster in clusters:
        sandbox.registry.put(cluster)
    hub = Hub(sandbox, plane, clusters, simulators)
    hub.wait_until_ready(timeout=600 + 30 * count)
    sandbox.settle(time.monotonic() + 600 + 30 * count)
    return hub
