"""The render step: render once, store in S3, load back by key."""

from __future__ import annotations

import dataclasses

import boto3
import pytest

from clm.errors import RenderError, ValidationError
from clm.render.renderer import Renderer
from clm.workflow.render_step import load_rendering, render_to_s3, rendering_key, stack_stages


def test_rendering_is_stored_and_loaded_by_key(aws: boto3.Session, example_tree, example_clusters) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="artefacts", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    cluster = example_clusters[0]
    result = render_to_s3(s3, "artefacts", example_tree, cluster)
    expected = Renderer(example_tree).render(cluster)
    assert result["rendering"] == rendering_key(cluster.id, expected.version)
    assert result["version"] == expected.version
    assert result["node_pools"] == ["default-worker"]
    assert load_rendering(s3, "artefacts", result["rendering"]) == expected
    assert len(str(result)) < 1024  # a small payload: no templates, no manifests


def test_broken_template_fails_before_anything_is_stored(aws: boto3.Session, example_tree, example_clusters) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="artefacts", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    files = dict(example_tree.files)
    files["cluster/stack.yaml"] = b"Resources: {{ cluster.nope }}\n"
    broken = type(example_tree)(example_tree.version, files, example_tree.source)
    with pytest.raises(RenderError, match=r"cluster/stack.yaml:1"):
        render_to_s3(s3, "artefacts", broken, example_clusters[0])
    assert s3.list_objects_v2(Bucket="artefacts")["KeyCount"] == 0


def test_an_unknown_update_strategy_from_the_defaults_fails_before_anything_is_stored(
    aws: boto3.Session, example_tree, example_clusters
) -> None:
    """config-defaults.yaml may set update_strategy for every cluster of a channel: refused at render, before any
    stack or node is touched, naming the cluster."""
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="artefacts", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    files = dict(example_tree.files)
    files["cluster/config-defaults.yaml"] += b'\nupdate_strategy: "clc-v2"\n'
    changed = type(example_tree)(example_tree.version, files, example_tree.source)
    cluster = example_clusters[0]
    with pytest.raises(ValidationError, match=f"cluster {cluster.id}: config_items.update_strategy: 'clc-v2'"):
        render_to_s3(s3, "artefacts", changed, cluster)
    assert s3.list_objects_v2(Bucket="artefacts")["KeyCount"] == 0


def test_stack_stages_are_clms_order_masters_then_the_api_server_then_workers(example_clusters) -> None:
    """provisioner/clusterpy.go provision: cluster stack; master pools (profile contains "master", api/node_pool.go)
    and waitForAPIServer; worker pools."""
    cluster = example_clusters[0]
    worker = cluster.node_pools[0]
    pools = [
        dataclasses.replace(worker, name="a-workers"),
        dataclasses.replace(worker, name="z-masters", profile="master-default"),
        dataclasses.replace(worker, name="b-workers"),
    ]
    stages = stack_stages(dataclasses.replace(cluster, node_pools=pools), ["a-workers", "b-workers", "z-masters"])
    assert stages == [
        {"stacks": [{"node_pool": ""}], "wait_for_api_server": False, "render_node_pools": False},
        {"stacks": [{"node_pool": "z-masters"}], "wait_for_api_server": True, "render_node_pools": False},
        {
            "stacks": [{"node_pool": "a-workers"}, {"node_pool": "b-workers"}],
            "wait_for_api_server": False,
            "render_node_pools": False,
        },
    ]
    assert [stage["wait_for_api_server"] for stage in stack_stages(cluster, [worker.name])] == [False, False]


def test_a_zalando_eks_clusters_pools_and_manifests_are_rendered_again_after_its_cluster_stack(
    aws: boto3.Session, example_tree, example_clusters
) -> None:
    """CLM's ZalandoEKSCreationHook (provisioner/zalando_eks.go) runs after the cluster stack and changes what the node
    pools and manifests see (the API URL, the items it writes): the workflow renders them again then."""
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="artefacts", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    aws_cluster = example_clusters[0]
    eks = dataclasses.replace(aws_cluster, provider="zalando-eks")
    plain, hooked = (render_to_s3(s3, "artefacts", example_tree, c) for c in (aws_cluster, eks))
    assert (plain["render_karpenter_pools"], hooked["render_karpenter_pools"]) == (False, True)
    assert [stage.get("render_node_pools") for stage in plain["stack_stages"]] == [False, False]
    assert [stage.get("render_node_pools") for stage in hooked["stack_stages"]] == [False, True]
