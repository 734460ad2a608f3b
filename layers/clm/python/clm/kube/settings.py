"""Drain settings from a cluster's config items, with CLM's names, defaults and Go duration syntax."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from clm.errors import ValidationError

NO_SCHEDULE_TAINT_ITEM = "decommission_node_no_schedule_taint"
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration ("6h", "5m", "30s", "1h30m", "250ms", "0"); ValueError when malformed."""
    value = text.strip()
    if value == "0":
        return 0.0
    position, total = 0, 0.0
    for match in _PART.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not value or position != len(value):
        raise ValueError(f"{text!r} is not a duration like 6h, 5m, 30s or 1h30m")
    return total


@dataclass(frozen=True)
class DrainSettings:
    """CLM's drain rules in seconds; field `x` comes from config item `drain_x`."""

    grace_period: float = 6 * 3600.0
    min_pod_lifetime: float = 72 * 3600.0
    min_healthy_sibling_lifetime: float = 3600.0
    min_unhealthy_sibling_lifetime: float = 6 * 3600.0
    force_evict_interval: float = 300.0
    poll_interval: float = 30.0
    taint_effect: str = "PreferNoSchedule"  # "NoSchedule" when config item NO_SCHEDULE_TAINT_ITEM is "true"

    @classmethod
    def from_config_items(
        cls, items: Mapping[str, str], cluster_id: str | None = None, *, master: bool = False
    ) -> DrainSettings:
        """Read the `drain_*` config items (others keep CLM's defaults) and the taint effect: NoSchedule only for a
        pool that is not a `master` one (CLM's node_pool_manager.go MarkNodeForDecommission). Names every bad item."""
        values: dict[str, Any] = {}
        problems = []
        if items.get(NO_SCHEDULE_TAINT_ITEM) == "true" and not master:
            values["taint_effect"] = "NoSchedule"
        for spec in [spec for spec in fields(cls) if isinstance(spec.default, float)]:
            item = f"drain_{spec.name}"
            if item not in items:
                continue
            try:
                values[spec.name] = parse_duration(str(items[item]))
            except ValueError as exc:
                problems.append(f"config_items.{item}: {exc}")
        if problems:
            raise ValidationError(problems, cluster_id)
        return cls(**values)


def format_duration(seconds: float) -> str:
    """Go-style text for whole seconds: 21600 -> "6h", 90 -> "1m30s", 0 -> "0s"."""
    rest = round(seconds)
    parts = []
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(parts) or "0s"
