"""Config item `update_strategy`: who replaces a node pool's outdated nodes (CLM's provisioner/clusterpy.go updater).

`rolling`: CLM drains and terminates them itself (clm.rolling.planner). `clc`: CLM taints and labels them
`decommission-pending` and waits while the in-cluster cluster-lifecycle-controller drains and replaces them
(clm.rolling.clc). CLM's own default is `clc`; here it is `rolling`, since a cluster has that controller only if
its configuration deploys it (docs/workflows.md, "Update strategies").
"""

from __future__ import annotations

from collections.abc import Mapping

from clm.errors import ValidationError

UPDATE_STRATEGY_ITEM = "update_strategy"
ROLLING, CLC = "rolling", "clc"
STRATEGIES = (ROLLING, CLC)
DEFAULT_STRATEGY = ROLLING


def update_strategy(items: Mapping[str, str], cluster_id: str | None = None) -> str:
    """The cluster's update strategy from its config items (`rolling` when unset); ValidationError naming the item
    and the cluster for any other value."""
    value = str(items.get(UPDATE_STRATEGY_ITEM, DEFAULT_STRATEGY))
    if value not in STRATEGIES:
        problem = f"config_items.{UPDATE_STRATEGY_ITEM}: {value!r} is not one of {', '.join(STRATEGIES)}"
        raise ValidationError([problem], cluster_id)
    return value


def strategy_now(rendered: Mapping[str, str], registry: Mapping[str, str], cluster_id: str | None = None) -> str:
    """The strategy of a roll's next step: the registry item's as it is now when it sets one (a switch mid-roll
    acts at the next node boundary, as the maintenance window does), else the run's rendering's (its
    config-defaults.yaml's)."""
    items = registry if UPDATE_STRATEGY_ITEM in registry else rendered
    return update_strategy(items, cluster_id)
