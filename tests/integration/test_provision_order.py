"""Provision in CLM's order (provisioner/clusterpy.go provision, groupNodePools, provisionNodePoolGroup): the cluster
stack, the master pools' stacks (profile contains "master"), a wait for the API server (GET /readyz), the worker
pools' stacks; a new cluster's first run rolls nothing; later runs roll the master pools first."""

from __future__ import annotations

import dataclasses
import json

import pytest

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import ROOT, Deployment, the_run

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

WATCHED = {"StartStack", "WaitForApiServer", "ApplyPhase", "RollNodePool", "Succeed"}


def test_masters_first_then_the_api_server_then_workers_and_a_new_cluster_rolls_nothing(
    deployment: Deployment, nodes: NodeSimulator
) -> None:
    template = (ROOT / "examples" / "config" / "cluster" / "node-pools" / "worker-default" / "stack.yaml").read_bytes()
    deployment.session.client("s3").put_object(  # a master profile: the worker's template under another name
        Bucket=deployment.outputs["ConfigBucketName"],
        Key="config/cluster/node-pools/master-default/stack.yaml",
        Body=template,
    )
    deployment.settle()  # the upload's reconcile (no cluster yet)
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    worker = cluster.node_pools[0]
    masters = dataclasses.replace(worker, name="masters", profile="master-default", min_size=1, max_size=1)
    deployment.registry.put(dataclasses.replace(cluster, lifecycle_status="creating", node_pools=[worker, masters]))

    first = the_run(deployment.settle(known=0))
    states = [s for s in deployment.states(first["executionArn"]) if s in WATCHED]
    assert states == [
        "StartStack",  # the cluster stack
        "StartStack",  # the master pool's
        "WaitForApiServer",
        "StartStack",  # the worker pool's
        *["ApplyPhase"] * 4,  # pre_apply, manifests, post_apply, karpenter_pools (reconciled at every run)
        "Succeed",
    ]
    assert deployment.executions(deployment.roll_node_pool) == []  # creating: every node is new
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "ready"
    assert len(nodes.wait_for_ready_nodes(4, timeout=30)) == 4

    deployment.start()  # ready: the pools are rolled (nothing is outdated), masters first
    rolled = [
        json.loads(deployment.sfn.describe_execution(executionArn=e["executionArn"])["input"])["pool"]["node_pool"]
        for e in deployment.executions(deployment.roll_node_pool)
    ]
    assert rolled == ["masters", "default-worker"]
