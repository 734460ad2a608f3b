"""Render everything a cluster needs from a configuration tree: config items, stacks, manifests, deletions.

Layout (under `cluster/`, as Zalando CLM): `config-defaults.yaml`, `stack.yaml` (or CLM's `cluster.yaml`),
`node-pools/<profile>/stack.yaml`, `manifests/<component>/*.yaml`, `manifests/deletions.yaml` and `cf-manifests/`
(extra stacks and cf-deletions.yaml: clm.render.cf_manifests). Templates see `cluster` (config items with defaults
filled in and encrypted ones decrypted, each node pool's items completed by the cluster's: clm.render.config_items),
`node_pool` (node-pool stacks only) and `values` (facts the caller passes in; not config-defaults.yaml, as in CLM). A
Karpenter pool (profile `worker-karpenter`) renders its profile's provisioners.yaml instead of a stack
(clm.render.karpenter).

A combined snapshot (several sources) is read as CLM's channel/combined.go does: stacks and node-pool profiles from
the first source only; config-defaults.yaml of every source merged key by key, later wins; deletions and cf-manifests
of every source concatenated; the components of every source applied, named `<source>/<component>`. Files of a
combined snapshot are named `<source>/<path>` in errors, as CLM names them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clm.errors import RenderError
from clm.model import KARPENTER_DEFAULT_TYPES, Cluster, NodePool
from clm.render.account_clusters import template_cluster
from clm.render.bounded_roles import unbounded_roles
from clm.render.cf_manifests import CFDeletions
from clm.render.config_items import (
    DEFAULTS,
    parse_defaults,
    propagate_to_node_pools,
    with_defaults,
    without_config_items,
)
from clm.render.deletions import Deletions, parse_deletions
from clm.render.inputs import RenderInputs
from clm.render.karpenter import render_provisioners
from clm.render.manifests import Manifest, split_manifests
from clm.render.origins import registry_view
from clm.render.secrets import decrypt_items, seal
from clm.render.stack_template import parse_stack
from clm.scrub import Scrubber
from clm.version import desired_version

if TYPE_CHECKING:
    from clm.config.tree import ConfigTree
    from clm.render.environment import TemplateEnvironment

ROOT = "cluster/"
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
    # Karpenter pools: pool name -> the objects of its provisioners.yaml, applied after the cluster's manifests.
    node_pool_manifests: dict[str, list[Manifest]] = field(default_factory=dict)
    # Config items decrypted for the templates: name -> the `aws:kms:` value they had (clm.render.secrets).
    encrypted_items: dict[str, str] = field(default_factory=dict)
    # What rendered but deserves a look, each naming file and line (a manifest's duplicate key: the last is used).
    warnings: list[str] = field(default_factory=list)
    # CLM's etcd stack (clm.render.etcd), when the deployment manages it and the cluster has one.
    etcd_stack: RenderedStack | None = None
    # cluster/cf-manifests/: extra stacks (after the cluster stack) and stacks deleted (clm.render.cf_manifests).
    extra_stacks: list[RenderedStack] = field(default_factory=list)
    cf_deletions: CFDeletions = field(default_factory=CFDeletions)

    @property
    def stacks(self) -> list[RenderedStack]:
        """Every CloudFormation stack of the rendering: the etcd stack (when there is one), the cluster stack, the
        extra stacks, the node-pool stacks."""
        etcd = [self.etcd_stack] if self.etcd_stack else []
        return [*etcd, self.cluster_stack, *self.extra_stacks, *self.node_pool_stacks.values()]

    @property
    def manifest_count(self) -> int:
        """Number of Kubernetes objects across all components."""
        return sum(len(c.manifests) for c in self.components)

    def at_rest(self) -> Cluster:
        """The cluster as stored or shown: decrypted items (the cluster's, and their copies in node pools) back
        to their ciphertext, as the registry or config-defaults.yaml hold them."""
        clear = {name: self.cluster.config_items[name] for name in self.encrypted_items}

        def restore(items: dict[str, str]) -> dict[str, str]:
            return {
                name: self.encrypted_items[name] if name in clear and value == clear[name] else value
                for name, value in items.items()
            }

        pools = [dataclasses.replace(p, config_items=restore(p.config_items)) for p in self.cluster.node_pools]
        return dataclasses.replace(self.cluster, config_items=restore(self.cluster.config_items), node_pools=pools)


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

    def __init__(self, tree: ConfigTree, inputs: RenderInputs | None = None):
        """`inputs`: what templates may ask beyond the tree and the registry (clm.render.inputs); without them,
        only the templates that need them fail."""
        # Jinja2 loads here, not with the module: the functions that only read renderings never pay for it.
        from clm.render.environment import TemplateEnvironment

        self.tree = tree
        self.inputs = inputs or RenderInputs()
        self._named: dict[str, bool] = {}
        combined = bool(tree.layers)
        self._sources = [
            _Source(
                f"{part.name}/" if combined else "",
                part.tree.files,
                TemplateEnvironment(part.tree.files, self.inputs.lookups),
            )
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

    def config_items(self, cluster: Cluster) -> dict[str, str]:
        """The cluster's config items, with config-defaults.yaml filling the ones it lacks (still encrypted).

        As CLM's updateDefaults (provisioner/clusterpy.go): the defaults see the cluster without its config items
        (a registry item cannot steer its own default) and no `values`; the defaults of every source are merged
        key by key, later sources winning.
        """
        view = registry_view(without_config_items(cluster))
        defaults: dict[str, str] = {}
        for source in self._sources:
            if DEFAULTS in source.files:
                text = source.render(DEFAULTS, {"cluster": view}, cluster.id)
                defaults.update(parse_defaults(text, cluster.id, source.prefix + DEFAULTS))
        return with_defaults(cluster.config_items, defaults)

    def render(
        self, cluster: Cluster, values: Mapping[str, Any] | None = None, *, zone_url: str | None = None
    ) -> RenderedCluster:
        """Render the cluster; raises RenderError (naming file and line) before anything is applied. Decrypted
        config items show in no error or warning, not even in part (clm.scrub); the objects that hold them record
        where (clm.sealed). `zone_url`: the URL `hosted_zone` and the load balancer certificate are computed from
        (default: the cluster's API URL; a zalando-eks cluster's registry URL after CLM switched its API URL to the
        EKS endpoint: clm.workflow.eks_hook)."""
        items, encrypted = decrypt_items(self.config_items(cluster), self.inputs.decrypt, cluster)
        scrub = Scrubber(items[name] for name in encrypted)
        try:
            computed, items = self._cluster_values(cluster, items, zone_url or cluster.api_server_url)
            rendered = self._render(cluster, items, encrypted, {**computed, **(values or {})})
        except RenderError as exc:
            if not scrub:
                raise
            raise RenderError(scrub(exc.message), exc.file, exc.line, exc.cluster_id) from None
        return seal(rendered, scrub)

    def _render(
        self, cluster: Cluster, items: dict[str, str], encrypted: dict[str, str], values: dict[str, Any]
    ) -> RenderedCluster:
        unpropagated = dataclasses.replace(cluster, config_items=items)
        effective = propagate_to_node_pools(unpropagated)
        # What templates see: registry text as RegistryStr, pools completed with the cluster's items as marked.
        view = propagate_to_node_pools(registry_view(unpropagated, cluster.config_items, encrypted))
        view = template_cluster(view, self.inputs.list_clusters)  # with CLM's methods (clm.render.account_clusters)
        context = {"cluster": view, "values": values}
        pools = list(zip(effective.node_pools, view.node_pools, strict=True))
        warnings: list[str] = []
        node_pool_stacks = {
            pool.name: self._node_pool_stack(view, seen, values) for pool, seen in pools if not pool.is_karpenter
        }
        node_pool_manifests = {
            pool.name: self._provisioners(view, seen, values, warnings) for pool, seen in pools if pool.is_karpenter
        }
        extra_stacks, cf_deletions = self._cf_manifests(cluster, items, context)
        rendered = RenderedCluster(
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
                            source.render(path, context, cluster.id), source.prefix + path, cluster.id, warnings
                        )
                    ],
                )
                for name, source, paths in self._components
            ],
            deletions=self._deletions(context, cluster.id),
            node_pool_manifests=node_pool_manifests,
            encrypted_items=encrypted,
            warnings=warnings,
            etcd_stack=self._etcd_stack(view, values),
            extra_stacks=extra_stacks,
            cf_deletions=cf_deletions,
        )
        warnings += [warning for stack in rendered.stacks for warning in unbounded_roles(stack.file, stack.template)]
        return rendered

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

    def _cluster_values(
        self, cluster: Cluster, items: dict[str, str], url: str
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The values CLM computes for a cluster (provisioner/clusterpy.go Provision), and its config items with
        CLM's fills: `hosted_zone` from `url` (the API URL); with lookups, the network values
        (clm.render.network_values: the VPC's CIDRs, the subnets it chooses per role) and the items `vpc_id` (the
        default VPC's) and `subnets` (the nodes' subnets) where the cluster has none. What cannot be computed fails
        the templates that read it, with the reason."""
        from clm.render.network_values import ALL_ZONES, NETWORK_KEYS, Unavailable, hosted_zone, network_values

        computed: dict[str, Any] = {}
        try:
            computed["hosted_zone"] = hosted_zone(url)
        except ValueError as exc:
            computed["hosted_zone"] = Unavailable(str(exc))
        if self.inputs.account is not None:
            from clm.render.account_lookups import account_values

            computed.update(account_values(self.inputs.account, url, self._names))
        if self.inputs.lookups is None:
            return computed, items
        try:
            vpc, subnets = self.inputs.lookups.network(items.get("vpc_id"))
            network = network_values(subnets, vpc, items)
        except Exception as exc:  # EC2 refused, no such VPC, unknown subnets: only the templates reading them fail
            computed.update(dict.fromkeys(NETWORK_KEYS, Unavailable(f"cannot read the cluster's network: {exc}")))
            return computed, items
        computed.update(network)
        fills = {"vpc_id": vpc["VpcId"], "subnets": network["subnets"].get(ALL_ZONES, "")}
        return computed, {**items, **{name: value for name, value in fills.items() if name not in items}}

    def _names(self, name: str) -> bool:
        """Whether a file of the configuration mentions `name` (so its value is worth a lookup)."""
        if name not in self._named:
            needle = name.encode()
            self._named[name] = any(needle in text for part in self.tree.parts() for text in part.tree.files.values())
        return self._named[name]

    def _pool_values(self, cluster: Cluster, pool: NodePool, values: dict[str, Any]) -> dict[str, Any]:
        """The values CLM adds for a node-pool stack (provisioner/node_pools.go provisionNodePool)."""
        added: dict[str, Any] = {"supports_t2_unlimited": all(name.startswith("t2.") for name in pool.instance_types)}
        subnets = values.get("subnets")
        if "availability_zones" in pool.config_items and type(subnets) is dict:  # the pool's zones only
            from clm.render.network_values import ALL_ZONES, AzInfo

            zones = AzInfo({zone: subnet for zone, subnet in subnets.items() if zone != ALL_ZONES})
            added.update(zones.restrict(pool.config_items["availability_zones"].split(",")).values())
        if (lookups := self.inputs.lookups) is not None:
            from clm.render.lookups import LazyInstanceInfo

            types = {name for other in cluster.node_pools for name in other.instance_types} - {KARPENTER_DEFAULT_TYPES}
            added["InstanceInfo"] = LazyInstanceInfo(lookups, f"node pool {pool.name!r}", pool.instance_types, types)
        return {**values, **added}

    def _node_pool_stack(self, cluster: Cluster, pool: NodePool, values: dict[str, Any]) -> RenderedStack:
        values = self._pool_values(cluster, pool, values)
        file = NODE_POOL_STACK.format(profile=pool.profile)
        if file not in self.tree.files:
            raise RenderError(
                f"node pool {pool.name!r} uses profile {pool.profile!r}, but {file} is not in {self.tree.source}",
                cluster_id=cluster.id,
            )
        context = {"cluster": cluster, "node_pool": pool, "values": values}
        return self._stack(file, {**context, "values": self._node_values(cluster, pool, context)}, cluster.id)

    def _provisioners(
        self, cluster: Cluster, pool: NodePool, values: dict[str, Any], warnings: list[str]
    ) -> list[Manifest]:
        """A Karpenter pool's objects (clm.render.karpenter), its user data in plain text."""
        context = {"cluster": cluster, "node_pool": pool, "values": values}
        values = self._node_values(cluster, pool, context, encode=False)
        return render_provisioners(self._env, self.tree.files, self.tree.source, cluster, pool, values, warnings)

    def _node_values(
        self, cluster: Cluster, pool: NodePool, context: dict[str, Any], *, encode: bool = True
    ) -> dict[str, Any]:
        """The pool's values with CLM's `S3GeneratedFilesPath` and `UserData` where its profile has files.yaml or
        userdata.yaml (clm.render.node_files)."""
        from clm.render import node_files

        account = cluster.account_id
        store = self.inputs.files_store
        if store is None:
            store = node_files.PlannedFiles(node_files.bucket_name(account, cluster.region))
        facts = (cluster.local_id, node_files.pool_kind(pool.is_master), cluster.region, account)
        profile_dir = NODE_POOL_STACK.format(profile=pool.profile).removesuffix("stack.yaml")

        def render(path: str, context: dict[str, Any]) -> str:
            return self._env.render(path, context, cluster.id)

        return node_files.node_values(render, self.tree.files, profile_dir, context, store, facts, encode=encode)

    def _etcd_stack(self, cluster: Cluster, values: dict[str, Any]) -> RenderedStack | None:
        """CLM's etcd stack, when the deployment manages it (clm.render.etcd)."""
        from clm.render import etcd

        if self.inputs.etcd_store is None or not etcd.has_etcd_stack(cluster.provider, self.tree.files):
            return None

        def render(path: str, context: dict[str, Any]) -> str:
            return self._env.render(path, context, cluster.id)

        context = {"cluster": cluster, "values": {**values, **etcd.instance_values(self.inputs.lookups, cluster)}}
        values = etcd.etcd_values(render, self.tree.files, context, self.inputs.etcd_store, cluster.local_id)
        return self._stack(etcd.ETCD_STACK, {**context, "values": values}, cluster.id)

    def _stack(self, file: str, context: dict[str, Any], cluster_id: str) -> RenderedStack:
        body = self._env.render(file, context, cluster_id)
        return RenderedStack(file, body, parse_stack(self._env, file, body, context, cluster_id)[1])

    def _cf_manifests(
        self, cluster: Cluster, items: dict[str, str], context: dict[str, Any]
    ) -> tuple[list[RenderedStack], CFDeletions]:
        """cluster/cf-manifests/ of every source, checked before any AWS call (clm.render.cf_manifests)."""
        from clm.render.cf_manifests import Source, render_cf_manifests

        def source(part: _Source) -> Source:
            def load(path: str, body: str) -> RenderedStack:
                file, template = parse_stack(part.env, path, body, context, cluster.id, part.prefix)
                return RenderedStack(file, body, template)

            return Source(part.prefix, part.files, lambda path: part.render(path, context, cluster.id), load)

        return render_cf_manifests([source(part) for part in self._sources], cluster.local_id, items, cluster.id)

    def _deletions(self, context: dict[str, Any], cluster_id: str) -> Deletions:
        """The deletions of every source, their lists concatenated in source order."""
        result = Deletions()
        for source in self._sources:
            if DELETIONS in source.files:
                text = source.render(DELETIONS, context, cluster_id)
                found = parse_deletions(text, source.prefix + DELETIONS, cluster_id)
                result = Deletions(result.pre_apply + found.pre_apply, result.post_apply + found.post_apply)
        return result
