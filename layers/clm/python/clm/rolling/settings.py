"""A node pool's roll settings from config items (the pool's, else the cluster's)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from clm.errors import ValidationError
from clm.kube.settings import parse_duration
from clm.rolling.pool import RollSettings

SURGE_ITEM, MAX_UNAVAILABLE_ITEM, STARTUP_TIMEOUT_ITEM = "surge", "max_unavailable", "node_startup_timeout"
DRAIN_BLOCKED_ITEM = "drain_blocked"
DRAIN_BLOCKED_VALUES = ("wait", "continue")  # wait: CLM's behaviour, the default


def roll_settings(
    pool_items: Mapping[str, str], cluster_items: Mapping[str, str], cluster_id: str | None = None, pool_size: int = 0
) -> RollSettings:
    """`surge`, `max_unavailable`, `node_startup_timeout` (a duration like 10m) and `drain_blocked` (`wait` or
    `continue`); defaults: 0, 1, 10m, wait.

    `surge` and `max_unavailable` are counts or percentages of the pool's size `pool_size` (`10%`), resolved as
    Kubernetes resolves a Deployment's: surge rounded up, max_unavailable down, and max_unavailable 1 when both come
    to 0.
    """
    items = {**cluster_items, **pool_items}
    values: dict[str, int | float] = {}
    problems = []
    percent = False
    for item in (SURGE_ITEM, MAX_UNAVAILABLE_ITEM):
        if item in items:
            try:
                values[item], given_as_percent = _amount(str(items[item]), pool_size, round_up=item == SURGE_ITEM)
                percent = percent or given_as_percent
            except ValueError as exc:
                problems.append(f"config_items.{item}: {exc}")
    if STARTUP_TIMEOUT_ITEM in items:
        try:
            values[STARTUP_TIMEOUT_ITEM] = parse_duration(str(items[STARTUP_TIMEOUT_ITEM]))
        except ValueError as exc:
            problems.append(f"config_items.{STARTUP_TIMEOUT_ITEM}: {exc}")
    blocked = str(items.get(DRAIN_BLOCKED_ITEM, "wait"))
    if blocked not in DRAIN_BLOCKED_VALUES:
        choices = ", ".join(DRAIN_BLOCKED_VALUES)
        problems.append(f"config_items.{DRAIN_BLOCKED_ITEM}: {blocked!r} is not one of {choices}")
    values["continue_blocked"] = blocked == "continue"
    if problems:
        raise ValidationError(problems, cluster_id)
    if percent and not values.get(SURGE_ITEM) and values.get(MAX_UNAVAILABLE_ITEM, 1) == 0:
        values[MAX_UNAVAILABLE_ITEM] = 1  # Kubernetes' fencepost: a roll must be able to progress
    try:
        return RollSettings(**values)
    except ValueError as exc:
        raise ValidationError([f"config_items: {exc}"], cluster_id) from None


def _amount(text: str, size: int, *, round_up: bool) -> tuple[int, bool]:
    """A count (`3`) or a percentage of `size` (`25%`, 0 to 100); and whether it was a percentage."""
    if not text.endswith("%"):
        return int(text), False
    share = int(text[:-1])
    if not 0 <= share <= 100:
        raise ValueError(f"{text!r}: a percentage is between 0% and 100%")
    return (math.ceil if round_up else math.floor)(size * share / 100), True
