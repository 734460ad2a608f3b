"""`clm plan` against a reachable cluster: the real v1.20.2 control plane, with simulated kubelets for the example
node pool's instances in in-process moto. The drain pre-flight names what would block or hurt the drains, and
the plan writes nothing to Kubernetes or AWS."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kubernetes import client

from clm.cli.main import cli
from clm.kube.client import KubeClient
from clm.model import Cluster
from clm.registry.clusters_yaml import dump_clusters
from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.nodesim import NodeSimulator
from tests.unit.test_cli_plan import aws_state, config_with_new_ami, deploy
from tests.unit.test_stacks_support import clients, example_cluster, render, stacks_aws

pytestmark = pytest.mark.integration
__all__ = ["clients", "config_with_new_ami", "stacks_aws"]  # fixtures

SOLO_POD = """{{"apiVersion": "v1", "kind": "Pod",
 "metadata": {{"name": "solo", "labels": {{"app": "solo"}}}},
 "spec": {{"nodeName": "{node}", "terminationGracePeriodSeconds": 1,
          "containers": [{{"name": "app", "image": "registry.invalid/app:1",
                          "volumeMounts": [{{"name": "scratch", "mountPath": "/scratch"}}]}}],
          "volumes": [{{"name": "scratch", "emptyDir": {{}}}}]}}}}"""
SOLO_PDB = {
    "apiVersion": "policy/v1beta1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "solo"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "solo"}}},
}


def wait_for(what: str, predicate: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.2)
    raise TimeoutError(what)


@pytest.fixture
def cluster(clients, control_plane: ControlPlane) -> Cluster:
    """The example kube-1 under a unique id, its API server's kubeconfig in a Secrets Manager secret, deployed."""
    suffix = uuid.uuid4().hex[:6]
    secret = f"plan-{suffix}-kubeconfig"
    cluster_id = f"aws:123456789012:eu-central-1:plan-{suffix}"
    tags = [{"Key": "clm:cluster-id", "Value": cluster_id}]  # clm.kube.auth.CLUSTER_ID_TAG
    clients["secretsmanager"].create_secret(
        Name=secret, SecretString=control_plane.kubeconfig_path.read_text(), Tags=tags
    )
    example = example_cluster("kube-1")
    cluster = dataclasses.replace(
        example,
        id=cluster_id,
        local_id=f"plan-{suffix}",
        config_items={**example.config_items, "kube_auth_secret": secret},
    )
    deploy(clients, render(cluster))
    return cluster


@pytest.fixture
def nodes(cluster: Cluster, stacks_aws, kube_api: client.ApiClient) -> Iterator[list[str]]:
    """The Ready Nodes of the cluster's three instances (removed afterwards)."""
    with NodeSimulator(kube_api, stacks_aws, cluster.id, pod_ready_delay=0.2, poll_interval=0.2) as sim:
        yield sim.wait_for_ready_nodes(3, timeout=30)


@pytest.fixture
def kube(control_plane: ControlPlane) -> Iterator[KubeClient]:
    with KubeClient.from_kubeconfig(control_plane.kubeconfig_path) as kube:
        yield kube


def test_plan_runs_the_drain_preflight_of_every_node_it_would_replace_and_writes_nothing(
    cluster, nodes, kube, stacks_aws, config_with_new_ami, tmp_path: Path
):
    namespace = f"plan-{uuid.uuid4().hex[:6]}"
    kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    try:
        victim = nodes[0]
        pods = f"/api/v1/namespaces/{namespace}/pods"
        kube.request("POST", pods, body=json.loads(SOLO_POD.format(node=victim)))
        budgets = f"/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets"
        kube.request("POST", budgets, body=SOLO_PDB)
        wait_for(
            "the budget observed with its pod healthy",
            lambda: (
                (status := kube.request("GET", f"{budgets}/solo").get("status") or {}).get("observedGeneration") == 1
                and status.get("currentHealthy") == 1
            ),
        )
        registry_file = tmp_path / "clusters.yaml"
        registry_file.write_text(dump_clusters([cluster], with_status=False))
        before_nodes = {name: kube.request("GET", f"/api/v1/nodes/{name}") for name in nodes}
        before_pod = kube.request("GET", f"{pods}/solo")
        before_aws = aws_state(stacks_aws)

        result = CliRunner().invoke(
            cli,
            ["-o", "json", "plan", cluster.id, "--config", config_with_new_ami, "--registry-file", str(registry_file)],
        )
        assert result.exit_code == 0, (result.output, result.exception)
        assert result.stderr == ""
        data = json.loads(result.stdout)
        drains = data["drain_preflight"]
        assert (drains["checked"], drains["warning"]) == (True, "")
        [pool] = data["node_pools"]
        assert [(n["node_pool"], n["instance"]) for n in drains["nodes"]] == [
            ("default-worker", i["id"]) for i in pool["instances"]
        ]
        assert sorted(n["node"] for n in drains["nodes"]) == nodes
        [checked] = [n for n in drains["nodes"] if n["node"] == victim]
        assert checked["evictable"] == 1
        assert checked["blockers"] == [
            {
                "pod": f"{namespace}/solo",
                "reason": f"PodDisruptionBudget {namespace}/solo allows 0 disruptions (1 healthy of 1, 1 needed)",
                "pdb": f"{namespace}/solo",
            }
        ]
        assert checked["warnings"] == [
            {"pod": f"{namespace}/solo", "reason": "no controller: nothing recreates it"},
            {"pod": f"{namespace}/solo", "reason": "emptyDir volume: its data is lost"},
        ]

        # Nothing was written: no cordon, label, taint or annotation on a Node, the pod untouched, AWS as before.
        for name, before in before_nodes.items():
            after = kube.request("GET", f"/api/v1/nodes/{name}")
            assert after["spec"] == before["spec"]
            assert after["metadata"].get("labels") == before["metadata"].get("labels")
            assert after["metadata"].get("annotations") == before["metadata"].get("annotations")
        after_pod = kube.request("GET", f"{pods}/solo")
        assert after_pod["metadata"]["resourceVersion"] == before_pod["metadata"]["resourceVersion"]
        assert aws_state(stacks_aws) == before_aws
    finally:
        kube.request("DELETE", f"/api/v1/namespaces/{namespace}")
