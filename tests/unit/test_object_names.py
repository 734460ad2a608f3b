"""A Kubernetes name or namespace is one segment of an API path: a registry value a template splices into an object's
metadata.name or namespace, or into a deletion's name or namespace (`..`, `a/../b`, `%2F`), is refused at render with
a RenderError naming cluster, file, line and field, before anything is stored or applied; what reaches a path anyway
(a rendering stored before) is refused there, and `#` or `?` are percent-encoded (the client resolves `..`, cuts a
path at `#`: a deletion named `#` deleted the whole collection, one named `..` the namespace;
tests/integration/test_kube_object_names.py)."""

from __future__ import annotations

import dataclasses

import pytest

from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.kube.discovery import Resource
from clm.model import Cluster
from clm.render.renderer import Renderer
from tests.unit.test_fuzz_render import CLUSTERS, TREE

KUBE_1 = CLUSTERS[0]
DELETIONS = b"""post_apply:
- kind: ConfigMap
  namespace: example
  name: "{{ cluster.config_items.retired }}"
"""
MANIFEST = b"""apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: "{{ cluster.alias }}"
"""


def tree(**files: bytes) -> ConfigTree:
    return ConfigTree(version="names", files={**TREE.files, **files}, source="names")


@pytest.mark.parametrize(
    ("cluster", "files", "file", "line", "message"),
    [
        (
            dataclasses.replace(KUBE_1, config_items={**KUBE_1.config_items, "retired": ".."}),
            {"cluster/manifests/deletions.yaml": DELETIONS},
            "cluster/manifests/deletions.yaml",
            2,
            "post_apply[0]: name '..' may not be a name",
        ),
        (
            dataclasses.replace(KUBE_1, config_items={**KUBE_1.config_items, "retired": "x/../../kube-system"}),
            {"cluster/manifests/deletions.yaml": DELETIONS},
            "cluster/manifests/deletions.yaml",
            2,
            "post_apply[0]: name 'x/../../kube-system' may not contain '/'",
        ),
        (
            dataclasses.replace(KUBE_1, alias="kube-system%2Fsecrets"),
            {"cluster/manifests/settings/config.yaml": MANIFEST},
            "cluster/manifests/settings/config.yaml",
            5,
            "document 1: ConfigMap: metadata.namespace 'kube-system%2Fsecrets' may not contain '%'",
        ),
    ],
    ids=["deletion-dot-dot", "deletion-slash", "manifest-namespace"],
)
def test_a_registry_value_naming_another_path_is_refused_at_render(
    cluster: Cluster, files: dict[str, bytes], file: str, line: int, message: str
) -> None:
    with pytest.raises(RenderError) as raised:
        Renderer(tree(**files)).render(cluster)
    assert (raised.value.cluster_id, raised.value.file, raised.value.line) == (cluster.id, file, line)
    assert raised.value.message == message


def test_names_kubernetes_accepts_render_and_are_one_segment_of_their_path() -> None:
    cluster = dataclasses.replace(KUBE_1, alias="example", config_items={**KUBE_1.config_items, "retired": "a#b?c"})
    rendered = Renderer(tree(**{"cluster/manifests/deletions.yaml": DELETIONS})).render(cluster)
    [deletion] = rendered.deletions.post_apply
    configmaps = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
    assert configmaps.path(deletion.namespace, deletion.name) == "/api/v1/namespaces/example/configmaps/a%23b%3Fc"
    roles = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False)
    assert roles.path("", "system:aggregate-to-admin").endswith("/clusterroles/system:aggregate-to-admin")


@pytest.mark.parametrize(("namespace", "name"), [("example", ".."), ("example", "a/b"), ("..", "x"), ("a%2Fb", "x")])
def test_a_name_that_is_no_path_segment_never_reaches_a_path(namespace: str, name: str) -> None:
    configmaps = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
    with pytest.raises(ValueError, match=r"object name or namespace '.*' may not"):
        configmaps.path(namespace, name)
