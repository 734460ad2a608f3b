"""The roles a CloudFormation resource acts on besides itself, as IAM asks about them.

- ``iam:PassRole``: the roles a resource hands to a service. An instance profile's roles (AddRoleToInstanceProfile
  passes them), an instance's profile, the profile of the launch template a group launches from (to EC2), an EKS
  cluster's role (to EKS). The resource is the role's ARN with its path, ``iam:PassedToService`` the service.
- A policy resource's role calls (``iam:PutRolePolicy`` of ``AWS::IAM::Policy``, ``iam:AttachRolePolicy`` of
  ``AWS::IAM::ManagedPolicy``): one request per role it names, with that role's ``iam:PermissionsBoundary``.

Types not listed here return None (the caller records the permission as not judged).
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.iam import lookups
from clm_sandbox.iam.policy import Request

EC2 = "ec2.amazonaws.com"
PASSED_TO = {"AWS::EKS::Cluster": "eks.amazonaws.com"}  # the others pass roles to EC2
ROLE_POLICY_TYPES = frozenset({"AWS::IAM::Policy", "AWS::IAM::RolePolicy", "AWS::IAM::ManagedPolicy"})
ROLE_POLICY_ACTIONS = frozenset(
    {
        "iam:PutRolePolicy",
        "iam:GetRolePolicy",
        "iam:DeleteRolePolicy",
        "iam:AttachRolePolicy",
        "iam:DetachRolePolicy",
    }
)
_PASS_KEYS = frozenset({"iam:passedtoservice"})
_ROLE_KEYS = frozenset({"iam:permissionsboundary"})


def passed_roles(stack: Any, resource_type: str, properties: dict[str, Any]) -> list[Request] | None:
    """An iam:PassRole request for each role the resource passes; None for a type this module does not know."""
    account, region = stack.account_id, stack.region_name
    if resource_type == "AWS::IAM::InstanceProfile":
        roles = [lookups.role(account, name).arn for name in properties.get("Roles") or []]
    elif resource_type == "AWS::EC2::Instance":
        roles = _profile_roles(account, properties.get("IamInstanceProfile"))
    elif resource_type == "AWS::AutoScaling::AutoScalingGroup":
        roles = _profile_roles(account, _group_profile(account, region, properties))
    elif resource_type == "AWS::EKS::Cluster":
        roles = [lookups.role(account, properties["RoleArn"]).arn] if properties.get("RoleArn") else []
    else:
        return None
    context = {"iam:passedtoservice": PASSED_TO.get(resource_type, EC2)}
    return [Request("iam:PassRole", arn, context, _PASS_KEYS) for arn in dict.fromkeys(roles)]


def policy_roles(stack: Any, action: str, properties: dict[str, Any]) -> list[Request]:
    """One request of ``action`` per role the policy resource names (``Roles``, or ``RoleName``)."""
    names = list(properties.get("Roles") or []) + ([properties["RoleName"]] if properties.get("RoleName") else [])
    requests = []
    for name in dict.fromkeys(names):
        role = lookups.role(stack.account_id, name)
        context: dict[str, Any] = {"iam:permissionsboundary": role.boundary} if role.boundary else {}
        requests.append(Request(action, role.arn, context, _ROLE_KEYS))
    return requests


def _profile_roles(account: str, profile: str | None) -> list[str]:
    return lookups.instance_profile_roles(account, profile) if profile else []


def _group_profile(account: str, region: str, properties: dict[str, Any]) -> str | None:
    """The instance profile of the launch template a group launches from (directly or in a mixed policy)."""
    mixed = (properties.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}
    spec = properties.get("LaunchTemplate") or mixed.get("LaunchTemplateSpecification")
    return lookups.launch_template_profile(account, region, spec) if spec else None
