"""The configuration bucket: versioned (object versions are the config version), TLS only, private."""

from __future__ import annotations

from constructs import Construct

from infra.buckets import private_bucket
from infra.nag import acknowledge


class ConfigStore(Construct):
    """S3 bucket holding configuration repositories under a prefix."""

    def __init__(self, scope: Construct, construct_id: str):
        super().__init__(scope, construct_id)
        self.bucket = private_bucket(self, "Bucket")
        # Object Created events go to EventBridge (config change -> reconcile). Set on the resource
        # itself: `event_bridge_enabled=True` would add a custom-resource Lambda for the same thing.
        cfn_bucket = self.bucket.node.default_child
        cfn_bucket.add_property_override("NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True)
        acknowledge(self, "S1", "object versions record every change of the configuration; CloudTrail audits access")
