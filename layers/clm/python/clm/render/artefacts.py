"""A rendered cluster as named files: what `clm render` writes to a folder and the workflow to S3."""

from __future__ import annotations

import json

from clm.render.renderer import RenderedCluster
from clm.yamlutil import dump


def rendered_files(rendered: RenderedCluster) -> dict[str, str]:
    """Relative path -> content for every artefact of a rendered cluster, in apply order."""
    files = {
        "version.txt": rendered.version + "\n",
        "config-items.yaml": dump(rendered.at_rest().config_items),  # encrypted items as the registry has them
        "cluster-stack.yaml": rendered.cluster_stack.body,
    }
    for pool, stack in rendered.node_pool_stacks.items():
        files[f"node-pools/{pool}.yaml"] = stack.body
    for number, component in enumerate(rendered.components, start=1):
        for index, manifest in enumerate(component.manifests, start=1):
            name = f"{index:03d}-{manifest.kind.lower()}-{manifest.name}.yaml"
            files[f"manifests/{number:02d}-{component.name}/{name}"] = dump(manifest.body)
    files["deletions.yaml"] = dump(rendered.deletions.to_dict())
    files["summary.json"] = json.dumps(summary(rendered), indent=2) + "\n"
    return files


def summary(rendered: RenderedCluster) -> dict[str, object]:
    """Small facts about a rendering, safe to put in a workflow payload (no manifests, no secrets)."""
    return {
        "cluster_id": rendered.cluster.id,
        "version": rendered.version,
        "config_version": rendered.config_version,
        "node_pools": sorted(rendered.node_pool_stacks),
        "components": [c.name for c in rendered.components],
        "manifests": rendered.manifest_count,
        "deletions": {"pre_apply": len(rendered.deletions.pre_apply), "post_apply": len(rendered.deletions.post_apply)},
    }
