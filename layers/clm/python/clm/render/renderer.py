"""Render everything a cluster needs from a configuration tree: config items, stacks, manifests, deletions.

Layout (under `cluster/`, as Zalando CLM): `config-defaults.yaml`, `stack.yaml` (or CLM's
`cluster.yaml`), `node-pools/<profile>/stack.yaml`, `manifests/<component>/*.yaml` and
`manifests/deletions.yaml`. Templates see `cluster` (config items with defaults filled in),
`node_pool` (node-pool stacks only) and `values` (facts the caller passes in).

A combined snapshot (several sources) is read as CLM's channel/combined.go does: stacks and node-pool
profiles from the first source only; config-defaults.yaml of every source merged key by key, later wins;
deletions of every source concatenated; the components of every source applied, named `<source>/<component>`.
Files of a combined snapshot are named `<source>/<path>` in errors, as CLM names them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from clm.errors import RenderError
from clm.model import Cluster, NodePool
from clm.render.cfn_yaml import load_template
from clm.render.deletions import Deletions, parse_deletions
from clm.render.manifests import Manifest, split_manifests
from clm.render.origins import registry_view
from clm.version import desired_version
from clm.yamlutil import SafeLoader, error_line, error_reason, scalar_text

if TYPE_CHECKING:
    from clm.config.tree import ConfigTree
    from clm.render.environment import TemplateEnvironment

ROOT = "cluster/"
DEFAULTS = ROOT + "config-defaults.yaml"
CLUSTER_STACKS = (ROOT + "stack.yaml", ROOT + "cluster.yaml")
NODE_POOL_STACK = ROOT + "node-pools/{profile}/stack.yaml"
MANIFESTS = ROOT + "manifests/"
DELETIONS = MANIFESTS + "deletions.yaml"
MANIFEST_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class RenderedStack:
    """A rendered CloudFormation template and the file it came from."""

    file: str
    body: str
    template: dict[str, Any]


@dataclass(frozen=True)
class Component:
    """A manifest component (a folder under manifests/) and its objects in apply order."""

    name: str
    manifests: list[Manifest]


@dataclass(frozen=True)
class RenderedCluster:
    """Everything rendered for one cluster at one configuration version."""

    cluster: Cluster
    config_version: str
    version: str
    cluster_stack: RenderedStack
    node_pool_stacks: dict[str, RenderedStack]
    components: list[Component]
    deletions: Deletions = field(default_factory=Deletions)

    @property
    def manifest_count(self) -> int:
        """Number of Kubernetes objects across all components."""
        return sum(len(c.manifests) for c in self.components)


@dataclass(frozen=True)
class _Source:
    """One source of the snapshot: its files, their template environment, and how errors name its files."""

    prefix: str
    files: Mapping[str, bytes]
    env: TemplateEnvironment

    def render(self, path: str, context: dict[str, Any], cluster_id: str) -> str:
        try:
            return self.env.render(path, context, cluster_id)
        except RenderError as exc:
            if not self.prefix:
                raise
            raise RenderError(exc.message, self.prefix + (exc.file or path), exc.line, exc.cluster_id) from None


class Renderer:
    """Renders clusters against one configuration tree; reuse it for many clusters."""

    def __init__(self, tree: ConfigTree):
        # Jinja2 loads here, not with the module: the functions that only read renderings never pay for it.
        from clm.render.environment import TemplateEnvironment

        self.tree = tree
        combined = bool(tree.layers)
        self._sources = [
            _Source(f"{part.name}/" if combined else "", part.tree.files, TemplateEnvironment(part.tree.files))
            for part in tree.parts()
        ]
        self._env = self._sources[0].env  # stacks and node pools: the main source's
        self._components = [
            (source.prefix + name, source, paths)
            for source in self._sources
            for name, paths in self._find_components(source.files).items()
        ]

    @staticmethod
    def _find_components(files: Mapping[str, bytes]) -> dict[str, list[str]]:
        components: dict[str, list[str]] = {}
        for path in sorted(files):
            if not path.startswith(MANIFESTS) or path == DELETIONS or not path.endswith(MANIFEST_SUFFIXES):
                continue
            name, sep, _ = path[len(MANIFESTS) :].partition("/")
            if sep:
                components.setdefault(name, []).append(path)
        return dict(sorted(components.items()))

    def config_items(self, cluster: Cluster, values: Mapping[str, Any]) -> dict[str, str]:
        """The cluster's config items, with config-defaults.yaml filling the ones it lacks (the defaults of
        every source merged key by key, later sources winning: CLM's provisioner updateDefaults)."""
        merged: dict[str, str] = {}
        for source in self._sources:
            if DEFAULTS in source.files:
                merged.update(self._defaults(source, cluster, values))
        merged.update(cluster.config_items)
        return merged

    @staticmethod
    def _defaults(source: _Source, cluster: Cluster, values: Mapping[str, Any]) -> dict[str, str]:
        text = source.render(DEFAULTS, {"cluster": registry_view(cluster), "values": values}, cluster.id)
        file = source.prefix + DEFAULTS
        try:
            defaults = yaml.load(text, Loader=SafeLoader) or {}
        except yaml.YAMLError as exc:
            raise RenderError(
                f"rendered YAML is invalid: {error_reason(exc)}", file, error_line(exc), cluster.id
            ) from None
        if not isinstance(defaults, dict):
            raise RenderError("must be a mapping of config item names to values", file, 1, cluster.id)
        for key, value in defaults.items():
            if isinstance(value, dict | list):
                raise RenderError(f"config item {key!r} must be a scalar", file, None, cluster.id)
        return {str(k): scalar_text(v) for k, v in defaults.items()}

    def render(self, cluster: Cluster, values: Mapping[str, Any] | None = None) -> RenderedCluster:
        """Render the cluster; raises RenderError (naming file and line) before anything is applied."""
        values = dict(values or {})
        effective = dataclasses.replace(cluster, config_items=self.config_items(cluster, values))
        view = registry_view(effective, cluster.config_items)  # what templates see: registry text as RegistryStr
        context = {"cluster": view, "values": values}
        node_pool_stacks = {
            pool.name: self._node_pool_stack(view, seen, values)
            for pool, seen in zip(effective.node_pools, view.node_pools, strict=True)
        }
        return RenderedCluster(
            cluster=effective,
            config_version=self.tree.version,
            version=str(desired_version(cluster, self.tree.version)),
            cluster_stack=self._stack(self._cluster_stack_file(cluster), context, cluster.id),
            node_pool_stacks=node_pool_stacks,
            components=[
                Component(
                    name,
                    [
                        m
                        for path in paths
                        for m in split_manifests(
                            source.render(path, context, cluster.id), source.prefix + path, cluster.id
                        )
                    ],
                )
                for name, source, paths in self._components
            ],
            deletions=self._deletions(context, cluster.id),
        )

    def _cluster_stack_file(self, cluster: Cluster) -> str:
        present = [path for path in CLUSTER_STACKS if path in self.tree.files]
        if not present:
            raise RenderError(
                f"no cluster stack template: expected {CLUSTER_STACKS[0]} "
                f"(or {CLUSTER_STACKS[1]}) in {self.tree.source}",
                cluster_id=cluster.id,
            )
        if len(present) > 1:
            raise RenderError(f"both {present[0]} and {present[1]} exist; keep one", cluster_id=cluster.id)
        return present[0]

    def _node_pool_stack(self, cluster: Cluster, pool: NodePool, values: dict[str, Any]) -> RenderedStack:
        file = NODE_POOL_STACK.format(profile=pool.profile)
        if file not in self.tree.files:
            raise RenderError(
                f"node pool {pool.name!r} uses profile {pool.profile!r}, but {file} is not in {self.tree.source}",
                cluster_id=cluster.id,
            )
        return self._stack(file, {"cluster": cluster, "node_pool": pool, "values": values}, cluster.id)

    def _stack(self, file: str, context: dict[str, Any], cluster_id: str) -> RenderedStack:
        body = self._env.render(file, context, cluster_id)
        try:
            template = load_template(body)
        except yaml.YAMLError as exc:
            raise RenderError(
                f"rendered template is not valid YAML/JSON: {error_reason(exc)}", file, error_line(exc), cluster_id
            ) from None
        if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
            raise RenderError("rendered template has no Resources section", file, None, cluster_id)
        return RenderedStack(file=file, body=body, template=template)

    def _deletions(self, context: dict[str, Any], cluster_id: str) -> Deletions:
        """The deletions of every source, their lists concatenated in source order."""
        result = Deletions()
        for source in self._sources:
            if DELETIONS in source.files:
                text = source.render(DELETIONS, context, cluster_id)
                found = parse_deletions(text, source.prefix + DELETIONS, cluster_id)
                result = Deletions(result.pre_apply + found.pre_apply, result.post_apply + found.post_apply)
        return result
