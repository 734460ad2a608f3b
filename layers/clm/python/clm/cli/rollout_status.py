"""`clm rollout status`: each rollout of the fleet as reconcile sees it now: its waves, their clusters and states,
what it waits for; `--follow` repeats it until no rollout moves."""

from __future__ import annotations

import time
from typing import Any

import click

from clm.cli.context import CliContext
from clm.cli.deployment import stack_option, stack_outputs
from clm.cli.errors import CliError
from clm.cli.options import pass_cli
from clm.cli.output import Column, emit, print_error, print_warning, short_id, short_version

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
@stack_option
@pass_cli
def rollout_status(cli: CliContext, config_uri: str | None, follow: bool, stack: str) -> None:
    """Each rollout: the configuration version, its state (rolling, halted and why, aborted, completed), what it
    waits for, and per wave its clusters: done (at the version), started (a run of it began) or waiting. Computed
    as reconcile computes it, from the registry, the configuration and the kept rollouts; changes nothing.
    """
    uri = config_uri or _deployment_config(cli, stack)
    while True:
        view = _view(cli, uri)
        _show(cli, view)
        if not follow or not any(r["state"] == "rolling" and r["moving"] for r in view["rollouts"]):
            return
        time.sleep(FOLLOW_SECONDS)


def _deployment_config(cli: CliContext, stack: str) -> str:
    uri = stack_outputs(cli.client("cloudformation"), stack).get(CONFIG_OUTPUT)
    if not uri:
        raise CliError(f"stack {stack} has no output {CONFIG_OUTPUT}: pass --config")
    return uri


def _view(cli: CliContext, uri: str) -> dict[str, Any]:
    """The fleet's rollouts now, as data."""
    from clm.config.channels import ConfigSources
    from clm.errors import ConfigSourceError
    from clm.registry.rollouts import RolloutStore
    from clm.rollout.source import fleet_policy
    from clm.timestamps import utc_now
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
    progresses = look(clusters, versions, store, policy, utc_now())
    rollouts = [progress.to_dict() for progress in progresses]
    return {"policy": policy.source, "paused": store.pause_of(), "rollouts": rollouts, "problems": problems}


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
