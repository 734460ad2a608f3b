"""The CLM stack. For now: the registry table and the config bucket; the workflows come next."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.config_store import ConfigStore
from infra.registry import RegistryTable


class ClmStack(Stack):
    """Everything CLM needs in one account and region."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any):
        super().__init__(scope, construct_id, **kwargs)
        table_name = self.node.try_get_context("clm:registryTableName")
        self.registry = RegistryTable(self, "Registry", table_name=table_name)
        self.config = ConfigStore(self, "Config")
        CfnOutput(self, "RegistryTableName", value=self.registry.table.table_name)
        CfnOutput(self, "ConfigBucketName", value=self.config.bucket.bucket_name)
