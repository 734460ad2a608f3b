"""Karpenter pools' objects on the cluster: apply each pool's rendered provisioners.yaml, remove those of gone pools.

As CLM's `KarpenterNodePoolProvisioner` (provisioner/node_pools.go), and only when the cluster's config item
`karpenter_pools_enabled` is "true": after the cluster's manifests, each Karpenter pool's objects are applied
(server-side, field manager `clm`; a pool whose rendering is empty is skipped); then the NodePools and
EC2NodeClasses of pools no longer in the registry are deleted. CLM deletes every NodePool whose name is not a
Karpenter pool of the registry, whoever made it; here every object applied for a pool carries the label
POOL_LABEL (the pool's name), and only objects with that label are ever deleted.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from clm.kube.apply import ApplyReport, apply_manifests
from clm.kube.errors import ApplyError, DeletionError, KubeApiError, KubeError

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.discovery import Resource
    from clm.render.manifests import Manifest

POOL_LABEL = "cluster-lifecycle-manager.zalando.org/karpenter-node-pool"
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
            raise ApplyError(f"Karpenter node pool {pool!r}: {exc.message}", kube.cluster_id) from None
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


def prune_pools(kube: KubeClient, keep: Collection[str]) -> list[str]:
    """Delete the NodePools and EC2NodeClasses labelled POOL_LABEL for a pool not in `keep`; return what was
    deleted ("Kind name"). Kinds the cluster does not serve are skipped; DeletionError names cluster and object."""
    deleted: list[str] = []
    for group, kind in PRUNED_KINDS:
        resource = _served(kube, group, kind)
        if resource is None:
            continue
        try:
            listed = kube.request("GET", resource.path(), query={"labelSelector": POOL_LABEL})
        except KubeApiError as exc:
            raise DeletionError(f"listing {kind}s of Karpenter node pools: {exc.message}", kube.cluster_id) from None
        for item in listed.get("items") or []:
            name = item["metadata"]["name"]
            pool = (item["metadata"].get("labels") or {}).get(POOL_LABEL, "")
            if pool in keep:
                continue
            try:
                kube.request("DELETE", resource.path("", name))
            except KubeApiError as exc:
                if exc.status != 404:
                    message = f"{kind} {name} of removed Karpenter node pool {pool!r}: {exc.message}"
                    raise DeletionError(message, kube.cluster_id) from None
            deleted.append(f"{kind} {name}")
    return deleted


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
