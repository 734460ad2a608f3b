"""Render a cluster once per run and store the rendering in S3 for the later steps."""

from __future__ import annotations

import hashlib
from typing import Any

from clm.config.tree import ConfigTree
from clm.model import Cluster
from clm.render import stored
from clm.render.artefacts import summary
from clm.render.renderer import RenderedCluster, Renderer
from clm.render.secrets import Decrypter

PREFIX = "renderings/"
APPLY_PHASES = ("pre_apply", "manifests", "post_apply")


def rendering_key(cluster_id: str, version: str) -> str:
    """The S3 key of a cluster's rendering at `version` (content-addressed by version: safe to rewrite)."""
    digest = hashlib.sha256(f"{cluster_id}\n{version}".encode()).hexdigest()[:24]
    return f"{PREFIX}{digest}.json"


def render_to_s3(
    s3: Any, bucket: str, tree: ConfigTree, cluster: Cluster, decrypt: Decrypter | None = None
) -> dict[str, Any]:
    """Render `cluster` from `tree` (raising RenderError before anything is applied) and store it; `decrypt`
    decrypts its `aws:kms:` config items (stored as ciphertext: clm.render.stored).

    Returns the key, a small summary, `stack_stages` for the workflow (the cluster stack first, then the
    node-pool stacks together) and the `apply_phases` in order.
    """
    rendered = Renderer(tree, decrypt).render(cluster)
    key = rendering_key(cluster.id, rendered.version)
    s3.put_object(Bucket=bucket, Key=key, Body=stored.dumps(rendered).encode(), ContentType="application/json")
    stages = [[{"node_pool": ""}], [{"node_pool": pool} for pool in sorted(rendered.node_pool_stacks)]]
    return {
        "rendering": key,
        **summary(rendered),
        "stack_stages": [stage for stage in stages if stage],
        "apply_phases": list(APPLY_PHASES),
    }


def load_rendering(s3: Any, bucket: str, key: str) -> RenderedCluster:
    """A rendering stored by :func:`render_to_s3`."""
    return stored.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
