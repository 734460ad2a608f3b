"""The CDK app deployed into the sandbox as users deploy it: the real CDK CLI (pinned in tools/cdk, installed there
by `npm ci` on first use) runs `cdk bootstrap` once per account and region and `cdk deploy --method=direct` against
moto's server (moto's change sets on existing stacks are broken). By default the CLI acts in the hub's account and
region with the sandbox's admin key; in another account of the sandbox (clm_sandbox.accounts), with a session of
that account's admin role."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from clm_sandbox import accounts
from clm_sandbox.moto_server import SANDBOX_ENV

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools" / "cdk"
CDK = TOOLS / "node_modules" / ".bin" / "cdk"
STACK = "Clm"
TARGET_STACK = "ClmTarget"
TOOLKIT_STACK = "CDKToolkit"
HUB = f"{accounts.MANAGEMENT_ACCOUNT}:{SANDBOX_ENV['AWS_DEFAULT_REGION']}"  # the sandbox's hub, as clm:hub names it
ADMIN_KEY = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
# No notices, version checks or telemetry: the sandbox reaches nothing but moto.
QUIET = {
    "CDK_DISABLE_CLI_TELEMETRY": "true",
    "CDK_DISABLE_VERSION_CHECK": "true",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}


class CdkError(RuntimeError):
    """The CDK CLI failed (the message ends with its last lines of output)."""


def cdk_cli() -> Path:
    """The pinned CDK CLI, installed into tools/cdk by `npm ci` if it is not there (one install at a time)."""
    if _installed():
        return CDK
    npm = shutil.which("npm")
    if npm is None:
        raise CdkError("the sandbox deploys with the CDK CLI, which needs Node.js and npm (docs/deploy.md)")
    with (TOOLS / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers: one installs, the others wait and use it
        if not _installed():
            result = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=TOOLS,
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise CdkError(f"npm ci in {TOOLS} failed:\n{result.stderr.strip()[-2000:]}")
    return CDK


def _installed() -> bool:
    """Whether tools/cdk holds the CLI its lock file pins."""
    try:
        wanted = json.loads((TOOLS / "package-lock.json").read_text())["packages"]["node_modules/aws-cdk"]
        present = json.loads((TOOLS / "node_modules" / "aws-cdk" / "package.json").read_text())
    except (OSError, ValueError, KeyError):
        return False
    return CDK.exists() and present.get("version") == wanted["version"]


def credentials_for(endpoint: str, account: str | None = None, region: str | None = None) -> dict[str, str]:
    """The credentials and region (`AWS_*` variables) to act in `account` and `region` (default: the hub's): the
    sandbox's admin key in the hub's account, else a session of that account's admin role (clm_sandbox.accounts)."""
    region = region or SANDBOX_ENV["AWS_DEFAULT_REGION"]
    if account in (None, accounts.MANAGEMENT_ACCOUNT):
        keys = {name: SANDBOX_ENV[name] for name in ADMIN_KEY}
    else:
        keys = accounts.admin_credentials(sandbox_client(endpoint)("sts"), account)
    return {**keys, "AWS_DEFAULT_REGION": region, "AWS_REGION": region}


def environment(endpoint: str, credentials: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment: `credentials` (:func:`credentials_for`; default: the hub's), the endpoint, and this
    interpreter first on PATH (cdk.json runs `python3 app.py`, which must import aws-cdk-lib)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    acting = credentials or credentials_for(endpoint)
    return {**os.environ, **SANDBOX_ENV, **QUIET, **acting, "AWS_ENDPOINT_URL": endpoint, "PATH": path}


def run_cdk(
    endpoint: str, *args: str, app_dir: Path = ROOT, timeout: float = 900, credentials: Mapping[str, str] | None = None
) -> str:
    """Run `cdk <args>` in `app_dir` against the sandbox at `endpoint` with `credentials` (default: the hub's);
    returns its output, raises CdkError."""
    command = [str(cdk_cli()), *args, "--no-notices", "--ci"]
    result = subprocess.run(
        command,
        cwd=app_dir,
        env=environment(endpoint, credentials),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = result.stdout + result.stderr
    if result.returncode != 0:
        lines = [line for line in output.splitlines() if line.strip()][-25:]
        raise CdkError(f"`cdk {' '.join(args)}` failed (exit {result.returncode}):\n" + "\n".join(lines))
    return output


def sandbox_session(credentials: Mapping[str, str]) -> boto3.Session:
    """A session of `credentials` (:func:`credentials_for`) in their region."""
    return boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials.get("AWS_SESSION_TOKEN"),
        region_name=credentials["AWS_DEFAULT_REGION"],
    )


def sandbox_client(endpoint: str, credentials: Mapping[str, str] | None = None) -> Callable[[str], Any]:
    """A factory of clients for moto's server at `endpoint` with `credentials` (default: the sandbox's, the hub's)."""
    session = sandbox_session(credentials or credentials_for(endpoint))
    return lambda service: session.client(service, endpoint_url=endpoint)


def bootstrap(endpoint: str, account: str | None = None, region: str | None = None) -> bool:
    """`cdk bootstrap aws://<account>/<region>` (default: the hub's), unless that account has its CDKToolkit stack
    in that region; True if it ran."""
    acting = credentials_for(endpoint, account, region)
    client = sandbox_client(endpoint, acting)
    try:
        status = client("cloudformation").describe_stacks(StackName=TOOLKIT_STACK)["Stacks"][0]["StackStatus"]
    except ClientError:
        status = None
    if status in ("CREATE_COMPLETE", "UPDATE_COMPLETE"):
        return False
    landed = client("sts").get_caller_identity()["Account"]
    # Not in the app's folder: there the CLI synthesizes the app (seconds of CPU) into its cdk.out, which a
    # concurrent CLI run locks ("Another CLI is currently synthing"); bootstrapping an environment needs no app.
    run_cdk(endpoint, "bootstrap", f"aws://{landed}/{acting['AWS_DEFAULT_REGION']}", app_dir=TOOLS, credentials=acting)
    return True


def deploy(
    endpoint: str,
    outdir: Path,
    context: dict[str, Any] | None = None,
    app_dir: Path = ROOT,
    stack: str = STACK,
    account: str | None = None,
    region: str | None = None,
    assembly: Path | None = None,
) -> dict[str, str]:
    """`cdk deploy <stack> --method=direct` into `account` and `region` (default: the hub's) with `context`
    (`-c key=value`, over cdk.json's) and the cloud assembly in `outdir`; or, given `assembly`, the stack of that
    cloud assembly as it was synthesized (`--app <assembly>`: no synthesis, no context; `outdir` gets the outputs
    file). Returns the stack's outputs."""
    outputs_file = outdir / "outputs.json"
    options = [arg for key, value in (context or {}).items() for arg in ("-c", f"{key}={_context_value(value)}")]
    source = ["--app", str(assembly)] if assembly else ["--output", str(outdir)]
    outdir.mkdir(parents=True, exist_ok=True)
    run_cdk(
        endpoint,
        "deploy",
        stack,
        "--method=direct",
        "--require-approval=never",
        *source,
        "--outputs-file",
        str(outputs_file),
        *options,
        app_dir=app_dir,
        credentials=credentials_for(endpoint, account, region),
    )
    return json.loads(outputs_file.read_text())[stack]


def deploy_target(
    endpoint: str, outdir: Path, account: str, region: str, app_dir: Path = ROOT, assembly: Path | None = None
) -> dict[str, str]:
    """`cdk deploy ClmTarget -c clm:hub=<the sandbox's hub>` into `account` and `region` (given `assembly`, its
    ClmTarget as synthesized, with clm:hub: :func:`deploy`); returns its outputs."""
    return deploy(endpoint, outdir, {"clm:hub": HUB}, app_dir, TARGET_STACK, account, region, assembly)


def bootstrap_and_deploy(endpoint: str, outdir: Path, context: dict[str, Any] | None = None) -> dict[str, str]:
    """Bootstrap the sandbox if it is not, then deploy (:func:`deploy`); returns the stack's outputs."""
    bootstrap(endpoint)
    return deploy(endpoint, outdir, context)


def _context_value(value: Any) -> str:
    """A context value as `-c` passes it, a string (infra.context reads numbers, flags and comma-separated lists
    from strings, as users pass them)."""
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value).lower() if isinstance(value, bool) else str(value)
