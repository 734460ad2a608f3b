"""Field edits of one cluster's spec for `clm registry set`: dotted paths, values typed like the field they replace,
and the fields that changed.

Paths: `FIELD`, `config_items.NAME`, `node_pools.POOL.FIELD`, `node_pools.POOL.config_items.NAME` (NAME may
contain dots). The result is validated by the caller as an import would validate it.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from clm.cli.errors import CliError

CONFIG_ITEMS = "config_items"
FIXED = {
    "id": "the id names the cluster; it cannot be changed",
    "status": "status is CLM's record of its runs; it cannot be set",
    "node_pools": "set the fields of one pool: node_pools.POOL.FIELD=VALUE",
    CONFIG_ITEMS: "set one config item: config_items.NAME=VALUE",
}
INSTANCE_TYPE_FIELDS = ("instance_types", "instance_type")
INTEGER_RE = re.compile(r"-?\d+")


def parse_assignment(text: str) -> tuple[str, str]:
    """`FIELD=VALUE` as (field, value); CliError for anything else."""
    path, sep, value = text.partition("=")
    if not sep or not path:
        raise CliError(f"{text!r} is not FIELD=VALUE (e.g. lifecycle_status=ready or node_pools.POOL.max_size=5)")
    return path, value


def _target(spec: dict[str, Any], path: str, cluster_id: str) -> tuple[dict[str, Any], str]:
    """The mapping that holds the field `path` names, and the field's key in it."""
    head, _, rest = path.partition(".")
    if head == CONFIG_ITEMS and rest:
        return spec.setdefault(CONFIG_ITEMS, {}), rest
    if head == "node_pools" and rest:
        pool_name, _, field = rest.partition(".")
        pools = {pool["name"]: pool for pool in spec.get("node_pools", [])}
        if pool_name not in pools:
            known = ", ".join(pools) or "none"
            raise CliError(f"cluster {cluster_id} has no node pool {pool_name!r} (node pools: {known})")
        pool = pools[pool_name]
        sub, _, name = field.partition(".")
        if sub == CONFIG_ITEMS and name:
            return pool.setdefault(CONFIG_ITEMS, {}), name
        if not field or "." in field or field in ("name", CONFIG_ITEMS):
            reason = "the name names the pool" if field == "name" else "give one field of the pool"
            raise CliError(f"cluster {cluster_id}: cannot set {path}: {reason}")
        return pool, field
    if head in FIXED or "." in path:
        reason = FIXED.get(head, "not a field of the cluster")
        raise CliError(f"cluster {cluster_id}: cannot set {path}: {reason}")
    return spec, path


def _typed(current: Any, key: str, value: str) -> Any:
    """The text `value` typed like the value it replaces: integers stay integers, instance types a list."""
    if key == "instance_types":
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(current, int) and not isinstance(current, bool) and INTEGER_RE.fullmatch(value.strip()):
        return int(value)
    return value


def edit_spec(
    spec: dict[str, Any], assignments: list[tuple[str, str]], unset: list[str], cluster_id: str
) -> dict[str, Any]:
    """A copy of `spec` (CLM's registry format) with the assignments made and the `unset` fields removed."""
    edited = copy.deepcopy(spec)
    for path, value in assignments:
        holder, key = _target(edited, path, cluster_id)
        if key in INSTANCE_TYPE_FIELDS:  # either spelling replaces both (CLM's legacy instance_type)
            for spelling in INSTANCE_TYPE_FIELDS:
                holder.pop(spelling, None)
        holder[key] = _typed(holder.get(key), key, value)
    for path in unset:
        holder, key = _target(edited, path, cluster_id)
        if key not in holder:
            raise CliError(f"cluster {cluster_id}: cannot unset {path}: it is not set")
        del holder[key]
    return edited


def flatten(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as `path: value` in the paths `edit_spec` takes (node pools by name)."""
    flat: dict[str, Any] = {}
    for key, value in spec.items():
        if key == CONFIG_ITEMS:
            flat.update({f"{CONFIG_ITEMS}.{name}": item for name, item in value.items()})
        elif key == "node_pools":
            for pool in value:
                prefix = f"node_pools.{pool['name']}"
                for field, item in pool.items():
                    if field == CONFIG_ITEMS:
                        flat.update({f"{prefix}.{CONFIG_ITEMS}.{name}": v for name, v in item.items()})
                    elif field != "name":
                        flat[f"{prefix}.{field}"] = item
        else:
            flat[key] = value
    return flat


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Fields that differ between two specs: `{field, before, after}` (None where absent), in path order."""
    old, new = flatten(before), flatten(after)
    return [
        {"field": path, "before": old.get(path), "after": new.get(path)}
        for path in sorted(old.keys() | new.keys())
        if old.get(path) != new.get(path)
    ]
