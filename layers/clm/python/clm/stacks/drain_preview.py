"""The drain pre-flight (clm.kube.preflight) of every Node a plan would drain. Reads only; changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clm.kube.errors import NodeNotFound
from clm.kube.preflight import preflight
from clm.rolling.observe import instance_id_of
from clm.stacks.plan import PoolPlan

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

# The first request tells whether the cluster is reachable at all: fail fast rather than retry for long.
PROBE_TIMEOUT = 10.0
PROBE_RETRIES = 1


def drain_preflights(kube: KubeClient, pools: Sequence[PoolPlan]) -> list[dict[str, Any]]:
    """For every outdated instance that has a Node, in pool order: `{node_pool, instance, **preflight(node)}`.

    Instances without a Node have nothing to drain and are left out. Raises KubeError when the cluster cannot
    be reached or refuses the requests.
    """
    if not any(pool.outdated for pool in pools):
        return []
    listed = kube.request("GET", "/api/v1/nodes", timeout=PROBE_TIMEOUT, retries=PROBE_RETRIES)
    nodes = {instance_id_of(node): node["metadata"]["name"] for node in listed.get("items") or []}
    found = []
    for pool in pools:
        for instance in pool.outdated:
            node = nodes.get(instance.id)
            if not node:
                continue
            try:
                found.append({"node_pool": pool.node_pool, "instance": instance.id, **preflight(kube, node)})
            except NodeNotFound:  # gone since the listing: nothing to drain
                continue
    return found
