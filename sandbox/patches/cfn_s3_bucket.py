"""An ``AWS::S3::Bucket`` created by CloudFormation gets its versioning and EventBridge notifications, as in AWS.

moto 5.2.5 applies only BucketEncryption and Tags from the template, so CLM's config bucket was neither
versioned nor sending ``Object Created`` events, and the config-change trigger (S3 -> EventBridge -> reconcile)
never fired in the sandbox.
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Wrap moto's CloudFormation bucket creation (idempotent)."""
    from moto.s3.models import FakeBucket

    replace(FakeBucket, "create_from_cloudformation_json", classmethod(_create_from_cloudformation_json))


def _create_from_cloudformation_json(
    cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
) -> Any:
    from moto.s3.models import FakeBucket

    create = original(FakeBucket, "create_from_cloudformation_json").__func__
    bucket = create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    properties = cloudformation_json.get("Properties", {})
    status = (properties.get("VersioningConfiguration") or {}).get("Status")
    if status:
        bucket.versioning_status = status
    notifications = properties.get("NotificationConfiguration") or {}
    if (notifications.get("EventBridgeConfiguration") or {}).get("EventBridgeEnabled") in (True, "true"):
        bucket.set_notification_configuration({"EventBridgeConfiguration": {}})
    return bucket
