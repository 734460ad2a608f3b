"""`clm registry ...`: import, export, list, show, set and delete clusters in the DynamoDB registry."""

from __future__ import annotations

from pathlib import Path

import click

from clm.cli.context import CliContext
from clm.cli.deployment import stack_option
from clm.cli.errors import CliError
from clm.cli.fleet import fleet_options, select, where, with_where
from clm.cli.hub import HUB_ONLY, HubReach
from clm.cli.options import pass_cli
from clm.cli.output import Column, console, emit, print_error, print_warning, short_id, version_column
from clm.cli.registry_edit import changes, edit_spec, parse_assignment
from clm.model import Cluster
from clm.registry.clusters_yaml import dump_clusters, load_located_clusters

LIST_COLUMNS = [
    Column("id", "cluster", short_id),
    Column("alias", note=True),
    Column("lifecycle"),
    version_column("current_version", "current"),
    version_column("next_version", "next"),
    Column("problems"),
    Column("node_pools", "pools"),
]
WRITES = ("new", "updated")  # the import's changes that write the cluster


@click.group()
def registry() -> None:
    """Clusters in the registry (DynamoDB), in Zalando CLM's clusters.yaml format."""


@registry.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Validate and show what would change; write nothing.")
@click.option(
    "--skip-foreign",
    is_flag=True,
    help="Leave out (and list) the clusters in an account the deployed hub may not reach, importing the others: "
    "the part of a multi-account file this hub manages.",
)
@stack_option
@pass_cli
def import_(cli: CliContext, file: Path, dry_run: bool, skip_foreign: bool, stack: str) -> None:
    """Validate FILE (CLM's clusters.yaml) and write its clusters' specs.

    The whole file is validated first: one invalid cluster and nothing is written.
    The hub acts only in the accounts its deployment (--stack) may reach: its own (the
    caller's) and those its clm:targetAccounts, clm:targetInclude and clm:targetExclude
    allow, in any region. A cluster in another account is refused, and nothing is written,
    unless --skip-foreign leaves such clusters out. `clm targets` then checks that the hub
    can reach each account and region (its target stack there).
    Status and locks of existing clusters are kept.
    """
    located = load_located_clusters(file.read_text(), source=str(file))
    reach = HubReach(cli, stack)
    foreign = {cluster.id: f"{where}: {reason}" for where, cluster in located if (reason := reach.refusal(cluster))}
    if foreign and not skip_foreign:
        raise CliError(
            f"{file}: {len(foreign)} cluster(s) in an account the hub may not reach ({HUB_ONLY}), nothing written: "
            f"{'; '.join(foreign.values())}; pass --skip-foreign to import the others"
        )
    for reason in foreign.values():
        print_warning(f"skipped {reason}")
    store = cli.registry()
    existing = {c.id: c for c in store.list_clusters()}
    rows = []
    for _, cluster in located:
        change = "skipped" if cluster.id in foreign else _change(existing.get(cluster.id), cluster)
        if change in WRITES and not dry_run:
            store.put(cluster)
        rows.append({"cluster": cluster.id, "change": change})
    verb = "would write" if dry_run else "wrote"
    written = sum(row["change"] in WRITES for row in rows)
    skipped = f", skipped {len(foreign)} in an account the hub may not reach" if foreign else ""
    emit(
        rows,
        [Column("cluster", short=short_id), "change"],
        cli.output,
        title=f"{verb} {written} of {len(rows)} clusters{skipped}",
    )


def _change(before: Cluster | None, cluster: Cluster) -> str:
    """What an import does to the registry's `before`: new, unchanged or updated."""
    if before is None:
        return "new"
    return "unchanged" if before.spec_dict() == cluster.spec_dict() else "updated"


@registry.command("export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--no-status", is_flag=True, help="Leave out each cluster's status.")
@pass_cli
def export(cli: CliContext, file: Path | None, no_status: bool) -> None:
    """Write every cluster in CLM's clusters.yaml format to FILE (default: standard output)."""
    text = dump_clusters(cli.registry().list_clusters(), with_status=not no_status)
    if file is None:
        click.echo(text, nl=False)
    else:
        file.write_text(text)
        console.print(f"exported to {file}")


@registry.command("list")
@fleet_options
@pass_cli
def list_(cli: CliContext, accounts: tuple[str, ...], regions: tuple[str, ...]) -> None:
    """Clusters with their lifecycle, versions, problems and pools (`--account`, `--region` to narrow); account and
    region where clusters differ."""
    store = cli.registry()
    clusters, invalid = store.list_clusters_report()
    rows = [
        {
            "id": c.id,
            **where(c),
            "alias": c.alias,
            "lifecycle": c.lifecycle_status,
            "current_version": c.status.current_version or "-",
            "next_version": c.status.next_version or "-",
            "problems": len(c.status.problems),
            "node_pools": len(c.node_pools),
        }
        for c in sorted(select(clusters, accounts, regions), key=lambda c: c.id)
    ]
    emit(
        rows,
        with_where(LIST_COLUMNS, rows),
        cli.output,
        title=f"{len(rows)} clusters in {cli.table}",
    )
    for cluster_id, message in invalid:
        print_error(f"cluster {cluster_id} is invalid in the registry: {message}")


@registry.command("show")
@click.argument("cluster_id")
@pass_cli
def show(cli: CliContext, cluster_id: str) -> None:
    """One cluster, spec and status, in CLM's format (YAML unless -o json)."""
    data = cli.registry().get(cluster_id).to_dict()
    emit([], [], "json" if cli.output == "json" else "yaml", data=data)


@registry.command("set")
@click.argument("cluster_id")
@click.argument("assignments", nargs=-1, metavar="FIELD=VALUE...")
@click.option(
    "--unset",
    "unset",
    multiple=True,
    metavar="FIELD",
    help="Remove a field or config item (e.g. config_items.cluster_update_block); repeatable.",
)
@click.option("--dry-run", is_flag=True, help="Show the fields before and after; write nothing.")
@stack_option
@pass_cli
def set_(
    cli: CliContext, cluster_id: str, assignments: tuple[str, ...], unset: tuple[str, ...], dry_run: bool, stack: str
) -> None:
    """Change fields of one cluster: FIELD=VALUE with dotted paths.

    \b
    clm registry set ID lifecycle_status=ready
    clm registry set ID config_items.kube_auth_secret=clm/kube-1
    clm registry set ID node_pools.default-worker.max_size=5 node_pools.default-worker.config_items.surge=1
    clm registry set ID --unset config_items.cluster_update_block

    The whole cluster is validated as an import validates it before anything is written,
    its account too (one the deployed hub, --stack, may reach).
    """
    if not assignments and not unset:
        raise CliError("nothing to change: give FIELD=VALUE or --unset FIELD")
    store = cli.registry()
    before = store.get(cluster_id)
    spec = edit_spec(before.spec_dict(), [parse_assignment(text) for text in assignments], list(unset), cluster_id)
    after = Cluster.from_dict({**spec, "status": before.status.to_dict()}, source=f"clm registry set {cluster_id}")
    refused = HubReach(cli, stack).refusal(after)
    if refused:
        raise CliError(f"clm registry set: {refused}: {HUB_ONLY}; nothing written")
    rows = changes(before.spec_dict(), after.spec_dict())
    if rows and not dry_run:
        store.put(after)
    verb = "would change" if dry_run else "changed"
    shown = [{key: "-" if value is None else value for key, value in row.items()} for row in rows]
    columns = ["field", Column("before", note=True), Column("after", note=True)]
    emit(shown, columns, cli.output, title=f"{verb} {len(rows)} field(s) of {cluster_id}", data=rows)


@registry.command("delete")
@click.argument("cluster_id")
@click.option("--force", is_flag=True, help="Delete even when not decommissioned, or while a run holds its lock.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_cli
def delete(cli: CliContext, cluster_id: str, force: bool, yes: bool) -> None:
    """Remove a decommissioned cluster from the registry (its stacks are not touched)."""
    store = cli.registry()
    cluster = store.get(cluster_id)
    if cluster.lifecycle_status != "decommissioned" and not force:
        raise CliError(
            f"cluster {cluster_id} is {cluster.lifecycle_status}, not decommissioned: its stacks may still "
            f"exist; run `clm decommission {cluster_id}` first, or pass --force"
        )
    if not yes:
        click.confirm(f"Delete cluster {cluster_id} from the registry {cli.table}?", abort=True)
    store.delete(cluster_id, force=force)
    console.print(f"deleted cluster {cluster_id} from {cli.table}", soft_wrap=True, markup=False)
