"""What CloudFormation does with a stack's service role, judged against that role before each resource operation.

On AWS, CloudFormation's resource handlers call the service APIs with the stack's role (``RoleARN``); a handler
whose call the role does not allow fails the resource (``CREATE_FAILED``: "... is not authorized to perform ...")
and the stack rolls back. moto creates resources with no permission at all. Here every permission the resource
type's handler lists (CloudFormation's resource schemas, as cfn-lint ships them) is judged:

- an action that acts on this resource's type, against the resource's ARN (named from its properties, or ``*``
  for an id not assigned yet), with the condition keys of the request (``iam:PermissionsBoundary``,
  ``iam:PolicyARN``, ``aws:RequestTag/*``, ``aws:TagKeys``);
- an action that supports no resource-level permission, against ``*``;
- ``iam:PassRole`` against each role the resource hands to a service (clm_sandbox.iam.targets: an instance
  profile's roles, the profile of a group's launch template or of an instance, an EKS cluster's role), and a
  policy resource's role calls (``iam:PutRolePolicy`` of an ``AWS::IAM::Policy``) against each role it names,
  with that role's ``iam:PermissionsBoundary``;
- any other action on another resource (``ec2:RunInstances`` of a group's subnets) is recorded as not judged at
  run time: tests/unit/test_cluster_stack_role.py checks it against the role's statements;
- a permission the ClusterStackRole leaves out on purpose (a property the stacks do not use, so the handler does
  not call it) is recorded as skipped with the reason.

Stacks without a service role run with their caller's rights (the harness's, which are not judged).
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

from clm_sandbox.iam import catalog, principals, record, targets
from clm_sandbox.iam.enforcement import enforcing
from clm_sandbox.iam.policy import CannotJudge, Decision, Request, evaluate, wildcard_match

SESSION = "AWSCloudFormation"
_VARIABLE = re.compile(r"\$\{(\w+)\}")
PROPERTY_OF = {"GroupFriendlyName": "AutoScalingGroupName", "ClusterName": "Name"}  # ARN variable -> property
NOT_JUDGED = "acts on another resource: not judged at run time (tests/unit/test_cluster_stack_role.py)"


class StackRoleDenied(Exception):
    """The stack's role does not allow what the resource handler calls (CloudFormation's AccessDenied)."""

    error_type = "AccessDenied"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def judge(stack: Any, resource_type: str, operation: str, properties: dict[str, Any], physical_id: str) -> None:
    """Raise StackRoleDenied unless the stack's role allows every permission of the type's ``operation`` handler
    (``create``, ``update`` or ``delete``) on this resource; no-op for stacks without a role."""
    if stack is None or not getattr(stack, "role_arn", None) or not enforcing():
        return
    who = principals.Principal(stack.role_arn, SESSION, stack.account_id)
    identity, boundary = principals.role_policies(stack.role_arn)
    arn = resource_arn(stack, resource_type, properties, physical_id)
    left_out = left_out_on_purpose().get(resource_type, {})
    for action in handler_permissions(stack.region_name, resource_type, operation):
        if action in left_out:  # the handler calls it only for properties CLM's stacks do not use
            record.add(
                record.Judgement(SESSION, who.role_arn, action, f"({resource_type})", "skipped", left_out[action])
            )
            continue
        requests = _requests(stack, resource_type, action, arn, properties)
        if requests is None:
            record.add(record.Judgement(SESSION, who.role_arn, action, f"({resource_type})", "unchecked", NOT_JUDGED))
            continue
        for request in requests:
            _decide(who, request.with_keys(who.keys(stack.region_name)), identity, boundary)


def _decide(who: principals.Principal, request: Request, identity: Any, boundary: Any) -> None:
    try:
        decision = evaluate(request, identity, boundary)
    except CannotJudge as exc:
        decision = Decision(False, f"the sandbox cannot judge it: {exc}")
    outcome = "allowed" if decision.allowed else "denied"
    record.add(record.Judgement(SESSION, who.role_arn, request.action, request.resource, outcome, decision.reason))
    if not decision.allowed:
        raise StackRoleDenied(
            f"User: {who.arn} is not authorized to perform: {request.action} on resource: {request.resource} "
            f"because {decision.reason}"
        )


def _requests(
    stack: Any, resource_type: str, action: str, arn: str, properties: dict[str, Any]
) -> list[Request] | None:
    """What the handler's ``action`` asks IAM: on the resource itself, on the roles it passes (iam:PassRole) or
    whose policies it changes; None when the sandbox does not know what it acts on."""
    if action == "iam:PassRole":
        return targets.passed_roles(stack, resource_type, properties)
    if resource_type in targets.ROLE_POLICY_TYPES and action in targets.ROLE_POLICY_ACTIONS:
        return targets.policy_roles(stack, action, properties)
    request = _request(action, arn, properties)
    return None if request is None else [request]


@functools.cache
def left_out_on_purpose() -> dict[str, dict[str, str]]:
    """The handler permissions the ClusterStackRole leaves out, with why (infra.cluster_stack_role.OMITTED): the
    handlers call them only for properties the stacks do not set, so they are not judged here either."""
    try:
        from infra.cluster_stack_role import OMITTED
    except ImportError as exc:  # the sandbox outside this repository: judge every permission, and say so
        logging.getLogger(__name__).warning(
            "infra.cluster_stack_role cannot be imported (%s): every handler permission of a cluster stack's resources "
            "is judged, also those the ClusterStackRole leaves out on purpose (run the sandbox from CLM's repository)",
            exc,
        )
        return {}
    return OMITTED


@functools.lru_cache(maxsize=256)
def handler_permissions(region: str, resource_type: str, operation: str) -> tuple[str, ...]:
    """The permissions CloudFormation's handler of ``operation`` needs for the type (none for unknown types), as
    `clm render --stack-policy` reads them."""
    from clm.cli.stack_policy import handler_permissions as listed

    return listed(region, resource_type, (operation,))


def resource_arn(stack: Any, resource_type: str, properties: dict[str, Any], physical_id: str) -> str:
    """The resource's ARN as its type's create action names it: names from the properties, the physical id,
    ``*`` for what is not assigned yet; a physical id that is an ARN (load balancers, listeners, target groups) is
    the resource's."""
    if physical_id.startswith("arn:"):
        return physical_id
    primary = _primary_action(stack.region_name, resource_type)
    formats = catalog.arn_formats(primary) if primary else ()
    arn_format = _own_format(formats, resource_type)
    if arn_format is None:
        return "*"

    def value(name: str) -> str:
        if name in ("Partition", "Region", "Account"):
            return {"Partition": "aws", "Region": stack.region_name, "Account": stack.account_id}[name]
        if name == "GroupId":  # an auto scaling group's generated id, never a property
            return "*"
        if name.endswith("NameWithPath"):  # roles, instance profiles: a generated name is under the path too
            own = properties.get(name.removesuffix("WithPath")) or physical_id or "*"
            return f"{(properties.get('Path') or '/').lstrip('/')}{own}"
        named = properties.get(PROPERTY_OF.get(name, name)) or properties.get(name.removesuffix("Name"))
        return str(named or physical_id or "*")  # `Bucket` of a bucket policy names its BucketName

    return _VARIABLE.sub(lambda m: value(m.group(1)), arn_format)


def _own_format(formats: tuple[str, ...], resource_type: str) -> str | None:
    """The ARN format of the type itself among an action's (``vpc/${VpcId}`` for AWS::EC2::VPC), or the one
    format whose resource is a name alone (``arn:${Partition}:s3:::${BucketName}``, an SQS queue's)."""
    name = resource_type.rsplit("::", 1)[-1]
    kebab = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()
    for arn_format in formats:
        resource = arn_format.split(":", 5)[-1].lower()
        if resource.startswith((f"{kebab}/", f"{kebab}:", f"{name.lower()}/", f"{name.lower()}:")):
            return arn_format
    if len(formats) == 1 and _VARIABLE.fullmatch(formats[0].split(":", 5)[-1]):
        return formats[0]
    return None


def _primary_action(region: str, resource_type: str) -> str | None:
    """The type's own create call (``iam:CreateRole`` for AWS::IAM::Role), which names its resource type; for a
    type made by a Put on another resource (``s3:PutBucketPolicy`` of AWS::S3::BucketPolicy), that call."""
    service = resource_type.split("::")[1].lower()
    own = [a for a in handler_permissions(region, resource_type, "create") if a.split(":")[0].lower() == service]
    for verb in ("Create", "Put"):
        for action in own:
            if action.split(":", 1)[1].startswith(verb):
                return action
    return None


def _request(action: str, arn: str, properties: dict[str, Any]) -> Request | None:
    formats = catalog.arn_formats(action)
    if not formats or formats == ("*",) or arn == "*":
        return Request(action, "*") if formats == ("*",) else None
    if not any(wildcard_match(_VARIABLE.sub("*", f), arn) for f in formats):
        return None
    tags = {t["Key"]: t["Value"] for t in properties.get("Tags") or [] if isinstance(t, dict) and "Key" in t}
    context: dict[str, Any] = {f"aws:requesttag/{k}".lower(): v for k, v in tags.items()}
    if tags:
        context["aws:tagkeys"] = list(tags)
    if properties.get("PermissionsBoundary"):
        context["iam:permissionsboundary"] = properties["PermissionsBoundary"]
    if properties.get("ManagedPolicyArns"):
        context["iam:policyarn"] = list(properties["ManagedPolicyArns"])
    known = frozenset({"aws:requesttag/", "aws:tagkeys", "iam:permissionsboundary", "iam:policyarn"})
    return Request(action, arn, context, known)
