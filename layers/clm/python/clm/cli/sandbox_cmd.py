"""`clm sandbox up|down|status|demo`: the local sandbox (moto, a real control plane, simulated nodes)."""

from __future__ import annotations

from typing import Any

import click

from clm.cli.context import CliContext
from clm.cli.output import TABULAR, emit


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


def _show(state: Any, ctx: CliContext, title: str) -> None:
    if ctx.output not in TABULAR:
        emit([vars(state)], list(vars(state)), ctx.output)
        return
    click.secho(title, fg="green", bold=True)
    click.echo(f"  AWS (moto):      {state.moto_endpoint}")
    click.echo(f"  Kubernetes API:  {state.kube_apiserver}")
    click.echo(f"  kubeconfig:      {state.kubeconfig}")
    click.echo(f"  log:             {state.log}")
    click.echo("\nUse it from a shell:")
    for key, value in state.environment().items():
        click.echo(f"  export {key}={value}")


@click.group()
def sandbox() -> None:
    """Run CLM's local sandbox: AWS on moto, a real Kubernetes control plane, simulated nodes.

    \b
    clm sandbox up        start it in the background (the first run builds Kubernetes, ~10 min)
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
@click.pass_obj
def up(ctx: CliContext, boot_delay: float, pod_ready_delay: float, time_scale: float) -> None:
    """Start the sandbox in the background and print its endpoints."""
    runner = _runner()
    options = {"boot_delay": boot_delay, "pod_ready_delay": pod_ready_delay, "time_scale": time_scale}
    try:
        state = runner.up(options=options, progress=lambda message: click.echo(message, err=True))
    except runner.SandboxError as exc:
        raise click.ClickException(str(exc)) from None
    _show(state, ctx, "sandbox running")


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
    """Stop the sandbox: moto's state, the control plane and its data are gone afterwards."""
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
    _sandbox_module("demo").main(args)
