"""Deletions naming `#`, `..` or `a/../b` on the v1.20.2 control plane (as a rendering stored before CLM refused
them at render would hold them; tests/unit/test_object_names.py): the name stays one segment of the object's path,
so nothing but the object named is ever deleted. Before, the client cut the path at `#` (DELETE on the collection:
every ConfigMap of the namespace; at `?` likewise) and resolved `..` (DELETE on the namespace)."""

from __future__ import annotations

import re

import pytest

from clm.kube.apply import apply_manifests
from clm.kube.client import KubeClient
from clm.kube.deletions import run_deletions
from clm.render.deletions import Deletion
from clm.render.manifests import split_manifests
from tests.integration.test_kube_deletions import configmap, names, ns  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("name", "refused"),
    [("#", None), ("?x", None), ("..", "'..' may not be a name"), ("x/../a", "'x/../a' may not contain '/'")],
    ids=["hash", "query", "dot-dot", "slash"],
)
def test_a_deletions_name_deletes_that_object_or_nothing(kube: KubeClient, ns: str, name: str, refused: str) -> None:  # noqa: F811
    apply_manifests(kube, split_manifests(configmap(ns, "a") + configmap(ns, "b"), "cms.yaml"))
    deletion = Deletion(kind="ConfigMap", namespace=ns, name=name)
    if refused:
        with pytest.raises(ValueError, match=re.escape(refused)):
            run_deletions(kube, [deletion])
    else:
        assert run_deletions(kube, [deletion]).deleted == []  # no such object
    assert "deletionTimestamp" not in kube.request("GET", f"/api/v1/namespaces/{ns}")["metadata"]
    assert {"a", "b"} <= names(kube, f"/api/v1/namespaces/{ns}/configmaps")
