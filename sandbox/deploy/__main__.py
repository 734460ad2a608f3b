"""`python -m clm_sandbox.deploy` deploys the CDK app into moto's server (clm_sandbox.deploy.cdk)."""

from clm_sandbox.deploy.cdk import main

main()
