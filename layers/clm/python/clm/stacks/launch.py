"""What in a node-pool template decides what its auto scaling group launches, and how an update changes it.

A change to a launch template's properties, to the group's launch properties, or to a parameter either refers
to gives the group a new launch template version (or template, or instance types) to launch: after such an
update every instance of the pool is outdated and gets replaced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from clm.stacks.inventory import GROUP_TYPE

LAUNCH_TEMPLATE_TYPE = "AWS::EC2::LaunchTemplate"
GROUP_LAUNCH_PROPERTIES = ("LaunchTemplate", "MixedInstancesPolicy", "LaunchConfigurationName")
MAX_SHOWN = 40  # longer values (user data, policies) are reported as changed, without their text
_SUB_REFERENCE = re.compile(r"\$\{([A-Za-z0-9]+)\}")


def launch_changes(
    deployed: Mapping[str, Any],
    rendered: Mapping[str, Any],
    changed_parameters: Mapping[str, tuple[str | None, str | None]],
) -> list[str]:
    """What the update from the `deployed` to the `rendered` template changes in what the group launches.

    One line per added or removed launch template or group, `Template: added`, per changed property,
    `LaunchTemplate.LaunchTemplateData.ImageId: ami-1 -> ami-2`, then per changed parameter those properties
    refer to, `parameter ImageId: ami-1 -> ami-2`. `changed_parameters`
    maps a parameter name to its (deployed, rendered) value as it may be shown.
    """
    before, after = launch_properties(deployed), launch_properties(rendered)
    changes = [
        f"{resource}: {'added' if resource in after else 'removed'}"
        for resource in sorted(before.keys() ^ after.keys())
    ]
    changes += [
        f"{resource}{path}: {_change_text(old, new)}"
        for resource in sorted(before.keys() & after.keys())
        for path, old, new in _leaf_changes(before[resource], after[resource], "")
    ]
    referenced = set(_referenced_parameters([*before.values(), *after.values()]))
    changes += [
        f"parameter {name}: {_change_text(*values)}"
        for name, values in sorted(changed_parameters.items())
        if name in referenced
    ]
    return changes


def launch_properties(template: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """By logical id: the properties of every launch template and the launch properties of every group."""
    found: dict[str, dict[str, Any]] = {}
    for logical_id, resource in (template.get("Resources") or {}).items():
        if not isinstance(resource, dict):
            continue
        properties = resource.get("Properties") or {}
        if resource.get("Type") == LAUNCH_TEMPLATE_TYPE:
            found[logical_id] = properties
        elif resource.get("Type") == GROUP_TYPE:
            found[logical_id] = {key: properties[key] for key in GROUP_LAUNCH_PROPERTIES if key in properties}
    return found


def _leaf_changes(old: Any, new: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """(path, old, new) of every differing leaf; a missing value is None."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys()):
            yield from _leaf_changes(old.get(key), new.get(key), f"{path}.{key}")
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (old_item, new_item) in enumerate(zip(old, new, strict=True)):
            yield from _leaf_changes(old_item, new_item, f"{path}[{index}]")
    elif old != new:
        yield path, old, new


def _change_text(old: Any, new: Any) -> str:
    shown = [_shown(value) for value in (old, new)]
    if any(len(text) > MAX_SHOWN for text in shown):
        return "changed"
    return f"{shown[0]} -> {shown[1]}"


def _shown(value: Any) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _referenced_parameters(nodes: Iterable[Any]) -> Iterator[str]:
    """Names that `Ref` or `Fn::Sub` refer to anywhere in `nodes` (resources' names included: harmless)."""
    for node in nodes:
        if isinstance(node, dict):
            if isinstance(node.get("Ref"), str):
                yield node["Ref"]
            sub = node.get("Fn::Sub")
            text = sub[0] if isinstance(sub, list) and sub else sub
            if isinstance(text, str):
                yield from _SUB_REFERENCE.findall(text)
            yield from _referenced_parameters(node.values())
        elif isinstance(node, list):
            yield from _referenced_parameters(node)
