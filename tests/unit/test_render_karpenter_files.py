"""A Karpenter pool's bootstrap files and user data, as CLM's KarpenterNodePoolProvisioner makes them: files.yaml's
archive stored with the workers' key (for every Karpenter pool of the registry: CLM dropped the
`karpenter_pools_enabled` gate in 66f2c05), userdata.yaml naming it handed to
provisioners.yaml in plain text; the workflow renders again with the cluster stack's outputs before applying them."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from clm.config.tree import ConfigTree
from clm.render.inputs import RenderInputs
from clm.render.node_files import NodeFile
from clm.render.renderer import Renderer
from clm.workflow.render_step import render_to_s3
from tests.unit.test_render import tree_with
from tests.unit.test_render_karpenter import KARPENTER, PROVISIONERS, _paths, with_karpenter
from tests.unit.test_stacks_support import stacks_aws

__all__ = ["stacks_aws"]  # fixture

FILES = """files:
- path: /etc/kubernetes/.local-id
  data: {{ cluster.local_id | base64 }}
- path: /etc/kubernetes/ssl/worker-key.pem
  data: {{ "key" | base64 }}
  encrypted: true
"""
USERDATA = "#cloud-config\nwrite_files: [{path: /etc/files, content: '{{ values.S3GeneratedFilesPath }}'}]\n"
WORKER_KEY = "arn:aws:kms:eu-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


class RecordingStore:
    """A files store that records what it is asked to store (the key, the files, the KMS key it resolves)."""

    def __init__(self) -> None:
        self.stored: list[tuple[str, list[NodeFile], str]] = []

    def __call__(self, key: str, files: list[NodeFile], kms_key: Callable[[], str]) -> str:
        self.stored.append((key, files, kms_key()))
        return f"s3://node-files/{key}"


@pytest.fixture
def files_tree(example_tree: ConfigTree) -> ConfigTree:
    return _paths(
        tree_with(
            example_tree,
            cluster__node_dash_pools__worker_dash_karpenter__provisioners_dot_yaml=PROVISIONERS,
            cluster__node_dash_pools__worker_dash_karpenter__userdata_dot_yaml=USERDATA,
            cluster__node_dash_pools__worker_dash_karpenter__files_dot_yaml=FILES,
        )
    )


def test_karpenter_user_data_is_plain_text_naming_the_archive_stored_with_the_workers_key(files_tree, example_clusters):
    store = RecordingStore()
    cluster = with_karpenter(example_clusters[0], KARPENTER)
    outputs = {"ClusterStackOutputs": {"WorkerFilesEncryptionKey": WORKER_KEY}}
    rendered = Renderer(files_tree, RenderInputs(files_store=store)).render(cluster, outputs)

    [(key, files, kms_key)] = store.stored  # the example's auto scaling group pools have no files.yaml
    text = FILES.replace("{{ cluster.local_id | base64 }}", "a3ViZS0x").replace('{{ "key" | base64 }}', "a2V5")
    assert key == f"kube-1/worker/{hashlib.sha512(text.encode()).hexdigest()}.userdata"
    assert [(f.path, f.data, f.encrypted) for f in files] == [
        ("/etc/kubernetes/.local-id", b"kube-1", False),
        ("/etc/kubernetes/ssl/worker-key.pem", b"key", True),
    ]
    assert kms_key == WORKER_KEY
    node_class = rendered.node_pool_manifests["kp"][0].body
    assert (
        node_class["spec"]["userData"]
        == f"#cloud-config\nwrite_files: [{{path: /etc/files, content: 's3://node-files/{key}'}}]\n"
    )


def test_karpenter_files_are_stored_whatever_karpenter_pools_enabled_says(files_tree, example_clusters):
    """provisioner/node_pools.go generateNodePoolTemplate uploads the files before rendering provisioners.yaml, which
    here renders nothing (Zalando's wraps itself in the item)."""
    store = RecordingStore()
    cluster = with_karpenter(example_clusters[0], KARPENTER, enabled="false")
    outputs = {"ClusterStackOutputs": {"WorkerFilesEncryptionKey": WORKER_KEY}}
    rendered = Renderer(files_tree, RenderInputs(files_store=store)).render(cluster, outputs)
    assert [kms_key for _, _, kms_key in store.stored] == [WORKER_KEY] and rendered.node_pool_manifests == {"kp": []}


@pytest.mark.parametrize(
    "enabled, with_files, rerender",
    [("true", True, True), ("false", True, True), ("true", False, False)],
)
def test_the_workflow_renders_karpenter_pools_again_only_when_reading_the_cluster_stack(
    files_tree, example_tree, example_clusters, stacks_aws, enabled, with_files, rerender
):
    s3 = stacks_aws.client("s3")
    s3.create_bucket(Bucket="renderings", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    tree = files_tree
    if not with_files:  # provisioners.yaml alone (the user data from nothing the cluster stack makes)
        tree = _paths(
            tree_with(
                example_tree,
                cluster__node_dash_pools__worker_dash_karpenter__provisioners_dot_yaml=PROVISIONERS.replace(
                    "{{ values.UserData | indent(4, true) }}", "    none"
                ),
            )
        )
    result = render_to_s3(s3, "renderings", tree, with_karpenter(example_clusters[0], KARPENTER, enabled=enabled))
    assert result["render_karpenter_pools"] is rerender
    # the auto scaling group pools of the example read nothing of the cluster stack
    assert not any(stage.get("render_node_pools") for stage in result["stack_stages"])
