"""Declarative deletions (deletions.yaml): by name, selector or labels, optionally only owned or unowned.

NotFound is a no-op, and so is a kind the cluster does not serve (nothing of it can exist, e.g.
once its CRD is gone); such kinds are listed in the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clm.kube.errors import DeletionError, KubeApiError
from clm.kube.selectors import selector_string

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.discovery import Resource
    from clm.render.deletions import Deletion

MAX_LISTED = 50


@dataclass
class DeletionReport:
    """What one list of deletions deleted."""

    dry_run: bool
    deleted: list[str] = field(default_factory=list)
    unknown_kinds: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A small JSON-able summary (at most MAX_LISTED names)."""
        return {
            "dry_run": self.dry_run,
            "count": len(self.deleted),
            "deleted": self.deleted[:MAX_LISTED],
            "unknown_kinds": self.unknown_kinds,
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


class _Deleter:
    def __init__(self, kube: KubeClient, dry_run: bool):
        self.kube = kube
        self.dry_run = dry_run
        self.report = DeletionReport(dry_run)

    def targets(self, resource: Resource, deletion: Deletion) -> list[str]:
        if deletion.name:
            return [deletion.name]
        selector = deletion.selector or selector_string(deletion.labels or {})
        listed = self.kube.request("GET", resource.path(deletion.namespace), query={"labelSelector": selector})
        return [
            item["metadata"]["name"] for item in listed.get("items") or [] if _owned_filter(deletion.has_owner, item)
        ]

    def delete(self, deletion: Deletion, where: str) -> None:
        resource = self.kube.discovery.resource_for_kind(deletion.kind)
        if resource is None:
            self.report.unknown_kinds.append(deletion.kind)
            return
        if resource.namespaced != bool(deletion.namespace):
            scope = "namespaced: give its namespace" if resource.namespaced else "cluster-scoped: leave namespace empty"
            raise DeletionError(f"{where}: {deletion.kind} is {scope}", self.kube.cluster_id)
        try:
            for name in self.targets(resource, deletion):
                self.delete_one(resource, deletion, name)
        except KubeApiError as exc:
            raise DeletionError(f"{where}: {deletion.kind}: {exc.message}", self.kube.cluster_id) from None

    def delete_one(self, resource: Resource, deletion: Deletion, name: str) -> None:
        try:
            self.kube.request(
                "DELETE", resource.path(deletion.namespace, name), body=_delete_options(deletion, self.dry_run)
            )
        except KubeApiError as exc:
            if exc.status == 404:
                return
            raise
        self.report.deleted.append(
            f"{deletion.kind} {deletion.namespace}/{name}" if deletion.namespace else f"{deletion.kind} {name}"
        )


def run_deletions(
    kube: KubeClient, deletions: Sequence[Deletion], *, phase: str = "deletions", dry_run: bool = False
) -> DeletionReport:
    """Delete what each entry names, in order; `phase` (pre_apply/post_apply) names entries in errors.

    Raises DeletionError naming `deletions.yaml <phase>[i]` when the server refuses a deletion or
    the namespace does not fit the kind's scope.
    """
    deleter = _Deleter(kube, dry_run)
    for index, deletion in enumerate(deletions):
        deleter.delete(deletion, f"deletions.yaml {phase}[{index}]")
    return deleter.report
