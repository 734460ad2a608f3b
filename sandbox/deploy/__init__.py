"""CLM deployed into the sandbox: with the real CDK CLI (cli; examples: with the examples, as `make demo` and
`clm sandbox up|deploy` leave it), or an assembly into in-process moto for each integration test (inprocess)."""

from clm_sandbox.deploy.inprocess import deploy_assembly

__all__ = ["deploy_assembly"]
