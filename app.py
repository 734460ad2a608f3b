"""CDK app entry point (`cdk synth` / `cdk deploy` run `python3 app.py`, see cdk.json).

Synthesis builds the `clm` layer when requirements-layer.lock or the package changed (infra.layer_build) and fails on
any cdk-nag AwsSolutions finding that is not acknowledged with its reason.
"""

from __future__ import annotations

import aws_cdk as cdk

from infra.nag import add_checks
from infra.stack import ClmStack

app = cdk.App()
ClmStack(app, "Clm", description="CLM: serverless Cluster Lifecycle Manager for Kubernetes")
add_checks(app)
app.synth()
