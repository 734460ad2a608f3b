"""The CDK app deployed into the sandbox's moto as `cdk deploy` would (cdk: synth, assets, stack), and CLM with
the examples deployed into a running sandbox (examples)."""

from clm_sandbox.deploy.cdk import deploy, deploy_assembly

__all__ = ["deploy", "deploy_assembly"]
