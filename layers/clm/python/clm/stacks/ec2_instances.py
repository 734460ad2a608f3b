"""EC2's descriptions of a group's instances, each described in full once while it runs (docs/workflows.md).

What CLM reads of an instance (its launch template tags, type, lifecycle, launch time) does not change while it
runs, so a warm container describes a new instance once and then only asks EC2 which of those it knows left the
running states: a plan of a 200-node pool no longer describes 200 instances.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Any

FILTER_VALUES = 200  # EC2's limit of values in one filter
RUNNING = ["pending", "running"]
NOT_RUNNING = ["shutting-down", "terminated", "stopping", "stopped"]


def described_instances(ec2: Any, instance_ids: Iterable[str], states: list[str] | None) -> list[dict[str, Any]]:
    """EC2's description of those of `instance_ids` it knows, in one of `states` (None: any); no call for no ids."""
    ids = sorted(set(instance_ids))
    state_filter = [{"Name": "instance-state-name", "Values": states}] if states else []
    found: list[dict[str, Any]] = []
    for start in range(0, len(ids), FILTER_VALUES):
        pages = ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "instance-id", "Values": ids[start : start + FILTER_VALUES]}, *state_filter]
        )
        found.extend(i for page in pages for r in page["Reservations"] for i in r["Instances"])
    return found


class InstanceDescriptions:
    """One set of instances (a group's), described again and again: each one in full once while it runs."""

    def __init__(self, ec2: Any) -> None:
        self._ec2 = ec2
        self._running: dict[str, dict[str, Any]] = {}  # instance id -> its description, while it runs

    def of(self, instance_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """EC2's description of each of `instance_ids` it knows, as of now (one that stopped running described
        again); the set's instances not among them are forgotten."""
        ids = list(dict.fromkeys(instance_ids))
        known = [i for i in ids if i in self._running]
        left = {d["InstanceId"]: d for d in described_instances(self._ec2, known, NOT_RUNNING)}
        fresh = {d["InstanceId"]: d for d in described_instances(self._ec2, [i for i in ids if i not in known], None)}
        kept = {i: self._running[i] for i in known if i not in left}
        self._running = kept | {i: d for i, d in fresh.items() if d.get("State", {}).get("Name") in RUNNING}
        return {i: d for i in ids if (d := kept.get(i) or left.get(i) or fresh.get(i)) is not None}


_kept: weakref.WeakKeyDictionary[Any, dict[str, InstanceDescriptions]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def group_instances(ec2: Any, group: str, instance_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """EC2's description of the group's instances `instance_ids`, by id, kept per client (one client: one account,
    region and principal) and group for the container's next call."""
    with _lock:
        descriptions = _kept.setdefault(ec2, {}).setdefault(group, InstanceDescriptions(ec2))
    return descriptions.of(instance_ids)
