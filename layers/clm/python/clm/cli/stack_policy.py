"""What CloudFormation's ClusterStackRole needs beyond its built-in rights to deploy a configuration's stacks.

The role (infra.cluster_stack_role) grants the handler permissions of the resource types of CLM's reference
configuration (COVERED_TYPES), except those a handler calls only for properties the reference does not set
(PROPERTY_PERMISSIONS). A configuration that uses other types, or sets those properties, needs a managed policy
on top (context `clm:clusterStackPolicyArns`). `needed_permissions` reads the rendered stacks and lists, by
resource type, what CloudFormation's resource schemas (as cfn-lint ships them) say the create, update and delete
handlers call; `policy_template` writes it as a CloudFormation template of that managed policy
(`clm render --stack-policy`). IAM types other than roles and instance profiles are left out, named, and so is
every action clm.cli.policy_actions refuses (wildcards, IAM beyond roles and instance profiles, STS,
Organizations, Identity Center), with the types that list it: CLM's permissions boundary does not hold them.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clm.cli.errors import CliError
from clm.cli.policy_actions import refusal

HANDLERS = ("create", "update", "delete")
COVERED_TYPES = frozenset(
    {
        "AWS::AutoScaling::AutoScalingGroup",
        "AWS::EC2::LaunchTemplate",
        "AWS::EC2::SecurityGroup",
        "AWS::EC2::Subnet",
        "AWS::EC2::VPC",
        "AWS::IAM::InstanceProfile",
        "AWS::IAM::Role",
    }
)
# Handler permissions of covered types that the role does not grant, needed only when a template sets the property.
_ELB_DESCRIBE = "elasticloadbalancing:Describe*"
PROPERTY_PERMISSIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "AWS::AutoScaling::AutoScalingGroup": {
        "MetricsCollection": ("autoscaling:EnableMetricsCollection", "autoscaling:DisableMetricsCollection"),
        "NotificationConfigurations": (
            "autoscaling:PutNotificationConfiguration",
            "autoscaling:DeleteNotificationConfiguration",
        ),
        "LifecycleHookSpecificationList": ("autoscaling:PutLifecycleHook", "autoscaling:DeleteLifecycleHook"),
        "LoadBalancerNames": ("autoscaling:AttachLoadBalancers", "autoscaling:DetachLoadBalancers", _ELB_DESCRIBE),
        "TargetGroupARNs": (
            "autoscaling:AttachLoadBalancerTargetGroups",
            "autoscaling:DetachLoadBalancerTargetGroups",
            _ELB_DESCRIBE,
        ),
        "TrafficSources": (
            "autoscaling:AttachTrafficSources",
            "autoscaling:DetachTrafficSources",
            "vpc-lattice:RegisterTargets",
            "vpc-lattice:DeregisterTargets",
            "vpc-lattice:GetTargetGroup",
            "vpc-lattice:ListTargets",
        ),
    },
    "AWS::EC2::Subnet": {
        "Ipv6CidrBlock": ("ec2:AssociateSubnetCidrBlock", "ec2:DisassociateSubnetCidrBlock"),
    },
    "AWS::EC2::VPC": {"InstanceTenancy": ("ec2:ModifyVpcTenancy",)},
}
NOT_GENERATED = (
    "IAM beyond roles and instance profiles: CLM's permissions boundary does not hold users, groups, policies or "
    "identity providers, so a configuration writer could use them to act beyond it; the ClusterStackRole denies "
    "their changes whatever extra policies allow: make them outside CLM's stacks"
)


class UnknownRegion(CliError):
    """cfn-lint has no resource schemas for a cluster's region, so what its stacks need cannot be read."""

    def __init__(self, region: str, where: str):
        from cfnlint.helpers import REGIONS

        super().__init__(
            f"{where}: region {region!r} is not one cfn-lint knows, so its resource schemas (the handler permissions "
            f"the policy is made of) cannot be read; known: {', '.join(REGIONS)}. Use a cfn-lint that knows it, or "
            "render without --stack-policy and write the ClusterStackRole's extra policy yourself"
        )


@dataclass
class StackPermissions:
    """What a configuration's stacks need beyond the ClusterStackRole: actions and files by resource type, the
    types left out of a generated policy with the reason, and the actions dropped (reason -> action -> types)."""

    actions: dict[str, set[str]] = field(default_factory=dict)
    used_in: dict[str, set[str]] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    dropped: dict[str, dict[str, set[str]]] = field(default_factory=dict)

    def add(self, resource_type: str, actions: Iterable[str], file: str) -> None:
        """Record that `file` needs `actions` for `resource_type`: the type left out when not to be generated, each
        action refused by clm.cli.policy_actions dropped with its reason."""
        actions = set(actions)
        if not actions:
            return
        self.used_in.setdefault(resource_type, set()).add(file)
        if resource_type.startswith("AWS::IAM::") and resource_type not in COVERED_TYPES:
            self.left_out[resource_type] = NOT_GENERATED
            return
        for action in actions:
            reason = refusal(action)
            if reason is None:
                self.actions.setdefault(resource_type, set()).add(action)
            else:
                self.dropped.setdefault(reason, {}).setdefault(action, set()).add(resource_type)


def handler_permissions(region: str, resource_type: str, handlers: Iterable[str] = HANDLERS) -> tuple[str, ...]:
    """The permissions the type's handlers list, in the schema's order, each once (none for types cfn-lint does not
    know, such as Custom::*, which CloudFormation deploys without calling anything with the role)."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER
    from cfnlint.schema._exceptions import ResourceNotFoundError

    known_region(region, f"resource type {resource_type}")
    try:
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, resource_type).schema
    except ResourceNotFoundError:
        return ()
    listed = schema.get("handlers", {})
    return tuple(dict.fromkeys(a for handler in handlers for a in listed.get(handler, {}).get("permissions", [])))


def known_region(region: str, where: str) -> None:
    """Raise UnknownRegion (naming `where`) unless cfn-lint has the resource schemas of `region`."""
    from cfnlint.helpers import REGIONS

    if region not in REGIONS:
        raise UnknownRegion(region, where)


def resource_needs(region: str, resource: Mapping[str, Any]) -> set[str]:
    """What deploying one resource of a template needs beyond the role's built-in rights."""
    resource_type = resource.get("Type", "")
    if resource_type not in COVERED_TYPES:
        return set(handler_permissions(region, resource_type))
    properties = resource.get("Properties") or {}
    gated = PROPERTY_PERMISSIONS.get(resource_type, {})
    return {action for name, actions in gated.items() if name in properties for action in actions}


def needed_permissions(stacks: Iterable[tuple[str, str, Mapping[str, Any]]]) -> StackPermissions:
    """Everything the (region, file, template) stacks need beyond the ClusterStackRole's built-in rights."""
    needed = StackPermissions()
    for region, file, template in stacks:
        for resource in (template.get("Resources") or {}).values():
            needed.add(resource.get("Type", ""), resource_needs(region, resource), file)
    return needed


def policy_template(needed: StackPermissions, description: str) -> str:
    """A CloudFormation template of the managed policies granting `needed`, one statement a resource type, as few
    policies as IAM's size quota allows (output PolicyArn: their ARNs, comma-separated, as context
    clm:clusterStackPolicyArns takes them), with comments naming the files that use each type and what was left
    out."""
    from clm.yamlutil import dump

    statements = [
        {"Sid": _sid(resource_type), "Effect": "Allow", "Action": sorted(actions), "Resource": "*"}
        for resource_type, actions in sorted(needed.actions.items())
    ]
    names = {f"Policy{index or ''}": group for index, group in enumerate(_within_quota(statements))}
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"CLM: extra rights of the ClusterStackRole for {description}"[:1024],
        "Resources": {
            name: {
                "Type": "AWS::IAM::ManagedPolicy",
                "Properties": {
                    "Description": "CLM ClusterStackRole: resource types beyond its built-in rights",
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": group},
                },
            }
            for name, group in names.items()
        },
        "Outputs": {"PolicyArn": {"Value": {"Fn::Join": [",", [{"Ref": name} for name in names]]}}},
    }
    return _header(needed) + dump(template)


POLICY_SIZE = 6_144  # IAM's quota for a managed policy's document, counted without whitespace


def _within_quota(statements: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The statements in order, grouped so that each group's policy document stays within POLICY_SIZE."""
    groups: list[list[dict[str, Any]]] = [[]]
    for statement in statements:
        if groups[-1] and _size(groups[-1] + [statement]) > POLICY_SIZE:
            groups.append([])
        groups[-1].append(statement)
    return groups


def _size(statements: list[dict[str, Any]]) -> int:
    document = {"Version": "2012-10-17", "Statement": statements}
    return len(re.sub(r"\s", "", json.dumps(document)))


def _sid(resource_type: str) -> str:
    """`AWS::S3::BucketPolicy` -> `S3BucketPolicy` (statement ids are alphanumeric)."""
    return re.sub(r"[^A-Za-z0-9]", "", resource_type.removeprefix("AWS::"))


def _header(needed: StackPermissions) -> str:
    lines = [
        "What CloudFormation's ClusterStackRole needs beyond its built-in rights to deploy these stacks: the create,",
        "update and delete handler permissions of CloudFormation's resource schemas (written by `clm render",
        '--stack-policy`). Review it: every statement is on Resource "*"; scope what you can to your names. The',
        "role's own denials hold whatever this allows: roles only under CLM's path and boundary, no change to IAM",
        "users, groups, policies or identity providers, none to CLM's own buckets, nothing on its functions, bus,",
        "state machines, table, key or cluster secrets. Deploy it, then:",
        "  cdk deploy -c clm:clusterStackPolicyArns=<PolicyArn output>",
        "",
        "Resource types and the files that use them:",
        *(f"  {kind}: {', '.join(sorted(files))}" for kind, files in sorted(needed.used_in.items())),
    ]
    if needed.left_out:
        lines += ["", "Left out (not in this policy):"]
        lines += [f"  {kind}: {reason}" for kind, reason in sorted(needed.left_out.items())]
    if needed.dropped:
        lines += ["", "Dropped (listed by the schemas, not in this policy), with the types that list them:"]
        for reason, actions in sorted(needed.dropped.items()):
            lines += [f"  {line}" for line in textwrap.wrap(f"{reason}:", 112)]
            lines += [f"    {action} ({', '.join(sorted(actions[action]))})" for action in sorted(actions)]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)
