"""``AWS::EC2::LaunchTemplate`` updates as in CloudFormation: a new version that becomes the default version.

moto 5.2.5 adds the new version but keeps the default at version 1, and ignores a new ``LaunchTemplateName``
(a replacement in CloudFormation: a new template is created and the old one deleted).
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Replace moto's CloudFormation update of launch templates (idempotent)."""
    from moto.ec2.models.launch_templates import LaunchTemplate

    replace(LaunchTemplate, "update_from_cloudformation_json", classmethod(_update))


def _update(
    cls: Any,
    original_resource: Any,
    new_resource_name: str,
    cloudformation_json: Any,
    account_id: str,
    region_name: str,
) -> Any:
    name = cloudformation_json["Properties"].get("LaunchTemplateName")
    if name and name != original_resource.name:
        replacement = cls.create_from_cloudformation_json(name, cloudformation_json, account_id, region_name)
        original_resource.delete(account_id, region_name)
        return replacement
    moto_update = original(cls, "update_from_cloudformation_json").__func__
    template = moto_update(cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name)
    template.default_version_number = template.latest_version_number
    return template
