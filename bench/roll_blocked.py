"""The blocked drain: a node whose pod a PodDisruptionBudget never lets go (minAvailable = replicas), drained until
CLM's force rules allow deleting it past the budget after `drain_grace_period` (the other rules set to 0).

A second pool `hold` of one node carries the pod (a Deployment pinned to the pool by its node label). Each
measurement is one provision run started by a registry write that gives the hold pool a new AMI and sets the
grace period: the drain is blocked for that long, then forced. The waiting is CLM's Wait states'; the figures
say what the Lambda calls cost while it lasted.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

from roll_history import node_drains, run_histories, trace
from roll_sandbox import RollSandbox, wait_for_ready_pods

from clm.model import Cluster, NodePool
from clm_sandbox.demo.report import RunFigures, run_figures

POOL = "hold"
NAMESPACE = "roll-bench-hold"
SELECTOR = "app=hold"
POOL_LABEL = "node.kubernetes.io/node-pool"
FORCE_RULES_OFF = {
    "drain_min_pod_lifetime": "0s",
    "drain_min_healthy_sibling_lifetime": "0s",
    "drain_min_unhealthy_sibling_lifetime": "0s",
}


@dataclass(frozen=True)
class BlockedDrain:
    """One blocked drain's run: its figures, and its drain passes of the hold node."""

    blocked_for: int
    run_seconds: float
    figures: RunFigures
    passes: int
    parks: int
    drain_lambda_seconds: float  # of its passes and parks
    forced: int

    @property
    def drain_calls(self) -> int:
        """Lambda calls of the drain: its passes and parks."""
        return self.passes + self.parks


def add_hold_pool(sandbox: RollSandbox) -> None:
    """Add the one-node pool `hold` (a registry write: one provision run) and its never-evictable pod."""
    pool = dataclasses.replace(
        sandbox.cluster.node_pools[0],
        name=POOL,
        profile="worker-default",  # one group, whatever the rolled pool's (`--split`)
        min_size=1,
        max_size=1,
        config_items={"max_unavailable": "1"},
    )
    cluster = dataclasses.replace(sandbox.cluster, node_pools=[*sandbox.cluster.node_pools, pool])
    sandbox.run(lambda: sandbox.put_cluster(cluster))
    for path, body in _hold_objects():
        sandbox.kube_api.call_api(path, "POST", body=body, auth_settings=["BearerToken"], _preload_content=False)
    wait_for_ready_pods(sandbox.kube_api, NAMESPACE, SELECTOR, 1)


def _hold_objects() -> list[tuple[str, dict[str, Any]]]:
    labels = {"app": "hold"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "hold", "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {POOL_LABEL: POOL},
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "hold", "image": "registry.k8s.io/pause:3.9"}],
                },
            },
        },
    }
    budget = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "hold", "namespace": NAMESPACE},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
    }
    return [
        ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        (f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", deployment),
        (f"/apis/policy/v1beta1/namespaces/{NAMESPACE}/poddisruptionbudgets", budget),
    ]


def blocked_drain(sandbox: RollSandbox, seconds: int) -> BlockedDrain:
    """Roll the hold pool with its pod blocked for `seconds` (the drain grace period), then forced."""
    wait_for_ready_pods(sandbox.kube_api, NAMESPACE, SELECTOR, 1)  # blocked by the budget, not settling
    cluster = _blocked_for(sandbox.cluster, seconds)
    run = sandbox.run(lambda: sandbox.put_cluster(cluster))
    sfn = sandbox.client("stepfunctions")
    hold_drains = node_drains(trace(run_histories(sfn, run.arn)).pool_calls(POOL))
    return BlockedDrain(
        seconds,
        run.seconds,
        run_figures(sfn, run.arn),
        sum(drain.passes for drain in hold_drains),
        sum(drain.parks for drain in hold_drains),
        sum(drain.lambda_seconds for drain in hold_drains),
        sum(drain.forced for drain in hold_drains),
    )


def _blocked_for(cluster: Cluster, seconds: int) -> Cluster:
    ami = "ami-" + hashlib.sha256(f"hold-{seconds}".encode()).hexdigest()[:17]
    pools: list[NodePool] = [
        dataclasses.replace(pool, config_items={**pool.config_items, "ami": ami}) if pool.name == POOL else pool
        for pool in cluster.node_pools
    ]
    items = {**cluster.config_items, **FORCE_RULES_OFF, "drain_grace_period": f"{seconds}s"}
    return dataclasses.replace(cluster, config_items=items, node_pools=pools)
