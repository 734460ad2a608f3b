"""Karpenter pools' objects on the cluster: apply each pool's rendered provisioners.yaml, remove those of gone pools.

As CLM's `KarpenterNodePoolProvisioner` (provisioner/node_pools.go), at every run: after the cluster's manifests,
each Karpenter pool's objects are applied (server-side, field manager `clm`; a pool whose rendering is empty is
skipped, the rendering warns of it); then the NodePools and EC2NodeClasses of pools no longer in the registry are
deleted, once their nodes are drained (prune_pools). CLM deletes every NodePool whose name is not a Karpenter pool
of the registry, whoever made it; here every object applied for a pool carries the label POOL_LABEL (the pool's
name), and only objects with that label are ever deleted.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from clm.kube.apply import ApplyReport, apply_manifests
from clm.kube.client import MERGE_PATCH
from clm.kube.errors import ApplyError, DeletionError, KubeApiError, KubeError

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.discovery import Resource
    from clm.render.manifests import Manifest

POOL_LABEL = "cluster-lifecycle-manager.zalando.org/karpenter-node-pool"
NODEPOOL_NODE_LABEL = "karpenter.sh/nodepool"  # on every node Karpenter launches: its NodePool's name
NO_LAUNCHES = {"spec": {"limits": {"cpu": "0"}}}  # a NodePool Karpenter launches nothing more for
# Deleted in this order: a NodePool before the EC2NodeClass its nodes refer to.
PRUNED_KINDS = (("karpenter.sh", "NodePool"), ("karpenter.k8s.aws", "EC2NodeClass"))


def labelled(manifest: Manifest, pool: str) -> Manifest:
    """`manifest` with the label that marks it as applied for Karpenter pool `pool`."""
    metadata = manifest.body.get("metadata") or {}
    labels = {**(metadata.get("labels") or {}), POOL_LABEL: pool}
    return replace(manifest, body={**manifest.body, "metadata": {**metadata, "labels": labels}})


def apply_pools(kube: KubeClient, pools: Mapping[str, Sequence[Manifest]]) -> ApplyReport:
    """Server-side apply each pool's objects (labelled with the pool's name), pool by pool in the given order.

    Stops early (report not `done`) when a CRD is not served yet, as `apply_manifests`; raises ApplyError naming
    the cluster, the pool and the object when the server refuses one (nothing of later pools is applied).
    """
    report = ApplyReport(dry_run=False)
    for pool, manifests in pools.items():
        try:
            applied = apply_manifests(kube, [labelled(manifest, pool) for manifest in manifests])
        except KubeError as exc:
            message = f"Karpenter node pool {pool!r}: {exc.message}"
            raise ApplyError(message, kube.cluster_id, transient=exc.transient) from None
        report.objects.extend(applied.objects)
        if not applied.done:
            report.waiting_for = applied.waiting_for
            break
    return report


def _served(kube: KubeClient, group: str, kind: str) -> Resource | None:
    for version in kube.discovery.served_versions(group):
        found = kube.discovery.resource(f"{group}/{version}", kind)
        if found is not None:
            return found
    return None


def prune_pools(kube: KubeClient, keep: Collection[str]) -> tuple[list[str], list[str]]:
    """Remove what CLM applied for Karpenter pools not in `keep` (objects labelled POOL_LABEL); return the objects
    deleted and the NodePools limited ("Kind name").

    A removed pool whose Nodes still run is drained first, as an auto scaling group pool is: its NodePool gets
    `limits: {cpu: "0"}` (Karpenter launches nothing more for it), it and its EC2NodeClass stay, and the roll drains
    and terminates its nodes, then deletes them (delete_pool). Kinds the cluster does not serve are skipped;
    DeletionError names cluster and object.
    """
    deleted: list[str] = []
    limited: list[str] = []
    held: set[str] = set()  # removed pools whose nodes run: their objects stay until the roll has drained them
    running: set[str] | None = None  # the NodePools with Nodes, listed once a removed one is found
    for group, kind in PRUNED_KINDS:
        resource = _served(kube, group, kind)
        for item in _labelled(kube, resource, kind, POOL_LABEL) if resource else []:
            name, pool = item["metadata"]["name"], item["metadata"]["labels"][POOL_LABEL]
            if pool in keep:
                continue
            if kind == "NodePool" and running is None:
                running = _pools_with_nodes(kube)
            if kind == "NodePool" and name in (running or set()):
                _request(kube, "PATCH", resource.path("", name), f"{kind} {name}", pool, body=NO_LAUNCHES)
                held.add(pool)
                limited.append(f"{kind} {name}")
            elif pool not in held:
                _request(kube, "DELETE", resource.path("", name), f"{kind} {name}", pool)
                deleted.append(f"{kind} {name}")
    return deleted, limited


def delete_pool(kube: KubeClient, pool: str) -> list[str]:
    """Delete the NodePools and EC2NodeClasses CLM applied for `pool` (after the roll drained its nodes); return
    them ("Kind name")."""
    deleted = []
    for group, kind in PRUNED_KINDS:
        resource = _served(kube, group, kind)
        for item in _labelled(kube, resource, kind, f"{POOL_LABEL}={pool}") if resource else []:
            name = item["metadata"]["name"]
            _request(kube, "DELETE", resource.path("", name), f"{kind} {name}", pool)
            deleted.append(f"{kind} {name}")
    return deleted


def applied_by_clm(kube: KubeClient, pool: str) -> bool:
    """Whether a NodePool labelled as applied by CLM for `pool` exists (else its nodes are none of CLM's business)."""
    resource = _served(kube, "karpenter.sh", "NodePool")
    return bool(resource and _labelled(kube, resource, "NodePool", f"{POOL_LABEL}={pool}"))


def _pools_with_nodes(kube: KubeClient) -> set[str]:
    """The NodePools that have Nodes (Karpenter labels its nodes `karpenter.sh/nodepool`)."""
    nodes = kube.request("GET", "/api/v1/nodes", query={"labelSelector": NODEPOOL_NODE_LABEL}).get("items") or []
    return {node["metadata"]["labels"][NODEPOOL_NODE_LABEL] for node in nodes}


def _labelled(kube: KubeClient, resource: Resource, kind: str, selector: str) -> list[dict[str, Any]]:
    try:
        return kube.request("GET", resource.path(), query={"labelSelector": selector}).get("items") or []
    except KubeApiError as exc:
        message = f"listing {kind}s of Karpenter node pools: {exc.message}"
        raise DeletionError(message, kube.cluster_id, transient=exc.transient) from None


def _request(kube: KubeClient, method: str, path: str, what: str, pool: str, body: Any = None) -> None:
    """DELETE or PATCH (merge) an object of a removed pool; a 404 is fine (gone already)."""
    try:
        if body is None:
            kube.request(method, path)
        else:
            kube.request(method, path, body=body, content_type=MERGE_PATCH)
    except KubeApiError as exc:
        if exc.status != 404:
            message = f"{what} of removed Karpenter node pool {pool!r}: {exc.message}"
            raise DeletionError(message, kube.cluster_id, transient=exc.transient) from None


def drifted_instances(kube: KubeClient) -> dict[str, str]:
    """Karpenter's own verdict on its nodes: instance id -> why its NodeClaim drifted (condition Drifted True: the
    NodePool's template, the EC2NodeClass or the AMI Karpenter resolves changed since the launch). Empty when
    the cluster serves no NodeClaims."""
    resource = _served(kube, "karpenter.sh", "NodeClaim")
    if resource is None:
        return {}
    drifted = {}
    listed = kube.request("GET", resource.path())
    for claim in listed.get("items") or []:
        status = claim.get("status") or {}
        instance_id = (status.get("providerID") or "").rsplit("/", 1)[-1]
        for condition in status.get("conditions") or []:
            if instance_id and condition.get("type") == "Drifted" and condition.get("status") == "True":
                reason = condition.get("reason") or "Drifted"
                drifted[instance_id] = f"NodeClaim {claim['metadata']['name']} drifted ({reason})"
    return drifted
