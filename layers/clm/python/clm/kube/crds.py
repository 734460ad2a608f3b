"""CustomResourceDefinitions: the kinds a CRD manifest defines, and whether one is established yet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clm.timestamps import parse_time, utc_now

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

CRD_KIND = "CustomResourceDefinition"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def is_crd(body: dict[str, Any]) -> bool:
    """Whether an object is a CustomResourceDefinition."""
    return body.get("kind") == CRD_KIND and str(body.get("apiVersion", "")).startswith("apiextensions.k8s.io/")


def crd_api_versions(body: dict[str, Any]) -> list[str]:
    """The `group/version`s a CRD serves (v1 `versions`, or the legacy single `version`)."""
    spec = body.get("spec") or {}
    group = spec.get("group", "")
    versions = [v["name"] for v in spec.get("versions") or [] if v.get("served", True) and v.get("name")]
    if not versions and spec.get("version"):
        versions = [spec["version"]]
    return [f"{group}/{version}" for version in versions]


def crd_kind(body: dict[str, Any]) -> tuple[str, str]:
    """(group, kind) of the custom objects a CRD defines."""
    spec = body.get("spec") or {}
    return spec.get("group", ""), (spec.get("names") or {}).get("kind", "")


def _established(crd: dict[str, Any] | None) -> bool:
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def crd_status(kube: KubeClient, name: str) -> tuple[bool, float]:
    """(established, seconds since creation) of a CRD, from one GET; no waiting."""
    crd = kube.get(f"{CRD_PATH}/{name}")
    created = ((crd or {}).get("metadata") or {}).get("creationTimestamp")
    age = (utc_now() - parse_time(created)).total_seconds() if created else 0.0
    return _established(crd), age
