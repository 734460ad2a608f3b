"""A synthesized cloud assembly deployed into in-process moto, for the integration tests that need CLM deployed
afresh in each test (~85): what `cdk deploy` does (the bootstrap's version parameter and assets bucket, the file
assets published, the stack created from its template in that bucket), without the CLI, which cannot reach
in-process moto and costs seconds of CPU per deployment. The sandbox, the demo and the CLI tests deploy with the
real CLI (clm_sandbox.deploy.cli); docs/sandbox.md says why both exist."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clm_sandbox.deploy.assets import bootstrap, publish_assets
from clm_sandbox.deploy.stack import deploy_stack
from clm_sandbox.deploy.synth import Assembly

TEMPLATE_URL = "https://{bucket}.s3.{region}.amazonaws.com/{key}"


def deploy_assembly(assembly: Assembly, client: Callable[[str], Any], region: str) -> dict[str, str]:
    """Bootstrap, publish the assembly's assets and deploy its stack; returns the stack's outputs."""
    account = client("sts").get_caller_identity()["Account"]
    bucket = bootstrap(client("ssm"), client("s3"), account, region, assembly.bootstrap_version)
    keys = publish_assets(client("s3"), assembly, account, region)
    template_key = keys[_template_asset(assembly)]
    url = TEMPLATE_URL.format(bucket=bucket, region=region, key=template_key)
    return deploy_stack(client("cloudformation"), assembly.stack, url)


def _template_asset(assembly: Assembly) -> str:
    """The id of the asset that is the stack's template itself."""
    name = f"{assembly.stack}.template.json"
    for asset_id, asset in assembly.file_assets().items():
        if Path(asset["source"]["path"]).name == name:
            return asset_id
    raise FileNotFoundError(f"{assembly.directory}: the asset manifest does not list the template {name}")
