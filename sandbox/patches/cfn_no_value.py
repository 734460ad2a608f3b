"""`Ref: AWS::NoValue` as an element of a list removes that element, as in CloudFormation.

moto 5.2.5 resolves AWS::NoValue to None and leaves out a property that resolves to it, but keeps it as an element
of a list: the CDK bootstrap roles' trust policies (`Statement: [..., Fn::If [HasTrustedAccounts, {...},
Ref AWS::NoValue]]`) held `null` statements, and the sandbox's IAM failed on an AssumeRole of them (the CDK CLI,
acting in another account with a judged session, then deployed with its own rights instead of the bootstrap roles).
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Wrap moto's resolution of template values (idempotent; its recursion calls the wrapper too)."""
    from moto.cloudformation import parsing

    replace(parsing, "clean_json", _clean_json)


def _clean_json(resource_json: Any, resources_map: Any) -> Any:
    from moto.cloudformation import parsing

    cleaned = original(parsing, "clean_json")(resource_json, resources_map)
    if isinstance(resource_json, list):
        return [value for value in cleaned if value is not None]
    return cleaned
