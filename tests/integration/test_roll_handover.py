"""A long roll spans several roll-node-pool executions: each hands over before its history can grow long.

The roll function's budget (CLM_ROLL_STEPS_PER_EXECUTION, the CDK setting clm:rollStepsPerExecution) is lowered
on the deployed function, as a deployment with a lower setting would have it, so that a roll of 12 nodes needs
at least three executions; the provision workflow starts each successor and the roll converges.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.convergence import new_executions, terminated
from tests.integration.deployment import (
    ROOT,
    Deployment,
    HealthyPods,
    instances,
    lower_roll_budget,
    the_run,
    upload_new_ami,
    wait_for_ready_pods,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),  # moto skips resources it does not model
    pytest.mark.timeout(600),
]
NODES = 12
STEPS = 8  # a plan and a node, ~2 steps per node: a 12-node roll needs 3 or more executions


def register_large_cluster(deployment: Deployment, size: int) -> None:
    """kube-1 of examples/clusters.yaml with a node pool of `size` nodes."""
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    pool = cluster.node_pools[0]
    pool.min_size = pool.max_size = size
    deployment.registry.put(cluster)


def history_length(deployment: Deployment, arn: str) -> int:
    pages = deployment.sfn.get_paginator("get_execution_history").paginate(executionArn=arn)
    return sum(len(page["events"]) for page in pages)


def test_a_12_node_roll_spans_several_executions_and_converges(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    lower_roll_budget(deployment, STEPS)
    register_large_cluster(deployment, NODES)
    the_run(deployment.settle(known=0, timeout=300))
    nodes.wait_for_ready_nodes(NODES, timeout=60)
    wait_for_ready_pods(kube_api, 3)
    before = instances(deployment.session)
    assert len(before) == NODES
    known = len(deployment.executions(deployment.provision))
    rolls = {e["executionArn"] for e in deployment.executions(deployment.roll_node_pool)}
    since = len(deployment.terminations)
    watcher = HealthyPods(kube_api)
    watcher.start()
    try:
        upload_new_ami(deployment)
        execution = the_run(deployment.settle(known, timeout=540))
    finally:
        watcher.stop()

    chain = new_executions(deployment, deployment.roll_node_pool, rolls)
    outputs = [json.loads(deployment.sfn.describe_execution(executionArn=e["executionArn"])["output"]) for e in chain]
    assert len(chain) >= 3, outputs
    assert [o["handover"] for o in outputs] == [True] * (len(chain) - 1) + [False]
    assert deployment.states(execution["executionArn"]).count("RollNodePool") == len(chain)
    assert terminated(deployment, since) == Counter(before), "every outdated instance terminated exactly once"
    lengths = [history_length(deployment, e["executionArn"]) for e in chain]
    assert max(lengths) < 25_000 and sum(lengths) > max(lengths) * 2, lengths
    after = instances(deployment.session)
    assert len(after) == NODES and not after & before
    assert len(nodes.wait_for_ready_nodes(NODES, timeout=60)) == NODES
    [group] = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert (group["DesiredCapacity"], group["SuspendedProcesses"]) == (NODES, [])
    assert watcher.lowest is not None and watcher.lowest >= 2  # the example's PDB: minAvailable 2
    status = deployment.registry.get(deployment.cluster_id).status
    assert (status.current_version, status.next_version, status.problems) == (
        json.loads(execution["output"])["plan"]["desired_version"],
        "",
        [],
    )
    print(f"roll of {NODES} nodes: {len(chain)} executions, history events {lengths}")
