"""Lambda layers deployed by CloudFormation reach the functions that use them, as in AWS.

moto 5.2.5's CloudFormation support for ``AWS::Lambda::LayerVersion`` has no physical resource id (``Ref`` gives
moto's object, not the layer version ARN) and ignores ``LayerName``; ``AWS::Lambda::Function`` ignores ``Layers``
and ``TracingConfig``. So a CDK app's function ran without its layer. ``install()`` fixes all four.
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Patch moto's CloudFormation handling of Lambda layer versions and functions (idempotent)."""
    from moto.awslambda.models import LambdaFunction, LayerVersion

    replace(LayerVersion, "physical_resource_id", property(lambda layer: layer.arn, doc="The layer version ARN."))
    replace(LayerVersion, "cloudformation_name_type", staticmethod(lambda: "LayerName"))
    replace(LambdaFunction, "create_from_cloudformation_json", classmethod(_create))
    replace(LambdaFunction, "update_from_cloudformation_json", classmethod(_update))


def _create(
    cls: Any, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
) -> Any:
    from moto.awslambda.models import LambdaFunction

    moto_create = original(LambdaFunction, "create_from_cloudformation_json").__func__
    function = moto_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    _apply_extras(function, cloudformation_json.get("Properties", {}))
    return function


def _update(
    cls: Any,
    original_resource: Any,
    new_resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
) -> Any:
    from moto.awslambda.models import LambdaFunction

    moto_update = original(LambdaFunction, "update_from_cloudformation_json").__func__
    function = moto_update(cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name)
    _apply_extras(function, cloudformation_json.get("Properties", {}))
    return function


def _apply_extras(function: Any, properties: dict[str, Any]) -> None:
    """Set the function's layers (version ARNs) and tracing mode from its properties; absent ones are AWS's defaults."""
    function.layers = function._get_layers_data(properties.get("Layers", []))
    function.tracing_config = properties.get("TracingConfig") or {"Mode": "PassThrough"}
