"""Launch template and auto scaling group updates as CloudFormation does them, in place.

moto 5.2.5 gets both wrong for a node pool's stack:

- ``AWS::EC2::LaunchTemplate``: moto adds the new version but keeps the default at version 1. CloudFormation
  creates a new version and makes it the default.
- ``AWS::AutoScaling::AutoScalingGroup``: moto deletes the group and creates a new one (new instances).
  CloudFormation updates the group: a new launch template or version, sizes, subnets, mixed instances policy and
  tags apply to the group, its instances stay (that is why CLM rolls nodes), and a new desired capacity launches
  or terminates instances. ``UpdatePolicy`` is not modelled.

A new ``LaunchTemplateName`` or ``AutoScalingGroupName`` replaces the resource: a new one is created, the old one
deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Replace moto's CloudFormation updates of launch templates and auto scaling groups (idempotent)."""
    from moto.autoscaling.models import FakeAutoScalingGroup
    from moto.ec2.models.launch_templates import LaunchTemplate

    replace(LaunchTemplate, "update_from_cloudformation_json", _update("LaunchTemplateName", _new_default_version))
    replace(FakeAutoScalingGroup, "update_from_cloudformation_json", _update("AutoScalingGroupName", _update_group))


def _update(name_property: str, in_place: Callable[[Any, Any, dict[str, Any], str, str], Any]) -> classmethod:
    """moto's update_from_cloudformation_json: a replacement when ``name_property`` changes, else ``in_place``."""

    def update(
        cls: Any,
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> Any:
        name = cloudformation_json["Properties"].get(name_property)
        if not name or name == original_resource.name:
            return in_place(cls, original_resource, cloudformation_json, account_id, region_name)
        replacement = cls.create_from_cloudformation_json(name, cloudformation_json, account_id, region_name)
        original_resource.delete(account_id, region_name)
        return replacement

    return classmethod(update)


def _new_default_version(
    cls: Any, template: Any, cloudformation_json: dict[str, Any], account_id: str, region_name: str
) -> Any:
    """moto's update (a new version), which then becomes the default version."""
    moto_update = original(cls, "update_from_cloudformation_json").__func__
    template = moto_update(cls, template, template.name, cloudformation_json, account_id, region_name)
    template.default_version_number = template.latest_version_number
    return template


def _update_group(cls: Any, group: Any, cloudformation_json: dict[str, Any], account_id: str, region_name: str) -> Any:
    """The group updated through moto's UpdateAutoScalingGroup, then its tags."""
    from moto.autoscaling.models import autoscaling_backends, make_int

    properties = cloudformation_json["Properties"]
    autoscaling_backends[account_id][region_name].update_auto_scaling_group(
        name=group.name,
        availability_zones=properties.get("AvailabilityZones", []),
        desired_capacity=make_int(properties.get("DesiredCapacity")),
        max_size=make_int(properties.get("MaxSize")),
        min_size=make_int(properties.get("MinSize")),
        launch_config_name=properties.get("LaunchConfigurationName"),
        launch_template=properties.get("LaunchTemplate", {}),
        vpc_zone_identifier=",".join(properties.get("VPCZoneIdentifier", [])) or None,
        health_check_period=make_int(properties.get("HealthCheckGracePeriod")),
        health_check_type=properties.get("HealthCheckType"),
        new_instances_protected_from_scale_in=properties.get("NewInstancesProtectedFromScaleIn"),
        mixed_instances_policy=properties.get("MixedInstancesPolicy") or None,
    )
    group.tags = [dict(tag) for tag in properties.get("Tags", [])]
    return group
