"""The `clm` Lambda layer: the core library and its pinned runtime dependencies (built by infra.layer_build)."""

from __future__ import annotations

from aws_cdk import AssetHashType, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.layer_build import build_layer_zip

# Python 3.13, not 3.14: both are supported until 2029-06-30 (cfn-lint's LmbdRuntimeLifecycle.json; Amazon Linux
# 2023 bounds both), and the build machines have a 3.13 interpreter to byte-compile the layer (infra.layer_build).
RUNTIME = lambda_.Runtime.PYTHON_3_13  # the same version as infra.layer_build.LAMBDA_PYTHON


class ClmLayer(Construct):
    """One layer version for every CLM function; its asset is the cached zip of the layer directory."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        archive, digest = build_layer_zip()
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=lambda_.Code.from_asset(str(archive), asset_hash_type=AssetHashType.CUSTOM, asset_hash=digest),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description="CLM core library (clm) with its pinned runtime dependencies",
            removal_policy=RemovalPolicy.RETAIN,  # running executions may still use the previous version
        )
