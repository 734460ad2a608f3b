"""One resource of a stack at a time, as CloudFormation reports it: events, failures naming the resource, and
the properties each resource was last deployed with.

moto 5.2.5 writes no resource events and fails the whole API call when a resource cannot be created. Here each
create, update and delete of a resource writes CloudFormation's events (``CREATE_IN_PROGRESS``, then
``CREATE_COMPLETE``, or ``CREATE_FAILED`` with the reason), an error becomes :class:`ResourceFailed` naming the
resource (the stack operation turns it into a rollback: cloudformation_operations), EC2 resources get the
``aws:cloudformation:*`` tags whenever they are created, what each resource handler calls with the stack's
service role is judged against that role (clm_sandbox.iam.stack_role), and the *resolved* properties (Refs and GetAtts
replaced by values) are kept, so that an update changes exactly the resources whose resolved properties
changed (cloudformation_updates).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.cloudformation.exceptions import CloudFormationError, ExportNotFound

from clm_sandbox.patches._patching import original, replace

STACK_NAME_TAG = "aws:cloudformation:stack-name"
STACK_ID_TAG = "aws:cloudformation:stack-id"
LOGICAL_ID_TAG = "aws:cloudformation:logical-id"
_DEPLOYED = "clm_sandbox_deployed"  # attribute of moto's ResourceMap: logical id -> resolved resource


class ResourceFailed(CloudFormationError):
    """A resource could not be created, updated or deleted; its failure event is already written."""

    code = "ValidationError"

    def __init__(self, logical_id: str, resource_type: str, status: str, reason: str):
        self.logical_id = logical_id
        self.resource_type = resource_type
        self.status = status
        self.reason = reason
        super().__init__(f"resource {logical_id} ({resource_type}) {status}: {reason}")


def install() -> None:
    """Route moto's creation of stack resources through :func:`create` (idempotent)."""
    from moto.cloudformation import parsing

    replace(parsing, "parse_and_create_resource", create)  # what ResourceMap's lazy lookup calls


def deployed(resources_map: Any) -> dict[str, Any]:
    """The resolved resources (as moto's template cleaning gives them) last deployed, by logical id.

    In creation order; only resources created through this module (every one once installed).
    """
    return vars(resources_map).setdefault(_DEPLOYED, {})


def create(
    logical_id: str, resource_json: dict[str, Any], resources_map: Any, account_id: str, region_name: str
) -> Any:
    """moto's ``parse_and_create_resource`` with events, failures naming the resource, tags and the record."""
    from moto.cloudformation import parsing

    create_resource = original(parsing, "parse_and_create_resource")
    resource_type = resource_json.get("Type", "")
    if not _deployable(resource_json, resources_map):
        if resource_type.startswith("AWS::") and _condition_holds(resource_json, resources_map):
            with _failing(resources_map, logical_id, resource_type, "CREATE_FAILED"):
                _judge_role(resources_map, _resolved_if_possible(resource_json, resources_map), "create", "")
        return create_resource(logical_id, resource_json, resources_map, account_id, region_name)  # skips it
    with _failing(resources_map, logical_id, resource_type, "CREATE_FAILED"):
        resolved = _resolve(resource_json, resources_map)  # creates what it refers to first
    event(resources_map, logical_id, resource_type, "CREATE_IN_PROGRESS")
    with _failing(resources_map, logical_id, resource_type, "CREATE_FAILED"):
        _judge_role(resources_map, resolved, "create", "")
        resource = create_resource(logical_id, resource_json, resources_map, account_id, region_name)
        _tag(resources_map, logical_id, resource)
    deployed(resources_map)[logical_id] = resolved
    event(resources_map, logical_id, resource_type, "CREATE_COMPLETE", physical_id=physical_id(resource))
    return resource


def update(resources_map: Any, logical_id: str) -> None:
    """Update the resource when its resolved properties differ from the deployed ones (else touch nothing).

    Resource types moto cannot update are replaced: the old resource deleted, a new one created.
    """
    from moto.cloudformation import parsing

    resource_json = resources_map._resource_json_map[logical_id]
    resource_type = resource_json.get("Type", "")
    with _failing(resources_map, logical_id, resource_type, "UPDATE_FAILED"):
        resolved = _resolve(resource_json, resources_map)
    if resolved == deployed(resources_map).get(logical_id):
        return
    event(resources_map, logical_id, resource_type, "UPDATE_IN_PROGRESS")
    account_id, region_name = resources_map._account_id, resources_map._region_name
    with _failing(resources_map, logical_id, resource_type, "UPDATE_FAILED"):
        _judge_role(resources_map, resolved, "update", physical_id(resources_map._parsed_resources.get(logical_id)))
        resource = parsing.parse_and_update_resource(logical_id, resource_json, resources_map, account_id, region_name)
        if resource is None:
            resources_map._delete_resource(resources_map[logical_id], deployed(resources_map)[logical_id])
            resource = original(parsing, "parse_and_create_resource")(
                logical_id, resource_json, resources_map, account_id, region_name
            )
        _tag(resources_map, logical_id, resource)
    resources_map._parsed_resources[logical_id] = resource
    deployed(resources_map)[logical_id] = resolved
    event(resources_map, logical_id, resource_type, "UPDATE_COMPLETE", physical_id=physical_id(resource))


def delete(resources_map: Any, logical_id: str) -> bool:
    """Delete a deployed resource; False (with a DELETE_FAILED event) when that fails."""
    resolved = deployed(resources_map)[logical_id]
    resource = resources_map._parsed_resources.get(logical_id)
    resource_type, physical = resolved.get("Type", ""), physical_id(resource)
    event(resources_map, logical_id, resource_type, "DELETE_IN_PROGRESS", physical_id=physical)
    try:
        _judge_role(resources_map, resolved, "delete", physical)
        if resource is not None:
            resources_map._delete_resource(resource, resolved)
    except Exception as exc:  # any error of moto's backends is this resource's failure
        event(resources_map, logical_id, resource_type, "DELETE_FAILED", failure_reason(exc), physical)
        return False
    resources_map._parsed_resources.pop(logical_id, None)
    deployed(resources_map).pop(logical_id)
    event(resources_map, logical_id, resource_type, "DELETE_COMPLETE", physical_id=physical)
    return True


def event(
    resources_map: Any,
    logical_id: str,
    resource_type: str,
    status: str,
    reason: str | None = None,
    physical_id: str = "",
) -> None:
    """Append a resource event to the stack the resource map belongs to (and notify its SNS topics)."""
    from moto.cloudformation.models import Event

    stack = _stack(resources_map)
    if stack is None:  # a resource map without a stack in the backend: nothing to report to
        return
    new_event = Event(stack.stack_id, stack.name, logical_id, physical_id, resource_type, status, reason, None)
    new_event.sendToSns(stack.account_id, stack.region_name, stack.notification_arns)
    stack.events.append(new_event)


def failure_reason(exc: BaseException) -> str:
    """CloudFormation's wording for a resource handler's error."""
    code = getattr(exc, "error_type", None) or getattr(exc, "code", None)
    message = getattr(exc, "message", None) or str(exc)
    code = code if isinstance(code, str) else type(exc).__name__
    return f'Resource handler returned message: "{message}" (ErrorCode: {code})'


def physical_id(resource: Any) -> str:
    """The physical id of a moto resource ('' when it has none)."""
    value = getattr(resource, "physical_resource_id", None)
    return "" if value is None else str(value)


def _deployable(resource_json: dict[str, Any], resources_map: Any) -> bool:
    """A resource moto models whose Condition (if any) holds."""
    from moto.cloudformation import parsing

    resource_type = resource_json.get("Type", "")
    if not (resource_type.startswith("Custom::") or resource_type in parsing.get_model_map()):
        return False
    return _condition_holds(resource_json, resources_map)


def _condition_holds(resource_json: dict[str, Any], resources_map: Any) -> bool:
    condition = resource_json.get("Condition")
    return not condition or bool(resources_map.lazy_condition_map[condition])


def _resolved_if_possible(resource_json: dict[str, Any], resources_map: Any) -> dict[str, Any]:
    """A type moto does not model (an S3 bucket policy, an EKS cluster): AWS still calls its handler with the
    stack's role, so that is judged, on its resolved properties where moto can resolve them."""
    from moto.cloudformation import parsing

    try:
        return copy.deepcopy(parsing.clean_json(copy.deepcopy(resource_json), resources_map))
    except Exception:  # a reference moto cannot resolve: the ARN is then `*` (only unscoped calls judged)
        return {"Type": resource_json.get("Type", ""), "Properties": {}}


def _resolve(resource_json: dict[str, Any], resources_map: Any) -> dict[str, Any]:
    """The resource with every intrinsic function resolved, as moto hands it to the resource's model."""
    from moto.cloudformation import parsing

    return copy.deepcopy(parsing.parse_resource(copy.deepcopy(resource_json), resources_map)[1])


def _tag(resources_map: Any, logical_id: str, resource: Any) -> None:
    """CloudFormation's tags (and the stack's) on an EC2 resource; the stack's on a KMS key (which IAM conditions
    of the stack's owner may name: aws:ResourceTag)."""
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.core import TaggedEC2Resource
    from moto.kms.models import Key, kms_backends

    if isinstance(resource, Key) and resources_map.tags:
        backend = kms_backends[resources_map._account_id][resources_map._region_name]
        backend.tag_resource(resource.id, dict(resources_map.tags))

    if isinstance(resource, TaggedEC2Resource):
        tags = {
            **resources_map.tags,
            STACK_NAME_TAG: resources_map["AWS::StackName"],
            STACK_ID_TAG: resources_map.stack_id,
            LOGICAL_ID_TAG: logical_id,
        }
        backend = ec2_backends[resources_map._account_id][resources_map._region_name]
        backend.create_tags([resource.physical_resource_id], tags)


def _judge_role(resources_map: Any, resolved: dict[str, Any], operation: str, physical: str) -> None:
    """What CloudFormation's handler calls with the stack's service role, judged against that role
    (clm_sandbox.iam.stack_role): AccessDenied fails the resource as on AWS."""
    from clm_sandbox.iam import stack_role

    properties = resolved.get("Properties") or {}
    stack_role.judge(_stack(resources_map), resolved.get("Type", ""), operation, properties, physical)


def _stack(resources_map: Any) -> Any:
    from moto.cloudformation.models import cloudformation_backends

    backend = cloudformation_backends[resources_map._account_id][resources_map._region_name]
    return backend.stacks.get(resources_map.stack_id)


@contextmanager
def _failing(resources_map: Any, logical_id: str, resource_type: str, status: str) -> Iterator[None]:
    """Turn an error into ResourceFailed (with the failure event); a dependency's failure or a missing export
    (the stack's own failure) pass through."""
    try:
        yield
    except (ResourceFailed, ExportNotFound):
        raise
    except Exception as exc:  # any error of moto's backends is this resource's failure
        reason = failure_reason(exc)
        event(resources_map, logical_id, resource_type, status, reason)
        raise ResourceFailed(logical_id, resource_type, status, reason) from exc
