"""Deploy the CDK app into the sandbox's moto, the way `cdk deploy` deploys it into an account.

Synthesizes the app in a child process (synth), fakes `cdk bootstrap` and publishes the file assets
(assets), then creates or updates the stack from its template in the assets bucket (stack)::

    python -m clm_sandbox.deploy --endpoint http://127.0.0.1:5000 [-c key=value ...]

Functions run our handlers from their zips and layer (patches lambda_invoke and cfn_lambda), state machines run
in moto's interpreter (cfn_stepfunctions): moto must have the sandbox's patches installed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

from clm_sandbox.deploy.assets import bootstrap, publish_assets
from clm_sandbox.deploy.stack import deploy_stack
from clm_sandbox.deploy.synth import Assembly, synthesize
from clm_sandbox.moto_server import SANDBOX_ENV

STACK = "Clm"
TEMPLATE_URL = "https://{bucket}.s3.{region}.amazonaws.com/{key}"


def deploy(
    session_or_endpoint: boto3.Session | str, *, context: dict[str, Any] | None = None, stack: str = STACK
) -> dict[str, str]:
    """Synthesize with `context` (over cdk.json's), bootstrap, publish assets, deploy; returns the stack's outputs.

    `session_or_endpoint` is a boto3 session (in-process moto) or the URL of moto's server.
    """
    session, client = sandbox_clients(session_or_endpoint)
    with tempfile.TemporaryDirectory(prefix="clm-cdk-out-") as outdir:
        assembly = synthesize(Path(outdir), stack, context)
        return deploy_assembly(assembly, client, session.region_name)


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


def sandbox_clients(session_or_endpoint: boto3.Session | str) -> tuple[boto3.Session, Callable[[str], Any]]:
    """A session and a client factory for the sandbox: the session given, or one with the sandbox's credentials
    whose clients call moto's server at the URL given."""
    if isinstance(session_or_endpoint, str):
        session = boto3.Session(
            aws_access_key_id=SANDBOX_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=SANDBOX_ENV["AWS_SECRET_ACCESS_KEY"],
            region_name=SANDBOX_ENV["AWS_DEFAULT_REGION"],
        )
        return session, lambda service: session.client(service, endpoint_url=session_or_endpoint)
    return session_or_endpoint, session_or_endpoint.client


def main(argv: list[str] | None = None) -> None:
    """Deploy into moto's server and print the outputs as JSON."""
    parser = argparse.ArgumentParser(prog="python -m clm_sandbox.deploy", description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True, help="moto server URL")
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE", help="CDK context")
    args = parser.parse_args(argv)
    context = dict(item.split("=", 1) for item in args.context)
    started = time.monotonic()
    outputs = deploy(args.endpoint, context=context)
    print(json.dumps({"seconds": round(time.monotonic() - started, 1), "outputs": outputs}, indent=2))
