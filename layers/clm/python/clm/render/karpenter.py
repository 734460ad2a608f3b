"""Karpenter node pools (profile `worker-karpenter`): their profile's provisioners.yaml, not a node-pool stack.

As CLM's `KarpenterNodePoolProvisioner.provisionNodePool` (provisioner/node_pools.go): the profile's files.yaml
and userdata.yaml are rendered first as for any pool (clm.render.node_files: the files' archive stored with the
workers' key, `values.S3GeneratedFilesPath`), userdata.yaml handed to provisioners.yaml as `values.UserData` in
plain text (not gzipped or base64-encoded as for auto scaling groups); provisioners.yaml is rendered with the
cluster, the pool and those values, and its objects (Karpenter NodePool, EC2NodeClass, ...) are applied to the
cluster after the cluster's manifests, whatever the config item `karpenter_pools_enabled` says (CLM dropped that
gate in 66f2c05, 2025-04). An empty rendering (Zalando's templates still wrap everything in that item) gives no
objects, and a warning: a registered pool is never skipped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clm.errors import RenderError
from clm.model import Cluster, NodePool
from clm.render.manifests import Manifest, split_manifests

if TYPE_CHECKING:
    from clm.render.environment import TemplateEnvironment

PROVISIONERS = "cluster/node-pools/{profile}/provisioners.yaml"


def render_provisioners(
    env: TemplateEnvironment,
    files: Mapping[str, bytes],
    source: str,
    cluster: Cluster,
    pool: NodePool,
    values: Mapping[str, Any],
    warnings: list[str] | None = None,
) -> list[Manifest]:
    """The Kubernetes objects of a Karpenter pool, `values` holding its user data (clm.render.node_files); RenderError
    (naming file and line) when they are invalid. Duplicate keys: see split_manifests (`warnings`)."""
    file = PROVISIONERS.format(profile=pool.profile)
    if file not in files:
        raise RenderError(
            f"node pool {pool.name!r} uses Karpenter profile {pool.profile!r}, but {file} is not in {source}",
            cluster_id=cluster.id,
        )
    context = {"cluster": cluster, "node_pool": pool, "values": values}
    manifests = split_manifests(env.render(file, context, cluster.id), file, cluster.id, warnings)
    if not manifests and warnings is not None:
        warnings.append(f"Karpenter node pool {pool.name!r}: {file} renders no objects, nothing is applied for it")
    return manifests
