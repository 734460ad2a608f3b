"""Karpenter pools render their profile's provisioners.yaml (with CLM's values), get no node-pool stack, and keep
their objects through the stored rendering and the artefacts."""

from __future__ import annotations

import dataclasses
import json

import pytest

from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.model import Cluster, NodePool
from clm.render import stored
from clm.render.artefacts import rendered_files
from clm.render.renderer import Renderer
from clm.stacks.deploy import start
from clm.stacks.plan import plan_stacks
from clm.stacks.removed import removed_node_pools
from clm.stacks.spec import node_pool_stack_spec
from clm.workflow.render_step import APPLY_PHASES, KARPENTER_PHASE, render_to_s3
from tests.unit.test_render import tree_with
from tests.unit.test_stacks_support import Clients, stacks_aws

__all__ = ["stacks_aws"]  # fixture

# A Jinja2 rendition of the shape of Zalando's worker-karpenter/provisioners.yaml: everything behind
# karpenter_pools_enabled, the EC2NodeClass named as the pool, user data from values.UserData.
PROVISIONERS = """\
{% if cluster.config_items.karpenter_pools_enabled == "true" %}
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: {{ node_pool.name }}
spec:
  amiSelectorTerms:
  - id: {{ node_pool.config_items.worker_ami | default(cluster.config_items.worker_ami) }}
  tags:
    node.kubernetes.io/node-pool: {{ node_pool.name }}
  userData: |
{{ values.UserData | indent(4, true) }}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {{ node_pool.name }}
spec:
  template:
    metadata:
      labels:
        node.kubernetes.io/node-pool: {{ node_pool.name }}
        node.kubernetes.io/profile: {{ node_pool.profile }}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: {{ node_pool.name }}}
      requirements:
{% if node_pool.karpenter_instance_type_strategy == "custom" %}
      - key: node.kubernetes.io/instance-type
        operator: In
        values: {{ node_pool.instance_types | tojson }}
{% endif %}
      - key: topology.kubernetes.io/zone
        operator: In
        values: {{ (values.availability_zones if values.availability_zones is defined
                    else cluster.config_items.availability_zones.split(",")) | tojson }}
{% endif %}
"""
USERDATA = "#cloud-config\nwrite_files: [{path: /etc/pool, content: {{ node_pool.name }}}]\n"
KARPENTER = NodePool("kp", "worker-karpenter", 0, 0, [], config_items={})
PROVISIONERS_FILE = "cluster/node-pools/worker-karpenter/provisioners.yaml"


@pytest.fixture
def karpenter_tree(example_tree: ConfigTree) -> ConfigTree:
    return tree_with(
        example_tree,
        cluster__node_dash_pools__worker_dash_karpenter__provisioners_dot_yaml=PROVISIONERS,
        cluster__node_dash_pools__worker_dash_karpenter__userdata_dot_yaml=USERDATA,
    )


def _paths(tree: ConfigTree) -> ConfigTree:
    """tree_with's key spelling has no '-': fix the folder name."""
    files = {path.replace("_dash_", "-"): data for path, data in tree.files.items()}
    return ConfigTree(version=tree.version, files=files, source=tree.source)


def with_karpenter(cluster: Cluster, *pools: NodePool, enabled: str = "true") -> Cluster:
    items = {**cluster.config_items, "karpenter_pools_enabled": enabled}
    return dataclasses.replace(cluster, config_items=items, node_pools=[*cluster.node_pools, *pools])


def test_karpenter_pool_renders_provisioners_not_a_stack(karpenter_tree, example_clusters):
    cluster = with_karpenter(example_clusters[0], KARPENTER, dataclasses.replace(KARPENTER, name="kp2"))
    custom = dataclasses.replace(cluster.node_pools[-1], instance_types=["m6i.large", "m5.large"])
    cluster = dataclasses.replace(cluster, node_pools=[*cluster.node_pools[:-1], custom])
    rendered = Renderer(_paths(karpenter_tree)).render(cluster, {"availability_zones": ["eu-central-1a"]})
    assert "kp" not in rendered.node_pool_stacks and "kp2" not in rendered.node_pool_stacks
    assert sorted(rendered.node_pool_stacks) == sorted(p.name for p in cluster.asg_pools)
    kp = rendered.node_pool_manifests["kp"]
    assert [(m.kind, m.name, m.file) for m in kp] == [
        ("EC2NodeClass", "kp", "cluster/node-pools/worker-karpenter/provisioners.yaml"),
        ("NodePool", "kp", "cluster/node-pools/worker-karpenter/provisioners.yaml"),
    ]
    node_class, node_pool = (m.body for m in kp)
    # values.UserData is the profile's userdata.yaml rendered for the pool, as plain text.
    assert node_class["spec"]["userData"].startswith("#cloud-config\nwrite_files: [{path: /etc/pool, content: kp}]")
    assert node_class["spec"]["amiSelectorTerms"] == [{"id": rendered.cluster.config_items["worker_ami"]}]
    requirements = node_pool["spec"]["template"]["spec"]["requirements"]
    assert requirements == [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-central-1a"]}]
    kp2_requirements = rendered.node_pool_manifests["kp2"][1].body["spec"]["template"]["spec"]["requirements"]
    assert kp2_requirements[0]["values"] == ["m6i.large", "m5.large"]


def test_disabled_karpenter_renders_no_objects(karpenter_tree, example_clusters):
    rendered = Renderer(_paths(karpenter_tree)).render(with_karpenter(example_clusters[0], KARPENTER, enabled="false"))
    assert rendered.node_pool_manifests == {"kp": []}
    assert "kp" not in rendered.node_pool_stacks


def test_missing_provisioners_names_the_file(example_tree, example_clusters):
    with pytest.raises(RenderError) as info:
        Renderer(example_tree).render(with_karpenter(example_clusters[0], KARPENTER))
    message = str(info.value)
    assert "cluster/node-pools/worker-karpenter/provisioners.yaml is not in" in message
    assert "'kp'" in message and example_clusters[0].id in message


def test_invalid_provisioners_names_file_and_line(karpenter_tree, example_clusters):
    broken = tree_with(
        karpenter_tree, cluster__node_dash_pools__worker_dash_karpenter__provisioners_dot_yaml="a: 1\nkind: [\n"
    )
    with pytest.raises(RenderError) as info:
        Renderer(_paths(broken)).render(with_karpenter(example_clusters[0], KARPENTER))
    assert info.value.file == "cluster/node-pools/worker-karpenter/provisioners.yaml"
    assert info.value.line is not None


def test_stored_rendering_and_artefacts_keep_the_pool_objects(karpenter_tree, example_clusters):
    rendered = Renderer(_paths(karpenter_tree)).render(with_karpenter(example_clusters[0], KARPENTER))
    again = stored.loads(stored.dumps(rendered))
    assert again.node_pool_manifests == rendered.node_pool_manifests
    files = rendered_files(rendered)
    assert "node-pools/kp/001-ec2nodeclass-kp.yaml" in files and "node-pools/kp/002-nodepool-kp.yaml" in files
    assert "node-pools/kp.yaml" not in files
    assert json.loads(files["summary.json"])["karpenter_pools"] == ["kp"]


def test_a_rendering_stored_before_karpenter_support_loads(karpenter_tree, example_clusters):
    document = json.loads(stored.dumps(Renderer(_paths(karpenter_tree)).render(example_clusters[0])))
    del document["node_pool_manifests"]
    assert stored.loads(json.dumps(document)).node_pool_manifests == {}


def test_workflow_stack_stages_leave_karpenter_pools_out(karpenter_tree, example_clusters, stacks_aws):
    s3 = stacks_aws.client("s3")
    s3.create_bucket(Bucket="renderings", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    result = render_to_s3(s3, "renderings", _paths(karpenter_tree), with_karpenter(example_clusters[0], KARPENTER))
    pools = [entry["node_pool"] for stage in result["stack_stages"] for entry in stage["stacks"]]
    assert "kp" not in pools and "default-worker" in pools


def test_stacks_plan_and_removal_have_no_stack_for_karpenter_pools(karpenter_tree, example_clusters, stacks_aws):
    clients = Clients(stacks_aws, "eu-central-1")
    cluster = with_karpenter(example_clusters[0], KARPENTER)
    rendered = Renderer(_paths(karpenter_tree)).render(cluster)
    plan = plan_stacks(rendered, clients["cloudformation"], clients["autoscaling"], clients["ec2"])
    [karpenter] = [pool for pool in plan.pools if pool.node_pool == "kp"]
    assert (karpenter.karpenter, karpenter.stack_name, karpenter.instances) == (True, "", [])  # Karpenter's instances
    assert "kp" not in [stack.node_pool for stack in plan.stacks]
    assert removed_node_pools(clients["cloudformation"], cluster) == []


def test_a_pool_moved_to_karpenter_leaves_its_stack_for_removal(karpenter_tree, example_clusters, stacks_aws):
    """As CLM's AWSNodePoolProvisioner.Reconcile: stacks of pools not in ASGBackedPools are orphans."""
    clients = Clients(stacks_aws, "eu-central-1")
    cfn = clients["cloudformation"]
    on_asg = with_karpenter(example_clusters[0], dataclasses.replace(KARPENTER, profile="worker-default", max_size=1))
    on_asg = dataclasses.replace(
        on_asg,
        node_pools=[dataclasses.replace(p, instance_types=p.instance_types or ["m5.large"]) for p in on_asg.node_pools],
    )
    start(cfn, clients["s3"], node_pool_stack_spec(Renderer(_paths(karpenter_tree)).render(on_asg), "kp"))
    assert removed_node_pools(cfn, on_asg) == []
    moved = with_karpenter(example_clusters[0], KARPENTER)
    assert [gone.node_pool for gone in removed_node_pools(cfn, moved)] == ["kp"]


@pytest.mark.parametrize("enabled, objects", [("true", 2), ("false", 0), ("True", 0)])
def test_the_karpenter_apply_phase_whatever_karpenter_pools_enabled_says(
    karpenter_tree, example_clusters, stacks_aws, enabled, objects
):
    """CLM applies and reconciles Karpenter pools at every run (provisioner/clusterpy.go provision; the gate went in
    66f2c05): the item is only a template input, here the one Zalando's provisioners.yaml wraps itself in. A pool
    that renders nothing is named in the rendering's warnings, never skipped silently."""
    s3 = stacks_aws.client("s3")
    s3.create_bucket(Bucket="renderings", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    cluster = with_karpenter(example_clusters[0], KARPENTER, enabled=enabled)
    result = render_to_s3(s3, "renderings", _paths(karpenter_tree), cluster)
    assert result["apply_phases"] == list(APPLY_PHASES) and APPLY_PHASES[-1] == KARPENTER_PHASE
    rendered = Renderer(_paths(karpenter_tree)).render(cluster, {"availability_zones": ["eu-central-1a"]})
    assert len(rendered.node_pool_manifests[KARPENTER.name]) == objects
    empty = [w for w in rendered.warnings if "renders no objects" in w]
    assert empty == (
        []
        if objects
        else [
            f"Karpenter node pool {KARPENTER.name!r}: {PROVISIONERS_FILE} renders no objects, nothing is applied for it"
        ]
    )
