"""`clm provision ID` and `clm decommission ID`: start a cluster's run (or request its decommission) and, with
`--follow`, show it live until it ends."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from clm.cli.context import CliContext
from clm.cli.deployment import provision_state_machine, stack_option
from clm.cli.errors import CliError
from clm.cli.executions import (
    execution_name,
    recent_executions,
    running_by_cluster,
    start_provision,
    wait_for_new_execution,
)
from clm.cli.follow import POLL_SECONDS, follow, report
from clm.cli.options import pass_cli
from clm.cli.output import TABULAR, console, emit, errors
from clm.cli.tables import literal
from clm.model import Cluster
from clm.stacks.leftovers import REMOVE_VOLUMES_ITEM

DECOMMISSION_REQUESTED = "decommission-requested"
follow_option = click.option("--follow", is_flag=True, help="Show the run live until it ends; exit 1 if it fails.")


def _progress_console(cli: CliContext) -> Console:
    """Progress goes to stdout, or to stderr when stdout carries JSON/YAML."""
    return console if cli.output in TABULAR else errors


def _show_execution(cli: CliContext, cluster_id: str, arn: str, verb: str) -> None:
    if cli.output not in TABULAR:
        emit(
            [],
            [],
            cli.output,
            data={"cluster_id": cluster_id, "execution_name": execution_name(arn), "execution_arn": arn},
        )
        return
    name = (execution_name(arn), "bold")
    console.print(literal(f"{verb} run of cluster {cluster_id}: execution ", name), soft_wrap=True)
    console.print(literal(f"  {arn}"), soft_wrap=True)


def follow_run(cli: CliContext, sfn: Any, cluster: Cluster, arn: str, poll_seconds: float = POLL_SECONDS) -> None:
    """Follow the run until it ends; a run that skipped because another holds the cluster's lock is followed by
    that one. Exits with 1 when the run failed, 130 when interrupted (the run goes on)."""
    out = _progress_console(cli)
    try:
        outcome = follow(sfn, arn, out, poll_seconds)
        report(outcome, out)
        holder = cli.registry().lock_holder(cluster.id) if outcome.skipped is not None else None
        if holder and holder != arn:
            arn = holder
            holds = f"following execution {execution_name(arn)}, which holds the cluster's lock"
            out.print(literal(holds), soft_wrap=True)
            outcome = follow(sfn, arn, out, poll_seconds)
            report(outcome, out)
    except KeyboardInterrupt:
        out.print(
            literal(f"stopped following; execution {execution_name(arn)} goes on (see `clm status {cluster.id}`)"),
            soft_wrap=True,
        )
        raise SystemExit(130) from None
    if not outcome.succeeded:
        raise SystemExit(1)


@click.command()
@click.argument("cluster_id")
@click.option(
    "--reason", default="manual: clm provision", show_default=True, help="Why, recorded in the execution input."
)
@click.option(
    "--override-rollout",
    is_flag=True,
    help="Bring the cluster the newest configuration now, even when its rollout holds it (its wave has not come, "
    "the rollout is halted or paused): for a cluster that needs it before its wave. Recorded in the input.",
)
@follow_option
@stack_option
@pass_cli
def provision(cli: CliContext, cluster_id: str, reason: str, override_rollout: bool, follow: bool, stack: str) -> None:
    """Start a provision run of CLUSTER_ID now (the provision state machine of the deployed stack).

    The run decides for itself: it provisions an outdated cluster, decommissions one whose decommission was
    requested, and skips one that is up to date, already being worked on, or held by the rollout of the newest
    configuration (`clm rollout status` shows why; --override-rollout to take it anyway).
    """
    cluster = cli.registry().get(cluster_id)
    machine = provision_state_machine(cli, stack)
    sfn = cli.client("stepfunctions")
    arn = start_provision(sfn, machine, cluster.id, reason, override_rollout)
    _show_execution(cli, cluster.id, arn, "started")
    if follow:
        follow_run(cli, sfn, cluster, arn)


@click.command()
@click.argument("cluster_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--remove-volumes",
    is_flag=True,
    help="Also delete the cluster's EBS volumes (tag kubernetes.io/cluster/<name>=owned, <name> the alias of a "
    "zalando-eks cluster, else the id) once its stacks are gone "
    f"(sets config item {REMOVE_VOLUMES_ITEM}=true; CLM's --remove-volumes).",
)
@click.option(
    "--start-timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="With --follow: seconds to wait for the registry change to start the run.",
)
@follow_option
@stack_option
@pass_cli
def decommission(
    cli: CliContext, cluster_id: str, yes: bool, remove_volumes: bool, start_timeout: float, follow: bool, stack: str
) -> None:
    """Request the decommission of CLUSTER_ID: sets lifecycle_status=decommission-requested in the registry.

    The registry change starts the run (registry stream -> provision), which scales kube-system's Deployments to
    zero, deletes every node-pool stack, then the cluster stack, then the VPC CNI's leaked network interfaces (and
    with --remove-volumes the cluster's volumes), and marks the cluster decommissioned. With --follow, wait for that
    run and show it.
    """
    store = cli.registry()
    cluster = store.get(cluster_id)
    if cluster.lifecycle_status == "decommissioned":
        raise CliError(f"cluster {cluster_id} is already decommissioned")
    machine = provision_state_machine(cli, stack) if follow else ""
    sfn = cli.client("stepfunctions") if follow else None
    out = _progress_console(cli)
    if cluster.lifecycle_status == DECOMMISSION_REQUESTED:
        out.print(f"decommission of cluster {cluster_id} was already requested", soft_wrap=True)
        if not follow:
            return
        running = running_by_cluster(sfn, machine).get(cluster_id)
        if not running:
            raise CliError(f"no run of cluster {cluster_id} is running: start one with `clm provision {cluster_id}`")
        arn = running[0]
    else:
        if not yes:
            click.confirm(
                f"Decommission cluster {cluster_id}? Its node-pool and cluster stacks will be deleted", abort=True
            )
        known = recent_executions(sfn, machine) if follow else set()
        cluster.lifecycle_status = DECOMMISSION_REQUESTED
        if remove_volumes:
            cluster.config_items[REMOVE_VOLUMES_ITEM] = "true"
        store.put(cluster)
        out.print(
            f"cluster {cluster_id}: lifecycle_status={DECOMMISSION_REQUESTED}; the registry change starts "
            "its decommission run",
            soft_wrap=True,
        )
        if cluster.update_blocked:
            out.print(
                "note: config item cluster_update_block is set, so the run will skip the cluster",
                style="yellow",
                soft_wrap=True,
            )
        if not follow:
            return
        arn = wait_for_new_execution(sfn, machine, cluster_id, known, start_timeout)
    _show_execution(cli, cluster_id, arn, "following")
    follow_run(cli, sfn, cluster, arn)
