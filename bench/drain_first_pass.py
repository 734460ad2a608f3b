"""The drain's first pass: seconds from a pass's start to its first eviction request, in a cold and a warm container.

The PDB scenario of DESIGN.md "Performance targets": 3 simulated Nodes on the real control plane, 3k replicas with
preferred anti-affinity (k on each node), a PodDisruptionBudget maxUnavailable=1, grace 2 s, pods Ready 1 s after
binding. One node is drained as the roll's drain step does it: each pass connects as the Lambda step does
(`clm.workflow.cluster_access.kube_client`: the cluster's Secrets Manager secret holds the kubeconfig, as in the
sandbox deployment; moto in-process), runs `drain_pass`, and the next pass follows after its `wait_seconds`.

A cold drain starts with every per-process cache emptied (boto3 clients, kept Kubernetes clients): a fresh
container whose handler is imported (the `kubernetes` import, ~0.5 s, is bench/cold_start.py's, not counted
here). A warm drain follows in the same process, as the next node's drain in a roll's warm container.
The requests of each first pass are timed through `KubeClient.exchange`; the figures print the offsets of each
request before the first eviction.

    .venv/bin/python bench/drain_first_pass.py --pods 2,3 --repeat 3 [--rtt 0.02]

`--rtt` delays each of CLM's requests, as an API server across a network would (the sandbox's is on loopback,
~1-5 ms a request; an EKS endpoint from a Lambda in the region is ~5-20 ms, more for a new TLS connection).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from kubernetes import config
from moto import mock_aws

from clm import aws as clm_aws
from clm.kube import client as kube_client_module
from clm.kube import connections
from clm.kube.client import MERGE_PATCH, KubeClient
from clm.kube.drain import drain_pass
from clm.kube.nodes import DRAIN_START, LAST_FORCED, LAST_PROGRESS, LIFECYCLE_LABEL, TAINT_KEY
from clm.kube.settings import DrainSettings
from clm.model import Cluster
from clm.workflow import cluster_access
from clm_sandbox.controlplane import ControlPlane, ensure_built
from clm_sandbox.deploy.examples import store_secret
from clm_sandbox.nodesim import NodeSimulator, create_node_pool

REGION = "eu-central-1"
CLUSTER_ID = f"aws:123456789012:{REGION}:drain-bench"
SECRET = "clm/drain-bench"
GRACE = 2
READY_DELAY = 1.0
NODES = 3
QUICK = {
    "drain_min_pod_lifetime": "0s",
    "drain_min_healthy_sibling_lifetime": "0s",
    "drain_min_unhealthy_sibling_lifetime": "0s",
}


@dataclass
class Requests:
    """Every request CLM's client sent, as (monotonic time, method, path)."""

    sent: list[tuple[float, str, str]] = field(default_factory=list)

    def since(self, start: float) -> list[tuple[float, str, str]]:
        return [(t - start, m, p) for t, m, p in self.sent if t >= start]


@contextmanager
def recorded(rtt: float) -> Iterator[Requests]:
    """Record the start of each request of `KubeClient.exchange`, delaying each by `rtt` seconds (a remote server)."""
    requests = Requests()
    original = KubeClient.exchange

    def exchange(self: KubeClient, method: str, path: str, **options: Any) -> tuple[int, dict[str, Any]]:
        requests.sent.append((time.monotonic(), method, path))
        time.sleep(rtt)
        return original(self, method, path, **options)

    kube_client_module.KubeClient.exchange = exchange  # type: ignore[method-assign]
    try:
        yield requests
    finally:
        kube_client_module.KubeClient.exchange = original  # type: ignore[method-assign]


@dataclass(frozen=True)
class Drain:
    """One node's drain: the first pass's time to its first eviction (and to connect), the whole drain's time."""

    pods: int
    warm: bool
    connect: float
    first_eviction: float
    seconds: float
    passes: int
    before_eviction: list[tuple[float, str, str]]

    @property
    def bound(self) -> float:
        return (self.pods - 1) * READY_DELAY + GRACE


class Bench:
    """The scenario's cluster: its control plane, simulated nodes and admin client."""

    def __init__(self, kube: KubeClient, cluster: Cluster, nodes: list[str]):
        self.kube, self.cluster, self.nodes = kube, cluster, nodes

    def place(self, namespace: str, pods: int) -> str:
        """The workload in `namespace`, `pods` per node; returns a node holding `pods` of them, Ready."""
        self.kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
        labels = {"app": "web"}
        spread = {
            "weight": 100,
            "podAffinityTerm": {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"},
        }
        self.kube.request(
            "POST",
            f"/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets",
            body={"metadata": {"name": "web"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}},
        )
        template = {
            "metadata": {"labels": labels},
            "spec": {
                "terminationGracePeriodSeconds": GRACE,
                "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [spread]}},
                "containers": [{"name": "web", "image": "registry.invalid/web:1"}],
            },
        }
        self.kube.request(
            "POST",
            f"/apis/apps/v1/namespaces/{namespace}/deployments",
            body={
                "metadata": {"name": "web"},
                "spec": {"replicas": pods * NODES, "selector": {"matchLabels": labels}, "template": template},
            },
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            listed = self.kube.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
            ready = [p for p in listed if _ready(p)]
            pdb = self.kube.request("GET", f"/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets/web")
            if len(ready) == pods * NODES and (pdb.get("status") or {}).get("disruptionsAllowed") == 1:
                on = {n: sum(p["spec"].get("nodeName") == n for p in ready) for n in self.nodes}
                victims = [n for n, count in on.items() if count == pods]
                if victims:
                    return victims[0]
                raise RuntimeError(f"the scheduler spread the pods {on}, not {pods} a node")
            time.sleep(0.1)
        raise RuntimeError(f"{pods * NODES} pods not Ready in 60 s")

    def restore(self, namespace: str, node: str) -> None:
        """Delete the workload and undo the drain's marks on `node`."""
        self.kube.request("DELETE", f"/api/v1/namespaces/{namespace}")
        taints = [t for t in self.kube.request("GET", f"/api/v1/nodes/{node}")["spec"].get("taints") or []]
        patch = {
            "metadata": {
                "labels": {LIFECYCLE_LABEL: None},
                "annotations": {DRAIN_START: None, LAST_FORCED: None, LAST_PROGRESS: None},
            },
            "spec": {"unschedulable": None, "taints": [t for t in taints if t["key"] != TAINT_KEY] or None},
        }
        self.kube.request("PATCH", f"/api/v1/nodes/{node}", body=patch, content_type=MERGE_PATCH)
        deadline = time.monotonic() + 120
        while self.kube.get(f"/api/v1/namespaces/{namespace}") is not None:  # its pods gone from the nodes
            if time.monotonic() > deadline:
                raise RuntimeError(f"namespace {namespace} still there after 120 s")
            time.sleep(0.2)

    def drain(self, pods: int, warm: bool, requests: Requests) -> Drain:
        """Place the workload, drain a node with `pods` of it pass by pass, then put things back."""
        namespace = f"drain-{uuid.uuid4().hex[:6]}"
        node = self.place(namespace, pods)
        if not warm:
            clm_aws.forget_clients()
            connections.forget()
        settings = DrainSettings.from_config_items(self.cluster.config_items, self.cluster.id)
        started = time.monotonic()
        passes, first, connect = 0, None, 0.0
        while True:
            pass_start = time.monotonic()
            with cluster_access.kube_client(self.cluster) as kube:
                connected = time.monotonic() - pass_start
                result = drain_pass(kube, node, settings)
            passes += 1
            if first is None:
                sent = requests.since(pass_start)
                evictions = [t for t, _, path in sent if path.endswith("/eviction")]
                first, connect = (evictions[0] if evictions else float("nan")), connected
                before = [r for r in sent if r[0] <= first]
            if result["done"]:
                break
            time.sleep(result["wait_seconds"])
        seconds = time.monotonic() - started
        self.restore(namespace, node)
        return Drain(pods, warm, connect, first, seconds, passes, before)


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return ready and not pod["metadata"].get("deletionTimestamp")


@contextmanager
def scenario() -> Iterator[Bench]:
    """moto in-process, the control plane, 3 simulated nodes, the kubeconfig in the cluster's secret."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        os.environ.setdefault(name, value)
    os.environ["AWS_DEFAULT_REGION"] = os.environ["AWS_REGION"] = REGION
    ensure_built()
    with mock_aws(), ControlPlane() as control_plane:
        session = boto3.Session(region_name=REGION)
        kubeconfig = control_plane.kubeconfig_path.read_text()
        store_secret(session.client("secretsmanager"), SECRET, kubeconfig, CLUSTER_ID)
        create_node_pool(session, CLUSTER_ID, "workers", NODES)
        api = config.new_client_from_config(str(control_plane.kubeconfig_path))
        cluster = Cluster(
            id=CLUSTER_ID,
            local_id="drain-bench",
            infrastructure_account="aws:123456789012",
            region=REGION,
            provider="zalando-aws",
            config_items={"kube_auth_secret": SECRET, **QUICK},
        )
        with (
            NodeSimulator(api, session, CLUSTER_ID, pod_ready_delay=READY_DELAY, poll_interval=0.2) as sim,
            KubeClient.from_kubeconfig(control_plane.kubeconfig_path, cluster_id="admin") as admin,
        ):
            yield Bench(admin, cluster, sim.wait_for_ready_nodes(NODES, timeout=60))


def _report(drains: list[Drain], rtt: float) -> None:
    print(f"{'k':>2} {'container':>9} {'connect s':>9} {'1st evict s':>11} {'drain s':>8} {'bound s':>7} {'ratio':>6}")
    for d in drains:
        print(
            f"{d.pods:>2} {'warm' if d.warm else 'cold':>9} {d.connect:>9.3f} {d.first_eviction:>11.3f} "
            f"{d.seconds:>8.2f} {d.bound:>7.1f} {d.seconds / d.bound:>6.3f}  ({d.passes} passes)"
        )
    for warm in (False, True):
        chosen = [d for d in drains if d.warm == warm]
        if not chosen:
            continue
        first = statistics.median(d.first_eviction for d in chosen)
        connect = statistics.median(d.connect for d in chosen)
        ratio = statistics.median(d.seconds / d.bound for d in chosen)
        print(
            f"{'warm' if warm else 'cold'}: first eviction median {first:.3f} s after the pass started "
            f"(connect {connect:.3f} s); drain/bound median {ratio:.3f}"
        )
        print("  requests before it (offsets of the last such drain):")
        for offset, method, path in chosen[-1].before_eviction:
            print(f"    {offset:7.3f} {method:6} {path}")
    print(f"load average {os.getloadavg()[0]:.1f}; each request delayed {rtt * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", default="2,3", help="pods of the budget per node (k), comma-separated")
    parser.add_argument("--repeat", type=int, default=2, help="cold/warm drain pairs per k")
    parser.add_argument(
        "--rtt", type=float, default=0.0, help="seconds added to each of CLM's requests (the sandbox's server is local)"
    )
    args = parser.parse_args()
    drains = []
    with scenario() as bench, recorded(args.rtt) as requests:
        for pods in (int(k) for k in args.pods.split(",")):
            for _ in range(args.repeat):
                drains.append(bench.drain(pods, warm=False, requests=requests))
                drains.append(bench.drain(pods, warm=True, requests=requests))
    _report(drains, args.rtt)


if __name__ == "__main__":
    main()
