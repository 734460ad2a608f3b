"""Entry point of the `clm` command: global options and one-line errors instead of tracebacks."""

from __future__ import annotations

import sys

import click

from clm.cli.config_cmd import config
from clm.cli.context import DEFAULT_TABLE, CliContext
from clm.cli.encrypt_cmd import encrypt, reencrypt
from clm.cli.migrate_cmd import migrate
from clm.cli.plan_cmd import plan
from clm.cli.registry_cmd import registry
from clm.cli.render_cmd import render
from clm.cli.rollout_cmd import rollout
from clm.cli.rollout_control import abort, pause, resume
from clm.cli.rollout_status import rollout_status
from clm.cli.run_cmd import decommission, provision
from clm.cli.sandbox_cmd import sandbox
from clm.cli.status_cmd import status
from clm.cli.targets_cmd import targets

EPILOG = """\b
Examples:
  clm registry import examples/clusters.yaml     load CLM's registry file into DynamoDB
  clm registry import fleet.yaml --skip-foreign  only its clusters in accounts the hub may reach (its
                                                 clm:targetAccounts); the others are listed as skipped
  clm targets                                    each account and region of the registry: may and can
                                                 the hub act there, its target stack
  clm registry list                              clusters, lifecycle and versions
  clm registry set CLUSTER_ID node_pools.default-worker.max_size=5 --dry-run
                                                 change fields of one cluster (validated as on import)
  clm status                                     versions, running executions and last problem per cluster
  clm provision CLUSTER_ID --follow              start a run now and show it live until it ends
  clm decommission CLUSTER_ID --follow           request the decommission; follow the run it starts
  clm config push ./config s3://bucket/config/    upload a configuration so that CLM reads it at once
                                                 and whole (new and changed files, then a marker)
  clm render CLUSTER_ID --config examples/config --out rendered/
                                                 render a cluster's stacks and manifests
  clm render all --config ./config --stack-policy stack-policy.yaml
                                                 the policy CloudFormation's role needs for your stacks
  clm plan CLUSTER_ID --config s3://bucket/config
                                                 what a run would change (stack diffs, nodes to replace)
  clm rollout plan --config s3://bucket/config
                                                 the waves a rollout policy makes of the fleet
  clm rollout status --follow                    each rollout's waves and clusters as they move
  clm rollout pause --reason "INC-42"            no cluster starts a new configuration version
  clm rollout resume                             lift the pause, let halted rollouts go on
  clm sandbox up                                 start the local sandbox with CLM deployed into it
  clm migrate ../kubernetes-on-aws config        translate a Zalando CLM configuration (Go templates)
  clm encrypt CLUSTER_ID ITEM < value.txt        a config item as aws:kms:... bound to its cluster and item
  clm registry reencrypt --dry-run               bind Zalando CLM's aws:kms: items to their cluster and item

Against the local sandbox, pass --endpoint-url (or set AWS_ENDPOINT_URL). provision, decommission and
status find the workflows in the outputs of the CloudFormation stack `Clm` (--stack or CLM_STACK to change).
"""


@click.group(epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--profile", envvar="AWS_PROFILE", help="AWS profile to use.")
@click.option("--region", envvar="AWS_DEFAULT_REGION", help="AWS region of the CLM deployment.")
@click.option("--endpoint-url", envvar="AWS_ENDPOINT_URL", help="AWS endpoint, e.g. the sandbox's moto server.")
@click.option(
    "--table", envvar="CLM_REGISTRY_TABLE", default=DEFAULT_TABLE, show_default=True, help="Registry table name."
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "wide", "json", "yaml"]),
    default="table",
    show_default=True,
    help="Output format (table: fits the terminal, one line per row, long text in notes under it; wide: every "
    "column in full).",
)
@click.version_option(package_name="clm")
@click.pass_context
def cli(
    ctx: click.Context, profile: str | None, region: str | None, endpoint_url: str | None, table: str, output: str
) -> None:
    """CLM keeps Kubernetes clusters on AWS in the state their registry and configuration describe."""
    ctx.obj = CliContext(profile=profile, region=region, endpoint_url=endpoint_url, table=table, output=output)


cli.add_command(status)
cli.add_command(registry)
cli.add_command(provision)
cli.add_command(decommission)
cli.add_command(render)
cli.add_command(plan)
cli.add_command(sandbox)
cli.add_command(migrate)
cli.add_command(encrypt)
cli.add_command(targets)
cli.add_command(rollout)
cli.add_command(config)
registry.add_command(reencrypt)
for command in (rollout_status, pause, resume, abort):
    rollout.add_command(command)


def describe_error(exc: BaseException) -> str | None:
    """One line for an error a user can fix, or None for a bug (which keeps its traceback)."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, NoRegionError

    from clm.errors import ClmError

    if isinstance(exc, ClmError):
        return str(exc)
    if isinstance(exc, NoCredentialsError):
        return "no AWS credentials: set AWS_PROFILE (or --profile), or run `aws configure`"
    if isinstance(exc, NoRegionError):
        return "no AWS region: pass --region or set AWS_DEFAULT_REGION"
    if isinstance(exc, EndpointConnectionError):
        return f"cannot reach {exc.kwargs.get('endpoint_url')}: is the endpoint (or the sandbox) running?"
    if isinstance(exc, ClientError):
        from clm.cli.aws_errors import describe_client_error

        return describe_client_error(exc)
    return None


def main() -> None:
    """Run the CLI; user errors print one red line and exit 1."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:
        message = describe_error(exc)
        if message is None:
            raise
        from clm.cli.output import print_error

        print_error(message)
        sys.exit(1)
