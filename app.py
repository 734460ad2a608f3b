"""CDK app entry point (`cdk synth` / `cdk deploy` run `python3 app.py`, see cdk.json).

Synthesis builds the `clm` layer when requirements-layer.lock or the package changed (infra.layer_build) and fails on
any cdk-nag AwsSolutions finding that is not acknowledged with its reason. With context `clm:hub` the app also holds
the target stack `ClmTarget` (docs/fleet.md).
"""

from __future__ import annotations

import aws_cdk as cdk

from infra.functions import HUB_STACK_NAME
from infra.nag import add_checks
from infra.stack import ClmStack
from infra.target_stack import DESCRIPTION, TARGET_STACK_NAME, ClmTargetStack

app = cdk.App()
ClmStack(app, HUB_STACK_NAME, description="CLM: serverless Cluster Lifecycle Manager for Kubernetes")
if app.node.try_get_context("clm:hub") is not None:
    ClmTargetStack(app, TARGET_STACK_NAME, description=DESCRIPTION)
add_checks(app)
app.synth()
