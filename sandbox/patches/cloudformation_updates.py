"""Stack updates change exactly the resources whose resolved properties change, in dependency order.

moto 5.2.5 updates a resource only when its own template text or a parameter it names changed, in template
order: a ``!GetAtt LaunchTemplate.LatestVersionNumber`` that moves to a new version never reaches the auto
scaling group that uses it. Here an update walks the resources in dependency order, creates the new ones,
updates each one whose properties *after resolving Refs and GetAtts* differ from what it was deployed with
(so a change propagates to every resource that refers to it), and leaves the resources the template no longer
has for :func:`remove` (CloudFormation's cleanup phase, after everything else succeeded), deleted dependents
first. ``install()`` makes moto's ``ResourceMap.update`` (change sets) do the same; update_stack and the
rollbacks use :func:`apply` and :func:`remove` directly (cloudformation_operations).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from clm_sandbox.patches import cloudformation_resources
from clm_sandbox.patches._patching import replace
from clm_sandbox.patches.cloudformation_dependencies import deployment_order


def install() -> None:
    """Replace moto's ResourceMap.update with :func:`apply` then :func:`remove` (idempotent)."""
    from moto.cloudformation.parsing import ResourceMap

    cloudformation_resources.install()
    replace(ResourceMap, "update", _update)


def apply(resources_map: Any, template: Mapping[str, Any], parameters: Mapping[str, Any]) -> list[str]:
    """Create and update the stack's resources to match ``template`` and ``parameters``.

    Returns the deployed resources the template no longer has (or whose Condition no longer holds), in the
    order to delete them. Raises ResourceFailed (cloudformation_resources) for the first resource that fails.
    """
    previous = resources_map._resource_json_map
    resources_map._template = template
    resources_map.input_parameters = dict(parameters)
    resources_map.resolved_parameters = {}
    resources_map.load_mapping()
    resources_map.load_parameters()
    resources_map.load_conditions()
    resources = resources_map._resource_json_map = template.get("Resources") or {}
    record = cloudformation_resources.deployed(resources_map)
    wanted = [name for name in deployment_order(resources) if _condition_holds(resources_map, resources[name])]
    for name in wanted:
        if name in record:
            cloudformation_resources.update(resources_map, name)
        else:
            resources_map[name]  # moto's lazy map creates the resource on lookup
    return [name for name in removal_order(previous, record) if name not in wanted]


def remove(resources_map: Any, names: Iterable[str]) -> list[str]:
    """Delete the given deployed resources in order; returns those whose deletion failed."""
    return [name for name in names if not cloudformation_resources.delete(resources_map, name)]


def removal_order(resources: Mapping[str, Any], names: Iterable[str]) -> list[str]:
    """``names`` ordered for deletion: whatever refers to a resource (in ``resources``) goes before it."""
    wanted = list(names)
    known = [name for name in deployment_order(resources) if name in wanted]
    return [name for name in wanted if name not in resources] + known[::-1]


def _condition_holds(resources_map: Any, resource: Mapping[str, Any]) -> bool:
    condition = resource.get("Condition")
    return not condition or bool(resources_map.lazy_condition_map[condition])


def _update(self: Any, template: dict[str, Any], parameters: dict[str, Any] | None = None) -> None:
    """ResourceMap.update (change sets): apply the template, then remove what it no longer has.

    Without parameters the stack keeps its values, as moto's change sets expect.
    """
    remove(self, apply(self, template, parameters or self.input_parameters))
