"""What CLM's api.NodePool computes from a pool's config items for templates: `Taints()` (the `taints` item) and
`KarpenterRequirements()` (the `requirements` item, YAML). Text keeps the kind of the item it came from, so that
registry text stays marked as such in templates (clm.render.origins)."""

from __future__ import annotations

from typing import Any

TAINT_EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
REQUIREMENT_FIELDS = ("Key", "Operator", "Values", "MinValues")


def keep_origin(source: str, text: str) -> str:
    """`text` as derived from `source` (a str subclass that tracks its origin stays one: its `+` does it)."""
    return source[:0] + text


def parse_taint(spec: str, source: str = "") -> dict[str, str] | None:
    """pkg/kubernetes.ParseTaint: `key`, `key:Effect` or `key=value:Effect` as corev1.Taint's fields; None if
    invalid (`key=value` without an effect, an unknown effect, more than one `=` or `:`). Text derives from
    `source` (the config item)."""
    source = source or spec
    parts = spec.split(":")
    if len(parts) == 1:
        return None if "=" in spec else {"Key": keep_origin(source, spec), "Value": "", "Effect": ""}
    if len(parts) != 2 or parts[1] not in TAINT_EFFECTS:
        return None
    key_value = parts[0].split("=")
    if len(key_value) > 2:
        return None
    value = key_value[1] if len(key_value) == 2 else ""
    return {"Key": keep_origin(source, key_value[0]), "Value": keep_origin(source, value), "Effect": parts[1]}


def taints(items: dict[str, str]) -> list[dict[str, str]] | None:
    """The valid taints of the `taints` item (None without the item), invalid ones skipped as CLM does."""
    if "taints" not in items:
        return None
    source = items["taints"]
    parsed = (parse_taint(spec, source) for spec in source.split(","))
    return [taint for taint in parsed if taint is not None]


def _texts(value: Any, source: str) -> Any:
    if isinstance(value, str):
        return keep_origin(source, value)
    if isinstance(value, list):
        return [_texts(item, source) for item in value]
    return value


def karpenter_requirements(items: dict[str, str]) -> list[dict[str, Any]] | None:
    """The `requirements` item (a YAML list of node selector requirements: key, operator, values, minValues)
    as records with CLM's field names, absent fields None; None without the item, [] if it does not parse
    (CLM logs the error and goes on)."""
    if "requirements" not in items:
        return None
    import yaml

    from clm.yamlutil import safe_load

    source = items["requirements"]
    try:
        loaded = safe_load(str(source))
    except yaml.YAMLError:
        return []
    if not isinstance(loaded, list) or not all(isinstance(item, dict) for item in loaded):
        return []
    result = []
    for item in loaded:
        fields = {str(key).lower(): value for key, value in item.items()}  # encoding/json matches names so
        result.append({name: _texts(fields.get(name.lower()), source) for name in REQUIREMENT_FIELDS})
    return result
