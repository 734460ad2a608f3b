"""Config items as Zalando CLM prepares them before rendering (provisioner/clusterpy.go, prepareProvision):

1. `updateDefaults`: config-defaults.yaml is rendered with the cluster *without* its config items (its node pools
   as the registry has them) and without `.Values` (template.go: "Available everywhere except defaults"); its
   items fill only what the registry lacks.
2. `decryptConfigItems`: every cluster item (from the registry or the defaults) of the form `aws:kms:<base64>` is
   decrypted (clm.render.secrets); node-pool items are not (CLM decrypts `cluster.ConfigItems` only).
3. `propagateConfigItemsToNodePools`: every cluster item is copied into each node pool's items unless the pool
   sets it, so node-pool templates read cluster items through the pool (`.NodePool.ConfigItems`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import yaml

from clm.errors import RenderError
from clm.model import Cluster
from clm.yamlutil import error_line, error_reason, safe_load, scalar_text

DEFAULTS = "cluster/config-defaults.yaml"


def without_config_items(cluster: Cluster) -> Cluster:
    """The cluster config-defaults.yaml sees: no config items of its own (clusterpy.go `withoutConfigItems`)."""
    return dataclasses.replace(cluster, config_items={})


def parse_defaults(text: str, cluster_id: str, file: str = DEFAULTS) -> dict[str, str]:
    """The items of a rendered config-defaults.yaml (a mapping of names to scalars, kept as their text); errors
    name `file`."""
    try:
        defaults = safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise RenderError(f"rendered YAML is invalid: {error_reason(exc)}", file, error_line(exc), cluster_id) from None
    if not isinstance(defaults, dict):
        raise RenderError("must be a mapping of config item names to values", file, 1, cluster_id)
    for key, value in defaults.items():
        if isinstance(value, dict | list):
            raise RenderError(f"config item {key!r} must be a scalar", file, None, cluster_id)
    return {str(k): scalar_text(v) for k, v in defaults.items()}


def with_defaults(items: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str]:
    """`items` with `defaults` filling the names it lacks (the registry always wins)."""
    return {**defaults, **items}


def propagate_to_node_pools(cluster: Cluster) -> Cluster:
    """The cluster with each node pool's items completed by the cluster's, the pool's own winning."""
    pools = [
        dataclasses.replace(pool, config_items={**cluster.config_items, **pool.config_items})
        for pool in cluster.node_pools
    ]
    return dataclasses.replace(cluster, node_pools=pools)
