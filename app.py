"""CDK app entry point (`cdk synth` / `cdk deploy` run `python3 app.py`, see cdk.json)."""

from __future__ import annotations

import aws_cdk as cdk

from infra.stack import ClmStack

app = cdk.App()
ClmStack(app, "Clm", description="CLM: serverless Cluster Lifecycle Manager for Kubernetes")
app.synth()
