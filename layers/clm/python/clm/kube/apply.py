"""Server-side apply of rendered manifests (field manager `clm`): Namespaces, then CRDs, then the rest.

Nothing here waits: when a CRD just applied is not established yet (or discovery does not serve its kind
yet), the apply stops there and reports what it is waiting for (`done` False); the workflow waits in a
Wait state and applies again, which changes nothing that is already applied. A dry run (`dryRun=All`, for
`clm plan`) changes nothing; objects that need a Namespace or CRD the same run would create are reported as
skipped instead of failing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clm.kube.client import APPLY_PATCH
from clm.kube.crds import crd_api_versions, crd_kind, crd_status, is_crd
from clm.kube.errors import ApplyError, KubeApiError, UnknownKindError
from clm.sealed import sealed_scrubber

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.discovery import Resource
    from clm.render.manifests import Manifest

FIELD_MANAGER = "clm"
CRD_TIMEOUT = 60.0  # seconds from a CRD's creation until it must be established and served
MAX_LISTED = 50


@dataclass(frozen=True)
class AppliedObject:
    """What happened to one object: `created`, `configured` (changed or not) or `skipped` (dry run)."""

    file: str
    index: int
    object: str
    action: str
    reason: str = ""


@dataclass
class ApplyReport:
    """The outcome of one apply, object by object."""

    dry_run: bool
    objects: list[AppliedObject] = field(default_factory=list)
    waiting_for: str = ""  # what stopped this apply early (a CRD not established or served yet)

    @property
    def done(self) -> bool:
        """Everything was applied; otherwise apply again after a short wait."""
        return not self.waiting_for

    def count(self, action: str) -> int:
        """How many objects had `action`."""
        return sum(1 for o in self.objects if o.action == action)

    def to_dict(self) -> dict[str, Any]:
        """A small JSON-able summary: counts, and (at most MAX_LISTED) skipped objects with their reason."""
        skipped = [o for o in self.objects if o.action == "skipped"]
        return {
            "done": self.done,
            "waiting_for": self.waiting_for,
            "dry_run": self.dry_run,
            "created": self.count("created"),
            "configured": self.count("configured"),
            "skipped_count": len(skipped),
            "skipped": [{"object": o.object, "file": o.file, "reason": o.reason} for o in skipped[:MAX_LISTED]],
        }


def _rank(manifest: Manifest) -> int:
    if manifest.kind == "Namespace" and manifest.body.get("apiVersion") == "v1":
        return 0
    return 1 if is_crd(manifest.body) else 2


def order_manifests(manifests: Sequence[Manifest]) -> list[Manifest]:
    """Namespaces, then CRDs, then everything else; the given order is kept within each."""
    return sorted(manifests, key=_rank)


def _where(manifest: Manifest) -> str:
    return f"{manifest.file} document {manifest.index} (line {manifest.line})"


def _object_name(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


class _Pending(Exception):
    """A CRD this apply needs is not established or served yet."""


class _Applier:
    def __init__(self, kube: KubeClient, dry_run: bool, crd_timeout: float):
        self.kube = kube
        self.dry_run = dry_run
        self.crd_timeout = crd_timeout
        self.report = ApplyReport(dry_run)
        self.pending_kinds: set[tuple[str, str]] = set()  # dry run: defined by CRDs not installed yet
        self.pending_namespaces: set[str] = set()  # dry run: Namespaces not created yet

    def resource(self, manifest: Manifest) -> Resource | None:
        api_version, kind = manifest.body["apiVersion"], manifest.kind
        discovery = self.kube.discovery
        found = discovery.resource(api_version, kind)
        if found is None and not (self.dry_run and (api_version.rpartition("/")[0], kind) in self.pending_kinds):
            raise UnknownKindError(kind, api_version, _where(manifest), self.kube.cluster_id)
        return found

    def skip(self, manifest: Manifest, reason: str) -> None:
        name = _object_name(manifest.kind, manifest.namespace, manifest.name)
        self.report.objects.append(AppliedObject(manifest.file, manifest.index, name, "skipped", reason))

    def apply(self, manifest: Manifest) -> None:
        resource = self.resource(manifest)
        if resource is None:
            self.skip(manifest, "its CustomResourceDefinition is created by this apply")
            return
        body = manifest.body
        namespace = manifest.namespace
        name = _object_name(manifest.kind, namespace, manifest.name)
        if not resource.namespaced and namespace:
            shown = sealed_scrubber(manifest.body, manifest.sealed)
            raise ApplyError(
                f"{_where(manifest)}: {shown(name)}: {manifest.kind} is cluster-scoped but has a namespace",
                self.kube.cluster_id,
            )
        if resource.namespaced and not namespace:
            namespace = "default"
            body = {**body, "metadata": {**body["metadata"], "namespace": namespace}}
            name = _object_name(manifest.kind, namespace, manifest.name)
        if self.dry_run and namespace in self.pending_namespaces:
            self.skip(manifest, f"its namespace {namespace} is created by this apply")
            return
        query = {"fieldManager": FIELD_MANAGER, "force": True, "dryRun": "All" if self.dry_run else None}
        try:
            status, _ = self.kube.exchange(
                "PATCH", resource.path(namespace, manifest.name), query=query, body=body, content_type=APPLY_PATCH
            )
        except KubeApiError as exc:  # the server's message may echo the object's fields: its sealed ones are scrubbed
            shown = sealed_scrubber(manifest.body, manifest.sealed)
            message = f"{_where(manifest)}: {shown(name)}: {exc.status or 'no response'} {shown(exc.reason)}"
            raise ApplyError(message, self.kube.cluster_id, transient=exc.transient) from None  # applying is idempotent
        self.report.objects.append(
            AppliedObject(manifest.file, manifest.index, name, "created" if status == 201 else "configured")
        )
        self.after(manifest, created=status == 201)

    def after(self, manifest: Manifest, created: bool) -> None:
        if self.dry_run and created and manifest.kind == "Namespace":
            self.pending_namespaces.add(manifest.name)
        if not is_crd(manifest.body):
            return
        if self.dry_run:
            if created:
                self.pending_kinds.add(crd_kind(manifest.body))
            return
        established, age = crd_status(self.kube, manifest.name)
        kind = crd_kind(manifest.body)[1]
        versions = crd_api_versions(manifest.body)
        for api_version in versions:
            self.kube.discovery.forget(api_version)
        # Discovery may trail the CRD's Established condition by a moment: both must hold before its objects.
        if established and all(self.kube.discovery.resource(v, kind) for v in versions):
            return
        if age > self.crd_timeout:
            raise ApplyError(
                f"{_where(manifest)}: CustomResourceDefinition {manifest.name} not established and served "
                f"{self.crd_timeout:g} s after its creation",
                self.kube.cluster_id,
            )
        raise _Pending(f"CustomResourceDefinition {manifest.name} to be established and served")


def apply_manifests(
    kube: KubeClient, manifests: Sequence[Manifest], *, dry_run: bool = False, crd_timeout: float = CRD_TIMEOUT
) -> ApplyReport:
    """Server-side apply every manifest in order (see `order_manifests`) without waiting; stop at the first failure,
    or early (report not `done`) at a CRD that is not established or served yet: apply again after a moment.

    Raises UnknownKindError (kind not served) or ApplyError (the server refused an object, or a CRD is not
    established `crd_timeout` seconds after its creation), naming the file, document and object.
    """
    applier = _Applier(kube, dry_run, crd_timeout)
    try:
        for manifest in order_manifests(manifests):
            applier.apply(manifest)
    except _Pending as pending:
        applier.report.waiting_for = str(pending)
    return applier.report
