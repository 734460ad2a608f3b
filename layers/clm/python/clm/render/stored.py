"""A rendered cluster as one JSON document, so that workflow steps can share a rendering through S3.

The render step stores it once; the stack and apply steps load it by key. Payloads between steps carry
only the key, never templates or manifests. Decrypted config items are stored as their ciphertext
(RenderedCluster.at_rest): a loaded rendering's cluster holds them encrypted; each manifest keeps the pointers of
its nodes that hold them (clm.sealed), never their values.
"""

from __future__ import annotations

import json
from typing import Any

from clm.model import Cluster
from clm.render.cf_manifests import CFDeletions
from clm.render.cfn_yaml import load_template
from clm.render.deletions import Deletion, Deletions
from clm.render.manifests import Manifest
from clm.render.renderer import Component, RenderedCluster, RenderedStack

FORMAT = 1


def dumps(rendered: RenderedCluster) -> str:
    """The rendering as a JSON document."""
    document = {
        "format": FORMAT,
        "cluster": rendered.at_rest().to_dict(),
        "config_version": rendered.config_version,
        "version": rendered.version,
        "cluster_stack": _stack(rendered.cluster_stack),
        "node_pool_stacks": {pool: _stack(stack) for pool, stack in rendered.node_pool_stacks.items()},
        "components": [{"name": c.name, "manifests": _manifests(c.manifests)} for c in rendered.components],
        "deletions": rendered.deletions.to_dict(),
        "node_pool_manifests": {pool: _manifests(items) for pool, items in rendered.node_pool_manifests.items()},
        "warnings": rendered.warnings,
        "etcd_stack": _stack(rendered.etcd_stack) if rendered.etcd_stack else None,
        "extra_stacks": [_stack(stack) for stack in rendered.extra_stacks],
        "cf_deletions": rendered.cf_deletions.to_dict(),
    }
    return json.dumps(document, separators=(",", ":"), sort_keys=True)


def loads(text: str | bytes) -> RenderedCluster:
    """A rendering from :func:`dumps`' document."""
    document = json.loads(text)
    if document.get("format") != FORMAT:
        raise ValueError(f"stored rendering has format {document.get('format')!r}, expected {FORMAT}")
    return RenderedCluster(
        cluster=Cluster.from_dict(document["cluster"]),
        config_version=document["config_version"],
        version=document["version"],
        cluster_stack=_load_stack(document["cluster_stack"]),
        node_pool_stacks={pool: _load_stack(stack) for pool, stack in document["node_pool_stacks"].items()},
        components=[Component(c["name"], _load_manifests(c["manifests"])) for c in document["components"]],
        deletions=Deletions(
            pre_apply=[Deletion(**d) for d in document["deletions"]["pre_apply"]],
            post_apply=[Deletion(**d) for d in document["deletions"]["post_apply"]],
        ),
        node_pool_manifests={
            pool: _load_manifests(items) for pool, items in document.get("node_pool_manifests", {}).items()
        },
        warnings=document.get("warnings", []),
        etcd_stack=_load_stack(document["etcd_stack"]) if document.get("etcd_stack") else None,
        extra_stacks=[_load_stack(stack) for stack in document.get("extra_stacks", [])],
        cf_deletions=CFDeletions(
            **{phase: [d["stackName"] for d in found] for phase, found in document.get("cf_deletions", {}).items()}
        ),
    )


def _manifests(manifests: list[Manifest]) -> list[list[Any]]:
    return [[m.file, m.index, m.line, m.body, list(m.sealed)] for m in manifests]


def _load_manifests(entries: list[list[Any]]) -> list[Manifest]:
    """Manifests from their entries; one stored before CLM recorded sealed nodes has four fields."""
    return [
        Manifest(file, index, line, body, tuple(sealed[0]) if sealed else ())
        for file, index, line, body, *sealed in entries
    ]


def _stack(stack: RenderedStack) -> dict[str, Any]:
    return {"file": stack.file, "body": stack.body}


def _load_stack(data: dict[str, Any]) -> RenderedStack:
    return RenderedStack(file=data["file"], body=data["body"], template=load_template(data["body"]))
