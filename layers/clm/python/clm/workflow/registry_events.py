"""Registry stream records -> `Cluster Changed` events, only for changes of a cluster's spec.

CLM's own writes (status, revision, lock) leave `spec` as it was, so they never start CLM again; nor do the two
spec changes CLM makes itself, as Zalando's CLM does: `lifecycle_status` requested -> ready after the first
successful run, and -> decommissioned after a decommission. A new cluster is a change; a removed item is not
(decommissioning is requested by a spec change: `lifecycle_status` decommission-requested).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from clm.errors import ClmError
from clm.workflow.bus import put_events

SOURCE = "clm.registry"
DETAIL_TYPE = "Cluster Changed"
_DESERIALIZER = TypeDeserializer()
LIFECYCLE = "lifecycle_status"
CLM_TRANSITIONS = {("requested", "ready"), ("creating", "ready"), ("decommission-requested", "decommissioned")}


class PublishError(ClmError):
    """EventBridge refused some events; raising makes Lambda retry the stream batch."""

    asl_name = "PublishError"


@dataclass(frozen=True)
class ClusterChange:
    """One cluster whose spec changed, and why (the `reason` of the provision run)."""

    cluster_id: str
    reason: str


def spec_changes(records: Iterable[Mapping[str, Any]]) -> list[ClusterChange]:
    """The clusters whose spec the stream records change, one per cluster (its last change), in record order."""
    changes: dict[str, ClusterChange] = {}
    for record in records:
        change = _change(record)
        if change is not None:
            changes.pop(change.cluster_id, None)
            changes[change.cluster_id] = change
    return list(changes.values())


def _change(record: Mapping[str, Any]) -> ClusterChange | None:
    event, images = record.get("eventName"), record.get("dynamodb") or {}
    if event not in ("INSERT", "MODIFY"):
        return None
    new = _spec(images.get("NewImage"))
    if new is None:
        return None
    cluster_id = _cluster_id(images)
    if event == "INSERT":
        return ClusterChange(cluster_id, "registry: cluster added")
    old = _spec(images.get("OldImage")) or {}
    changed = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
    if changed == [LIFECYCLE] and (old.get(LIFECYCLE), new.get(LIFECYCLE)) in CLM_TRANSITIONS:
        return None
    return ClusterChange(cluster_id, f"registry: spec changed ({', '.join(changed)})") if changed else None


def _spec(image: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not image or "spec" not in image:
        return None
    return _DESERIALIZER.deserialize(image["spec"])


def _cluster_id(images: Mapping[str, Any]) -> str:
    keys = images.get("Keys") or images.get("NewImage") or {}
    return _DESERIALIZER.deserialize(keys["id"])


def publish(client: Any, bus: str, changes: Sequence[ClusterChange]) -> int:
    """Put one `Cluster Changed` event per change on `bus` (a boto3 EventBridge client); returns how many.

    Raises PublishError naming the clusters whose events EventBridge refused.
    """
    events = [(DETAIL_TYPE, {"cluster_id": change.cluster_id, "reason": change.reason}) for change in changes]
    refused = [f"{changes[index].cluster_id} ({error})" for index, error in put_events(client, bus, SOURCE, events)]
    if refused:
        raise PublishError(f"event bus {bus}: Cluster Changed not published for {', '.join(refused)}")
    return len(events)
