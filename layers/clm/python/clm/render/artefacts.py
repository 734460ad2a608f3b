"""A rendered cluster as named files: what `clm render` writes to a folder and the workflow to S3."""

from __future__ import annotations

import json
import re

from clm.render.cf_manifests import stack_name
from clm.render.manifests import Manifest
from clm.render.renderer import RenderedCluster
from clm.yamlutil import dump

MAX_WARNINGS = 20  # listed in a summary (a workflow payload); the count says how many there were
_NOT_IN_FILE_NAMES = re.compile(r"[^A-Za-z0-9._:-]")


def rendered_files(rendered: RenderedCluster) -> dict[str, str]:
    """Relative path -> content for every artefact of a rendered cluster, in apply order; the names a template or the
    registry chose (components, pools, kinds, objects) appear as :func:`file_name` makes them."""
    files = {
        "version.txt": rendered.version + "\n",
        "config-items.yaml": dump(rendered.at_rest().config_items),  # encrypted items as the registry has them
        **({"etcd-stack.yaml": rendered.etcd_stack.body} if rendered.etcd_stack else {}),
        "cluster-stack.yaml": rendered.cluster_stack.body,
    }
    for number, stack in enumerate(rendered.extra_stacks, start=1):  # cluster/cf-manifests/, in deploy order
        files[f"cf-stacks/{number:02d}-{file_name(stack_name(stack.template))}.yaml"] = stack.body
    for pool, stack in rendered.node_pool_stacks.items():
        files[f"node-pools/{file_name(pool)}.yaml"] = stack.body
    for number, component in enumerate(rendered.components, start=1):
        files.update(_manifest_files(f"manifests/{number:02d}-{file_name(component.name)}", component.manifests))
    for pool, manifests in rendered.node_pool_manifests.items():
        files.update(_manifest_files(f"node-pools/{file_name(pool)}", manifests))
    files["deletions.yaml"] = dump(rendered.deletions.to_dict())
    if rendered.cf_deletions:
        files["cf-deletions.yaml"] = dump(rendered.cf_deletions.to_dict())
    files["summary.json"] = json.dumps(summary(rendered), indent=2) + "\n"
    return files


def file_name(name: str) -> str:
    """`name` as one file name (or a part of one): every character but ASCII letters, digits, `.`, `_`, `:` and `-`
    becomes `_`, and so does each dot of a name of dots only (`.`, `..`): it never names another folder."""
    safe = _NOT_IN_FILE_NAMES.sub("_", name)
    return safe if safe.strip(".") else "_" * len(safe) or "_"


def _manifest_files(folder: str, manifests: list[Manifest]) -> dict[str, str]:
    return {
        f"{folder}/{index:03d}-{file_name(m.kind.lower())}-{file_name(m.name)}.yaml": dump(m.body)
        for index, m in enumerate(manifests, 1)
    }


def summary(rendered: RenderedCluster) -> dict[str, object]:
    """Small facts about a rendering, safe to put in a workflow payload (no manifests, no secrets)."""
    return {
        "cluster_id": rendered.cluster.id,
        "version": rendered.version,
        "config_version": rendered.config_version,
        "node_pools": sorted(rendered.node_pool_stacks),
        "karpenter_pools": sorted(rendered.node_pool_manifests),
        "components": [c.name for c in rendered.components],
        "manifests": rendered.manifest_count,
        "deletions": {"pre_apply": len(rendered.deletions.pre_apply), "post_apply": len(rendered.deletions.post_apply)},
        "cf_stacks": [stack_name(stack.template) for stack in rendered.extra_stacks],
        "cf_deletions": rendered.cf_deletions.to_dict(),
        "warnings": rendered.warnings[:MAX_WARNINGS],
        "warning_count": len(rendered.warnings),
    }
