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
