"""Auto scaling groups launch what they are configured to launch, and report what each instance was launched with.

moto 5.2.5 launches a group's instances from the launch template's *default* version (its EC2 tags say so)
whatever version the group names, reports every instance with the template's current default version (old and
new instances look alike), never launches spot instances, ignores a mixed instances policy's instance type
overrides, and puts every instance into the first subnet with a random zone. Here a group with a launch template
launches, one instance at a time:

- the version the group names (``$Latest`` and ``$Default`` resolved at launch), so EC2's
  ``aws:ec2launchtemplate:version`` tag is that number;
- the first override's instance type of a mixed instances policy (the "prioritized" strategy), else the version's;
- spot instances (``InstanceLifecycle: spot``) for a version with ``InstanceMarketOptions.MarketType: spot``, or
  as many as the mixed instances policy's on-demand base and percentage leave to spot (on-demand rounded up);
- into the group's subnet whose zone has the fewest of its instances (zones balanced), placed in that zone;
- with the version's instance profile (``IamInstanceProfile`` by name or ARN; moto leaves instances without one),
  so that a node's bootstrap runs with its role (clm_sandbox.nodesim.bootstrap). A profile that does not exist
  leaves the instance without one, logged (its bootstrap then fails, as the launch would on AWS).

Each instance's record (DescribeAutoScalingGroups, DescribeAutoScalingInstances) reports the launch template and
version from the instance's EC2 tags: the version it was launched with. Groups with launch configurations keep
moto's behaviour.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import Any

from clm_sandbox.patches._patching import original, replace

log = logging.getLogger(__name__)
TEMPLATE_ID_TAG = "aws:ec2launchtemplate:id"
TEMPLATE_VERSION_TAG = "aws:ec2launchtemplate:version"
SPOT = "spot"


def install() -> None:
    """Replace how moto's groups launch instances and report their launch template (idempotent)."""
    from moto.autoscaling.models import FakeAutoScalingGroup, InstanceState

    replace(FakeAutoScalingGroup, "replace_autoscaling_group_instances", _launch)
    replace(InstanceState, "launch_template", property(_launched_with, doc="The instance's own launch template."))


def markets(group: Any, version: Any, count: int) -> list[bool]:
    """For ``count`` new instances of the group: True for each to launch as spot, on-demand ones first."""
    policy = group.mixed_instances_policy
    if not policy:
        market = (version.data.get("InstanceMarketOptions") or {}).get("MarketType")
        return [market == SPOT] * count
    distribution = policy.get("InstancesDistribution") or {}
    base = int(distribution.get("OnDemandBaseCapacity", 0))
    percent = int(distribution.get("OnDemandPercentageAboveBaseCapacity", 100))
    running = group.active_instances()
    total = len(running) + count
    on_demand_wanted = min(total, base) + math.ceil(max(0, total - base) * percent / 100)
    on_demand_running = sum(1 for state in running if state.instance.lifecycle != SPOT)
    on_demand = min(count, max(0, on_demand_wanted - on_demand_running))
    return [False] * on_demand + [True] * (count - on_demand)


def _launch(self: Any, count_needed: int, propagated_tags: dict[str, str]) -> None:
    """FakeAutoScalingGroup.replace_autoscaling_group_instances for groups with a launch template."""
    from moto.autoscaling.models import ASG_NAME_TAG, FakeAutoScalingGroup, InstanceState

    template = self.ec2_launch_template
    if template is None:
        original(FakeAutoScalingGroup, "replace_autoscaling_group_instances")(self, count_needed, propagated_tags)
        return
    version = template.get_version(self.launch_template_version)
    tags = {**propagated_tags, ASG_NAME_TAG: self.name, **version.instance_tags}
    for spot in markets(self, version, count_needed):
        subnet_id, zone = _placement(self)
        reservation = self.ec2_backend.run_instances(
            version.image_id,
            1,
            version.user_data,
            version.security_groups,
            instance_type=_instance_type(self, version),
            tags={"instance": tags},
            placement=zone,
            launch_template={"LaunchTemplateId": template.id, "Version": str(version.number)},
            is_instance_type_default=False,
            subnet_id=subnet_id,
            instance_market_options={"MarketType": SPOT} if spot else None,
        )
        for instance in reservation.instances:
            _attach_profile(self.ec2_backend, instance.id, version.data.get("IamInstanceProfile") or {})
            instance.autoscaling_group = self
            self.instance_states.append(
                InstanceState(instance, protected_from_scale_in=self.new_instances_protected_from_scale_in)
            )


def _attach_profile(backend: Any, instance_id: str, profile: dict[str, str]) -> None:
    if not profile:
        return
    try:
        backend.associate_iam_instance_profile(
            instance_id, iam_instance_profile_name=profile.get("Name"), iam_instance_profile_arn=profile.get("Arn")
        )
    except Exception as exc:  # no such profile
        log.warning("instance %s launched without its instance profile %s: %s", instance_id, profile, exc)


def _instance_type(group: Any, version: Any) -> str:
    overrides = ((group.mixed_instances_policy or {}).get("LaunchTemplate") or {}).get("Overrides") or []
    types = [override["InstanceType"] for override in overrides if override.get("InstanceType")]
    return types[0] if types else version.instance_type


def _placement(group: Any) -> tuple[str | None, str]:
    """(subnet, zone) for the next instance: the group's zone with the fewest of its running instances."""
    in_zone = Counter(state.instance.placement.zone for state in group.active_instances())
    if group.vpc_zone_identifier:
        subnets = [group.ec2_backend.get_subnet(subnet_id) for subnet_id in group.vpc_zone_identifier.split(",")]
        subnet = min(subnets, key=lambda candidate: in_zone[candidate.availability_zone])
        return subnet.id, subnet.availability_zone
    return None, min(group.availability_zones, key=lambda zone: in_zone[zone])


def _launched_with(self: Any) -> dict[str, Any] | None:
    """InstanceState.launch_template: the template and version the instance was launched with (EC2's tags)."""
    instance = self.instance
    tags = instance.ec2_backend.tags.get(instance.id, {})
    template_id = tags.get(TEMPLATE_ID_TAG)
    if not template_id:
        return None
    template = instance.ec2_backend.launch_templates.get(template_id)
    name = template.name if template is not None else ""
    return {"LaunchTemplateId": template_id, "LaunchTemplateName": name, "Version": tags.get(TEMPLATE_VERSION_TAG)}
