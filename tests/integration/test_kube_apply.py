"""Server-side apply on the real v1.20.2 control plane: ordering, CRDs, re-apply, changes, errors, dry run."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from clm.kube.apply import FIELD_MANAGER, ApplyReport, apply_manifests
from clm.kube.client import KubeClient
from clm.kube.errors import ApplyError, UnknownKindError
from clm.render.manifests import Manifest, split_manifests

pytestmark = pytest.mark.integration

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True)
class Names:
    namespace: str
    group: str

    @property
    def crd(self) -> str:
        return f"widgets.{self.group}"


@pytest.fixture
def names(kube: KubeClient) -> Iterator[Names]:
    suffix = uuid.uuid4().hex[:8]
    result = Names(f"apply-{suffix}", f"t{suffix}.clm.example.org")
    yield result
    for path in (f"/api/v1/namespaces/{result.namespace}", f"{CRD_PATH}/{result.crd}"):
        if kube.get(path):
            kube.request("DELETE", path)


def render(names: Names, replicas: int = 1, colour: str = "blue") -> list[Manifest]:
    """The documents of two component files, custom objects and the Deployment before what they need."""
    app = f"""\
apiVersion: {names.group}/v1
kind: Widget
metadata:
  name: gizmo
  namespace: {names.namespace}
spec:
  colour: {colour}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {names.namespace}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: {names.namespace}
data:
  colour: {colour}
"""
    base = f"""\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {names.crd}
spec:
  group: {names.group}
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              colour: {{type: string}}
---
apiVersion: v1
kind: Namespace
metadata:
  name: {names.namespace}
"""
    return split_manifests(app, "manifests/app/app.yaml") + split_manifests(base, "manifests/base/base.yaml")


def state(kube: KubeClient, names: Names) -> dict[str, dict]:
    ns = names.namespace
    return {
        "deployment": kube.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/web"),
        "widget": kube.request("GET", f"/apis/{names.group}/v1/namespaces/{ns}/widgets/gizmo"),
        "configmap": kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/settings"),
    }


def apply_until_done(kube, manifests) -> tuple[list[ApplyReport], dict[str, str]]:
    """Apply as the workflow does: again after a short wait while the apply reports it waits for a CRD.
    Returns the reports and each object's first action."""
    reports: list[ApplyReport] = []
    for _ in range(120):
        reports.append(apply_manifests(kube, manifests))
        if reports[-1].done:
            break
        time.sleep(0.5)  # the workflow's Wait state
    first: dict[str, str] = {}
    for report in reports:
        for applied in report.objects:
            first.setdefault(applied.object, applied.action)
    return reports, first


def test_crd_custom_object_namespace_and_deployment_in_one_go_then_reapply_and_change(kube, names):
    reports, first_actions = apply_until_done(kube, render(names))
    report = reports[-1]
    assert report.done and all(not r.done for r in reports[:-1])
    assert all(
        r.waiting_for == f"CustomResourceDefinition {names.crd} to be established and served" for r in reports[:-1]
    )
    assert set(first_actions.values()) == {"created"}  # each object created once, then left as it is
    assert report.to_dict()["created"] + report.to_dict()["configured"] == 5
    assert [o.object for o in report.objects] == [
        f"Namespace {names.namespace}",
        f"CustomResourceDefinition {names.crd}",
        f"Widget {names.namespace}/gizmo",
        f"Deployment {names.namespace}/web",
        f"ConfigMap {names.namespace}/settings",
    ]
    first = state(kube, names)
    assert first["widget"]["spec"] == {"colour": "blue"}
    managers = {m["manager"] for m in first["configmap"]["metadata"]["managedFields"]}
    assert FIELD_MANAGER in managers

    again = apply_manifests(kube, render(names))
    assert again.done and again.to_dict()["created"] == 0 and again.to_dict()["configured"] == 5
    second = state(kube, names)
    assert second["deployment"]["metadata"]["generation"] == first["deployment"]["metadata"]["generation"]
    for name in ("widget", "configmap"):  # nothing else writes these: any change would be the re-apply's
        assert second[name]["metadata"]["resourceVersion"] == first[name]["metadata"]["resourceVersion"], name

    apply_manifests(kube, render(names, replicas=2, colour="red"))
    third = state(kube, names)
    assert third["deployment"]["spec"]["replicas"] == 2
    assert third["deployment"]["metadata"]["generation"] == first["deployment"]["metadata"]["generation"] + 1
    assert third["widget"]["spec"] == {"colour": "red"} and third["configmap"]["data"] == {"colour": "red"}


def test_unknown_kind_fails_naming_the_file_and_document(kube, names):
    manifests = render(names) + split_manifests(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: fine, namespace: {names.namespace}}}\n---\n"
        f"apiVersion: {names.group}/v1\nkind: Gadget\nmetadata: {{name: g, namespace: {names.namespace}}}\n",
        "manifests/extra/gadget.yaml",
    )
    with pytest.raises(UnknownKindError) as caught:
        apply_until_done(kube, manifests)
    assert str(caught.value) == (
        f"cluster sandbox: manifests/extra/gadget.yaml document 2 (line 5): the cluster "
        f"serves no resource of kind {names.group}/v1 Gadget"
    )
    assert caught.value.asl_name == "UnknownKindError"


def test_refused_object_names_file_document_and_object(kube, names):
    apply_until_done(kube, render(names))
    bad = split_manifests(
        f"apiVersion: v1\nkind: Service\nmetadata: {{name: broken, namespace: {names.namespace}}}\n"
        "spec:\n  ports: [{port: 99999, protocol: TCP}]\n",
        "manifests/app/service.yaml",
    )
    with pytest.raises(
        ApplyError,
        match=rf"manifests/app/service.yaml document 1 \(line 1\): Service "
        rf"{names.namespace}/broken: 422 .*port",
    ):
        apply_manifests(kube, bad)
    scoped = split_manifests(
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: x, namespace: {names.namespace}}}\n",
        "manifests/app/ns.yaml",
    )
    with pytest.raises(ApplyError, match="Namespace is cluster-scoped but has a namespace"):
        apply_manifests(kube, scoped)


def test_dry_run_changes_nothing_and_skips_what_needs_objects_of_the_same_run(kube, names):
    report = apply_manifests(kube, render(names), dry_run=True)
    assert report.to_dict()["created"] == 2  # the Namespace and the CRD, as a dry run
    assert {s["object"]: s["reason"] for s in report.to_dict()["skipped"]} == {
        f"Widget {names.namespace}/gizmo": "its CustomResourceDefinition is created by this apply",
        f"Deployment {names.namespace}/web": f"its namespace {names.namespace} is created by this apply",
        f"ConfigMap {names.namespace}/settings": f"its namespace {names.namespace} is created by this apply",
    }
    assert kube.get(f"/api/v1/namespaces/{names.namespace}") is None
    assert kube.get(f"{CRD_PATH}/{names.crd}") is None

    apply_until_done(kube, render(names))
    before = state(kube, names)
    changed = apply_manifests(kube, render(names, replicas=3, colour="green"), dry_run=True)
    assert changed.to_dict() == {
        "done": True,
        "waiting_for": "",
        "dry_run": True,
        "created": 0,
        "configured": 5,
        "skipped_count": 0,
        "skipped": [],
    }
    assert state(kube, names)["deployment"]["spec"]["replicas"] == before["deployment"]["spec"]["replicas"]
    assert state(kube, names)["widget"]["spec"] == {"colour": "blue"}
