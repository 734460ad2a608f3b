"""A node pool's roll settings from config items (the pool's, else the cluster's)."""

from __future__ import annotations

from collections.abc import Mapping

from clm.errors import ValidationError
from clm.kube.settings import parse_duration
from clm.rolling.pool import RollSettings

SURGE_ITEM, MAX_UNAVAILABLE_ITEM, STARTUP_TIMEOUT_ITEM = "surge", "max_unavailable", "node_startup_timeout"


def roll_settings(
    pool_items: Mapping[str, str], cluster_items: Mapping[str, str], cluster_id: str | None = None
) -> RollSettings:
    """`surge`, `max_unavailable` (counts) and `node_startup_timeout` (a duration like 10m); defaults: 0, 1, 10m."""
    items = {**cluster_items, **pool_items}
    values: dict[str, int | float] = {}
    problems = []
    for item, parse in ((SURGE_ITEM, int), (MAX_UNAVAILABLE_ITEM, int), (STARTUP_TIMEOUT_ITEM, parse_duration)):
        if item in items:
            try:
                values[item] = parse(str(items[item]))
            except ValueError as exc:
                problems.append(f"config_items.{item}: {exc}")
    if problems:
        raise ValidationError(problems, cluster_id)
    try:
        return RollSettings(**values)
    except ValueError as exc:
        raise ValidationError([f"config_items: {exc}"], cluster_id) from None
