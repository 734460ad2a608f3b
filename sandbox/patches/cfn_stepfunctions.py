"""State machines created by CloudFormation run in moto's ASL interpreter like API-created ones.

moto 5.2.5 creates ``AWS::StepFunctions::StateMachine`` resources in the plain backend (never executed), and reads
only ``DefinitionString``. ``install()`` replaces the resource's create/update/delete so they use the backend
that the Step Functions API uses (the interpreter when ``execute_state_machine`` is on) and build the definition
from ``DefinitionString``, ``Definition`` (an object) or ``DefinitionS3Location`` (a JSON or YAML object in moto's
S3), with ``${Placeholders}`` from ``DefinitionSubstitutions`` replaced (CDK's way of passing ARNs). Nulls in a
``Definition`` object (``"ResultPath": null``) survive moto's template cleaning, which drops null values, and
``Fn::GetAtt [Machine, Arn]`` works.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import yaml

from clm_sandbox.patches._patching import original, replace

RESOURCE_TYPE = "AWS::StepFunctions::StateMachine"
_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")
_NULL = "\x00clm-sandbox-null\x00"  # stands for null while moto's template cleaning (which drops nulls) runs


class DefinitionError(ValueError):
    """A state machine resource whose definition cannot be built."""


def install() -> None:
    """Replace moto's CloudFormation handling of ``AWS::StepFunctions::StateMachine`` (idempotent)."""
    from moto.cloudformation import parsing
    from moto.stepfunctions.models import StateMachine

    replace(StateMachine, "create_from_cloudformation_json", classmethod(_create))
    replace(StateMachine, "update_from_cloudformation_json", classmethod(_update))
    replace(StateMachine, "delete_from_cloudformation_json", classmethod(_delete))
    replace(StateMachine, "has_cfn_attr", classmethod(_has_cfn_attr))
    replace(StateMachine, "get_cfn_attribute", _get_cfn_attribute)
    replace(parsing, "parse_resource", _parse_resource)


def definition(properties: Mapping[str, Any], account_id: str, region: str, resource: str) -> str:
    """The definition (JSON text) a resource's properties describe, with its substitutions applied."""
    substitutions = properties.get("DefinitionSubstitutions") or {}
    if "DefinitionString" in properties:
        return substitute(properties["DefinitionString"], substitutions)
    if "Definition" in properties:
        restored = _map_scalars(properties["Definition"], lambda value: None if value == _NULL else value)
        return substitute(json.dumps(restored), substitutions)
    if "DefinitionS3Location" in properties:
        location = properties["DefinitionS3Location"]
        text, where = _s3_text(location, account_id, region, resource)
        return _as_json(substitute(text, substitutions), f"state machine {resource}: {where}")
    raise DefinitionError(f"state machine {resource}: needs DefinitionString, Definition or DefinitionS3Location")


def substitute(text: str, substitutions: Mapping[str, Any]) -> str:
    """Replace each ``${Name}`` that ``substitutions`` defines; others stay as they are (as in AWS)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in substitutions:
            return match.group(0)
        replacement = substitutions[name]
        return json.dumps(replacement) if isinstance(replacement, bool) else str(replacement)

    return _PLACEHOLDER.sub(value, text)


def _s3_text(location: Mapping[str, Any], account_id: str, region: str, resource: str) -> tuple[str, str]:
    from moto.s3.exceptions import MissingBucket
    from moto.s3.models import s3_backends
    from moto.utilities.utils import get_partition

    bucket, key, version = location.get("Bucket"), location.get("Key"), location.get("Version")
    where = f"s3://{bucket}/{key}" + (f"?versionId={version}" if version else "")
    try:
        stored = s3_backends[account_id][get_partition(region)].get_object(bucket, key, version_id=version)
    except MissingBucket:
        stored = None
    if stored is None:
        raise DefinitionError(f"state machine {resource}: DefinitionS3Location {where} does not exist")
    try:
        return stored.value.decode(), where
    except UnicodeDecodeError as exc:
        raise DefinitionError(f"state machine {resource}: {where} is not UTF-8 text") from exc


def _as_json(text: str, what: str) -> str:
    """A JSON or YAML document as JSON text."""
    try:
        return json.dumps(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        raise DefinitionError(f"{what} is neither JSON nor YAML: {exc}") from exc


def _parse_resource(resource_json: dict[str, Any], resources_map: Any) -> Any:
    """moto's ``parse_resource``, but nulls in a state machine's ``Definition`` survive (moto drops null values)."""
    from moto.cloudformation import parsing

    properties = resource_json.get("Properties") or {}
    if resource_json.get("Type") == RESOURCE_TYPE and "Definition" in properties:
        nulls_kept = _map_scalars(properties["Definition"], lambda value: _NULL if value is None else value)
        protected = {**properties, "Definition": nulls_kept}
        resource_json = {**resource_json, "Properties": protected}
    return original(parsing, "parse_resource")(resource_json, resources_map)


def _map_scalars(value: Any, convert: Callable[[Any], Any]) -> Any:
    """``value`` with ``convert`` applied to every scalar inside its dicts and lists."""
    if isinstance(value, dict):
        return {key: _map_scalars(item, convert) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_scalars(item, convert) for item in value]
    return convert(value)


def _backend(account_id: str, region: str) -> Any:
    from moto.stepfunctions.responses import get_backend

    return get_backend(account_id, region)


def _create(
    cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
) -> Any:
    from moto.stepfunctions.utils import cfn_to_api_tags

    properties = cloudformation_json["Properties"]
    name = properties.get("StateMachineName", resource_name)
    with _stack_error(name):
        return _backend(account_id, region_name).create_state_machine(
            name,
            definition(properties, account_id, region_name, name),
            properties.get("RoleArn", ""),
            tags=cfn_to_api_tags(properties.get("Tags", [])),
            sm_type=properties.get("StateMachineType"),
        )


def _update(
    cls: Any,
    original_resource: Any,
    new_resource_name: str,
    cloudformation_json: Any,
    account_id: str,
    region_name: str,
) -> Any:
    from moto.stepfunctions.utils import cfn_to_api_tags

    properties = cloudformation_json.get("Properties", {})
    name = properties.get("StateMachineName", original_resource.name)
    if name != original_resource.name:
        replacement = _create(cls, name, cloudformation_json, account_id, region_name)
        _delete(cls, original_resource.arn, cloudformation_json, account_id, region_name)
        return replacement
    backend = _backend(account_id, region_name)
    with _stack_error(name):
        state_machine = backend.update_state_machine(
            original_resource.arn,
            definition=definition(properties, account_id, region_name, name),
            role_arn=properties.get("RoleArn"),
        )
    backend.tagger.tag_resource(state_machine.arn, cfn_to_api_tags(properties.get("Tags", [])))
    return state_machine


def _delete(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str) -> None:
    _backend(account_id, region_name).delete_state_machine(resource_name)


def _has_cfn_attr(cls: Any, attribute: str) -> bool:
    from moto.stepfunctions.models import StateMachine

    return attribute == "Arn" or original(StateMachine, "has_cfn_attr").__func__(cls, attribute)


def _get_cfn_attribute(self: Any, attribute: str) -> Any:
    """``Fn::GetAtt [Machine, Arn]`` as in AWS (moto knows only Name and a few others)."""
    from moto.stepfunctions.models import StateMachine

    return self.arn if attribute == "Arn" else original(StateMachine, "get_cfn_attribute")(self, attribute)


@contextmanager
def _stack_error(name: str) -> Iterator[None]:
    """A bad definition fails the stack operation with CloudFormation's ValidationError naming the state machine.

    (moto would leak Step Functions' JSON error through CloudFormation's XML API.)
    """
    from moto.cloudformation.exceptions import ValidationError
    from moto.stepfunctions.parser.api import InvalidDefinition

    try:
        yield
    except DefinitionError as exc:
        raise ValidationError(message=str(exc)) from exc
    except InvalidDefinition as exc:
        raise ValidationError(message=f"state machine {name}: invalid definition: {exc.message}") from exc
