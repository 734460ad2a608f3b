"""A node pool's auto scaling group and its instances, each judged up to date or outdated.

An instance is outdated when its launch template, launch template version, instance type or spot-ness differs
from what the group launches now. The version an instance was launched with is read from the tags EC2 puts
on it (`aws:ec2launchtemplate:id`, `aws:ec2launchtemplate:version`), falling back to the group's instance record.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from clm.stacks.cfn import error_message
from clm.stacks.errors import NodePoolInventoryError

GROUP_TYPE = "AWS::AutoScaling::AutoScalingGroup"
TEMPLATE_ID_TAG = "aws:ec2launchtemplate:id"
TEMPLATE_VERSION_TAG = "aws:ec2launchtemplate:version"
GROUP_NAME_TAG = "aws:autoscaling:groupName"


@dataclass(frozen=True)
class InstanceInfo:
    """One instance of the group. `spot` is None when EC2 no longer knows the instance."""

    id: str
    az: str
    lifecycle_state: str
    health: str
    instance_type: str
    spot: bool | None
    launch_template_id: str
    launch_template_version: str
    outdated: bool
    outdated_reasons: list[str] = field(default_factory=list)
    launch_time: str = ""  # ISO 8601, "" when EC2 no longer knows the instance

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for Step Functions payloads."""
        return asdict(self)


@dataclass(frozen=True)
class NodePoolInventory:
    """The group of a node-pool stack: what it launches now, its sizes and its instances.

    `launch_template_version` is a number ($Latest and $Default resolved); `instance_types` are the types
    the group launches (a mixed instances policy's overrides, else the launch template's); `spot` is None
    when a mixed instances policy launches both kinds.
    """

    stack_name: str
    asg_name: str
    launch_template_id: str
    launch_template_name: str
    launch_template_version: str
    instance_types: list[str]
    spot: bool | None
    desired: int
    min: int
    max: int
    instances: list[InstanceInfo]

    @property
    def outdated(self) -> list[InstanceInfo]:
        """The instances to replace."""
        return [instance for instance in self.instances if instance.outdated]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for Step Functions payloads."""
        return asdict(self)


@dataclass(frozen=True)
class _Target:
    """What the group launches now."""

    template_id: str
    template_name: str
    version: str
    instance_types: list[str]
    spot: bool | None
    versions: dict[str, str]  # $Latest / $Default -> number


def node_pool_inventory(cfn: Any, autoscaling: Any, ec2: Any, stack_name: str) -> NodePoolInventory:
    """Read the auto scaling group of the node-pool stack and judge every instance."""
    group = _group(cfn, autoscaling, stack_name)
    target = _target(ec2, group, stack_name)
    described = _ec2_instances(ec2, group["AutoScalingGroupName"])
    return NodePoolInventory(
        stack_name=stack_name,
        asg_name=group["AutoScalingGroupName"],
        launch_template_id=target.template_id,
        launch_template_name=target.template_name,
        launch_template_version=target.version,
        instance_types=target.instance_types,
        spot=target.spot,
        desired=group["DesiredCapacity"],
        min=group["MinSize"],
        max=group["MaxSize"],
        instances=[_instance(record, described.get(record["InstanceId"]), target) for record in group["Instances"]],
    )


def _group(cfn: Any, autoscaling: Any, stack_name: str) -> dict[str, Any]:
    try:
        pages = cfn.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        names = [
            resource["PhysicalResourceId"]
            for page in pages
            for resource in page["StackResourceSummaries"]
            if resource["ResourceType"] == GROUP_TYPE and resource.get("PhysicalResourceId")
        ]
    except ClientError as exc:
        raise NodePoolInventoryError(error_message(exc), "", stack_name) from None
    if len(names) != 1:
        raise NodePoolInventoryError(
            f"a node-pool stack needs exactly one {GROUP_TYPE}, it has {len(names)}", "", stack_name
        )
    groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=names)["AutoScalingGroups"]
    if not groups:
        raise NodePoolInventoryError(f"auto scaling group {names[0]} does not exist", "", stack_name)
    return groups[0]


def _target(ec2: Any, group: dict[str, Any], stack_name: str) -> _Target:
    policy = group.get("MixedInstancesPolicy") or {}
    spec = group.get("LaunchTemplate") or policy.get("LaunchTemplate", {}).get("LaunchTemplateSpecification")
    if not spec:
        raise NodePoolInventoryError(
            f"auto scaling group {group['AutoScalingGroupName']} has no launch template "
            "(launch configurations are not supported)",
            "",
            stack_name,
        )
    lookup = (
        {"LaunchTemplateIds": [spec["LaunchTemplateId"]]}
        if spec.get("LaunchTemplateId")
        else {"LaunchTemplateNames": [spec["LaunchTemplateName"]]}
    )
    template = ec2.describe_launch_templates(**lookup)["LaunchTemplates"][0]
    versions = {"$Latest": str(template["LatestVersionNumber"]), "$Default": str(template["DefaultVersionNumber"])}
    version = str(spec.get("Version") or "$Default")
    version = versions.get(version, version)
    data = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"], Versions=[version])[
        "LaunchTemplateVersions"
    ][0]["LaunchTemplateData"]
    overrides = policy.get("LaunchTemplate", {}).get("Overrides", [])
    types = [o["InstanceType"] for o in overrides if "InstanceType" in o] or [data.get("InstanceType", "")]
    return _Target(
        template_id=template["LaunchTemplateId"],
        template_name=template["LaunchTemplateName"],
        version=version,
        instance_types=[t for t in types if t],
        spot=_group_spot(policy, data),
        versions=versions,
    )


def _group_spot(policy: dict[str, Any], data: dict[str, Any]) -> bool | None:
    """True for spot, False for on-demand, None when a mixed instances policy launches both."""
    if not policy:
        return data.get("InstanceMarketOptions", {}).get("MarketType") == "spot"
    distribution = policy.get("InstancesDistribution", {})
    above_base = int(distribution.get("OnDemandPercentageAboveBaseCapacity", 100))
    if above_base == 100:
        return False
    if above_base == 0 and int(distribution.get("OnDemandBaseCapacity", 0)) == 0:
        return True
    return None


def _ec2_instances(ec2: Any, group_name: str) -> dict[str, dict[str, Any]]:
    """EC2's view of the group's instances (tags, lifecycle), by id."""
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[{"Name": f"tag:{GROUP_NAME_TAG}", "Values": [group_name]}]
    )
    return {
        instance["InstanceId"]: instance
        for page in pages
        for reservation in page["Reservations"]
        for instance in reservation["Instances"]
    }


def _instance(record: dict[str, Any], described: dict[str, Any] | None, target: _Target) -> InstanceInfo:
    tags = {tag["Key"]: tag["Value"] for tag in (described or {}).get("Tags", [])}
    launched_with = record.get("LaunchTemplate") or {}
    template_id = tags.get(TEMPLATE_ID_TAG) or launched_with.get("LaunchTemplateId", "")
    version = tags.get(TEMPLATE_VERSION_TAG) or str(launched_with.get("Version", ""))
    if template_id == target.template_id:
        version = target.versions.get(version, version)
    instance_type = record.get("InstanceType") or (described or {}).get("InstanceType", "")
    spot = None if described is None else described.get("InstanceLifecycle") == "spot"
    reasons = _outdated_reasons(template_id, version, instance_type, spot, target)
    return InstanceInfo(
        id=record["InstanceId"],
        az=record.get("AvailabilityZone", ""),
        lifecycle_state=record.get("LifecycleState", ""),
        health=record.get("HealthStatus", ""),
        instance_type=instance_type,
        spot=spot,
        launch_template_id=template_id,
        launch_template_version=version,
        outdated=bool(reasons),
        outdated_reasons=reasons,
        launch_time=launch_time.isoformat() if (launch_time := (described or {}).get("LaunchTime")) else "",
    )


def _outdated_reasons(
    template_id: str, version: str, instance_type: str, spot: bool | None, target: _Target
) -> list[str]:
    reasons = []
    uses = f"the group uses {target.template_name} ({target.template_id})"
    if not template_id:
        reasons.append(f"launched without a launch template, {uses}")
    elif template_id != target.template_id:
        reasons.append(f"launch template {template_id}, {uses}")
    elif version != target.version:
        reasons.append(f"launch template version {version}, the group uses {target.version}")
    if target.instance_types and instance_type not in target.instance_types:
        reasons.append(f"instance type {instance_type}, the group uses {', '.join(target.instance_types)}")
    if target.spot is not None and spot is not None and spot != target.spot:
        reasons.append(f"{_market(spot)} instance, the group launches {_market(target.spot)}")
    return reasons


def _market(spot: bool) -> str:
    return "spot" if spot else "on-demand"
