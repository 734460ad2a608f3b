"""``AWS::AutoScaling::AutoScalingGroup`` updates in place, as in CloudFormation.

moto 5.2.5 deletes the group and creates a new one (new instances) on every update. CloudFormation updates the
group: a new launch template or version, sizes, subnets, mixed instances policy and tags apply to the group,
existing instances stay (that is why CLM rolls nodes), and the desired capacity launches or terminates
instances. A new ``AutoScalingGroupName`` still replaces the group. ``UpdatePolicy`` is not modelled.
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import replace


def install() -> None:
    """Replace moto's CloudFormation update of auto scaling groups (idempotent)."""
    from moto.autoscaling.models import FakeAutoScalingGroup

    replace(FakeAutoScalingGroup, "update_from_cloudformation_json", classmethod(_update))


def _update(
    cls: Any,
    original_resource: Any,
    new_resource_name: str,
    cloudformation_json: Any,
    account_id: str,
    region_name: str,
) -> Any:
    from moto.autoscaling.models import autoscaling_backends, make_int

    properties = cloudformation_json["Properties"]
    name = properties.get("AutoScalingGroupName")
    if name and name != original_resource.name:
        replacement = cls.create_from_cloudformation_json(name, cloudformation_json, account_id, region_name)
        original_resource.delete(account_id, region_name)
        return replacement
    group = autoscaling_backends[account_id][region_name].update_auto_scaling_group(
        name=original_resource.name,
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
