"""Which node pools a provision rolls (clm.workflow.stack_steps.pools_to_roll), as CLM's provisioner/clusterpy.go
groups them (groupNodePools): masters before workers, then the Karpenter pools whatever `karpenter_pools_enabled`
says (CLM removed that gate in 66f2c05, "Remove legacy karpenter_pools_enabled logic"; replaced through EC2: no group
nor stack), nothing in a new cluster's first run."""

from __future__ import annotations

import dataclasses

from clm.registry.clusters_yaml import load_clusters
from clm.workflow.stack_steps import pools_to_roll
from tests.unit.test_registry_karpenter import REGISTRY


def cluster_with_master(lifecycle_status: str = "ready"):
    (cluster,) = load_clusters(REGISTRY)
    master = dataclasses.replace(cluster.node_pools[0], name="master", profile="master-default")
    return dataclasses.replace(cluster, node_pools=[*cluster.node_pools, master], lifecycle_status=lifecycle_status)


def test_masters_come_first_and_karpenter_pools_last_whatever_karpenter_pools_enabled_says():
    cluster = cluster_with_master()
    rolled = ["master", "default-worker", "worker-karpenter", "karpenter-defaults"]
    for items in ({"karpenter_pools_enabled": "true"}, {"karpenter_pools_enabled": "false"}, {}):
        assert [pool.name for pool in pools_to_roll(dataclasses.replace(cluster, config_items=items))] == rolled


def test_a_new_cluster_rolls_nothing_on_its_first_run():
    for status in ("requested", "creating"):
        assert pools_to_roll(cluster_with_master(status)) == []
