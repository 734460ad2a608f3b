"""Declarative deletions (deletions.yaml): by name, selector or labels, optionally only owned or unowned.

As Zalando CLM (pkg/kubernetes/kubernetes.go DeleteResource): kinds resolve through discovery as kubectl
resolves them; a namespaced kind without a namespace, selected by labels or selector, is searched in every
namespace; NotFound is a no-op; a Namespace gets CLM's deletion-protection override annotations first.
Where CLM fails or silently skips, CLM here goes on and warns in the report: a kind the cluster does not
serve (nothing of it can exist, e.g. once its CRD is gone), a namespace given to a cluster-scoped kind.
A namespaced kind by name without a namespace is an error naming the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from clm.kube.client import MERGE_PATCH
from clm.kube.errors import DeletionError, KubeApiError
from clm.kube.selectors import selector_string

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.discovery import Resource
    from clm.render.deletions import Deletion

MAX_LISTED = 50
DELETE_DATE = "zalando.org/delete-date"
DELETE_NAMESPACE = "zalando.org/delete-namespace"


@dataclass
class DeletionReport:
    """What one list of deletions deleted, and what it could not act on (warnings name the entry)."""

    dry_run: bool
    deleted: list[str] = field(default_factory=list)
    unknown_kinds: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A small JSON-able summary (at most MAX_LISTED names)."""
        return {
            "dry_run": self.dry_run,
            "count": len(self.deleted),
            "deleted": self.deleted[:MAX_LISTED],
            "unknown_kinds": self.unknown_kinds,
            "warnings": self.warnings[:MAX_LISTED],
        }


def _delete_options(deletion: Deletion, dry_run: bool) -> dict[str, Any]:
    """The DeleteOptions body (the server reads dryRun from it, not from the query, when a body is sent)."""
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if dry_run:
        options["dryRun"] = ["All"]
    if deletion.propagation_policy:
        options["propagationPolicy"] = deletion.propagation_policy
    if deletion.grace_period_seconds is not None:
        options["gracePeriodSeconds"] = deletion.grace_period_seconds
    return options


def _owned_filter(has_owner: bool | None, item: dict[str, Any]) -> bool:
    return has_owner is None or bool(item.get("metadata", {}).get("ownerReferences")) == has_owner


def _is_namespace(resource: Resource) -> bool:
    return resource.group == "" and resource.name == "namespaces"


class _Deleter:
    def __init__(self, kube: KubeClient, dry_run: bool):
        self.kube = kube
        self.dry_run = dry_run
        self.report = DeletionReport(dry_run)

    def targets(self, resource: Resource, deletion: Deletion, namespace: str) -> list[tuple[str, str]]:
        """(namespace, name) of each object the entry names; every namespace when `namespace` is ""."""
        if deletion.name:
            return [(namespace, deletion.name)]
        selector = deletion.selector or selector_string(deletion.labels or {})
        listed = self.kube.request("GET", resource.path(namespace), query={"labelSelector": selector})
        return [
            (item["metadata"].get("namespace", ""), item["metadata"]["name"])
            for item in listed.get("items") or []
            if _owned_filter(deletion.has_owner, item)
        ]

    def delete(self, deletion: Deletion, where: str) -> None:
        resource = self.kube.discovery.resolve_kind(deletion.kind)
        if resource is None:
            self.report.unknown_kinds.append(deletion.kind)
            self.report.warnings.append(f"{where}: kind {deletion.kind!r} is not served by the cluster; skipped")
            return
        namespace = deletion.namespace if resource.namespaced else ""
        if deletion.namespace and not resource.namespaced:
            self.report.warnings.append(
                f"{where}: {resource.kind} is cluster-scoped: namespace {deletion.namespace!r} ignored"
            )
        if resource.namespaced and not namespace and deletion.name:
            raise DeletionError(
                f"{where}: {resource.kind} {deletion.name}: {resource.kind} is namespaced: give its namespace",
                self.kube.cluster_id,
            )
        try:
            for target in self.targets(resource, deletion, namespace):
                self.delete_one(resource, deletion, *target)
        except KubeApiError as exc:
            message = f"{where}: {deletion.kind}: {exc.message}"
            raise DeletionError(message, self.kube.cluster_id, transient=exc.transient) from None  # idempotent

    def delete_one(self, resource: Resource, deletion: Deletion, namespace: str, name: str) -> None:
        try:
            if _is_namespace(resource):
                self.override_protection(resource, name)
            self.kube.request("DELETE", resource.path(namespace, name), body=_delete_options(deletion, self.dry_run))
        except KubeApiError as exc:
            if exc.status == 404:
                return
            raise
        self.report.deleted.append(f"{resource.kind} {namespace}/{name}" if namespace else f"{resource.kind} {name}")

    def override_protection(self, resource: Resource, name: str) -> None:
        """CLM's annotations that let a protected namespace be deleted (today's date, and its own name)."""
        today = datetime.now(UTC).strftime("%Y-%m-%d")
        patch = {"metadata": {"annotations": {DELETE_DATE: today, DELETE_NAMESPACE: name}}}
        query = {"dryRun": "All"} if self.dry_run else None
        self.kube.request("PATCH", resource.path("", name), query=query, body=patch, content_type=MERGE_PATCH)


def run_deletions(
    kube: KubeClient, deletions: Sequence[Deletion], *, phase: str = "deletions", dry_run: bool = False
) -> DeletionReport:
    """Delete what each entry names, in order; `phase` (pre_apply/post_apply) names entries in errors and warnings.

    Raises DeletionError naming `deletions.yaml <phase>[i]` when the server refuses a deletion or a
    namespaced kind is named without its namespace.
    """
    deleter = _Deleter(kube, dry_run)
    for index, deletion in enumerate(deletions):
        deleter.delete(deletion, f"deletions.yaml {phase}[{index}]")
    return deleter.report
