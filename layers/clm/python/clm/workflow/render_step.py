"""Render a cluster once per run and store the rendering in S3 for the later steps."""

from __future__ import annotations

import hashlib
from typing import Any

from clm.config.tree import ConfigTree
from clm.model import Cluster
from clm.render import stored
from clm.render.account_lookups import AccountLookups
from clm.render.artefacts import summary
from clm.render.lookups import Ec2Lookups
from clm.render.renderer import RenderedCluster, Renderer
from clm.render.secrets import Decrypter

PREFIX = "renderings/"
KARPENTER_PHASE = "karpenter_pools"  # only when the cluster's karpenter_pools_enabled is "true", as in CLM
APPLY_PHASES = ("pre_apply", "manifests", "post_apply", KARPENTER_PHASE)


def rendering_key(cluster_id: str, version: str) -> str:
    """The S3 key of a cluster's rendering at `version` (content-addressed by version: safe to rewrite)."""
    digest = hashlib.sha256(f"{cluster_id}\n{version}".encode()).hexdigest()[:24]
    return f"{PREFIX}{digest}.json"


def render_to_s3(
    s3: Any,
    bucket: str,
    tree: ConfigTree,
    cluster: Cluster,
    decrypt: Decrypter | None = None,
    lookups: Ec2Lookups | None = None,
    account: AccountLookups | None = None,
) -> dict[str, Any]:
    """Render `cluster` from `tree` (raising RenderError before anything is applied) and store it; `decrypt`
    decrypts its `aws:kms:` config items (stored as ciphertext: clm.render.stored), `lookups` answers what
    templates ask EC2 (images, instance types), `account` what they ask ACM and KMS.

    Returns the key, a small summary, `stack_stages` for the workflow and the `apply_phases` in order (the
    Karpenter pools' phase only when the cluster's `karpenter_pools_enabled` is "true").
    """
    rendered = Renderer(tree, decrypt, lookups, account).render(cluster)
    key = rendering_key(cluster.id, rendered.version)
    s3.put_object(Bucket=bucket, Key=key, Body=stored.dumps(rendered).encode(), ContentType="application/json")
    return {
        "rendering": key,
        **summary(rendered),
        "stack_stages": stack_stages(cluster, sorted(rendered.node_pool_stacks)),
        "apply_phases": [p for p in APPLY_PHASES if p != KARPENTER_PHASE or rendered.cluster.karpenter_pools_enabled],
    }


def stack_stages(cluster: Cluster, pools: list[str]) -> list[dict[str, Any]]:
    """The stacks in CLM's order (provisioner/clusterpy.go provision): the cluster stack, then the master pools'
    stacks (profile contains "master") and a wait for the API server, then the worker pools' stacks; the stacks of
    one stage are deployed together."""
    masters = [pool for pool in pools if cluster.node_pool(pool).is_master]
    stages = [
        {"stacks": [{"node_pool": ""}], "wait_for_api_server": False},
        {"stacks": [{"node_pool": pool} for pool in masters], "wait_for_api_server": True},
        {"stacks": [{"node_pool": pool} for pool in pools if pool not in masters], "wait_for_api_server": False},
    ]
    return [stage for stage in stages if stage["stacks"]]


def load_rendering(s3: Any, bucket: str, key: str) -> RenderedCluster:
    """A rendering stored by :func:`render_to_s3`."""
    return stored.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
