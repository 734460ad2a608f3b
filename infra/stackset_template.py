"""`ClmTarget` as a self-contained template, for a CloudFormation StackSet over an Organization (docs/deploy.md, "Hub
and targets"): `python -m infra.stackset_template -c clm:hub=<account>:<region> [-c key=value ...] > clm-target.json`.

The same stack as `cdk deploy ClmTarget`, with the same cdk-nag checks and context (cdk.json's, then each `-c`), but
synthesized without the CDK bootstrap: BootstraplessSynthesizer writes no BootstrapVersion parameter or rule and
refuses any asset, which a member account of a StackSet has no bucket for. One template serves every account, so
it takes no customer-managed policy for the ClusterStackRole (its ARN names one account). Printed as compact JSON,
which keeps it under CloudFormation's 51,200-byte limit of an inline template body.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from infra.context import ClmContext, ContextError
from infra.nag import add_checks
from infra.target_stack import DESCRIPTION, TARGET_STACK_NAME, ClmTargetStack


def stackset_template(context: Mapping[str, Any], outdir: Path) -> dict[str, Any]:
    """The target stack's template for the hub and settings of `context`, synthesized into `outdir` with no
    bootstrap parameter, rule or asset; an unacknowledged cdk-nag finding or a bad context value raises."""
    app = cdk.App(context=dict(context), outdir=str(outdir))
    ensure_account_neutral(ClmContext.of(app))
    stack = ClmTargetStack(app, TARGET_STACK_NAME, description=DESCRIPTION, synthesizer=cdk.BootstraplessSynthesizer())
    add_checks(app)
    path = Path(app.synth().get_stack_artifact(stack.artifact_id).template_full_path)
    return json.loads(path.read_text())


def ensure_account_neutral(context: ClmContext) -> None:
    """Raise ContextError naming the key of a policy ARN of one account (clm:clusterStackPolicyArns,
    clm:clusterRoleBoundaryPolicyArn); AWS managed ones (`arn:aws:iam::aws:policy/...`) pass (cdk-nag's IAM4 still
    refuses them on the role, as in the hub)."""
    named = [("clm:clusterStackPolicyArns", arn) for arn in context.cluster_stack_policy_arns]
    if context.cluster_role_boundary_arn:
        named.append(("clm:clusterRoleBoundaryPolicyArn", context.cluster_role_boundary_arn))
    for key, arn in named:
        account = arn.split(":")[4]
        if account != "aws":
            raise ContextError(
                f"{key}: {arn} is a policy of account {account} only, and a StackSet template serves every "
                "account: leave it out (the ClusterStackRole's built-in rights), or deploy per account with "
                "`cdk deploy ClmTarget`"
            )


def context_of(cdk_json: Path, pairs: Sequence[str]) -> dict[str, str]:
    """The context `cdk` would read: `cdk_json`'s `context` (if the file exists), then each `key=value` over it.
    A pair without `=` raises ValueError naming it."""
    context = json.loads(cdk_json.read_text()).get("context", {}) if cdk_json.exists() else {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"-c {pair!r} is not key=value")
        context[key] = value
    return context


def main(argv: Sequence[str] | None = None) -> None:
    """Print the StackSet template to stdout; a bad argument or context value exits 2 with the reason."""
    parser = argparse.ArgumentParser(
        prog="python -m infra.stackset_template",
        description="Print ClmTarget as a self-contained template for a CloudFormation StackSet (no CDK bootstrap).",
    )
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a context value, as `cdk -c` takes it; clm:hub=<account>:<region> is required",
    )
    parser.add_argument(
        "--cdk-json", type=Path, default=Path("cdk.json"), help="the app's settings (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    try:
        context = context_of(args.cdk_json, args.context)
        with tempfile.TemporaryDirectory(prefix="clm-stackset-") as outdir:
            template = stackset_template(context, Path(outdir))
    except ValueError as error:  # a pair without `=`, or a ContextError naming the key
        parser.error(str(error))
    sys.stdout.write(json.dumps(template, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
