"""Every object the translated corpus renders for the two sample clusters (tests/corpus_samples.py), applied with
CLM's server-side apply (clm.kube.apply) in dry run (dryRun=All, field manager `clm`), object by object, on the
sandbox's real kube-apiserver 1.20.

Eligible: the object's group/version/kind is served by that server (discovery). The corpus's own Namespaces and
CustomResourceDefinitions are applied for real first (and removed after), so that objects in those namespaces and
the custom objects of those CRDs are eligible too, as in a real run (CLM applies them before the rest). What 1.20
does not serve (APIs of later releases, kinds of CRDs it refused) is counted, not applied. Every refusal is listed
(run with -s) and must be in REFUSALS_ALLOWED, with the server's words and why; the figures:
accepted / eligible per sample.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest

from clm.kube.apply import apply_manifests
from clm.kube.client import KubeClient
from clm.kube.crds import CRD_PATH, crd_api_versions, crd_status, is_crd
from clm.kube.errors import ApplyError
from clm.render.manifests import Manifest
from clm.render.renderer import RenderedCluster
from clm_sandbox.controlplane import ControlPlane, ensure_built
from tests.corpus_samples import migrated_files, samples_on_moto
from tests.unit.test_migrate_corpus import CORPUS

pytestmark = pytest.mark.integration

CRD_WAIT = 30.0  # seconds for the corpus's CRDs to be established and served
# Refusals of the 1.20 server, reviewed: object -> (what the server says, why it is not the renderer's or the
# translator's doing). The corpus is written for Kubernetes 1.31 (its images say v1.31) and, at its commit, for
# zalando-aws clusters only.
_EMPTY_DEFAULT = ('default: Invalid value: "null"', 'a CRD generated for newer Kubernetes: 1.20 refuses `default: ""`')
_CEL = ("x-kubernetes-validations: field not declared", "a CRD generated for newer Kubernetes: CEL rules (1.25+)")
_APISERVICE = (
    "Connection aborted",
    "the 1.20 server drops the connection on a server-side apply of an APIService (kubernetes/kubernetes#89264, "
    "fixed in 1.21); CLM applies APIServices with kubectl's client-side apply for this reason",
)
_NO_MASTER_POOL = (
    'maxAllowed: Invalid value: "null"',
    "Zalando's template fills maxAllowed from the pool named default-master; an EKS cluster has none, so maxAllowed "
    "is null (CLM renders the same: the corpus predates Zalando's EKS support)",
)
_PRESTOP_SLEEP = (
    "lifecycle.preStop.sleep: field not declared",
    "the sleep action of preStop hooks is Kubernetes 1.29+",
)
REFUSALS_ALLOWED: dict[str, tuple[str, str]] = {
    "CustomResourceDefinition stacks.zalando.org": _EMPTY_DEFAULT,
    "CustomResourceDefinition stacksets.zalando.org": _EMPTY_DEFAULT,
    "CustomResourceDefinition ec2nodeclasses.karpenter.k8s.aws": _CEL,
    "CustomResourceDefinition nodeclaims.karpenter.sh": _CEL,
    "CustomResourceDefinition nodepools.karpenter.sh": _CEL,
    "APIService v1beta1.custom.metrics.k8s.io": _APISERVICE,
    "APIService v1beta1.external.metrics.k8s.io": _APISERVICE,
    "APIService v1beta1.metrics.k8s.io": _APISERVICE,
    "StatefulSet kube-system/skipper-ingress-redis": _PRESTOP_SLEEP,
    "VerticalPodAutoscaler kube-system/kube-aws-iam-controller": _NO_MASTER_POOL,
    "VerticalPodAutoscaler kube-system/karpenter-vpa": _NO_MASTER_POOL,
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RenderedCluster]:
    if not CORPUS.is_dir():
        pytest.skip("the corpus (../shared/corpus/kubernetes-on-aws) is not here")
    with samples_on_moto(migrated_files(tmp_path_factory.mktemp("migrated"), CORPUS)) as samples:
        return samples.rendered


def objects_of(result: RenderedCluster) -> list[Manifest]:
    """Every object of a rendering: the components', then the Karpenter pools'."""
    return [m for c in result.components for m in c.manifests] + [
        m for objects in result.node_pool_manifests.values() for m in objects
    ]


def install(kube: KubeClient, manifest: Manifest) -> str:
    """Apply a cluster-scoped object for real with CLM's apply (clm.kube.apply); its path, to delete it after.
    ApplyError when refused."""
    apply_manifests(kube, [manifest])  # a CRD not established yet: `done` False, waited for below
    resource = kube.discovery.resource(manifest.body["apiVersion"], manifest.kind)
    assert resource is not None and not resource.namespaced
    return resource.path(name=manifest.name)


@pytest.fixture(scope="module")
def control_plane() -> Iterator[ControlPlane]:
    """A control plane of this module's own (`kube` builds on it): the corpus installs its CRDs and removes them, and
    on the process's shared one another test may have left a CRD of the same name (the Karpenter stand-in's)."""
    ensure_built()
    with ControlPlane() as cp:
        yield cp


@pytest.fixture
def installed(kube: KubeClient, rendered: dict[str, RenderedCluster]) -> Iterator[dict[str, str]]:
    """The corpus's Namespaces (those not there yet) and CRDs applied for real, the CRDs established; deleted after.
    Yields the CRDs the server refused: name -> its reason (their custom objects stay not served)."""
    objects = [m for result in rendered.values() for m in objects_of(result)]
    namespaces = {m.name: m for m in objects if m.kind == "Namespace" and m.body["apiVersion"] == "v1"}
    crds = {m.name: m for m in objects if is_crd(m.body)}
    created, refused = [], {}
    try:
        for name, manifest in namespaces.items():
            if kube.get(f"/api/v1/namespaces/{name}") is None:
                created.append(install(kube, manifest))
        for name, manifest in crds.items():
            assert kube.get(f"{CRD_PATH}/{name}") is None, f"CRD {name} exists already: not the corpus's to remove"
            try:
                created.append(install(kube, manifest))
            except ApplyError as exc:
                refused[name] = str(exc)
        deadline = time.monotonic() + CRD_WAIT
        while not all(crd_status(kube, name)[0] for name in crds if name not in refused):
            assert time.monotonic() < deadline, "the corpus's CRDs were not established in time"
            time.sleep(0.2)
        for manifest in crds.values():
            for api_version in crd_api_versions(manifest.body):
                kube.discovery.forget(api_version)
        yield refused
    finally:
        for path in reversed(created):
            kube.request("DELETE", path)


def test_dry_run_apply_accepts_every_object_the_server_serves(
    kube: KubeClient, rendered: dict[str, RenderedCluster], installed: dict[str, str]
) -> None:
    """accepted / eligible per sample; each refusal listed (-s) and held against REFUSALS_ALLOWED."""
    refusals: dict[str, dict[str, str]] = {}  # object -> provider -> the server's answer
    for provider, result in rendered.items():
        accepted, not_served = 0, Counter()
        objects = objects_of(result)
        for manifest in objects:
            api_version = manifest.body["apiVersion"]
            if kube.discovery.resource(api_version, manifest.kind) is None:
                not_served[f"{api_version} {manifest.kind}"] += 1
                continue
            try:
                report = apply_manifests(kube, [manifest], dry_run=True)  # CLM's apply, one object at a time
                accepted += report.count("created") + report.count("configured")
            except ApplyError as exc:
                name = f"{manifest.namespace}/{manifest.name}" if manifest.namespace else manifest.name
                refusals.setdefault(f"{manifest.kind} {name}", {})[provider] = str(exc)
        eligible = len(objects) - sum(not_served.values())
        print(f"{provider}: {accepted}/{eligible} accepted ({len(objects)} objects; not served: {dict(not_served)})")
    for name, answers in refusals.items():
        print(f"refused {name} ({', '.join(answers)}): {next(iter(answers.values()))[:240]}")
    assert sorted(refusals) == sorted(REFUSALS_ALLOWED)
    for name, answers in refusals.items():
        assert all(REFUSALS_ALLOWED[name][0] in answer for answer in answers.values()), name
    assert {f"CustomResourceDefinition {name}" for name in installed} <= set(refusals)
