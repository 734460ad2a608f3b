"""`clm plan`: what a run would change in a cluster's stacks and node pools, without changing anything."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from clm.cli.context import CliContext
from clm.cli.deployment import stack_option
from clm.cli.deployment_settings import DeploymentSettings, manage_etcd_option
from clm.cli.options import config_option, pass_cli, registry_file_option
from clm.cli.output import TABULAR, Column, console, emit, print_warning
from clm.cli.tables import literal
from clm.cli.target_access import in_target, target_options
from clm.errors import ClusterNotFound

if TYPE_CHECKING:
    from clm.model import Cluster
    from clm.stacks.plan import PoolPlan


ACTION_STYLES = {"create": "green", "no change": "dim", "update": "yellow", "delete": "red", "attention": "bold red"}
DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


@click.command()
@click.argument("cluster_id")
@config_option
@registry_file_option
@manage_etcd_option
@stack_option
@target_options
@pass_cli
def plan(
    cli: CliContext,
    cluster_id: str,
    config_uri: str,
    registry_file: Path | None,
    manage_etcd: bool | None,
    stack: str,
    target_profile: str | None,
    target_role: str | None,
) -> None:
    """Show what a run would change in CLUSTER_ID; changes nothing in AWS or Kubernetes.

    \b
    - every stack, in a run's order (CLM's etcd stack first, when the deployment
      manages it): create, no change, or update with a unified diff of the deployed
      template against the rendered one and the parameters and tags that change;
    - every node pool: its instances, and which a run would replace and why (a
      Karpenter pool's: image, tags or user data unlike its rendered EC2NodeClass,
      or Karpenter calls the NodeClaim drifted);
    - the drain pre-flight of their nodes (what would block or hurt the drain), when
      the cluster's API server can be reached (otherwise one warning line).

    A template error stops with the file and line at fault, before CloudFormation is asked.
    A cluster in another region of the caller's account is read there with the caller's
    credentials; one in another account through --target-profile or --target-role (the
    registry, configuration and deployment are read with the caller's, in the hub).
    """
    from clm.config.channels import ConfigSources
    from clm.kube.connect import SECRET_ITEM
    from clm.render.inputs import RenderInputs
    from clm.render.node_files import OUTPUTS_VALUE, PendingOutputs
    from clm.render.renderer import Renderer
    from clm.stacks.cfn import stack_outputs
    from clm.stacks.names import cluster_stack_name
    from clm.stacks.plan import plan_stacks
    from clm.workflow.placement import of_cluster

    cluster = load_cluster(cli, cluster_id, registry_file)
    tree = ConfigSources(config_uri, cli.client).for_cluster(cluster).fetch()
    settings = DeploymentSettings(cli, stack, manage_etcd)
    where = functools.cache(lambda: in_target(cli, cluster.id, of_cluster(cluster), target_profile, target_role))
    lookups = RenderInputs.from_aws(lambda service: where().client(service), None)  # the target reached on first use
    inputs, etcd_warning = settings.inputs(lookups, cluster, tree.files)
    renderer = Renderer(tree, inputs)
    rendered = renderer.render(cluster, {OUTPUTS_VALUE: PendingOutputs()})  # template errors before any AWS call
    outputs = stack_outputs(where().client("cloudformation"), cluster_stack_name(cluster))
    if outputs is not None:  # what the run renders with, once the cluster stack exists
        rendered = renderer.render(cluster, {OUTPUTS_VALUE: outputs})
    kube = cli if cluster.config_items.get(SECRET_ITEM) else where()  # a kubeconfig secret is the hub's
    drifted, drift_warning = karpenter_drift(kube, rendered.cluster)
    aws = where()
    stacks = plan_stacks(rendered, aws.client("cloudformation"), aws.client("autoscaling"), aws.client("ec2"), drifted)
    data = {
        **stacks.to_dict(),
        "version": rendered.version,
        "config": {"source": tree.source, "version": tree.version},
        "drain_preflight": drain_preflight(kube, rendered.cluster, stacks.pools),
        "warnings": rendered.warnings,  # what rendered but deserves a look (file and line or logical id)
    }
    for warning in (*rendered.warnings, etcd_warning, drift_warning, data["drain_preflight"]["warning"]):
        if warning:
            print_warning(warning)
    if cli.output in TABULAR:
        show(data, cli.output)
    else:
        emit([], [], cli.output, data=data)


def load_cluster(cli: CliContext, cluster_id: str, registry_file: Path | None) -> Cluster:
    """The cluster from `registry_file` (CLM's clusters.yaml) or else from the registry table."""
    from clm.registry.clusters_yaml import load_clusters

    if registry_file is None:
        return cli.registry().get(cluster_id)
    for cluster in load_clusters(registry_file.read_text(), source=str(registry_file)):
        if cluster.id == cluster_id:
            return cluster
    raise ClusterNotFound(cluster_id)


def karpenter_drift(cli: CliContext, cluster: Cluster) -> tuple[dict[str, str], str]:
    """Karpenter's drift verdicts on the cluster's nodes (instance id -> why), and a warning when they could not be
    read (the cluster is not reachable); nothing to read without Karpenter pools."""
    if not cluster.karpenter_pools:
        return {}, ""
    from clm.kube.connect import connect_cluster
    from clm.kube.errors import KubeError
    from clm.kube.karpenter import drifted_instances

    try:
        with connect_cluster(cluster, cli) as kube:
            return drifted_instances(kube), ""
    except KubeError as exc:
        return {}, f"Karpenter's drift verdicts skipped, the cluster is not reachable: {exc}"


def drain_preflight(cli: CliContext, cluster: Cluster, pools: list[PoolPlan]) -> dict[str, Any]:
    """`{checked, warning, nodes}`: the pre-flight of the nodes a run would drain, or why it could not be had."""
    from clm.kube.connect import connect_cluster
    from clm.kube.errors import KubeError
    from clm.stacks.drain_preview import drain_preflights

    if not any(pool.outdated for pool in pools):
        return {"checked": False, "warning": "", "nodes": []}
    try:
        with connect_cluster(cluster, cli) as kube:
            nodes = drain_preflights(kube, pools)
    except KubeError as exc:
        return {
            "checked": False,
            "warning": f"drain pre-flight skipped, the cluster is not reachable: {exc}",
            "nodes": [],
        }
    return {"checked": True, "warning": "", "nodes": nodes}


def show(data: dict[str, Any], fmt: str) -> None:
    """The plan for a terminal: stacks with their diffs, node pools' instances (a table in `fmt`, table or wide),
    the drain pre-flight."""
    from clm.stacks.diff import ACTION_MEANINGS

    config = data["config"]
    _say(
        ("plan for cluster ", "bold"),
        data["cluster"],
        f" at {data['version']}",
        (f"  (config {config['source']} at {config['version']})", "dim"),
    )
    for stack in data["stacks"]:
        action = stack["action"]
        _say(
            ("stack ", "bold"),
            (stack["stack_name"], "bold"),
            f" ({stack['file']})" if stack["file"] else "",
            ": ",
            (action, ACTION_STYLES.get(action, "magenta")),
            f" [{stack['status']}]" if stack["status"] else "",
            (f"  {ACTION_MEANINGS[action]}", "dim"),
        )
        if stack["problem"]:
            _say("  ", (stack["problem"], "red"))
        for line in stack["template_diff"].splitlines():
            _say(("  " + line, DIFF_STYLES.get(line[:1], "")))
        for change in stack["launch_changes"]:
            _say("  ", ("launch change ", "yellow"), change)
        if stack["sets_policy"]:
            _say("  stack policy: set to CLM's (the deployed stack has another or none)")
        for kind in ("parameter", "tag"):
            for change in stack[kind + "s"]:
                _say(f"  {kind} {change['name']}: {change['deployed']} -> {change['rendered']}")
    for pool in data["node_pools"]:
        _show_pool(pool, fmt)
    _show_drains(data["drain_preflight"])


def _say(*parts: str | tuple[str, str]) -> None:
    """One line of text and (text, style) parts, printed literally (clm.cli.tables.literal) and never wrapped."""
    console.print(literal(*parts), soft_wrap=True)


def _show_pool(pool: dict[str, Any], fmt: str) -> None:
    title = f"node pool {pool['node_pool']}" + (" (removed)" if pool["removed"] else "")
    if pool["error"]:
        _say((title, "bold"), ": ", (pool["error"], "red"))
        return
    if not pool["asg_name"] and not pool["karpenter"]:
        _say((title, "bold"), ": no instances yet (its stack is created)")
        return
    groups = pool.get("groups") or []
    where = "Karpenter's instances" if pool["karpenter"] else f"group {pool['asg_name']}"
    if len(groups) > 1:
        where = f"{len(groups)} groups"
    keys = ["instance", "az", "type", "state", "replace", "why"]
    rows = [
        dict(
            zip(
                keys,
                (
                    i["id"],
                    i["az"],
                    i["instance_type"],
                    i["lifecycle_state"],
                    "yes" if i["outdated"] else "no",
                    "; ".join(i["reasons"]),
                ),
                strict=True,
            )
        )
        for i in pool["instances"]
    ]
    emit(
        rows,
        [*keys[:-1], Column("why", note=True)],
        fmt,
        title=f"{title}, {where}: {len(rows)} instances, {pool['outdated']} to replace",
    )
    for group in groups if len(groups) > 1 else []:
        sizes = f"desired {group['desired']} (min {group['min']}, max {group['max']})"
        version = f"launch template version {group['launch_template_version']}"
        _say("  group ", group["name"], f" in {', '.join(group['zones']) or '?'}: {sizes}, {version}")


def _show_drains(drains: dict[str, Any]) -> None:
    if not drains["checked"]:
        return
    if not drains["nodes"]:
        _say("drain pre-flight: no node to drain")
    for node in drains["nodes"]:
        _say(
            ("drain pre-flight ", "bold"),
            (node["node"], "bold"),
            f" (node pool {node['node_pool']}, instance {node['instance']}): {node['evictable']} pods to evict",
        )
        for blocker in node["blockers"]:
            _say("  ", ("blocked ", "red"), f"{blocker['pod']}: {blocker['reason']}")
        for warning in node["warnings"]:
            _say("  ", ("warning ", "yellow"), f"{warning['pod']}: {warning['reason']}")
