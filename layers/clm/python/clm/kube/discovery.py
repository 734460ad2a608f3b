"""What the API server serves: kinds (as kubectl names them) to resource paths, and the policy API version to use.

Group versions are asked lazily, one request each, and cached; a CRD applied meanwhile is found after `forget`.
A client kept by a warm container (clm.kube.connections) keeps its answers across uses for at most MAX_AGE, and
calls `revalidate` at each use: an answer cached before it serves what it found, but "not served" is asked again
first (a CRD another container applied meanwhile is found).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from clm.kube.errors import KubeApiError
from clm.object_names import path_segment

if TYPE_CHECKING:
    from clm.kube.client import KubeClient

CORE_VERSION = "v1"
MAX_AGE = 300.0  # seconds an answer is kept
T = TypeVar("T")


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
        """The collection path (all namespaces when `namespace` is ""), or an object's path with `name`; each
        one segment (clm.object_names: ValueError for `..`, `/`, `%`), so that no name reaches another path."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{path_segment(namespace)}" if self.namespaced and namespace else ""
        return f"{prefix}{scope}/{self.name}" + (f"/{path_segment(name)}" if name else "")


def _group_version_path(api_version: str) -> str:
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"


class Discovery:
    """Lazy, cached discovery for one client."""

    def __init__(self, client: KubeClient):
        self._client = client
        self._resources: dict[str, tuple[float, list[dict[str, Any]] | None]] = {}  # (asked at, entries)
        self._groups: tuple[float, list[dict[str, Any]]] | None = None
        self._trusted_since = float("-inf")  # answers asked before this are confirmed before saying "not served"

    def forget(self, api_version: str | None = None) -> None:
        """Drop what is cached about `api_version` (or everything), e.g. after applying a CRD."""
        if api_version is None:
            self._resources.clear()
        else:
            self._resources.pop(api_version, None)
        self._groups = None

    def revalidate(self) -> None:
        """A new use of a kept client: drop answers older than MAX_AGE; ask the others again before a miss."""
        self._trusted_since = now = time.monotonic()
        self._resources = {k: v for k, v in self._resources.items() if now - v[0] < MAX_AGE}
        if self._groups is not None and now - self._groups[0] >= MAX_AGE:
            self._groups = None

    def _confirmed(self, lookup: Callable[[], T]) -> T:
        """`lookup`'s answer; a miss based on answers from before the last `revalidate` is looked up again afresh."""
        found = lookup()
        if found:
            return found
        stale = [k for k, (at, _) in list(self._resources.items()) if at < self._trusted_since]  # other threads add
        if not stale and (self._groups is None or self._groups[0] >= self._trusted_since):
            return found
        for api_version in stale:
            self._resources.pop(api_version, None)
        self._groups = None
        return lookup()

    def _resource_list(self, api_version: str) -> list[dict[str, Any]] | None:
        """The APIResourceList entries of a group version; None when it is not served."""
        if api_version not in self._resources:
            try:
                body = self._client.request("GET", _group_version_path(api_version))
            except KubeApiError as exc:
                if exc.status not in (404, 503):  # 503: an aggregated API that is down
                    raise
                body = None
            self._resources[api_version] = (time.monotonic(), None if body is None else body.get("resources") or [])
        return self._resources[api_version][1]

    def groups(self) -> list[dict[str, Any]]:
        """The APIGroupList's groups, in the server's priority order."""
        if self._groups is None:
            self._groups = (time.monotonic(), self._client.request("GET", "/apis").get("groups") or [])
        return self._groups[1]

    def served_versions(self, group: str) -> list[str]:
        """The versions the server offers for an API group (["v1"] for the core group)."""
        if not group:
            return [CORE_VERSION]
        return self._confirmed(lambda: self._versions_of(group))

    def _versions_of(self, group: str) -> list[str]:
        for entry in self.groups():
            if entry.get("name") == group:
                return [v["version"] for v in entry.get("versions") or []]
        return []

    def resource(self, api_version: str, kind: str) -> Resource | None:
        """The resource for an object's apiVersion and kind; None when the server does not serve it."""
        return self._confirmed(lambda: self._resource_of(api_version, kind))

    def _resource_of(self, api_version: str, kind: str) -> Resource | None:
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
        return self._confirmed(lambda: self._resolved(text))

    def _resolved(self, text: str) -> Resource | None:
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
        return self._confirmed(self._eviction_version) or "policy/v1beta1"

    def _eviction_version(self) -> str:
        for entry in self._resource_list(CORE_VERSION) or []:
            if entry.get("name") == "pods/eviction" and entry.get("group") and entry.get("version"):
                return f"{entry['group']}/{entry['version']}"
        return ""

    def pdb_resource(self) -> Resource:
        """PodDisruptionBudgets through policy/v1 where served, else policy/v1beta1."""
        version = "v1" if "v1" in self.served_versions("policy") else "v1beta1"  # kept: v1beta1 works up to 1.24
        return Resource("policy", version, "poddisruptionbudgets", "PodDisruptionBudget", True)
