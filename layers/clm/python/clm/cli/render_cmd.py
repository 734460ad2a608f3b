"""`clm render`: render a cluster's configuration to a folder, for review and template debugging."""

from __future__ import annotations

from pathlib import Path

import click

from clm.cli.context import CliContext
from clm.cli.deployment import stack_option
from clm.cli.deployment_settings import DeploymentSettings, manage_etcd_option
from clm.cli.options import config_option, pass_cli, registry_file_option
from clm.cli.output import emit, print_warning
from clm.errors import ClusterNotFound


@click.command()
@click.argument("cluster_ids", nargs=-1, required=True, metavar="CLUSTER_ID...")
@config_option
@registry_file_option
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the rendered files under OUT/<local_id>/ (default: only print a summary).",
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
    manage_etcd: bool | None,
    stack: str,
) -> None:
    """Render stacks, manifests and deletions of CLUSTER_ID (or `all`); changes nothing in AWS or Kubernetes.

    CLM's etcd stack (etcd-stack.yaml) too, when the deployment manages it: its files'
    archive is neither encrypted nor uploaded, only its path computed.
    A template error stops with the file and line at fault.
    """
    from clm.config.channels import ConfigSources
    from clm.registry.clusters_yaml import load_clusters
    from clm.render.artefacts import rendered_files, summary
    from clm.render.inputs import RenderInputs
    from clm.render.renderer import Renderer

    if registry_file is not None:
        clusters = {c.id: c for c in load_clusters(registry_file.read_text(), source=str(registry_file))}
    else:
        clusters = {c.id: c for c in cli.registry().list_clusters()}
    wanted = sorted(clusters) if cluster_ids == ("all",) else list(cluster_ids)
    for cluster_id in wanted:
        if cluster_id not in clusters:
            raise ClusterNotFound(cluster_id)
    sources, renderers = ConfigSources(config_uri, cli.client), {}
    inputs = RenderInputs.from_aws(cli.client, None)  # `aws:kms:` items, lookups: your credentials, asked if needed
    settings, trees = DeploymentSettings(cli, stack, manage_etcd), {}
    rows = []
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
        rendered = renderer.render(clusters[cluster_id])
        files = rendered_files(rendered)
        if out is not None:
            folder = out / rendered.cluster.local_id
            for relative, content in files.items():
                (folder / relative).parent.mkdir(parents=True, exist_ok=True)
                (folder / relative).write_text(content)
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
    emit(
        rows,
        ["cluster", "version", "node_pools", "manifests", "etcd_stack", "files", "folder"],
        cli.output,
        title="; ".join(f"rendered from {t.source} at {t.version}" for t in trees.values()),
    )
