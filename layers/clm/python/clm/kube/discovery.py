"""What the API server serves: kinds (as kubectl names them) to resource paths, and the policy API version to use.

Group versions are asked lazily, one request each, and cached for the life of the client; a CRD
applied meanwhile is found after `forget`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clm.kube.errors import KubeApiError

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

CORE_VERSION = "v1"


@dataclass(frozen=True)
class Resource:
    """A served resource: `name` is the plural used in paths."""

    group: str
    version: str
    name: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """`group/version`, or `v1` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str = "", name: str = "") -> str:
        """The collection path (all namespaces when `namespace` is ""), or an object's path with `name`."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{prefix}{scope}/{self.name}" + (f"/{name}" if name else "")


def _group_version_path(api_version: str) -> str:
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"


class Discovery:
    """Lazy, cached discovery for one client."""

    def __init__(self, client: KubeClient):
        self._client = client
        self._resources: dict[str, list[dict[str, Any]] | None] = {}
        self._groups: list[dict[str, Any]] | None = None

    def forget(self, api_version: str | None = None) -> None:
        """Drop what is cached about `api_version` (or everything), e.g. after applying a CRD."""
        if api_version is None:
            self._resources.clear()
        else:
            self._resources.pop(api_version, None)
        self._groups = None

    def _resource_list(self, api_version: str) -> list[dict[str, Any]] | None:
        """The APIResourceList entries of a group version; None when it is not served."""
        if api_version not in self._resources:
            try:
                body = self._client.request("GET", _group_version_path(api_version))
            except KubeApiError as exc:
                if exc.status not in (404, 503):  # 503: an aggregated API that is down
                    raise
                body = None
            self._resources[api_version] = None if body is None else body.get("resources") or []
        return self._resources[api_version]

    def groups(self) -> list[dict[str, Any]]:
        """The APIGroupList's groups, in the server's priority order."""
        if self._groups is None:
            self._groups = self._client.request("GET", "/apis").get("groups") or []
        return self._groups

    def served_versions(self, group: str) -> list[str]:
        """The versions the server offers for an API group (["v1"] for the core group)."""
        if not group:
            return [CORE_VERSION]
        for entry in self.groups():
            if entry.get("name") == group:
                return [v["version"] for v in entry.get("versions") or []]
        return []

    def resource(self, api_version: str, kind: str) -> Resource | None:
        """The resource for an object's apiVersion and kind; None when the server does not serve it."""
        group, _, version = api_version.rpartition("/")
        for entry in self._resource_list(api_version) or []:
            if entry.get("kind") == kind and "/" not in entry.get("name", "/"):
                return Resource(group, version, entry["name"], kind, bool(entry.get("namespaced")))
        return None

    def resolve_kind(self, text: str) -> Resource | None:
        """The resource a kind names as kubectl and CLM resolve it: kind, singular, plural or short name in any case,
        optionally qualified `kind.group` or `resource.version.group`; None when the server serves no such resource.

        Searched like kubectl's priority mapper: the core group, then each group's preferred version in the server's
        order, then their other versions; each group version is asked once, only when needed.
        """
        name = text.lower()
        readings = []
        if name.count(".") >= 2:
            resource, version, group = name.split(".", 2)
            readings.append((resource, group, version))
        resource, _, group = name.partition(".")
        readings.append((resource, group or None, None))
        for resource, group, version in readings:
            for api_version in self._candidates(group, version):
                found = self._named(api_version, resource)
                if found:
                    return found
        return None

    def _candidates(self, group: str | None, version: str | None) -> Iterator[str]:
        """Group versions to search, in priority order; `group` None means every group."""
        if version is not None:
            yield f"{group}/{version}"
            return
        if group is None:
            yield CORE_VERSION
        groups = [g for g in self.groups() if group is None or g.get("name") == group]
        preferred = [g["preferredVersion"]["groupVersion"] for g in groups if g.get("preferredVersion")]
        yield from preferred
        yield from (
            v["groupVersion"] for g in groups for v in g.get("versions") or [] if v["groupVersion"] not in preferred
        )

    def _named(self, api_version: str, resource: str) -> Resource | None:
        group, _, version = api_version.rpartition("/")
        for entry in self._resource_list(api_version) or []:
            names = {entry.get("name"), entry.get("singularName"), str(entry.get("kind", "")).lower()}
            if "/" not in entry.get("name", "/") and resource in names | set(entry.get("shortNames") or []):
                return Resource(group, version, entry["name"], entry["kind"], bool(entry.get("namespaced")))
        return None

    def eviction_api_version(self) -> str:
        """The Eviction API version the pods/eviction subresource takes, found as kubectl finds it."""
        for entry in self._resource_list(CORE_VERSION) or []:
            if entry.get("name") == "pods/eviction" and entry.get("group") and entry.get("version"):
                return f"{entry['group']}/{entry['version']}"
        return "policy/v1beta1"

    def pdb_resource(self) -> Resource:
        """PodDisruptionBudgets through policy/v1 where served, else policy/v1beta1."""
        version = "v1" if "v1" in self.served_versions("policy") else "v1beta1"
        return Resource("policy", version, "poddisruptionbudgets", "PodDisruptionBudget", True)
