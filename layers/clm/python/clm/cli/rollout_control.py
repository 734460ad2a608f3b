"""`clm rollout pause | resume | abort`: a human's hand on the fleet's rollouts, written to the registry table
(clm.registry.rollouts) where reconcile and every run read it."""

from __future__ import annotations

import json
from typing import Any

import click

from clm.cli.context import CliContext
from clm.cli.deployment import stack_option, stack_outputs
from clm.cli.errors import CliError
from clm.cli.options import pass_cli
from clm.cli.output import print_warning

RECONCILE_OUTPUT = "ReconcileStateMachineArn"


@click.command("pause")
@click.option("--reason", default="", help="Why, shown by `clm rollout status` and in refused runs' reasons.")
@pass_cli
def pause(cli: CliContext, reason: str) -> None:
    """Pause every rollout: no cluster starts taking a new configuration version until `clm rollout resume`. Runs
    already started finish; a cluster's own change (a first provision, a registry edit of a cluster already at the
    version, a decommission) is not held."""
    from clm.registry.rollouts import RolloutStore
    from clm.timestamps import utc_now

    caller = cli.client("sts").get_caller_identity()["Arn"]
    RolloutStore(cli.client("dynamodb"), cli.table).pause(caller, reason, utc_now())
    click.echo(f"rollouts paused by {caller}")


@click.command("resume")
@click.argument("version", required=False)
@stack_option
@pass_cli
def resume(cli: CliContext, version: str | None, stack: str) -> None:
    """Lift the pause; with VERSION (or a unique prefix of it), let that halted rollout go on instead, once its
    failure is understood (the cluster that halted it is tried again). Then start a reconcile, so that the waves
    move now, not at the next schedule."""
    from clm.registry.rollouts import RolloutStore

    store = RolloutStore(cli.client("dynamodb"), cli.table)
    if version is None:
        if not store.unpause():
            click.echo("rollouts are not paused")
            return
        click.echo("pause lifted")
    else:
        state = _one(store.list(), version)
        if not store.resume(state.version):
            raise CliError(f"rollout of {state.version} is {state.state}: only a halted rollout is resumed")
        click.echo(f"rollout of {state.version} resumed")
    _reconcile_now(cli, stack, "rollout resumed")


@click.command("abort")
@click.argument("version")
@pass_cli
def abort(cli: CliContext, version: str) -> None:
    """End the rollout of configuration VERSION (or a unique prefix of it) for good: no further cluster takes it;
    the clusters that took it keep it. A newer configuration version starts its own rollout."""
    from clm.registry.rollouts import RolloutStore

    store = RolloutStore(cli.client("dynamodb"), cli.table)
    state = _one(store.list(), version)
    if not store.abort(state.version):
        raise CliError(f"rollout of {state.version} is {state.state}: only a rolling or halted rollout is aborted")
    click.echo(f"rollout of {state.version} aborted")


def _one(states: list[Any], version: str) -> Any:
    matching = [state for state in states if state.version.startswith(version)]
    if len(matching) != 1:
        known = ", ".join(state.version for state in states) or "none"
        what = "no rollout" if not matching else f"{len(matching)} rollouts"
        raise CliError(f"{what} of a version starting with {version!r} (kept: {known})")
    return matching[0]


def _reconcile_now(cli: CliContext, stack: str, reason: str) -> None:
    """Start the deployment's reconcile; a warning (the next schedule reconciles) when there is none."""
    from clm.cli.errors import DeploymentNotFound

    try:
        arn = stack_outputs(cli.client("cloudformation"), stack).get(RECONCILE_OUTPUT)
    except DeploymentNotFound as exc:
        arn, why = None, str(exc)
    else:
        why = f"stack {stack} has no output {RECONCILE_OUTPUT}"
    if not arn:
        print_warning(f"reconcile not started ({why}): the next schedule reconciles")
        return
    started = cli.client("stepfunctions").start_execution(stateMachineArn=arn, input=json.dumps({"reason": reason}))
    click.echo(f"reconcile started: {started['executionArn'].rsplit(':', 1)[-1]}")
