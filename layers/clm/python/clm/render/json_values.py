"""Whether loaded YAML is plain JSON data, as Kubernetes objects and stored renderings must be.

YAML can say more than JSON: timestamps (`day: 2024-01-01`), binary (`!!binary`), sets, non-string keys
(`1: one`), `.nan`. Such a value would fail late (storing the rendering, applying it); it is found here instead,
with its path and line.
"""

from __future__ import annotations

import math
from typing import Any

_SCALARS = (str, int, float, bool, type(None))


def json_problem(value: Any, path: str = "") -> tuple[str, int | None] | None:
    """The first part of `value` that JSON cannot hold, as (message naming its path, line when known), or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            line = value.line_of(str(key)) if hasattr(value, "line_of") else None
            if not isinstance(key, str):
                return f"{path or 'document'}: key {key!r} must be a string (quote it)", line
            inner = json_problem(item, f"{path}.{key}" if path else key)
            if inner is not None:
                return inner[0], inner[1] or line
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            inner = json_problem(item, f"{path}[{index}]")
            if inner is not None:
                lines = getattr(value, "item_lines", None)
                return inner[0], inner[1] or (lines[index] if lines else None)
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path}: {value} is not a JSON number", None
    if isinstance(value, _SCALARS):
        return None
    return f"{path}: a YAML {type(value).__name__} ({value!r}) is not JSON; quote it to make it a string", None
