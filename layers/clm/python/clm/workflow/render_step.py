"""Render a cluster once per run and store the rendering in S3 for the later steps."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from clm.config.tree import ConfigTree
from clm.errors import ClmError
from clm.model import Cluster, NodePool
from clm.render import stored
from clm.render.artefacts import summary
from clm.render.cf_manifests import stack_name
from clm.render.inputs import RenderInputs
from clm.render.node_files import FILES, OUTPUTS_VALUE, USER_DATA, FilesStore, PendingOutputs
from clm.render.renderer import NODE_POOL_STACK, RenderedCluster, Renderer
from clm.rolling.strategy import update_strategy

PREFIX = "renderings/"
KARPENTER_PHASE = "karpenter_pools"  # every run: CLM reconciles Karpenter pools even when the registry has none
APPLY_PHASES = ("pre_apply", "manifests", "post_apply", KARPENTER_PHASE)
CF_PHASES = ("cf_pre_apply", "cf_post_apply")  # cf-deletions.yaml's, by the stacks function (clm.stacks.extra)


def rendering_key(cluster_id: str, version: str) -> str:
    """The S3 key of a cluster's rendering at `version` (content-addressed by version: safe to rewrite)."""
    digest = hashlib.sha256(f"{cluster_id}\n{version}".encode()).hexdigest()[:24]
    return f"{PREFIX}{digest}.json"


def render_to_s3(
    s3: Any,
    bucket: str,
    tree: ConfigTree,
    cluster: Cluster,
    inputs: RenderInputs | None = None,
    outputs: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Render `cluster` from `tree` (raising RenderError before anything is applied, ValidationError for an unknown
    `update_strategy` from the configuration's defaults) and store it; `inputs` are
    what templates may ask AWS (clm.render.inputs; `aws:kms:` items are stored as ciphertext: clm.render.stored;
    node pools' and etcd archives are only located here, not uploaded), `outputs` the cluster stack's current
    outputs (None: it does not exist yet, placeholders: clm.render.node_files.PendingOutputs).

    Returns the key, a small summary, `stack_stages` for the workflow, the `apply_phases` in order and
    `render_karpenter_pools`: whether a Karpenter pool's objects need the cluster stack (its files' archive,
    uploaded with the workers' key, or its outputs), so that the workflow renders again (:func:`render_node_pools`)
    before applying them; for a zalando-eks cluster always (and its node-pool stages always render again): CLM's
    hook after its cluster stack changes what its manifests and node pools see (clm.workflow.eks_hook).
    """
    values = {OUTPUTS_VALUE: PendingOutputs() if outputs is None else outputs}
    rendered = Renderer(tree, inputs).render(cluster, values)
    update_strategy(rendered.cluster.config_items, cluster.id)  # config-defaults.yaml may set it: before any change
    key = rendering_key(cluster.id, rendered.version)
    s3.put_object(Bucket=bucket, Key=key, Body=stored.dumps(rendered).encode(), ContentType="application/json")
    # A zalando-eks cluster's node pools and manifests see what CLM's hook learns after the cluster stack (its API
    # URL switched to the EKS endpoint, the items it writes back: clm.workflow.eks_hook): rendered again then.
    rerender = cluster.is_eks or needs_cluster_outputs(tree, cluster.asg_pools)
    extra = [stack_name(stack.template) for stack in rendered.extra_stacks]
    stages = stack_stages(
        cluster,
        sorted(rendered.node_pool_stacks),
        render_node_pools=rerender,
        etcd=rendered.etcd_stack is not None,
        extra=extra,
        render_extra=cluster.is_eks or _reads_outputs(tree),  # CLM applies them after the hook, with the outputs
    )
    return {
        "rendering": key,
        **summary(rendered),
        "stack_stages": stages,
        "apply_phases": apply_phases(rendered.cf_deletions.pre_apply, rendered.cf_deletions.post_apply),
        "render_karpenter_pools": cluster.is_eks or needs_cluster_outputs(tree, cluster.karpenter_pools),
    }


def apply_phases(cf_pre_apply: list[str], cf_post_apply: list[str]) -> list[str]:
    """The apply phases in CLM's order (provisioner/clusterpy.go apply): deletions, cf-deletions.yaml's pre_apply
    stacks, manifests, deletions, its post_apply stacks; then the Karpenter pools' objects. A cf-deletions phase only
    when it deletes something."""
    wanted = {"cf_pre_apply": bool(cf_pre_apply), "cf_post_apply": bool(cf_post_apply)}
    order = ("pre_apply", "cf_pre_apply", "manifests", "post_apply", "cf_post_apply", KARPENTER_PHASE)
    return [phase for phase in order if wanted.get(phase, True)]


def _reads_outputs(tree: ConfigTree) -> bool:
    """Whether a file of cluster/cf-manifests/ names the cluster stack's outputs (through an include, too)."""
    from clm.render.cf_manifests import CF_MANIFESTS

    return any(
        OUTPUTS_VALUE.encode() in text
        for part in tree.parts()
        for path, text in part.tree.files.items()
        if path.startswith(CF_MANIFESTS)
    )


def stack_stages(
    cluster: Cluster,
    pools: list[str],
    *,
    render_node_pools: bool = False,
    etcd: bool = False,
    extra: list[str] | None = None,
    render_extra: bool = False,
) -> list[dict[str, Any]]:
    """The stacks in CLM's order (provisioner/clusterpy.go provision): with `etcd`, CLM's etcd stack (its stage
    first uploads the etcd files' archive: `etcd`), then the cluster stack, then the `extra` stacks of
    cluster/cf-manifests/ one at a time in file order (applyCFManifests; with `render_extra`, rendered again with the
    cluster stack's outputs first), then the master pools' stacks (profile contains "master") and a wait for the API
    server, then the worker pools' stacks; the stacks of one stage are deployed together. With `render_node_pools`,
    the node-pool stages first render their stacks again with the cluster stack's outputs (render_node_pools)."""
    masters = [pool for pool in pools if cluster.node_pool(pool).is_master]
    etcd_stage = {"stacks": [{"node_pool": "", "etcd": True}], "wait_for_api_server": False, "etcd": True}
    extra_stages = [
        {
            "stacks": [{"node_pool": "", "cf_manifest": name}],
            "wait_for_api_server": False,
            "render_node_pools": render_extra,
        }
        for name in extra or []
    ]
    stages = [
        *([etcd_stage] if etcd else []),
        {"stacks": [{"node_pool": ""}], "wait_for_api_server": False, "render_node_pools": False},
        *extra_stages,
        {
            "stacks": [{"node_pool": pool} for pool in masters],
            "wait_for_api_server": True,
            "render_node_pools": render_node_pools,
        },
        {
            "stacks": [{"node_pool": pool} for pool in pools if pool not in masters],
            "wait_for_api_server": False,
            "render_node_pools": render_node_pools,
        },
    ]
    return [stage for stage in stages if stage["stacks"]]


def needs_cluster_outputs(tree: ConfigTree, pools: list[NodePool]) -> bool:
    """Whether one of `pools` depends on the cluster stack: its profile has files.yaml or userdata.yaml, or a
    template of it names the cluster stack's outputs."""
    for pool in pools:
        folder = NODE_POOL_STACK.format(profile=pool.profile).removesuffix("stack.yaml")
        profile = {path: text for path, text in tree.files.items() if path.startswith(folder)}
        if {folder + FILES, folder + USER_DATA} & profile.keys():
            return True
        if any(OUTPUTS_VALUE.encode() in text for text in profile.values()):
            return True
    return False


def node_pools_key(rendering: str, outputs: dict[str, str], learnt: dict[str, str] | None = None) -> str:
    """The key of a run's node-pool rendering: its first rendering's with the cluster stack's outputs (and what CLM's
    EKS hook learnt, `learnt`)."""
    text = json.dumps([rendering, outputs, *([learnt] if learnt else [])], sort_keys=True)
    return f"{PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"


def render_node_pools(
    s3: Any,
    bucket: str,
    rendering: str,
    outputs: dict[str, str],
    render: Callable[[FilesStore | None, dict[str, Any], RenderedCluster], RenderedCluster],
    files_store: FilesStore,
    learnt: dict[str, str] | None = None,
) -> str:
    """After the cluster stack: the run's rendering again with the stack's `outputs`, node pools' archives stored
    through `files_store`, under :func:`node_pools_key` (an existing one is reused: the step is idempotent).
    `render(files_store, values, first)` renders the cluster (`first`: the run's first rendering); its version must
    be the first rendering's (else the configuration or the registry changed during the run: ConfigChanged)."""
    key = node_pools_key(rendering, outputs, learnt)
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return key
    except s3.exceptions.ClientError as exc:
        if exc.response["Error"]["Code"] not in ("404", "NoSuchKey", "NotFound"):
            raise
    first = load_rendering(s3, bucket, rendering)
    rendered = render(files_store, {OUTPUTS_VALUE: outputs}, first)
    _ensure_unchanged(first, rendered)
    s3.put_object(Bucket=bucket, Key=key, Body=stored.dumps(rendered).encode(), ContentType="application/json")
    return key


def upload_etcd_files(
    s3: Any, bucket: str, rendering: str, render: Callable[[FilesStore], RenderedCluster], etcd_store: FilesStore
) -> None:
    """Before the etcd stack: its files' archive stored through `etcd_store` by `render(etcd_store)`, which renders
    the cluster again; its etcd stack must be the first rendering's (else ConfigChanged), so that the stack deployed
    names the archive uploaded."""
    first = load_rendering(s3, bucket, rendering)
    rendered = render(etcd_store)
    _ensure_unchanged(first, rendered)
    if first.etcd_stack is None or rendered.etcd_stack is None or rendered.etcd_stack.body != first.etcd_stack.body:
        raise ConfigChanged(
            f"cluster {first.cluster.id}: the etcd stack rendered differently from the run's first rendering (a "
            "lookup's answer or the deployment's etcd setting changed); the next run provisions it"
        )


def _ensure_unchanged(first: RenderedCluster, rendered: RenderedCluster) -> None:
    if rendered.version != first.version:
        raise ConfigChanged(
            f"cluster {first.cluster.id}: the configuration or the registry changed during the run "
            f"(rendered {first.version}, now {rendered.version}); the next run provisions the new version"
        )


class ConfigChanged(ClmError):
    """The configuration or the cluster changed between a run's renders: its node pools are left for the next run."""

    asl_name = "ConfigChanged"


def load_rendering(s3: Any, bucket: str, key: str) -> RenderedCluster:
    """A rendering stored by :func:`render_to_s3`."""
    return stored.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
