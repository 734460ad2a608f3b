"""`clm sandbox up|deploy|down|status|demo`: the local sandbox (moto, a real control plane, simulated nodes),
with CLM deployed into it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from clm.cli.context import CliContext
from clm.cli.errors import CliError
from clm.cli.output import TABULAR, emit

DEFAULT = ParameterSource.DEFAULT
MAX_ACCOUNTS = 4  # clm_sandbox.targets.MAX_ACCOUNTS: the hub's account and up to three targets


def _sandbox_module(name: str) -> Any:
    """A module of the sandbox package; only in a development install (the sandbox is never deployed)."""
    import importlib

    try:
        return importlib.import_module(f"clm_sandbox.{name}")
    except ImportError:
        raise click.ClickException(
            "the sandbox is not installed: run `make demo` or `pip install -e .` in a clone of the CLM repository"
        ) from None


def _runner() -> Any:
    """The sandbox runner."""
    return _sandbox_module("runner")


def _progress(message: str) -> None:
    click.echo(message, err=True)


def _deploy(state: Any) -> Any:
    """Deploy CLM with the examples into the running sandbox (clm_sandbox.deploy.examples), and the target stack
    into each of its target accounts."""
    _progress("deploying CLM into the sandbox: the CDK app, examples/config and kube-1's kubeconfig secret")
    for plane in state.planes:
        _progress(f"  and ClmTarget into {plane.account}/{plane.region}, as its admin, for {plane.cluster_id}")
    examples = _sandbox_module("deploy.examples")
    clusters_file = Path(state.kubeconfig).parent / "clusters.yaml"
    try:
        return examples.deploy_examples(state.moto_endpoint, Path(state.kubeconfig), clusters_file, state.planes)
    except (RuntimeError, OSError) as exc:  # synthesis or the stack failed: one line, the sandbox log has the rest
        raise CliError(f"deploying CLM into the sandbox failed: {exc} (sandbox log: {state.log})") from None


def _deployed_data(deployed: Any) -> dict[str, Any]:
    return {**vars(deployed), "clusters_file": str(deployed.clusters_file), "config_uri": deployed.config_uri}


def _show_next(deployed: Any, state: Any) -> None:
    """The deployment, then the commands to try next."""
    if deployed.targets:
        _show_fleet_next(deployed, state.planes[0])
        return
    cluster = deployed.cluster_id
    click.secho(f"\nCLM deployed: stack Clm, registry table {deployed.outputs['RegistryTableName']}", fg="green")
    click.echo(f"  config:          {deployed.config_uri} ({deployed.config_files} files of examples/config)")
    click.echo(f"  registry file:   {deployed.clusters_file} ({cluster}, reaching the sandbox's Kubernetes)")
    click.echo("\nNext, in a shell with the exports above:")
    for command, what in (
        (f"clm registry import {deployed.clusters_file}", "register kube-1: its first run starts"),
        (f"clm provision {cluster} --follow", "follow a run live until it ends"),
        (f"clm plan {cluster} --config {deployed.config_uri}", "what a run would change"),
        ("clm status", "versions, running executions, last problem"),
        ("kubectl get nodes", "the simulated nodes"),
        ("clm sandbox deploy", "redeploy CLM after a code change"),
        ("clm sandbox down", "stop everything"),
    ):
        click.echo(f"  {command}\n      # {what}")


def _show_fleet_next(deployed: Any, plane: Any) -> None:
    """A fleet's deployment (the hub, its targets, the clusters registered), then the commands to try next (in the
    first target, `plane`)."""
    admin_role = _sandbox_module("accounts").admin_role_arn
    clusters = (deployed.cluster_id, *deployed.targets)
    places = ", ".join("/".join(cluster.split(":")[1:3]) for cluster in deployed.targets)  # aws:<acct>:<region>:..
    click.secho(f"\nCLM deployed: stack Clm, registry table {deployed.outputs['RegistryTableName']}", fg="green")
    click.echo(f"  targets:         ClmTarget in {places}, each deployed as its account's admin")
    click.echo(f"  config:          {deployed.config_uri} ({deployed.config_files} files of examples/config)")
    click.echo(f"  registry file:   {deployed.clusters_file} ({len(clusters)} clusters, each on its own control plane)")
    new = len(deployed.registered)
    if new:
        click.echo(f"  registered:      {new} new, their first runs start (as `clm registry import` of the file would)")
    else:
        click.echo(f"  registered:      all {len(clusters)} already")
    click.echo("\nNext, in a shell with the exports above:")
    for command, what in (
        ("clm status", "the fleet: each cluster's lifecycle, version and running run"),
        (f"clm provision {plane.cluster_id} --follow", "a run in a target account, live (it joins the first run)"),
        (f"clm registry list --account {plane.account}", "one account's clusters"),
        (f"KUBECONFIG={plane.kubeconfig} kubectl get nodes", "its nodes, on its own control plane"),
        ("clm sandbox status", "every account's Kubernetes API and kubeconfig"),
        (f"clm plan {deployed.cluster_id} --config {deployed.config_uri}", "what a run would change (the hub's)"),
        (
            f"clm plan {plane.cluster_id} --config {deployed.config_uri} --target-role {admin_role(plane.account)}",
            "the same in a target account, read through its admin role",
        ),
        ("clm targets", "each account and region: allowed, reachable, its target stack"),
        ("clm sandbox deploy", "redeploy the hub and the targets after a code change"),
        ("clm sandbox down", "stop everything, every account's control plane too"),
    ):
        click.echo(f"  {command}\n      # {what}")


def _show_accounts(state: Any) -> None:
    """The hub's account and each target's, with its cluster's Kubernetes API and kubeconfig (nothing without
    targets)."""
    if not state.planes:
        return
    click.echo("\nAccounts (the hub's, then its targets'):")
    rows = [("123456789012", state.region, "hub", "kube-1", state.kube_apiserver, state.kubeconfig)]
    rows += [
        (p.account, p.region, "target", p.cluster_id.rsplit(":", 1)[1], p.kube_apiserver, p.kubeconfig)
        for p in state.planes
    ]
    for account, region, role, cluster, apiserver, kubeconfig in rows:
        click.echo(f"  {account}  {region:<13} {role:<6}  {cluster}  {apiserver}  {kubeconfig}")


def _show(state: Any, ctx: CliContext, title: str, deployed: Any = None) -> None:
    """The sandbox's endpoints and export lines, and what was deployed into it."""
    if ctx.output not in TABULAR:
        data = {**vars(state), **({"clm": _deployed_data(deployed)} if deployed else {})}
        emit([data], list(data), ctx.output)
        return
    click.secho(title, fg="green", bold=True)
    click.echo(f"  AWS (moto):      {state.moto_endpoint}")
    click.echo(f"  Kubernetes API:  {state.kube_apiserver}")
    click.echo(f"  kubeconfig:      {state.kubeconfig}")
    click.echo(f"  log:             {state.log}")
    _show_accounts(state)
    click.echo("\nUse it from a shell:")
    for key, value in state.environment().items():
        click.echo(f"  export {key}={value}")
    if deployed is not None:
        _show_next(deployed, state)


@click.group()
def sandbox() -> None:
    """Run CLM's local sandbox: AWS on moto, a real Kubernetes control plane, simulated nodes.

    \b
    clm sandbox up        start it in the background and deploy CLM into it (the first run builds Kubernetes);
                          with --accounts 3, a fleet: the hub and two target accounts, a cluster in each
    clm sandbox deploy    deploy CLM again into the running sandbox, e.g. after a code change
    clm sandbox status    is it running, and where
    clm sandbox down      stop it and remove its nodes and data
    clm sandbox demo      the main job end to end in a sandbox of its own: provision, then roll every node
    """


@sandbox.command()
@click.option(
    "--boot-delay",
    type=float,
    default=2.0,
    show_default=True,
    help="Seconds from an instance's launch until its Node is Ready.",
)
@click.option(
    "--pod-ready-delay",
    type=float,
    default=0.5,
    show_default=True,
    help="Seconds from a pod's scheduling until it is Ready.",
)
@click.option(
    "--time-scale", type=float, default=1.0, show_default=True, help="Factor on pods' termination grace periods."
)
@click.option("--bare", is_flag=True, help="Do not deploy CLM: an empty AWS (moto) and Kubernetes.")
@click.option(
    "--accounts",
    type=click.IntRange(1, MAX_ACCOUNTS),
    default=1,
    show_default=True,
    help="Accounts of the sandbox's organization: the hub's (123456789012, eu-central-1) and N-1 targets, "
    "222222222222 in eu-west-1, 333333333333 in eu-central-1, 444444444444 in eu-west-1. Each target gets "
    "ClmTarget (bootstrapped and deployed with the CDK CLI as its admin), a control plane of its own (~0.5 GB) and "
    "a copy of kube-1, registered in the hub (its first run starts); the hub may reach them (clm:targetAccounts). "
    "docs/sandbox.md, 'A fleet'.",
)
@click.pass_obj
def up(
    ctx: CliContext, boot_delay: float, pod_ready_delay: float, time_scale: float, bare: bool, accounts: int
) -> None:
    """Start the sandbox in the background, deploy CLM into it with the examples (unless --bare), and print its
    endpoints and the commands to try next.

    \b
    clm sandbox up                 the hub alone, kube-1 to register with `clm registry import`
    clm sandbox up --accounts 3    a fleet: the hub and two target accounts in two regions, a cluster in each
    """
    runner = _runner()
    options = {"boot_delay": boot_delay, "pod_ready_delay": pod_ready_delay, "time_scale": time_scale}
    try:
        state = runner.up(options={**options, "accounts": accounts}, progress=_progress)
    except runner.SandboxError as exc:
        raise click.ClickException(str(exc)) from None
    running = len(state.planes) + 1
    if running != accounts and click.get_current_context().get_parameter_source("accounts") != DEFAULT:
        raise CliError(f"a sandbox of {running} account(s) is running: stop it first (`clm sandbox down`)")
    _show(state, ctx, "sandbox running", None if bare else _deploy(state))


@sandbox.command()
@click.pass_obj
def deploy(ctx: CliContext) -> None:
    """Deploy CLM into the running sandbox again: the CDK app as it is now (a code change is updated in place),
    examples/config uploaded again, kube-1's registry file and kubeconfig secret; in a fleet, the target stacks
    and the targets' clusters too."""
    state = _runner().status()
    if state is None:
        raise CliError("sandbox not running: start it with `clm sandbox up`")
    deployed = _deploy(state)
    if ctx.output in TABULAR:
        _show_next(deployed, state)
    else:
        emit([], [], ctx.output, data=_deployed_data(deployed))


@sandbox.command()
@click.pass_obj
def status(ctx: CliContext) -> None:
    """Show whether the sandbox runs and where; exit code 3 when it does not."""
    state = _runner().status()
    if state is None:
        click.echo("sandbox not running (start it with `clm sandbox up`)")
        raise SystemExit(3)
    _show(state, ctx, "sandbox running")


@sandbox.command()
def down() -> None:
    """Stop the sandbox: moto's state, every control plane and their data are gone afterwards."""
    if _runner().down():
        click.echo("sandbox stopped")
    else:
        click.echo("sandbox not running")


@sandbox.command()
@click.option("--keep", is_flag=True, help="Keep the demo's sandbox running at the end (Ctrl-C stops it).")
@click.option("--wait-scale", type=float, default=None, help="Factor on Wait states, e.g. 0.2 (default: real time).")
def demo(keep: bool, wait_scale: float | None) -> None:
    """Deploy CLM into a fresh sandbox, provision kube-1, roll its nodes to a new AMI, and summarise the roll.

    The same as `make demo`; it writes .demo/roll-timeline.html and .demo/sandbox.log.
    """
    args = ["--keep"] if keep else []
    args += ["--wait-scale", str(wait_scale)] if wait_scale is not None else []
    _sandbox_module("demo.steps").main(args)
