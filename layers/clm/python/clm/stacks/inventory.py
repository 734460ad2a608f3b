"""A node pool's auto scaling groups and their instances, each judged up to date or outdated.

A pool's groups are the AWS::AutoScaling::AutoScalingGroup resources of its stack: one, or one per zone (Zalando's
`worker-splitaz` profile; CLM gets, scales and rolls across all of a pool's groups: pkg/updatestrategy/aws_asg.go).
A group whose tags name another cluster or another pool is refused, never touched. An instance is outdated when its
launch template, launch template version, instance type or spot-ness differs from what its group launches now.
The version an instance was launched with is read from the tags EC2 puts on it (`aws:ec2launchtemplate:id`,
`aws:ec2launchtemplate:version`), falling back to the group's instance record.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from clm.stacks.cfn import error_message
from clm.stacks.ec2_instances import group_instances
from clm.stacks.errors import NodePoolInventoryError
from clm.stacks.names import NODE_POOL_TAG, NODE_POOL_TAG_LEGACY, OWNED, cluster_tag_key

GROUP_TYPE = "AWS::AutoScaling::AutoScalingGroup"
TEMPLATE_ID_TAG = "aws:ec2launchtemplate:id"
TEMPLATE_VERSION_TAG = "aws:ec2launchtemplate:version"
CLUSTER_TAG_PREFIX = cluster_tag_key("")
MAX_GROUPS = 50  # DescribeAutoScalingGroups' limit of names per call; a pool has one group per zone at most


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
    group: str = ""  # its auto scaling group ("" for a Karpenter pool's)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for Step Functions payloads."""
        return asdict(self)


@dataclass(frozen=True)
class GroupInventory:
    """One auto scaling group of a pool: its name, zones and sizes, and the launch template version it launches."""

    name: str
    zones: list[str]
    launch_template_version: str
    desired: int
    min: int
    max: int


@dataclass(frozen=True)
class NodePoolInventory:
    """The groups of a node-pool stack: what they launch now, their sizes and their instances.

    `launch_template_version` is a number ($Latest and $Default resolved); `instance_types` are the types
    the group launches (a mixed instances policy's overrides, else the launch template's); `spot` is None
    when a mixed instances policy launches both kinds. With several groups (one per zone), `asg_name` names them
    all (for people: calls take `groups`), the launch template is the first group's, and `desired`, `min` and
    `max` are the sums of the groups' sizes, as CLM counts a pool (aws_asg.go Get).
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
    groups: list[GroupInventory] = field(default_factory=list)

    @property
    def group_names(self) -> list[str]:
        """The names of the pool's groups, in the stack's order."""
        return [group.name for group in self.groups]

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


def node_pool_inventory(
    cfn: Any, autoscaling: Any, ec2: Any, stack_name: str, *, cluster_id: str, name: str, pool: str
) -> NodePoolInventory:
    """Read every auto scaling group of the node-pool stack and judge every instance against its own group.

    Raises NodePoolInventoryError (naming the cluster and stack) when the stack has no group, or a group is tagged
    for another cluster or pool (`kubernetes.io/cluster/<name>`, the cluster's Cluster.name, `kubernetes.io/node-pool`,
    `NodePool`).
    """
    groups = _groups(cfn, autoscaling, stack_name, cluster_id)
    for group in groups:
        _check_owner(group, stack_name, (cluster_id, name), pool)
    judged = [(group, _target(ec2, group, stack_name, cluster_id)) for group in groups]
    instances = []
    for group, target in judged:
        described = _ec2_instances(ec2, group)
        instances += [_instance(r, described.get(r["InstanceId"]), target, group) for r in group["Instances"]]
    first = judged[0][1]
    return NodePoolInventory(
        stack_name=stack_name,
        asg_name=", ".join(group["AutoScalingGroupName"] for group in groups),
        launch_template_id=first.template_id,
        launch_template_name=first.template_name,
        launch_template_version=first.version,
        instance_types=first.instance_types,
        spot=first.spot,
        desired=sum(group["DesiredCapacity"] for group in groups),
        min=sum(group["MinSize"] for group in groups),
        max=sum(group["MaxSize"] for group in groups),
        instances=instances,
        groups=[_group_inventory(group, target) for group, target in judged],
    )


def _group_inventory(group: dict[str, Any], target: _Target) -> GroupInventory:
    return GroupInventory(
        name=group["AutoScalingGroupName"],
        zones=sorted(group.get("AvailabilityZones") or []),
        launch_template_version=target.version,
        desired=group["DesiredCapacity"],
        min=group["MinSize"],
        max=group["MaxSize"],
    )


def _groups(cfn: Any, autoscaling: Any, stack_name: str, cluster_id: str) -> list[dict[str, Any]]:
    """The stack's groups as DescribeAutoScalingGroups describes them, in the stack's order."""
    try:
        pages = cfn.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        names = [
            resource["PhysicalResourceId"]
            for page in pages
            for resource in page["StackResourceSummaries"]
            if resource["ResourceType"] == GROUP_TYPE and resource.get("PhysicalResourceId")
        ]
    except ClientError as exc:
        raise NodePoolInventoryError(error_message(exc), cluster_id, stack_name) from None
    if not names:
        raise NodePoolInventoryError(f"a node-pool stack needs an {GROUP_TYPE}, it has none", cluster_id, stack_name)
    if len(names) > MAX_GROUPS:
        raise NodePoolInventoryError(
            f"a node-pool stack has at most {MAX_GROUPS} {GROUP_TYPE} resources, it has {len(names)}",
            cluster_id,
            stack_name,
        )
    described = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=names)["AutoScalingGroups"]
    by_name = {group["AutoScalingGroupName"]: group for group in described}
    missing = [name for name in names if name not in by_name]
    if missing:
        raise NodePoolInventoryError(f"auto scaling group {missing[0]} does not exist", cluster_id, stack_name)
    return [by_name[name] for name in names]


def _check_owner(group: dict[str, Any], stack_name: str, cluster: tuple[str, str], pool: str) -> None:
    """Refuse a group whose tags give it to another cluster or another pool (a group without them is the stack's);
    `cluster`: the cluster's id and name."""
    tags = {tag["Key"]: tag["Value"] for tag in group.get("Tags", [])}
    cluster_id, name = cluster
    own_cluster = cluster_tag_key(name)
    name = group["AutoScalingGroupName"]
    others = [key for key in tags if key.startswith(CLUSTER_TAG_PREFIX) and key != own_cluster]
    problems = [f"tag {key} (another cluster's)" for key in sorted(others)]
    if own_cluster in tags and tags[own_cluster] != OWNED:
        problems.append(f"tag {own_cluster}={tags[own_cluster]} (not {OWNED})")
    for key in (NODE_POOL_TAG, NODE_POOL_TAG_LEGACY):
        if key in tags and tags[key] != pool:
            problems.append(f"tag {key}={tags[key]} (node pool {pool} expected)")
    if problems:
        raise NodePoolInventoryError(
            f"auto scaling group {name} of node pool {pool} is tagged for another owner: {'; '.join(problems)}; "
            "CLM does not touch it",
            cluster_id,
            stack_name,
        )


def _target(ec2: Any, group: dict[str, Any], stack_name: str, cluster_id: str) -> _Target:
    policy = group.get("MixedInstancesPolicy") or {}
    spec = group.get("LaunchTemplate") or policy.get("LaunchTemplate", {}).get("LaunchTemplateSpecification")
    if not spec:
        raise NodePoolInventoryError(
            f"auto scaling group {group['AutoScalingGroupName']} has no launch template "
            "(launch configurations are not supported)",
            cluster_id,
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


def _ec2_instances(ec2: Any, group: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """EC2's view of the group's instances (tags, type, lifecycle, launch time), by id (clm.stacks.ec2_instances)."""
    return group_instances(ec2, group["AutoScalingGroupName"], (r["InstanceId"] for r in group["Instances"]))


def _instance(
    record: dict[str, Any], described: dict[str, Any] | None, target: _Target, group: dict[str, Any]
) -> InstanceInfo:
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
        group=group["AutoScalingGroupName"],
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
