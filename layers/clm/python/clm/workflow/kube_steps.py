"""The steps of the `kube` function: deletions and manifests of a stored rendering, one phase per call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clm.aws import client
from clm.workflow.cluster_access import kube_client, rendering
from clm.workflow.render_step import APPLY_PHASES, KARPENTER_PHASE
from clm.workflow.settings import Settings
from clm.workflow.target_aws import of_event

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.render.renderer import RenderedCluster

CRD_WAIT_SECONDS = 2
KUBE_SYSTEM = "kube-system"


def apply(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, phase}` -> apply one phase: pre_apply deletions, manifests, post_apply deletions,
    then the Karpenter pools' objects (and removal of those of pools gone from the registry)."""
    from clm.kube.apply import apply_manifests
    from clm.kube.deletions import run_deletions

    phase = event["phase"]
    if phase not in APPLY_PHASES:
        raise ValueError(f"unknown apply phase {phase!r} (expected one of {', '.join(APPLY_PHASES)})")
    rendered = rendering(event["rendering"])
    with kube_client(rendered.cluster, of_event(event)) as kube:
        if phase == "manifests":
            manifests = [manifest for component in rendered.components for manifest in component.manifests]
            report = apply_manifests(kube, manifests).to_dict()
        elif phase == KARPENTER_PHASE:
            report = _karpenter_pools(kube, rendered)
        else:
            report = {"done": True, **run_deletions(kube, getattr(rendered.deletions, phase), phase=phase).to_dict()}
    # Not done: a CRD applied in this phase is not established yet; the state machine waits, then applies again.
    return {"wait_seconds": 0 if report["done"] else CRD_WAIT_SECONDS, "phase": phase, **report}


def _karpenter_pools(kube: KubeClient, rendered: RenderedCluster) -> dict[str, Any]:
    """Apply the registry's Karpenter pools' objects; once all are applied, delete those of removed pools (or, while
    their nodes run, limit their NodePools to no launches: the roll drains the nodes, then deletes them)."""
    from clm.kube.karpenter import apply_pools, prune_pools

    pools = rendered.cluster.karpenter_pools
    report = apply_pools(kube, {p.name: rendered.node_pool_manifests.get(p.name, []) for p in pools})
    deleted, limited = prune_pools(kube, {p.name for p in pools}) if report.done else ([], [])
    return {**report.to_dict(), "deleted": deleted, "limited": limited}


def scale_down(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> scale every kube-system Deployment to zero (decommission, before the stacks go: CLM
    provisioner/clusterpy.go decommission), with the cluster's registry config items (there is no rendering)."""
    from clm.kube.scale_down import scale_down_deployments
    from clm.registry.dynamodb import DynamoRegistry

    cluster = DynamoRegistry(client("dynamodb"), Settings.from_env().registry_table).get(event["cluster_id"])
    with kube_client(cluster, of_event(event)) as kube:
        return {"namespace": KUBE_SYSTEM, "scaled_down": scale_down_deployments(kube, KUBE_SYSTEM)}


def api_server(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering}` -> `{ready: true}` once GET /readyz answers 200, else raise ApiServerNotReady.

    After the master pools' stacks, as CLM waits for the API server (provisioner/clusterpy.go waitForAPIServer,
    every 15 s for 15 min): the state machine's Retry on ApiServerNotReady does the waiting, no Lambda sleeps.
    """
    from clm.kube.errors import ApiServerNotReady, KubeError

    rendered = rendering(event["rendering"])
    try:
        with kube_client(rendered.cluster, of_event(event)) as kube:
            kube.exchange("GET", "/readyz", retries=0, timeout=10.0)
    except KubeError as exc:
        raise ApiServerNotReady(f"API server not ready: {exc}", rendered.cluster.id) from None
    return {"ready": True}


def health(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, target, health}` -> one more check of a rollout's health gate (clm.workflow.health_gate)."""
    from clm.workflow.health_gate import check

    return check(event)


STEPS = {"apply": apply, "api_server": api_server, "scale_down": scale_down, "health": health}
