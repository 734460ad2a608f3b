"""`clm status [ID...]`: where each cluster stands: lifecycle, versions, the run in progress and the last problem."""

from __future__ import annotations

from typing import Any

import click

from clm.cli.blocked_drains import blocked_drains
from clm.cli.context import CliContext
from clm.cli.deployment import provision_state_machine, stack_option
from clm.cli.errors import DeploymentNotFound
from clm.cli.executions import execution_name, running_by_cluster
from clm.cli.fleet import fleet_options, select, where, with_where
from clm.cli.options import pass_cli
from clm.cli.output import Column, emit, print_error, print_warning, short_id, version_column
from clm.model import Cluster

COLUMNS = [
    Column("id", "cluster", short_id),
    Column("lifecycle"),
    version_column("current_version", "current"),
    version_column("next_version", "next"),
    Column("running_execution", "running", note=True),
    Column("last_problem", "last problem", note=True),
]


def status_row(cluster: Cluster, running: list[str], blocked: list[str] | None = None) -> dict[str, Any]:
    """The status of one cluster as plain data (None where there is nothing); `blocked`: its blocked drains
    (clm.cli.blocked_drains)."""
    problems = cluster.status.problems
    return {
        "id": cluster.id,
        **where(cluster),
        "lifecycle": cluster.lifecycle_status,
        "current_version": cluster.status.current_version or None,
        "next_version": cluster.status.next_version or None,
        "running_execution": ", ".join(execution_name(arn) for arn in running) or None,
        "blocked_drains": blocked or [],
        "last_problem": problems[-1].title if problems else None,
    }


@click.command()
@click.argument("cluster_ids", nargs=-1, metavar="[ID...]")
@fleet_options
@stack_option
@pass_cli
def status(
    cli: CliContext, cluster_ids: tuple[str, ...], accounts: tuple[str, ...], regions: tuple[str, ...], stack: str
) -> None:
    """Clusters (all, or the IDs given; `--account`, `--region` to narrow) with lifecycle, current and next version,
    the provision execution running for them, the drains its node pool rolls find blocked (set aside or parked:
    the blocking pods, their owners and budgets, since when) and their last problem; account and region where
    clusters differ.

    Running executions come from the provision state machine of the deployed stack; without a deployment the
    registry's view is shown alone.
    """
    store = cli.registry()
    if cluster_ids:
        clusters, invalid = [store.get(cluster_id) for cluster_id in cluster_ids], []
    else:
        clusters, invalid = store.list_clusters_report()
    try:
        running = running_by_cluster(cli.client("stepfunctions"), provision_state_machine(cli, stack))
    except DeploymentNotFound as exc:
        print_warning(f"running executions not shown: {exc}")
        running = {}
    sfn = cli.client("stepfunctions")
    rows = [
        status_row(
            cluster,
            running.get(cluster.id, []),
            [d for arn in running.get(cluster.id, []) for d in blocked_drains(sfn, arn)],
        )
        for cluster in select(clusters, accounts, regions)
    ]
    shown = [
        {key: "-" if value is None else value for key, value in row.items() if key != "blocked_drains"} for row in rows
    ]
    emit(shown, with_where(COLUMNS, rows), cli.output, title=f"{len(rows)} clusters in {cli.table}", data=rows)
    for row in rows:  # below the table: each a line of its own (pods, owners, budgets, since when)
        for drain in row["blocked_drains"]:
            print_warning(f"cluster {row['id']}: drain blocked: {drain}")
    for cluster_id, message in invalid:
        print_error(f"cluster {cluster_id} is invalid in the registry: {message}")
