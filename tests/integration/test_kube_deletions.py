"""Every deletions.yaml option against real objects on the v1.20.2 control plane."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from clm.kube.apply import apply_manifests
from clm.kube.client import MERGE_PATCH, KubeClient
from clm.kube.deletions import run_deletions
from clm.kube.errors import DeletionError
from clm.render.deletions import parse_deletions
from clm.render.manifests import split_manifests
from tests.integration.test_drain import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(kube: KubeClient) -> Iterator[str]:
    name = f"del-{uuid.uuid4().hex[:8]}"
    apply_manifests(kube, split_manifests(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n", "ns"))
    yield name
    for pod in kube.request("GET", f"/api/v1/namespaces/{name}/pods").get("items") or []:  # no kubelet finishes them
        kube.request(
            "DELETE", f"/api/v1/namespaces/{name}/pods/{pod['metadata']['name']}", body={"gracePeriodSeconds": 0}
        )
    kube.request("DELETE", f"/api/v1/namespaces/{name}")


def configmap(ns: str, name: str, labels: dict[str, str] | None = None, owner: dict[str, Any] | None = None) -> str:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
    return f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {meta}\n"


def names(kube: KubeClient, path: str) -> set[str]:
    return {item["metadata"]["name"] for item in kube.request("GET", path).get("items") or []}


def test_by_name_selector_and_labels_in_a_namespace(kube, ns):
    apply_manifests(
        kube,
        split_manifests(
            "".join(
                [
                    configmap(ns, "by-name"),
                    configmap(ns, "sel-a", {"app": "x", "tier": "web"}),
                    configmap(ns, "sel-b", {"app": "x", "tier": "db"}),
                    configmap(ns, "keep-sel", {"app": "y", "tier": "web"}),
                    configmap(ns, "lab-1", {"part-of": "retired", "team": "a"}),
                    configmap(ns, "lab-2", {"part-of": "retired"}),
                    configmap(ns, "keep-lab", {"part-of": "current"}),
                ]
            ),
            "cms.yaml",
        ),
    )
    deletions = parse_deletions(
        f"""
post_apply:
- {{kind: ConfigMap, namespace: {ns}, name: by-name}}
- {{kind: ConfigMap, namespace: {ns}, name: does-not-exist}}
- {{kind: ConfigMap, namespace: {ns}, selector: "app=x,tier!=db"}}
- {{kind: ConfigMap, namespace: {ns}, labels: {{part-of: retired}}}}
- {{kind: ConfigMap, namespace: {ns}, labels: {{part-of: nothing-has-this}}}}
- {{kind: Gizmo, namespace: {ns}, name: whatever}}
""",
        "manifests/deletions.yaml",
    )

    dry = run_deletions(kube, deletions.post_apply, phase="post_apply", dry_run=True)
    assert dry.to_dict()["count"] == 4
    assert {"by-name", "sel-a", "lab-1", "lab-2"} <= names(kube, f"/api/v1/namespaces/{ns}/configmaps")

    report = run_deletions(kube, deletions.post_apply, phase="post_apply")
    assert report.to_dict() == {
        "dry_run": False,
        "count": 4,
        "unknown_kinds": ["Gizmo"],
        "warnings": ["deletions.yaml post_apply[5]: kind 'Gizmo' is not served by the cluster; skipped"],
        "deleted": [
            f"ConfigMap {ns}/by-name",
            f"ConfigMap {ns}/sel-a",
            f"ConfigMap {ns}/lab-1",
            f"ConfigMap {ns}/lab-2",
        ],
    }
    left = names(kube, f"/api/v1/namespaces/{ns}/configmaps") - {"kube-root-ca.crt"}
    assert left == {"sel-b", "keep-sel", "keep-lab"}
    assert run_deletions(kube, deletions.post_apply).deleted == []  # again: everything is NotFound, a no-op


def test_has_owner_selects_owned_or_unowned_objects(kube, ns):
    apply_manifests(kube, split_manifests(configmap(ns, "owner"), "owner.yaml"))
    owner = kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/owner")
    apply_manifests(
        kube,
        split_manifests(
            configmap(ns, "owned", {"group": "g"}, owner) + configmap(ns, "free", {"group": "g"}), "cms.yaml"
        ),
    )
    unowned = parse_deletions(
        f"pre_apply: [{{kind: ConfigMap, namespace: {ns}, labels: {{group: g}}, has_owner: false}}]", "d.yaml"
    )
    assert run_deletions(kube, unowned.pre_apply).deleted == [f"ConfigMap {ns}/free"]
    owned = parse_deletions(
        f"pre_apply: [{{kind: ConfigMap, namespace: {ns}, selector: group=g, has_owner: true}}]", "d.yaml"
    )
    assert run_deletions(kube, owned.pre_apply).deleted == [f"ConfigMap {ns}/owned"]
    assert "owner" in names(kube, f"/api/v1/namespaces/{ns}/configmaps")


def deployment(ns: str, name: str) -> str:
    return f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {ns}, labels: {{app: {name}}}}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: c, image: registry.invalid/c:1}}]}}
"""


def test_propagation_policies(kube, ns):
    apply_manifests(
        kube,
        split_manifests(
            deployment(ns, "orphan") + deployment(ns, "background") + deployment(ns, "foreground"), "deployments.yaml"
        ),
    )
    replicasets = f"/apis/apps/v1/namespaces/{ns}/replicasets"

    def replicaset_of(app: str) -> list[dict]:
        return kube.request("GET", replicasets, query={"labelSelector": f"app={app}"}).get("items") or []

    for app in ("orphan", "background", "foreground"):
        wait_for(f"the ReplicaSet of {app}", lambda app=app: replicaset_of(app))
    deletions = parse_deletions(
        f"""
pre_apply:
- {{kind: Deployment, namespace: {ns}, name: orphan, propagation_policy: Orphan}}
- {{kind: Deployment, namespace: {ns}, name: background, propagation_policy: Background}}
- {{kind: Deployment, namespace: {ns}, name: foreground, propagation_policy: Foreground}}
""",
        "d.yaml",
    )
    run_deletions(kube, deletions.pre_apply, phase="pre_apply")
    foreground = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/foreground")
    assert foreground is None or "foregroundDeletion" in foreground["metadata"].get("finalizers", [])
    wait_for("the background ReplicaSet to be collected", lambda: not replicaset_of("background"))
    wait_for(
        "the foreground Deployment and its ReplicaSet to go",
        lambda: (
            not replicaset_of("foreground")
            and kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/foreground") is None
        ),
    )
    orphan = wait_for(
        "the orphan ReplicaSet to lose its owner",
        lambda: [rs for rs in replicaset_of("orphan") if not rs["metadata"].get("ownerReferences")],
    )
    assert len(orphan) == 1
    assert kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/orphan") is None


def test_grace_period_seconds(kube, ns):
    ghost = f"ghost-{ns}"  # bound to a node without a kubelet: a graceful deletion stays pending
    pods = "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}, labels: {{grace: "{name}"}}}}
spec: {{nodeName: {ghost}, containers: [{{name: c, image: registry.invalid/c:1}}]}}
"""
        for name in ("seven", "zero")
    )
    apply_manifests(kube, split_manifests(pods, "pods.yaml"))
    deletions = parse_deletions(
        f"""
post_apply:
- {{kind: Pod, namespace: {ns}, name: seven, grace_period_seconds: 7}}
- {{kind: Pod, namespace: {ns}, labels: {{grace: zero}}, grace_period_seconds: 0}}
""",
        "d.yaml",
    )
    run_deletions(kube, deletions.post_apply)
    seven = kube.request("GET", f"/api/v1/namespaces/{ns}/pods/seven")
    assert seven["metadata"]["deletionGracePeriodSeconds"] == 7
    assert kube.get(f"/api/v1/namespaces/{ns}/pods/zero") is None


def test_cluster_scoped_kinds_take_no_namespace(kube):
    tag = uuid.uuid4().hex[:8]
    roles = "".join(
        f"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: "
        f"{{name: clm-del-{tag}-{i}, labels: {{clm-test: '{tag}'}}}}\nrules: []\n"
        for i in range(3)
    )
    apply_manifests(kube, split_manifests(roles, "roles.yaml"))
    deletions = parse_deletions(
        f"""
pre_apply:
- {{kind: ClusterRole, name: clm-del-{tag}-0}}
- {{kind: ClusterRole, namespace: "", labels: {{clm-test: '{tag}'}}}}
""",
        "d.yaml",
    )
    report = run_deletions(kube, deletions.pre_apply)
    assert report.deleted == [
        f"ClusterRole clm-del-{tag}-0",
        f"ClusterRole clm-del-{tag}-1",
        f"ClusterRole clm-del-{tag}-2",
    ]
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    assert not kube.request("GET", path, query={"labelSelector": f"clm-test={tag}"})["items"]


def test_kinds_resolve_as_kubectl_resolves_them(kube, ns):
    spellings = ["deployment", "deployments", "deploy", "Deployment.apps", "DEPLOYMENTS.v1.apps", "Deployment"]
    apply_manifests(kube, split_manifests("".join(deployment(ns, f"d{i}") for i in range(len(spellings))), "d.yaml"))
    entries = "".join(f"- {{kind: {kind}, namespace: {ns}, name: d{i}}}\n" for i, kind in enumerate(spellings))
    report = run_deletions(
        kube, parse_deletions(f"post_apply:\n{entries}- {{kind: gizmo, name: x}}\n", "d.yaml").post_apply
    )
    assert report.deleted == [f"Deployment {ns}/d{i}" for i in range(len(spellings))]
    assert report.warnings == ["deletions.yaml deletions[6]: kind 'gizmo' is not served by the cluster; skipped"]
    assert not names(kube, f"/apis/apps/v1/namespaces/{ns}/deployments")
    # A kind served only in a group's non-preferred version (batch/v1beta1 in 1.20), and short names.
    assert kube.discovery.resolve_kind("cj").api_version == "batch/v1beta1"
    assert kube.discovery.resolve_kind("CronJob").name == "cronjobs"
    assert kube.discovery.resolve_kind("ns").kind == "Namespace"
    assert kube.discovery.resolve_kind("clusterrolebinding.rbac.authorization.k8s.io").namespaced is False


def test_a_cluster_scoped_kind_given_a_namespace_is_deleted_with_a_warning(kube, ns):
    apply_manifests(
        kube,
        split_manifests(
            f"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: {ns}}}\nrules: []\n",
            "role.yaml",
        ),
    )
    deletions = parse_deletions(f"pre_apply:\n- {{kind: ClusterRole, namespace: kube-system, name: {ns}}}\n", "d.yaml")
    report = run_deletions(kube, deletions.pre_apply, phase="pre_apply")
    assert report.deleted == [f"ClusterRole {ns}"]
    assert report.warnings == [
        "deletions.yaml pre_apply[0]: ClusterRole is cluster-scoped: namespace 'kube-system' ignored"
    ]
    assert kube.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{ns}") is None


def test_a_namespaced_kind_without_namespace_by_labels_searches_every_namespace(kube, ns):
    other = f"{ns}-b"
    apply_manifests(kube, split_manifests(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {other}}}\n", "ns"))
    try:
        marked = {"retire": ns}
        apply_manifests(
            kube,
            split_manifests(configmap(ns, "a", marked) + configmap(other, "b", marked) + configmap(other, "c"), "c"),
        )
        deletions = parse_deletions(f"post_apply:\n- {{kind: configmap, labels: {{retire: {ns}}}}}\n", "d.yaml")
        assert set(run_deletions(kube, deletions.post_apply).deleted) == {f"ConfigMap {ns}/a", f"ConfigMap {other}/b"}
        assert names(kube, f"/api/v1/namespaces/{other}/configmaps") - {"kube-root-ca.crt"} == {"c"}
    finally:
        kube.request("DELETE", f"/api/v1/namespaces/{other}")
    by_name = parse_deletions("post_apply:\n- {kind: ConfigMap, name: x}\n", "d.yaml")
    with pytest.raises(
        DeletionError,
        match=r"cluster sandbox: deletions.yaml post_apply\[0\]: ConfigMap x: ConfigMap is namespaced: give its",
    ):
        run_deletions(kube, by_name.post_apply, phase="post_apply")


def test_a_namespace_gets_clms_deletion_protection_override_first(kube, ns):
    held = {"name": "held", "namespace": ns, "finalizers": ["clm.test/hold"]}  # keeps the namespace Terminating
    kube.request("POST", f"/api/v1/namespaces/{ns}/configmaps", body={"metadata": held})
    try:
        report = run_deletions(kube, parse_deletions(f"pre_apply: [{{kind: Namespace, name: {ns}}}]", "d").pre_apply)
        assert report.deleted == [f"Namespace {ns}"]
        namespace = kube.request("GET", f"/api/v1/namespaces/{ns}")
        assert namespace["metadata"]["deletionTimestamp"]
        annotations = namespace["metadata"]["annotations"]
        assert annotations["zalando.org/delete-namespace"] == ns
        assert annotations["zalando.org/delete-date"] == datetime.now(UTC).strftime("%Y-%m-%d")
    finally:
        kube.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/configmaps/held",
            body={"metadata": {"finalizers": None}},
            content_type=MERGE_PATCH,
        )
