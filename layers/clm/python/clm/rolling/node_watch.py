"""The Nodes a plan watches while successors boot: it wakes on the first one Ready and knows every Node as the watch
left it, so that it decides again without listing them (at 200 nodes, a list of ~1 MB) once more."""

from __future__ import annotations

from typing import Any

from clm.kube.waiting import WatchSpec
from clm.rolling.observe import instance_id_of, node_state

NODES = "/api/v1/nodes"


class ReadyWatch:
    """A watch of the Nodes that wakes when the Node of one of `instances` is (or turns) Ready."""

    def __init__(self, instances: set[str]) -> None:
        self.instances = instances
        self.latest: dict[str, tuple[str, dict[str, Any]]] = {}  # per Node, its last event until the wake
        self.version = ""  # the resourceVersion of the last event
        self.woken = False  # by a Ready Node (not by an error or the watch's end)

    def spec(self, version: str) -> WatchSpec:
        """The watch from a list at resourceVersion `version`."""
        return WatchSpec(NODES, version, self._ready)

    def _ready(self, kind: str, node: dict[str, Any]) -> bool:
        self.latest[node["metadata"]["name"]] = (kind, node)
        self.version = node["metadata"].get("resourceVersion", "")
        self.woken = kind in {"ADDED", "MODIFIED"} and instance_id_of(node) in self.instances and node_state(node).ready
        return self.woken

    def after(self, listed: dict[str, Any]) -> dict[str, Any] | None:
        """`listed` (the list the watch started from) as the events left it; None when the watch did not end on a
        Ready Node (an error, an expired version, its end: list again)."""
        if not self.woken:
            return None
        by_name = {node["metadata"]["name"]: node for node in listed.get("items", [])}
        for name, (kind, node) in self.latest.items():
            if kind == "DELETED":
                by_name.pop(name, None)
            else:
                by_name[name] = node
        return {
            **listed,
            "metadata": {**(listed.get("metadata") or {}), "resourceVersion": self.version},
            "items": list(by_name.values()),
        }
