"""`clm render`: render a cluster's configuration to a folder, for review and template debugging."""

from __future__ import annotations

from pathlib import Path

import click

from clm.cli.context import CliContext
from clm.cli.deployment import stack_option
from clm.cli.deployment_settings import DeploymentSettings, manage_etcd_option
from clm.cli.options import config_option, pass_cli, registry_file_option
from clm.cli.output import Column, emit, print_warning, short_id, version_column
from clm.cli.render_out import OutFolder
from clm.errors import ClusterNotFound

SUMMARY = [
    Column("cluster", short=short_id),
    version_column("version"),
    Column("node_pools", "pools", note=True),
    Column("manifests"),
    Column("etcd_stack", "etcd"),
    Column("files"),
]
WIDE_SUMMARY = [*SUMMARY, Column("folder")]  # `table` names the folders in its title: OUT/<local id>


@click.command()
@click.argument("cluster_ids", nargs=-1, required=True, metavar="CLUSTER_ID...")
@config_option
@registry_file_option
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the rendered files under OUT/<local_id>/ (default: only print a summary).",
)
@click.option(
    "--stack-policy",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the managed policy CloudFormation's ClusterStackRole needs on top of its built-in rights to deploy "
    "the rendered stacks (a CloudFormation template; for context clm:clusterStackPolicyArns).",
)
@manage_etcd_option
@stack_option
@pass_cli
def render(
    cli: CliContext,
    cluster_ids: tuple[str, ...],
    config_uri: str,
    registry_file: Path | None,
    out: Path | None,
    stack_policy: Path | None,
    manage_etcd: bool | None,
    stack: str,
) -> None:
    """Render stacks, manifests and deletions of CLUSTER_ID (or `all`); changes nothing in AWS or Kubernetes.

    CLM's etcd stack (etcd-stack.yaml) too, when the deployment manages it: its files'
    archive is neither encrypted nor uploaded, only its path computed.
    A template error stops with the file and line at fault, and --out then writes nothing.

    Several --config sources, comma-separated as [name=]URI (unnamed: main for
    the first, then source2, source3...), combine as Zalando CLM combines them:
    config-defaults.yaml of every source, merged key by key, a later source's
    value winning a key (the registry's config items win over every default);
    deletions.yaml of every source, its lists concatenated in source order; the
    manifest components of every source, each applied as <source>/<component>
    (two sources' components of one name are both applied); everything else
    (cluster, node-pool and etcd stacks, node files, Karpenter objects) from the
    first source alone. A cluster's config item override_channel (e.g. team=beta)
    reads that source on another channel.

    With --stack-policy, also what the stacks' resource types need beyond the
    ClusterStackRole's rights (CloudFormation's resource schemas), as a policy
    template to deploy and pass with `cdk deploy -c clm:clusterStackPolicyArns=ARN`;
    IAM users, groups, policies and identity providers, STS, Organizations and
    wildcard actions are named, never granted.
    """
    from clm.config.channels import ConfigSources
    from clm.registry.clusters_yaml import load_clusters
    from clm.render.artefacts import rendered_files, summary
    from clm.render.inputs import RenderInputs
    from clm.render.node_files import OUTPUTS_VALUE, PendingOutputs
    from clm.render.renderer import Renderer

    if registry_file is not None:
        clusters = {c.id: c for c in load_clusters(registry_file.read_text(), source=str(registry_file))}
    else:
        clusters = {c.id: c for c in cli.registry().list_clusters()}
    wanted = sorted(clusters) if cluster_ids == ("all",) else list(cluster_ids)
    for cluster_id in wanted:
        if cluster_id not in clusters:
            raise ClusterNotFound(cluster_id)
        if stack_policy is not None:  # before any call: the policy is made of the region's resource schemas
            from clm.cli.stack_policy import known_region

            known_region(clusters[cluster_id].region, f"cluster {cluster_id}")
    sources, renderers = ConfigSources(config_uri, cli.client), {}
    inputs = RenderInputs.from_aws(cli.client, None)  # `aws:kms:` items, lookups: your credentials, asked if needed
    settings, trees = DeploymentSettings(cli, stack, manage_etcd), {}
    rows, stacks, folder = [], [], OutFolder(out) if out is not None else None
    for cluster_id in wanted:
        channels = tuple(sources.channels(clusters[cluster_id]).items())  # one tree per channel the clusters read
        if channels not in trees:
            trees[channels] = sources.for_cluster(clusters[cluster_id]).fetch()
        deployed, etcd_warning = settings.inputs(inputs, clusters[cluster_id], trees[channels].files)
        if etcd_warning:
            print_warning(f"{cluster_id}: {etcd_warning}")
        key = (channels, deployed.files_store, deployed.etcd_store)  # stores differ by cluster (etcd, bucket)
        if key not in renderers:
            renderers[key] = Renderer(trees[channels], deployed)
        renderer = renderers[key]
        rendered = renderer.render(clusters[cluster_id], {OUTPUTS_VALUE: PendingOutputs()})  # no stack read
        files = rendered_files(rendered)
        stacks += [(rendered.cluster.region, s.file, s.template) for s in rendered.stacks]
        if folder is not None:
            folder.add(cluster_id, rendered.cluster.local_id, files)
        facts = summary(rendered)
        for warning in rendered.warnings:
            print_warning(f"{cluster_id}: {warning}")
        rows.append(
            {
                "cluster": cluster_id,
                "version": rendered.version,
                "node_pools": ", ".join(facts["node_pools"]),
                "manifests": rendered.manifest_count,
                "etcd_stack": "yes" if rendered.etcd_stack else "no",
                "files": len(files),
                "folder": str(out / rendered.cluster.local_id) if out else "-",
            }
        )
    if folder is not None:
        folder.write()  # only once every cluster rendered and every path is inside its folder
    if stack_policy is not None:
        write_stack_policy(stack_policy, stacks, wanted)
    written = f"; written to {out}/<local id>/" if out else ""
    emit(
        rows,
        WIDE_SUMMARY if cli.output == "wide" else SUMMARY,
        cli.output,
        title="; ".join(f"rendered from {t.source} at {t.version}" for t in trees.values()) + written,
    )


def write_stack_policy(path: Path, stacks: list[tuple[str, str, dict]], cluster_ids: list[str]) -> None:
    """Write the ClusterStackRole's extra policy for `stacks` to `path` (nothing when none is needed) and say so."""
    from clm.cli.policy_actions import NOT_IAM
    from clm.cli.stack_policy import needed_permissions, policy_template

    needed = needed_permissions(stacks)
    for resource_type, reason in sorted(needed.left_out.items()):
        print_warning(f"{resource_type} ({', '.join(sorted(needed.used_in[resource_type]))}): {reason}")
    refused = {reason: actions for reason, actions in needed.dropped.items() if reason != NOT_IAM}  # others: no such
    for reason, actions in sorted(refused.items()):
        listed = "; ".join(f"{action} ({', '.join(sorted(kinds))})" for action, kinds in sorted(actions.items()))
        print_warning(f"not granted: {listed}: {reason}")
    if not needed.actions:
        but = " but what is named above" if refused else ""
        click.echo(
            err=True,
            message=f"The ClusterStackRole's built-in rights cover every resource of these stacks{but}: no policy "
            "written.",
        )
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(policy_template(needed, f"the stacks of {', '.join(cluster_ids)}"))
    kinds = len(needed.actions)
    actions = len({action for group in needed.actions.values() for action in group})
    click.echo(
        err=True, message=f"{path}: {actions} actions for {kinds} resource types beyond the ClusterStackRole's rights."
    )
