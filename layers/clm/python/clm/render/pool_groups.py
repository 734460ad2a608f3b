"""CLM's node-pool group functions (provisioner/template.go): worker pools grouped by their `dedicated` label (the
default group, key "", holds the pools without the label and without taints), for the admission controller's
zone spreading and node life-cycle provider settings."""

from __future__ import annotations

from collections.abc import Iterable

from clm.model import KARPENTER_PROFILE, NodePool
from clm.pool_fields import keep_origin

SPREAD_PROFILES = ("worker-splitaz", KARPENTER_PROFILE)
# The node life-cycle provider of a group whose pools all have this profile (another profile or a mix: "").
PROVIDERS = {KARPENTER_PROFILE: "karpenter", "worker-combined": "zalando", "worker-splitaz": "zalando"}


def _labels(pool: NodePool) -> dict[str, str]:
    """The pool's `labels` config item (`k=v,...`) as a map; entries without `=` are skipped."""
    labels = pool.config_items.get("labels", "")
    pairs = (item.split("=", 1) for item in labels.split(","))
    return {keep_origin(labels, pair[0]): keep_origin(labels, pair[1]) for pair in pairs if len(pair) == 2}


def groups_by_purpose(pools: Iterable[NodePool]) -> dict[str, list[NodePool]]:
    """Worker pools by their `dedicated` label; "" for the pools with neither the label nor taints."""
    groups: dict[str, list[NodePool]] = {}
    for pool in pools:
        if pool.profile.startswith("master"):
            continue
        group = _labels(pool).get("dedicated", "")
        if group or "taints" not in pool.config_items:
            groups.setdefault(group, []).append(pool)
    return groups


def _distributed(group: str, pools: list[NodePool]) -> bool:
    return bool(pools) and all(
        (not group or pool.config_items.get("taints", "") == f"dedicated={group}:NoSchedule")
        and "availability_zones" not in pool.config_items
        and pool.profile in SPREAD_PROFILES
        for pool in pools
    )


def zone_distributed_node_pool_groups(pools: Iterable[NodePool]) -> dict[str, bool]:
    """The groups safe for even spreading across zones (value true): every pool of the group tainted as its label
    says, not limited to some zones, and of a profile that spreads (worker-splitaz, worker-karpenter)."""
    return {group: True for group, members in groups_by_purpose(pools).items() if _distributed(group, members)}


def node_life_cycle_provider_per_node_pool_group(pools: Iterable[NodePool]) -> dict[str, str]:
    """Each group's node life-cycle provider (the default group named "default"): the provider of the profile
    all its pools share, "" if they differ or the profile has none."""
    result = {}
    for group, members in groups_by_purpose(pools).items():
        profiles = {pool.profile for pool in members}
        result[group or "default"] = PROVIDERS.get(profiles.pop(), "") if len(profiles) == 1 else ""
    return result
