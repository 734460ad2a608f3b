"""Stack creates and updates that fail the way CloudFormation's do: the API call succeeds, the stack rolls back.

moto 5.2.5 fails the CreateStack call when a resource cannot be created and leaves the stack in
CREATE_IN_PROGRESS; a failed update raises the same way. Here a template CloudFormation would refuse (reference
to nothing, dependency cycle, missing parameter value) is still refused by the call; anything that goes wrong
while resources are deployed becomes the stack's failure:

- create: ``CREATE_IN_PROGRESS`` -> (``X CREATE_FAILED`` reason) -> ``ROLLBACK_IN_PROGRESS`` ("The following
  resource(s) failed to create: [X]. ...") -> created resources deleted -> ``ROLLBACK_COMPLETE`` (or
  ``ROLLBACK_FAILED`` when a deletion fails). A rolled back stack has no resources and no outputs.
- delete: ``DELETE_IN_PROGRESS`` -> resources deleted, dependents first, each handler's calls judged against the
  role the call passes (moto ignores DeleteStack's RoleARN and judges nothing) -> ``DELETE_COMPLETE``, or
  ``DELETE_FAILED`` ("The following resource(s) failed to delete: [X].") keeping the stack and what is left.
- update: ``UPDATE_IN_PROGRESS`` -> resources updated in dependency order -> ``UPDATE_COMPLETE_CLEANUP_IN_PROGRESS``
  -> removed resources deleted -> ``UPDATE_COMPLETE``; on a failure ``UPDATE_ROLLBACK_IN_PROGRESS`` -> the previous
  template and parameters deployed again -> ``UPDATE_ROLLBACK_COMPLETE`` (``UPDATE_ROLLBACK_FAILED`` when that fails
  too; :func:`continue_update_rollback` tries again).

A missing export (Fn::ImportValue) or an export name another stack owns fails the stack itself. The failure's
reason is the stack's StackStatusReason until the next update. UpdateStack is refused unless the stack is in a
complete state, and answers "No updates are to be performed." when template, parameters and tags are the same.
"""

from __future__ import annotations

from typing import Any

from moto.cloudformation.exceptions import AlreadyExistsException, CloudFormationError, ExportNotFound, ValidationError

from clm_sandbox.patches import cloudformation_resources
from clm_sandbox.patches.cloudformation_dependencies import TemplateError, check
from clm_sandbox.patches.cloudformation_resources import ResourceFailed
from clm_sandbox.patches.cloudformation_updates import apply, removal_order, remove

# Stack statuses from which UpdateStack is accepted.
UPDATABLE = frozenset(
    {"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE", "IMPORT_ROLLBACK_COMPLETE"}
)
ROLLBACK_REQUESTED = "Rollback requested by user."


class StackFailure(CloudFormationError):
    """The stack itself failed (not one of its resources), e.g. an export another stack owns."""

    code = "ValidationError"


FAILURES = (ResourceFailed, ExportNotFound, StackFailure)


def create_stack(backend: Any, name: str, template: str, parameters: dict[str, Any], **options: Any) -> Any:
    """CreateStack: the new stack, complete or rolled back. ``options`` are moto Stack's keyword arguments."""
    from moto.cloudformation.models import Stack
    from moto.cloudformation.utils import generate_stack_id

    if any(stack.name == name for stack in backend.stacks.values()):
        raise AlreadyExistsException(f"Stack [{name}] already exists")
    _check(Stack.parse_template(template), parameters)
    stack = Stack(
        stack_id=generate_stack_id(name, backend.region_name, backend.account_id),
        name=name,
        template=template,
        parameters=parameters,
        account_id=backend.account_id,
        region_name=backend.region_name,
        cross_stack_resources=backend.exports,
        **options,
    )
    backend.stacks[stack.stack_id] = stack
    _status(stack, "CREATE_IN_PROGRESS", "User Initiated")
    try:
        apply(stack.resource_map, stack.template_dict, parameters)
        _publish_outputs(backend, stack)
    except FAILURES as failure:
        _roll_back_create(backend, stack, failure)
    else:
        if stack.resource_map.creation_complete():  # custom resources may still be waiting for their Lambda
            stack.mark_creation_complete()
    return stack


def update_stack(
    backend: Any,
    name: str,
    template: str,
    role_arn: str | None,
    parameters: list[dict[str, Any]],
    tags: dict[str, str] | None,
) -> Any:
    """UpdateStack: the stack, updated or rolled back to its previous template and parameters."""
    stack = backend.get_stack(name)
    if stack.status not in UPDATABLE:
        raise ValidationError(message=f"Stack:{stack.stack_id} is in {stack.status} state and can not be updated.")
    new_parameters = _parameter_values(stack, parameters)
    new_template = stack.parse_template(template)
    _check(new_template, new_parameters)
    if new_template == stack.template_dict and new_parameters == stack.parameters and tags in (None, stack.tags):
        raise ValidationError(message="No updates are to be performed.")
    previous = (stack.template, stack.parameters)
    _status(stack, "UPDATE_IN_PROGRESS", "User Initiated")
    stack.template, stack.parameters = template, new_parameters
    stack._parse_template()
    try:
        stale = apply(stack.resource_map, stack.template_dict, new_parameters)
        _publish_outputs(backend, stack)
    except FAILURES as failure:
        _status(stack, "UPDATE_ROLLBACK_IN_PROGRESS", _reason(failure), failure=True)
        stack.template, stack.parameters = previous
        stack._parse_template()
        _restore(backend, stack)
        return stack
    _status(stack, "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS")
    remove(stack.resource_map, stale)
    _status(stack, "UPDATE_COMPLETE")
    stack.role_arn = role_arn
    if tags is not None:
        stack.tags = tags
    return stack


def delete_stack(backend: Any, name_or_stack_id: str, role_arn: str | None = None) -> None:
    """DeleteStack: the resources deleted dependents first, each judged against the stack's service role (the one
    the call passes, kept as the stack's from now on, as CloudFormation does; else the one it was last given);
    ``DELETE_FAILED`` naming the resources that could not be deleted, or the stack gone. No stack: nothing."""
    stack = next((s for s in backend.stacks.values() if name_or_stack_id in (s.name, s.stack_id)), None)
    if stack is None:
        return
    if stack.enable_termination_protection:
        raise ValidationError(message=f"Stack [{stack.name}] cannot be deleted while TerminationProtection is enabled")
    if role_arn:
        stack.role_arn = role_arn
    _status(stack, "DELETE_IN_PROGRESS", "User Initiated")
    resources_map = stack.resource_map
    templates = resources_map._resource_json_map
    names = [n for n in cloudformation_resources.deployed(resources_map) if _deleted_with_stack(templates.get(n))]
    failed = remove(resources_map, removal_order(templates, names))
    if failed:
        reason = f"The following resource(s) failed to delete: [{', '.join(failed)}]."
        _status(stack, "DELETE_FAILED", reason, failure=True)
        return
    _withdraw_exports(backend, stack)
    _status(stack, "DELETE_COMPLETE")
    backend.stacks.pop(stack.stack_id)
    backend.deleted_stacks[stack.stack_id] = stack


def _deleted_with_stack(resource: dict[str, Any] | None) -> bool:
    return (resource or {}).get("DeletionPolicy") != "Retain"


def continue_update_rollback(backend: Any, name: str) -> Any:
    """ContinueUpdateRollback: deploy the stack's previous template and parameters again."""
    stack = backend.get_stack(name)
    if stack.status != "UPDATE_ROLLBACK_FAILED":
        raise ValidationError(
            message=f"Stack {stack.stack_id} is in {stack.status} state and can not continue update rollback"
        )
    _status(stack, "UPDATE_ROLLBACK_IN_PROGRESS", "User Initiated")
    _restore(backend, stack)
    return stack


def _restore(backend: Any, stack: Any) -> None:
    """Bring the resources back to the stack's (previous) template: UPDATE_ROLLBACK_COMPLETE or _FAILED."""
    try:
        stale = apply(stack.resource_map, stack.template_dict, stack.parameters)
        _publish_outputs(backend, stack)
    except FAILURES as failure:
        _status(stack, "UPDATE_ROLLBACK_FAILED", _reason(failure), failure=True)
        return
    _status(stack, "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS")
    remove(stack.resource_map, stale)
    _status(stack, "UPDATE_ROLLBACK_COMPLETE")


def _roll_back_create(backend: Any, stack: Any, failure: Exception) -> None:
    from moto.cloudformation.parsing import OutputMap

    _status(stack, "ROLLBACK_IN_PROGRESS", _reason(failure), failure=True)
    resources_map = stack.resource_map
    record = cloudformation_resources.deployed(resources_map)
    failed = remove(resources_map, removal_order(resources_map._resource_json_map, list(record)))
    # What is left is what could not be deleted; moto's lazy map would create anything else again on lookup.
    resources_map._resource_json_map = {name: resources_map._resource_json_map[name] for name in failed}
    stack.output_map = OutputMap(resources_map, {"Outputs": {}}, stack.stack_id)
    _withdraw_exports(backend, stack)
    if failed:
        reason = f"The following resource(s) failed to delete: [{', '.join(failed)}]."
        _status(stack, "ROLLBACK_FAILED", reason, failure=True)
    else:
        _status(stack, "ROLLBACK_COMPLETE")


def _publish_outputs(backend: Any, stack: Any) -> None:
    """Resolve the outputs and make the stack's exports the backend's; an unresolvable output or an export
    another stack owns fails the stack."""
    stack.output_map = stack._create_output_map()
    try:
        stack.outputs  # noqa: B018 - resolves every output now, not at the next DescribeStacks
        exports = stack.exports
    except FAILURES:
        raise
    except Exception as exc:  # any error resolving an output is the stack's failure
        raise StackFailure(f"Outputs: {cloudformation_resources.failure_reason(exc)}") from exc
    for export in exports:
        owner = backend.exports.get(export.name)
        if owner is not None and owner.exporting_stack_id != stack.stack_id:
            owner_name = backend.stacks[owner.exporting_stack_id].name
            raise StackFailure(f"Export with name {export.name} is already exported by stack {owner_name}.")
    _withdraw_exports(backend, stack)
    backend.exports.update((export.name, export) for export in exports)


def _withdraw_exports(backend: Any, stack: Any) -> None:
    for name in [name for name, export in backend.exports.items() if export.exporting_stack_id == stack.stack_id]:
        del backend.exports[name]


def _parameter_values(stack: Any, parameters: list[dict[str, Any]]) -> dict[str, Any]:
    """The update's parameter values. UsePreviousValue keeps the stack's value, or its default when the stack
    used the default (moto 5.2.5 fails on that); a parameter left out takes its default, as in CloudFormation.
    """
    values = {}
    for item in parameters:
        key = item["ParameterKey"]
        if not item.get("UsePreviousValue"):
            values[key] = item.get("ParameterValue")
        elif key in stack.parameters:
            values[key] = stack.parameters[key]
    return values


def _check(template: dict[str, Any], parameters: dict[str, Any]) -> None:
    try:
        check(template, parameters)
    except TemplateError as exc:
        raise ValidationError(message=str(exc)) from None


def _reason(failure: Exception) -> str:
    if isinstance(failure, ResourceFailed):
        verb = failure.status.removesuffix("_FAILED").lower()
        return f"The following resource(s) failed to {verb}: [{failure.logical_id}]. {ROLLBACK_REQUESTED}"
    return f"{failure.message} {ROLLBACK_REQUESTED}"


def _status(stack: Any, status: str, reason: str | None = None, *, failure: bool = False) -> None:
    """Set the stack's status and write its event; a failure's reason is the StackStatusReason until the next
    update starts."""
    stack.status = status
    if failure:
        stack.status_reason = reason
    elif status == "UPDATE_IN_PROGRESS":
        stack.status_reason = None
    stack._add_stack_event(status, resource_status_reason=reason)
