"""CustomResourceDefinitions: the kinds a CRD manifest defines, and waiting until one is established."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from clm.kube.errors import ApplyError

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


def wait_established(kube: KubeClient, name: str, timeout: float, where: str) -> None:
    """Poll a CRD until its Established condition is True; ApplyError naming `where` after `timeout` s."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while not _established(kube.get(f"{CRD_PATH}/{name}")):
        if time.monotonic() >= deadline:
            raise ApplyError(
                f"{where}: CustomResourceDefinition {name} not established after {timeout:g} s", kube.cluster_id
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
