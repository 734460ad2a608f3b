"""The size of a cluster's registry item as DynamoDB counts it, checked before anything is written.

DynamoDB refuses an item over 400 KB (409,600 bytes); an import that met one mid-way would have written the
clusters before it. Sizes follow DynamoDB's rules ("Item sizes and formats"): an attribute is its name's UTF-8
bytes plus its value's; a string its UTF-8 bytes, a number 1 byte per two significant digits plus 1, a boolean or
null 1 byte, a list or map 3 bytes plus 1 byte per element (and a map element's key bytes).
"""

from __future__ import annotations

from typing import Any

from clm.model import Cluster

DYNAMODB_ITEM_LIMIT = 409_600
# What CLM adds to an item while it runs clusters: the status with up to 25 problems, the lock, parked drains.
RESERVED = 65_536
SPEC_ITEM_LIMIT = DYNAMODB_ITEM_LIMIT - RESERVED


def value_size(value: Any) -> int:
    """Bytes DynamoDB counts for `value` (str, int, bool, None, list, dict of those)."""
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        digits = str(abs(value)).strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if isinstance(value, dict):
        return 3 + sum(len(str(key).encode()) + value_size(item) + 1 for key, item in value.items())
    if isinstance(value, list | tuple):
        return 3 + sum(value_size(item) + 1 for item in value)
    raise TypeError(f"no DynamoDB size for {type(value).__name__}")


def item_size(item: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for an item given as attribute name -> value."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def spec_item_problem(cluster: Cluster) -> str | None:
    """Why the item a spec write of `cluster` makes (id, spec, status, revision) is too large, or None."""
    size = item_size({"id": cluster.id, "spec": cluster.spec_dict(), "status": cluster.status.to_dict(), "revision": 0})
    if size <= SPEC_ITEM_LIMIT:
        return None
    return (
        f"its registry item would be {size:,} bytes as DynamoDB counts them; at most {SPEC_ITEM_LIMIT:,}"
        f" (DynamoDB's {DYNAMODB_ITEM_LIMIT:,} less {RESERVED:,} for the status, lock and parked drains CLM keeps"
        " on it): make config items smaller"
    )
