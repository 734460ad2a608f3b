"""Config items as Zalando CLM prepares them (provisioner/clusterpy.go prepareProvision): config-defaults.yaml
rendered without the registry's items and without values, filling what the registry lacks; every cluster item
copied into each node pool unless the pool sets it (propagateConfigItemsToNodePools)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from clm.errors import RenderError
from clm.model import NodePool
from clm.render.config_items import propagate_to_node_pools
from clm.render.renderer import Renderer
from tests.unit.test_render import tree_with

CORPUS = Path("/work/shared/corpus/kubernetes-on-aws/cluster")
POOL_STACK = "cluster/node-pools/worker-default/stack.yaml"
DEFAULTS = "cluster/config-defaults.yaml"


def with_defaults_lines(tree, text: str):
    """The tree with `text` appended to config-defaults.yaml."""
    return tree_with(tree, **{"cluster__config-defaults_dot_yaml": tree.files[DEFAULTS].decode() + text})


def test_defaults_do_not_see_the_registry_items(example_tree, example_clusters):
    """clusterpy.go updateDefaults renders them with `withoutConfigItems` (ConfigItems emptied)."""
    tree = with_defaults_lines(example_tree, "seen: {{ cluster.config_items.get('app_replicas', 'none') }}\n")
    kube1 = Renderer(tree).render(example_clusters[0])
    assert kube1.cluster.config_items["seen"] == "none"
    assert kube1.cluster.config_items["app_replicas"] == "3"  # the registry's, all the same


def test_defaults_see_the_node_pools_but_no_values(example_tree, example_clusters):
    """template.go: `Values` is "available everywhere except defaults"; `.Cluster.NodePools` is there."""
    pools = with_defaults_lines(example_tree, "pools: {{ cluster.node_pools | map(attribute='name') | join(',') }}\n")
    kube2 = Renderer(pools).render(example_clusters[1])
    assert kube2.cluster.config_items["pools"] == "default-worker,batch"
    with pytest.raises(RenderError, match=r"undefined variable.*'values' is undefined") as info:
        Renderer(with_defaults_lines(example_tree, "x: {{ values.x }}\n")).render(example_clusters[0], {"x": "1"})
    assert info.value.file == DEFAULTS


def test_cluster_items_reach_every_node_pool_the_pools_own_winning(example_tree, example_clusters):
    kube2 = Renderer(example_tree).render(example_clusters[1])
    batch = kube2.cluster.node_pool("batch").config_items
    assert batch["app_replicas"] == "4"  # the registry's cluster item
    assert batch["worker_ami"] == "ami-0c1a7f89451184c8b"  # a default
    assert batch["taints"] == "dedicated=batch:NoSchedule"  # the pool's own
    cluster = dataclasses.replace(
        example_clusters[1],
        node_pools=[dataclasses.replace(p, config_items={"app_replicas": "9"}) for p in example_clusters[1].node_pools],
    )
    pools = Renderer(example_tree).render(cluster).cluster.node_pools
    assert {p.config_items["app_replicas"] for p in pools} == {"9"}
    assert kube2.cluster.config_items["app_replicas"] == "4"  # the cluster's own items are not the pool's


def test_node_pool_templates_read_cluster_items_through_the_pool(example_tree, example_clusters):
    """Zalando's node-pool stacks read cluster items as `.NodePool.ConfigItems.<name>`."""
    stack = example_tree.files[POOL_STACK].decode()
    stack = stack.replace("Resources:", "# ami {{ node_pool.config_items.worker_ami }}\nResources:", 1)
    kube1 = Renderer(tree_with(example_tree, **{POOL_STACK.replace("/", "__").replace(".", "_dot_"): stack}))
    body = kube1.render(example_clusters[0]).node_pool_stacks["default-worker"].body
    assert "# ami ami-0c1a7f89451184c8b" in body


def test_propagation_keeps_pool_order_and_registry_spec(example_clusters):
    cluster = dataclasses.replace(
        example_clusters[0],
        config_items={"a": "1", "b": "2"},
        node_pools=[NodePool("p", "worker-default", 1, 1, ["m5.large"], config_items={"b": "pool"})],
    )
    propagated = propagate_to_node_pools(cluster)
    assert propagated.node_pools[0].config_items == {"a": "1", "b": "pool"}
    assert cluster.node_pools[0].config_items == {"b": "pool"}  # the input is left as it was


@pytest.mark.skipif(not CORPUS.is_dir(), reason="Zalando's configuration is not on this machine")
def test_zalando_node_pool_stacks_rely_on_propagation():
    """Every cluster item Zalando's node-pool stacks read through the pool is one config-defaults.yaml sets:
    without propagation those pools would see no such item."""
    defaults = set(re.findall(r"^([a-z0-9_]+):", (CORPUS / "config-defaults.yaml").read_text(), re.MULTILINE))
    read: set[str] = set()
    for stack in CORPUS.glob("node-pools/*/stack.yaml"):
        read |= set(re.findall(r"\.NodePool\.ConfigItems\.([a-z0-9_]+)", stack.read_text()))
    through_pool = read & defaults
    assert len(through_pool) >= 5, sorted(read)
    pool = NodePool("default-worker", "worker-splitaz", 1, 3, ["m5.large"])
    cluster = dataclasses.replace(_cluster(), config_items=dict.fromkeys(defaults, "x"), node_pools=[pool])
    assert through_pool <= set(propagate_to_node_pools(cluster).node_pools[0].config_items)


def _cluster():
    from clm.model import Cluster

    return Cluster("aws:123456789012:eu-central-1:k", "k", "aws:123456789012", "eu-central-1", "zalando-aws")
