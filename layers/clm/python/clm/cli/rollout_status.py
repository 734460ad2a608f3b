"""`clm rollout status`: each rollout of the fleet as reconcile sees it now: its waves, their clusters and states,
what it waits for (with `-o json` and `--html`, each cluster's runs: clm.cli.rollout_runs); `--html FILE` draws
it over time (clm.cli.rollout_picture); `--follow` repeats it until no rollout moves."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from clm.cli.context import CliContext
from clm.cli.deployment import provision_state_machine, stack_option, stack_outputs
from clm.cli.errors import CliError, DeploymentNotFound
from clm.cli.options import pass_cli
from clm.cli.output import Column, emit, print_error, print_warning, short_id, short_version

if TYPE_CHECKING:
    from clm.cli.rollout_runs import Rollout

CONFIG_OUTPUT = "ConfigSourceUri"
FOLLOW_SECONDS = 5.0
TIMES = ("started_at", "completed_at", "bake_until")
COLUMNS = [
    Column("wave", keep=True),
    Column("wave_state", "wave state"),
    Column("cluster", short=short_id),
    Column("state"),
    Column("times", note=True),
]


@click.command("status")
@click.option(
    "--config",
    "config_uri",
    envvar="CLM_CONFIG_SOURCE",
    help="Config source whose versions and cluster/rollout.yaml reconcile follows (default: the deployment's, its "
    f"stack output {CONFIG_OUTPUT}).",
)
@click.option("--follow", is_flag=True, help=f"Show it again every {FOLLOW_SECONDS:.0f} s while a rollout moves.")
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write a picture of the rollouts over time to this file (static HTML: a row per cluster by wave, "
    "coloured waiting, running, baking, passed, failed); rewritten each time with --follow.",
)
@stack_option
@pass_cli
def rollout_status(cli: CliContext, config_uri: str | None, follow: bool, html_file: Path | None, stack: str) -> None:
    """Each rollout: the configuration version, its state (rolling, halted and why, aborted, completed), what it
    waits for, and per wave its clusters: done (at the version), started (a run of it began) or waiting. Computed
    as reconcile computes it, from the registry, the configuration and the kept rollouts; changes nothing. With
    `-o json` or `--html`, each cluster's runs (started, stopped, status) are read from the provision state
    machine's executions.
    """
    uri = config_uri or _deployment_config(cli, stack)
    runs_of = stack if html_file is not None or cli.output not in ("table", "wide") else None
    while True:
        view = _view(cli, uri, runs_of)
        _show(cli, view)
        if html_file is not None:
            _draw(view, html_file)
        if not follow or not any(r["state"] == "rolling" and r["moving"] for r in view["rollouts"]):
            return
        time.sleep(FOLLOW_SECONDS)


def _deployment_config(cli: CliContext, stack: str) -> str:
    uri = stack_outputs(cli.client("cloudformation"), stack).get(CONFIG_OUTPUT)
    if not uri:
        raise CliError(f"stack {stack} has no output {CONFIG_OUTPUT}: pass --config")
    return uri


def _view(cli: CliContext, uri: str, runs_of: str | None) -> dict[str, Any]:
    """The fleet's rollouts now, as data; with each cluster's runs when `runs_of` names the deployment's stack."""
    from clm.cli.rollout_runs import rollouts_of
    from clm.config.channels import ConfigSources
    from clm.errors import ConfigSourceError
    from clm.registry.rollouts import RolloutStore
    from clm.rollout.source import fleet_policy
    from clm.timestamps import format_time, utc_now
    from clm.workflow.rollout_gate import look

    clusters, invalid = cli.registry().list_clusters_report()
    sources, versions, problems = ConfigSources(uri, cli.client), {}, list(invalid)
    for cluster in clusters:
        try:
            versions[cluster.id] = sources.version(cluster)
        except ConfigSourceError as exc:
            problems.append((cluster.id, str(exc)))
    store = RolloutStore(cli.client("dynamodb"), cli.table)
    policy = fleet_policy(uri, cli.client)
    now = utc_now()
    progresses = look(clusters, versions, store, policy, now)
    rollouts = [progress.to_dict() for progress in progresses]
    view = {"at": format_time(now), "policy": policy.source, "paused": store.pause_of(), "rollouts": rollouts}
    if runs_of is not None:
        view.update(_runs(cli, runs_of, rollouts, rollouts_of(progresses, clusters)))
    return {**view, "problems": problems}


def _runs(cli: CliContext, stack: str, rollouts: list[dict[str, Any]], looked: list[Rollout]) -> dict[str, Any]:
    """Add the clusters' runs to `rollouts`; how they were read (or why not, without a deployment) to show."""
    from clm.cli.rollout_runs import rollout_runs, with_runs

    try:
        machine = provision_state_machine(cli, stack)
    except DeploymentNotFound as exc:
        return {"runs_error": f"runs not read: {exc}"}
    runs = rollout_runs(cli.client("stepfunctions"), machine, looked)
    with_runs(rollouts, runs)
    return {"runs_read": {"calls": runs.calls, "described": runs.described, "not_described": runs.not_described}}


def _draw(view: dict[str, Any], path: Path) -> None:
    """Write the picture of `view` to `path` and say so on stderr."""
    from clm.cli.rollout_picture import rollout_page
    from clm.timestamps import parse_time

    path.write_text(rollout_page(view, parse_time(view["at"])), encoding="utf-8")
    click.echo(f"rollout picture: {path}", err=True)


def _show(cli: CliContext, view: dict[str, Any]) -> None:
    if cli.output not in ("table", "wide"):
        emit([], [], cli.output, data={key: value for key, value in view.items() if key != "problems"})
    else:
        if view["paused"]:
            pause = view["paused"]
            print_warning(f"rollouts paused since {pause['paused_at']} by {pause['by']}: {pause['reason'] or '-'}")
        if not view["rollouts"]:
            click.echo(f"no rollout: every cluster is at its configuration version (policy: {view['policy']})")
        for rollout in view["rollouts"]:
            title = f"rollout of {short_version(rollout['version'])}: {rollout['state']}, waiting for "
            emit(_rows(rollout), COLUMNS, cli.output, title + rollout["waiting_for"])
    for cluster_id, message in view["problems"]:
        print_error(f"cluster {cluster_id} left out: {message}")


def _rows(rollout: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per cluster, its wave's name and state on the wave's first row."""
    rows = []
    for wave in rollout["wave_progress"]:
        times = " ".join(f"{name} {wave[name]}" for name in TIMES if name in wave)
        head = {"wave": wave["wave"], "wave_state": wave["state"], "times": times or "-"}
        for index, cluster in enumerate(wave["clusters"]):
            first = head if index == 0 else {"times": "-"}
            rows.append({**first, "cluster": cluster["id"], "state": cluster["state"]})
        if not wave["clusters"]:
            rows.append({**head, "cluster": "-", "state": "-"})
    return rows
