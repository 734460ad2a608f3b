"""Stacks Zalando's CLM created are CLM's stacks here: named and tagged as CLM names and tags them
(provisioner/aws.go applyClusterStack, provisioner/node_pools.go provisionNodePool), plus the migration step's
clm:managed-by=clm, they are updated in place (same stack ids), their pools rolled, and the stack of a pool gone from
the registry drained and deleted (node_pools.go Reconcile) -- never recreated."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from clm.config.local import LocalSource
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.render.renderer import Renderer
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import ROOT, Deployment, nodes_terminated, the_run, upload_new_ami

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

CLUSTER_ID = "aws:123456789012:eu-central-1:kube-1"
WORKER_STACK = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"  # nodepool-<pool>-<id, ":" -> "-">
EXTRA_STACK = "nodepool-extra-aws-123456789012-eu-central-1-kube-1"
OWNED = {f"kubernetes.io/cluster/{CLUSTER_ID}": "owned", "clm:managed-by": "clm"}  # the latter: migration step 6


def clm_node_pool_tags(pool: str, profile: str) -> dict[str, str]:
    """The tags CLM puts on a node-pool stack (provisioner/node_pools.go provisionNodePool)."""
    return {
        **OWNED,
        "kubernetes.io/role/node-pool": "true",
        "kubernetes.io/node-pool": pool,
        "NodePool": pool,
        "kubernetes.io/node-pool/profile": profile,
    }


def migrated_cluster() -> Cluster:
    """kube-1 as a migrated cluster is registered: ready (CLM provisioned it), reachable through the sandbox."""
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items["kube_auth_secret"] = "clm/kube-1"
    return dataclasses.replace(cluster, lifecycle_status="ready")


def create_as_clm(deployment: Deployment, cluster: Cluster) -> dict[str, str]:
    """Create kube-1's stacks as CLM did (no service role, termination protection, CLM's names and tags), with an
    extra pool the registry no longer has; returns the stack ids by name."""
    extra = dataclasses.replace(cluster.node_pools[0], name="extra", min_size=1, max_size=2, config_items={})
    rendered = Renderer(LocalSource(ROOT / "examples" / "config").fetch()).render(
        dataclasses.replace(cluster, node_pools=[*cluster.node_pools, extra])
    )
    cfn = deployment.session.client("cloudformation")
    stacks = {
        "kube-1": (
            rendered.cluster_stack.body,
            {**OWNED, "cluster-lifecycle-controller.zalando.org/main-stack": "true"},
        ),
        WORKER_STACK: (
            rendered.node_pool_stacks["default-worker"].body,
            clm_node_pool_tags("default-worker", "worker-default"),
        ),
        EXTRA_STACK: (rendered.node_pool_stacks["extra"].body, clm_node_pool_tags("extra", "worker-default")),
    }
    for name, (body, tags) in stacks.items():
        cfn.create_stack(
            StackName=name,
            TemplateBody=body,
            Capabilities=["CAPABILITY_NAMED_IAM"],
            EnableTerminationProtection=True,
            OnFailure="DELETE",
            Tags=[{"Key": key, "Value": value} for key, value in tags.items()],
        )
    return stack_ids(deployment)


def stack_ids(deployment: Deployment) -> dict[str, str]:
    return {name: stack["StackId"] for name, stack in described(deployment).items()}


def described(deployment: Deployment) -> dict[str, dict[str, Any]]:
    stacks = deployment.session.client("cloudformation").describe_stacks()["Stacks"]
    return {s["StackName"]: s for s in stacks if s["StackName"] != "Clm"}


def test_stacks_clm_created_are_updated_in_place_rolled_and_a_removed_pools_deleted(
    deployment: Deployment, nodes: NodeSimulator
) -> None:
    cluster = migrated_cluster()
    before = create_as_clm(deployment, cluster)
    assert len(nodes.wait_for_ready_nodes(4, timeout=30)) == 4  # 3 default-worker, 1 extra
    deployment.registry.put(cluster)  # the registry change starts the first run
    first = the_run(deployment.settle(known=0))
    states = deployment.states(first["executionArn"])
    assert states.count("RollNodePool") == 2  # default-worker rolled (nothing outdated), extra drained and deleted
    after = stack_ids(deployment)
    assert after == {name: before[name] for name in ("kube-1", WORKER_STACK)}  # the same stacks, extra gone
    assert len(nodes.wait_for_ready_nodes(3, timeout=30)) == 3
    worker = described(deployment)[WORKER_STACK]
    tags = {tag["Key"]: tag["Value"] for tag in worker["Tags"]}
    assert clm_node_pool_tags("default-worker", "worker-default").items() <= tags.items()

    known, terminated = len(deployment.executions(deployment.provision)), nodes_terminated(deployment.roll_states())
    upload_new_ami(deployment)  # a new launch template version: the pool's stack updated, its nodes rolled
    the_run(deployment.settle(known))
    worker = described(deployment)[WORKER_STACK]
    assert (worker["StackId"], worker["StackStatus"]) == (before[WORKER_STACK], "UPDATE_COMPLETE")
    assert nodes_terminated(deployment.roll_states()) - terminated == 3
    assert stack_ids(deployment) == after
